#if canImport(Glibc)
    import Glibc
#endif

// kcar-hostile: crafts hostile inputs (each at most Limits.inputBytes) and hands each to the command it attacks,
// as a whole kcar process, checking that kcar refuses or processes it within Limits (peak RSS, CPU time), with
// a documented exit code, never a signal or an internal error.
//   kcar-hostile [--kcar PATH] [--only SUBSTRING] [--keep DIR] [--list] [-v]
// Prints one line per case and a closing `N passed, N failed`; exits 1 if any failed.

let usage = "usage: kcar-hostile [--kcar PATH] [--only SUBSTRING] [--keep DIR] [--list] [-v]"
var kcar = ".build/release/kcar"
var only: [String] = []
var keep: String? = nil
var listOnly = false
var verbose = false
var makeCaseHere: (name: String, dir: String)? = nil
var argv = CommandLine.arguments.dropFirst()
while let a = argv.popFirst() {
    switch a {
    case "--kcar":
        guard let v = argv.popFirst() else {
            print(usage)
            exit(2)
        }
        kcar = v
    case "--only":
        guard let v = argv.popFirst() else {
            print(usage)
            exit(2)
        }
        only.append(v)
    case "--keep":
        guard let v = argv.popFirst() else {
            print(usage)
            exit(2)
        }
        keep = v
    case "--list": listOnly = true
    case "--make-case":
        // Internal: write one case's input in a process of its own (see makeInChild).
        guard let name = argv.popFirst(), let dir = argv.popFirst() else {
            print(usage)
            exit(2)
        }
        makeCaseHere = (name, dir)
    case "-v": verbose = true
    default:
        print(usage)
        exit(2)
    }
}
if kcar.first != "/" {
    var buf = [UInt8](repeating: 0, count: Int(PATH_MAX))
    if buf.withUnsafeMutableBufferPointer({
        getcwd(UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), $0.count)
    }) != nil {
        kcar = String(decoding: buf.prefix(while: { $0 != 0 }), as: UTF8.self) + "/" + kcar
    }
}
guard access(kcar, X_OK) == 0 else {
    print(
        "kcar-hostile: no kcar at \(kcar) (build it: make build, or swift build -c release --static-swift-stdlib --product kcar)"
    )
    exit(2)
}

var cases =
    vaultCases() + archiveCases() + plistCases() + keychainCases() + cliCases() + credentialCases() + streamsCases()
    + version2Cases()
if let (name, dir) = makeCaseHere {
    guard let c = cases.first(where: { $0.name == name }) else {
        print("kcar-hostile: no case \(name)")
        exit(2)
    }
    do { try c.make(dir) } catch {
        print("kcar-hostile: making \(name): \(error)")
        exit(2)
    }
    exit(0)
}
if !only.isEmpty { cases = cases.filter { c in only.contains { c.name.contains($0) } } }
var seen = Set<String>()
for c in cases where !seen.insert(c.name).inserted {
    print("kcar-hostile: duplicate case name \(c.name)")
    exit(2)
}
if listOnly {
    for c in cases { print("\(c.name)\t\(c.attack)") }
    exit(0)
}

