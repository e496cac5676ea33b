#if canImport(Glibc)
    import Glibc
#endif

// Timing and `name value unit` output shared by the benchmark binaries.

/// Monotonic clock, in seconds.
public func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Milliseconds `body` takes.
public func timed(_ body: () throws -> Void) rethrows -> Double {
    let t = now()
    try body()
    return (now() - t) * 1000
}

/// Timings of repeated runs, in milliseconds.
public struct Summary {
    public var samples: [Double]
    public init(samples: [Double]) { self.samples = samples }
    public var min: Double { samples.min() ?? .nan }
    public var max: Double { samples.max() ?? .nan }
    public var mean: Double { samples.isEmpty ? .nan : samples.reduce(0, +) / Double(samples.count) }
    public var median: Double {
        let s = samples.sorted()
        guard !s.isEmpty else { return .nan }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
}

/// Runs `body` `runs` times (at least once) and returns its timings.
public func repeatTimed(_ runs: Int, _ body: () throws -> Void) rethrows -> Summary {
    var samples: [Double] = []
    for _ in 0..<Swift.max(1, runs) { samples.append(try timed(body)) }
    return Summary(samples: samples)
}

/// `x` with `decimals` digits after the point (no Foundation).
public func fmt(_ x: Double, _ decimals: Int = 3) -> String {
    if x.isNaN { return "nan" }
    var p = 1.0
    for _ in 0..<decimals { p *= 10 }
    let r = (abs(x) * p).rounded()
    let whole = Int(r / p)
    var frac = String(Int(r.truncatingRemainder(dividingBy: p)))
    while frac.count < decimals { frac = "0" + frac }
    return (x < 0 ? "-" : "") + String(whole) + (decimals > 0 ? "." + frac : "")
}

/// One `name value unit` line, flushed at once (a script reads it while the run goes on).
public func emit(_ name: String, _ value: Double, _ unit: String, decimals: Int = 3) {
    let pad = name.count < 36 ? String(repeating: " ", count: 36 - name.count) : " "
    print("\(name)\(pad)\(fmt(value, decimals)) \(unit)")
    fflush(nil)
}

/// A new directory `parent/NAME.XXXXXX`; nil (with errno set) if it cannot be made.
public func makeTempDir(_ name: String, in parent: String = "/tmp") -> String? {
    var template = Array("\(parent)/\(name).XXXXXX".utf8CString)
    guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { return nil }
    return String(cString: p)
}

/// Removes `path` and everything below it, following no link.
public func removeTree(_ path: String) {
    guard let d = opendir(path) else {
        unlink(path)
        return
    }
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name == "." || name == ".." { continue }
        let child = path + "/" + name
        var st = stat()
        if lstat(child, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
    }
    closedir(d)
    rmdir(path)
}
