// Compiled into every fuzz target (see README.md). Each target file defines:
//   func fuzzOne(_ input: [UInt8])              one input; thrown errors are caught there and are fine
//   func seeds(repo: String) -> [[UInt8]]       seed inputs made in code (written by `run.sh`, see below)
// Only crashes count: traps (precondition, bounds, overflow), sanitizer reports, huge memory, timeouts.
#if canImport(Glibc)
    import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEntry(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    fuzzOne(input)
    return 0
}

/// With `KCAR_FUZZ_SEEDS=DIR` (and `KCAR_FUZZ_REPO=ROOT`, the repository), writes `seeds(repo:)` into DIR
/// as `gen-N` and exits instead of fuzzing: how `scripts/fuzz/run.sh` makes the generated seed corpus.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutableRawPointer?) -> CInt {
    guard let dir = getenv("KCAR_FUZZ_SEEDS").map({ String(cString: $0) }) else { return 0 }
    let repo = getenv("KCAR_FUZZ_REPO").map { String(cString: $0) } ?? "."
    let all = seeds(repo: repo)
    for (i, s) in all.enumerated() { writeFile("\(dir)/gen-\(i)", s) }
    print("wrote \(all.count) generated seeds to \(dir)")
    exit(0)
}

func readFile(_ path: String) -> [UInt8]? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        out.append(contentsOf: buf[0..<n])
    }
    return out
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
    guard let f = fopen(path, "wb") else { fatalError("cannot write \(path)") }
    _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
    fclose(f)
}

/// The names in a directory ending in `suffix`, sorted.
func listDirectory(_ path: String, suffix: String) -> [String] {
    guard let d = opendir(path) else { return [] }
    defer { closedir(d) }
    var names: [String] = []
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        if name.hasSuffix(suffix), name != ".", name != ".." { names.append(name) }
    }
    return names.sorted()
}

/// Little-endian helpers for the targets' own input framing.
extension Array where Element == UInt8 {
    mutating func appendLE16(_ v: Int) {
        append(UInt8(truncatingIfNeeded: v))
        append(UInt8(truncatingIfNeeded: v >> 8))
    }
}

/// Reads the framing some targets use: a byte cursor that never fails (missing bytes read as 0).
struct InputCursor {
    let bytes: [UInt8]
    var position = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var remaining: Int { bytes.count - position }
    mutating func u8() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }
    mutating func u16() -> Int { Int(u8()) | Int(u8()) << 8 }
    mutating func take(_ n: Int) -> [UInt8] {
        let k = Swift.max(0, Swift.min(n, remaining))
        defer { position += k }
        return Array(bytes[position..<position + k])
    }
    mutating func rest() -> [UInt8] { take(remaining) }
}

/// The path of an empty regular file for a target's stand-in vault (unlinked by the caller once opened):
/// vault files are refused unless they are regular files, so `/dev/null` will not do.
func emptyScratchFile(_ name: String) -> String {
    var template = Array("/tmp/kcar-fuzz-\(name)-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    precondition(fd >= 0, "mkstemp failed")
    close(fd)
    return String(cString: template)
}
