#if canImport(Glibc)
    import Glibc
#endif

/// One crafted input and the kcar command that is handed it. `make` writes the input's files into `dir` (the
/// case's working folder, which is also HOME); `args` are kcar's arguments, relative to `dir`. Every case must
/// end within `Limits` whatever kcar answers, with an exit code kcar documents, and never with a signal or
/// exit 1 (an internal error).
struct HostileCase {
    /// Short unique name: `area/what` (for example `plist/shared-offsets`).
    let name: String
    /// What the attack is, in one line (printed with -v and on failure).
    let attack: String
    /// Writes the case's files into `dir`.
    let make: (_ dir: String) throws -> Void
    /// kcar's arguments.
    let args: [String]
    /// Bytes for standard input (else /dev/null).
    var stdin: [UInt8]? = nil
    /// Variables added to the (otherwise empty) environment; HOME is the case folder.
    var env: [String: String] = [:]
    /// Exit codes the case accepts; nil accepts any documented code (0 and 2...16).
    var exits: Set<Int32>? = nil
    /// How many times the command runs (each run within the limits): for races with ``during``.
    var runs = 1
    /// Called about every 5 ms while kcar runs, with the case folder: renames files under a running command.
    var during: ((_ dir: String) -> Void)? = nil
    /// After the last run: a problem with the files kcar left (a write into the wrong vault), or nil.
    var check: ((_ dir: String) -> String?)? = nil
    /// A second command run when the first exits 0 (in the same folder, within the same limits), and the exit
    /// codes it accepts: what must still work on what the first command wrote.
    var then: (args: [String], exits: Set<Int32>)? = nil
    /// A breach of the limits that is known and not fixed yet, and why: the case still runs and its figures are
    /// printed (`KNOWN`), but it does not fail the run; once it passes, the mark is to be removed.
    var knownBreach: String? = nil
}

/// The acceptance limits (SPEC.md §3 and README, Security): any crafted file up to 20 MB, given to any command, is refused or
/// processed within these.
enum Limits {
    static let rssBytes: Int = 512 << 20
    static let cpuSeconds: Double = 10
    static let inputBytes: Int = 20_000_000
    /// A case still running after this long (wall clock) is killed and fails: it was blocked or spinning.
    static let wallSeconds: Double = 60
}

/// Writes `bytes` to `path` with mode 0600 (throws on failure).
func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw HarnessError.io("open \(path)") }
    defer { close(fd) }
    var off = 0
    while off < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + off, $0.count - off) }
        guard n > 0 else { throw HarnessError.io("write \(path)") }
        off += n
    }
    fchmod(fd, mode)
}

/// Reads a whole file (for cases that start from a file kcar wrote).
func readFile(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw HarnessError.io("open \(path)") }
    defer { close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        guard n >= 0 else { throw HarnessError.io("read \(path)") }
        if n == 0 { return out }
        out.append(contentsOf: buf[0..<n])
    }
}

enum HarnessError: Error {
    case io(String)
    case failed(String)
}

/// What one run of kcar cost.
struct RunResult {
    var status: Int32 = 0  // exit code, or -signal
    var rssBytes = 0
    var cpuSeconds = 0.0
    var timedOut = false
    var stderr = ""
}

/// Runs `kcar` with `args` in `dir` (also HOME), standard output to /dev/null, standard error captured (first
/// 4 KiB), and measures its peak RSS and CPU time with wait4.
func runKcar(_ kcar: String, _ c: HostileCase, dir: String, args: [String]? = nil) throws -> RunResult {
    let errPath = dir + "/.stderr"
    let inPath = dir + "/.stdin"
    if let s = c.stdin { try writeFile(inPath, s) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, c.stdin == nil ? "/dev/null" : inPath, O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    var env = ["HOME=\(dir)", "PATH=/usr/bin:/bin", "LANG=C.UTF-8"]
    for (k, v) in c.env.sorted(by: { $0.key < $1.key }) { env.append("\(k)=\(v)") }
    let argv = [kcar] + (args ?? c.args)
    var pid: pid_t = 0
    // The child starts in `dir`: this program is single-threaded, so changing its own folder around the spawn
    // is safe (posix_spawn_file_actions_addchdir_np is not in Swift's Glibc module).
    var cwd = [CChar](repeating: 0, count: Int(PATH_MAX))
    guard getcwd(&cwd, cwd.count) != nil, chdir(dir) == 0 else { throw HarnessError.io("chdir \(dir)") }
    let rc = withCStrings(argv) { cargv in
        withCStrings(env) { cenv in posix_spawn(&pid, kcar, &actions, nil, cargv, cenv) }
    }
    _ = chdir(cwd)
    guard rc == 0 else { throw HarnessError.io("spawn \(kcar): \(rc)") }
    var result = RunResult()
    var status: Int32 = 0
    var usage = rusage()
    var waited = 0.0
    while true {
        let r = wait4(pid, &status, WNOHANG, &usage)
        if r == pid { break }
        if r < 0 && errno != EINTR { throw HarnessError.io("wait4") }
        c.during?(dir)
        if waited > Limits.wallSeconds && !result.timedOut {
            kill(pid, SIGKILL)
            result.timedOut = true
        }
        usleep(5_000)
        waited += 0.005
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift cannot import.
    let sig = status & 0x7f
    result.status = sig == 0 ? (status >> 8) & 0xff : -sig
    result.rssBytes = Int(usage.ru_maxrss) * 1024
    result.cpuSeconds =
        Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    result.stderr = String(decoding: (try? readFile(errPath))?.prefix(4096) ?? [], as: UTF8.self)
    return result
}

private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var ptrs: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    ptrs.append(nil)
    defer { for p in ptrs { free(p) } }
    return ptrs.withUnsafeBufferPointer { body($0.baseAddress!) }
}