let root: String
if let keep {
    mkdir(keep, 0o700)
    root = keep
} else {
    var template = Array("/tmp/kcar-hostile.XXXXXX".utf8CString)
    guard mkdtemp(&template) != nil else {
        print("kcar-hostile: mkdtemp failed")
        exit(2)
    }
    root = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func removeTree(_ path: String) {
    // nftw would do; a shell is simpler and the tree is ours.
    var pid: pid_t = 0
    let args = ["/bin/rm", "-rf", path]
    var cargs: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
    defer { for p in cargs { free(p) } }
    if posix_spawn(&pid, "/bin/rm", nil, nil, &cargs, nil) == 0 {
        var st: Int32 = 0
        waitpid(pid, &st, 0)
    }
}

var passed = 0
var failed = 0
var known = 0
for (n, c) in cases.enumerated() {
    let dir = root + "/" + String(n)
    mkdir(dir, 0o700)
    var problems: [String] = []
    var r = RunResult()
    var inputBytes = 0
    var thenFigures = ""
    do {
        try makeInChild(c, dir, kcar: kcar)
        inputBytes = largestFile(dir)
        if inputBytes > Limits.inputBytes {
            problems.append("input of \(inputBytes) bytes is over \(Limits.inputBytes)")
        }
        // Every run is judged; the figures printed are the greatest of them (the exit code: the first run's).
        for i in 0..<max(c.runs, 1) {
            let one = try runKcar(kcar, c, dir: dir)
            problems += judge(one, exits: c.exits, what: c.runs > 1 ? "run \(i + 1): " : "")
            if i == 0 { r = one } else { r.merge(one) }
        }
        if let then = c.then, r.status == 0 {
            let next = try runKcar(kcar, c, dir: dir, args: then.args)
            problems += judge(next, exits: then.exits, what: "then \(then.args.first ?? ""): ")
            thenFigures = "; then exit \(next.status)  \(next.rssBytes >> 20) MiB  \(format2(next.cpuSeconds)) s"
            r.merge(next)
        }
        if problems.isEmpty, let p = c.check?(dir) { problems.append(p) }
    } catch {
        problems.append("harness: \(error)")
    }
    let figures =
        "exit \(r.status)  \(r.rssBytes >> 20) MiB  \(String(format2(r.cpuSeconds))) s  input \(inputBytes / 1000) kB"
        + thenFigures
    if !problems.isEmpty, let why = c.knownBreach {
        known += 1
        print(
            "KNOWN \(c.name)  \(figures)\n      \(c.attack)\n      " + problems.joined(separator: "; ")
                + "\n      known: " + why)
        if keep == nil { removeTree(dir) }
    } else if problems.isEmpty {
        passed += 1
        print(
            "ok    \(c.name)  \(figures)"
                + (c.knownBreach != nil ? "  (marked as a known breach: within the limits this run)" : ""))
        if verbose { print("      \(c.attack)\n      \(r.stderr.split(separator: "\n").first ?? "")") }
        if keep == nil { removeTree(dir) }
    } else {
        failed += 1
        print("FAIL  \(c.name)  \(figures)\n      \(c.attack)\n      " + problems.joined(separator: "; "))
        if !r.stderr.isEmpty { print("      stderr: " + r.stderr.prefix(400).replacingNewlines()) }
    }
}
if keep == nil && failed == 0 { removeTree(root) } else { print("cases kept in \(root)") }
if known > 0 { print("hostile: \(known) known breaches of the limits (KNOWN above), not counted as failures") }
print("hostile: \(passed) passed, \(failed) failed")
exit(failed == 0 ? 0 : 1)

/// What is wrong with one run of kcar: the limits, a signal, an exit code outside `exits` (nil: any documented one).
func judge(_ r: RunResult, exits: Set<Int32>?, what: String) -> [String] {
    var problems: [String] = []
    if r.timedOut { problems.append(what + "killed after \(Int(Limits.wallSeconds)) s of wall time") }
    if r.status < 0 {
        problems.append(what + "died of signal \(-r.status)")
    } else if let exits {
        if !exits.contains(r.status) { problems.append(what + "exit \(r.status), expected one of \(exits.sorted())") }
    } else if r.status == 1 || r.status > 16 {
        problems.append(what + "exit \(r.status) (not a documented refusal)")
    }
    if r.rssBytes > Limits.rssBytes {
        problems.append(what + "peak RSS \(r.rssBytes >> 20) MiB > \(Limits.rssBytes >> 20) MiB")
    }
    if r.cpuSeconds > Limits.cpuSeconds { problems.append(what + "CPU \(r.cpuSeconds) s > \(Limits.cpuSeconds) s") }
    return problems
}

extension RunResult {
    /// Keeps the greatest figures of this run and `other` (and other's standard error if it failed).
    mutating func merge(_ other: RunResult) {
        rssBytes = max(rssBytes, other.rssBytes)
        cpuSeconds = max(cpuSeconds, other.cpuSeconds)
        timedOut = timedOut || other.timedOut
        if other.status != 0 && !other.stderr.isEmpty { stderr = other.stderr }
    }
}

func format2(_ x: Double) -> String {
    let hundredths = Int((x * 100).rounded())
    let frac = hundredths % 100
    return "\(hundredths / 100).\(frac < 10 ? "0" : "")\(frac)"
}

/// The size of the largest regular file below `dir` (the crafted input).
func largestFile(_ dir: String) -> Int {
    var best = 0
    guard let d = opendir(dir) else { return 0 }
    defer { closedir(d) }
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) {
            String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if name == "." || name == ".." { continue }
        var st = stat()
        let p = dir + "/" + name
        guard lstat(p, &st) == 0 else { continue }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            best = max(best, largestFile(p))
        } else if (st.st_mode & S_IFMT) == S_IFREG {
            best = max(best, Int(st.st_size))
        }
    }
    return best
}

extension Substring {
    func replacingNewlines() -> String { split(separator: "\n").joined(separator: " | ") }
}

/// Writes a case's input in a child process (this program, `--make-case NAME DIR`), so that this process
/// stays small: Linux carries the peak RSS of the process that spawns a child into the child's `ru_maxrss`
/// (posix_spawn runs the child in the parent's memory until exec), so a harness that had built a 20 MB input
/// itself would report that memory against every later kcar it runs.
func makeInChild(_ c: HostileCase, _ dir: String, kcar: String) throws {
    var pid: pid_t = 0
    let args = ["/proc/self/exe", "--kcar", kcar, "--make-case", c.name, dir]  // the child checks the same kcar
    var cargs: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
    defer { for p in cargs { free(p) } }
    guard posix_spawn(&pid, "/proc/self/exe", nil, nil, &cargs, environ) == 0 else {
        throw HarnessError.io("spawn --make-case")
    }
    var st: Int32 = 0
    while waitpid(pid, &st, 0) < 0 && errno == EINTR {}
    guard st == 0 else { throw HarnessError.failed("making the input of \(c.name) failed (status \(st))") }
}
