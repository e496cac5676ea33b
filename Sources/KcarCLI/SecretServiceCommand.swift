import KcarKeychain

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar secret-service`: serves the freedesktop Secret Service on the session bus from the keychain
/// (SPEC.md §K10), until it is stopped or another program takes the name (`--replace`). With
/// `--background` it starts itself as a daemon of its own session and returns once that owns the name. The
/// daemon is the program `kcar-secret-service` beside kcar, which this command execs with the options
/// checked: only it loads libsystemd and libcrypto, so no other command pays for them at start.
enum SecretServiceCommand {
    /// Set (to 3) in the environment of the daemon `--background` starts: its descriptor 3 is a pipe on which
    /// it says `1` once it owns the name, or `0` and why it stopped.
    static let readyVariable = "KCAR_SECRET_SERVICE_READY_FD"
    static let daemonName = "kcar-secret-service"

    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("secret-service"))
        _ = try args.positionals([])
        // The options as ItemCommands.store reads them, checked before anything starts, passed on to the
        // daemon in its one form.
        let store = try ItemCommands.store(args)
        let daemon = try daemonPath()
        guard access(daemon, X_OK) == 0 else {
            throw CLIError(.io, "cannot start \(daemon): it is not there (make install puts it beside kcar)")
        }
        if args.flag("background") { return try background(argv.arguments.filter { $0 != "--background" }) }
        var options = ["--keychain", store.directory.path, "--lock-timeout", "\(store.lockTimeout)"]
        if let groups = args.value("groups") { options += ["--groups", groups] }
        if args.flag("replace") { options.append("--replace") }
        var words = ([daemon] + options).map { strdup($0) } + [nil]
        defer { for p in words { free(p) } }
        execv(daemon, &words)
        let why = "cannot start \(daemon): \(String(cString: strerror(errno))) (make install puts it beside kcar)"
        if getenv(readyVariable).map({ String(cString: $0) }) == "3" {
            _ = StandardStreams.writeExactly(3, Array("0secret-service: \(why)".utf8))
        }
        throw CLIError(.io, why)
    }

    /// `kcar-secret-service` in the folder of this program (its real path: a link to kcar finds it too).
    static func daemonPath() throws -> String {
        guard let real = realpath("/proc/self/exe", nil) else { throw CLIError(.io, "cannot find kcar's own path") }
        defer { free(real) }
        let me = String(cString: real)
        return String(me[..<(me.lastIndex(of: "/") ?? me.startIndex)]) + "/" + daemonName
    }

    /// Starts `kcar secret-service ARGS` in a session of its own, its standard streams at /dev/null (it holds
    /// no pipe of the caller's), and waits until it owns the name or fails.
    private static func background(_ arguments: [String]) throws -> ExitCode {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw CLIError(.io, "cannot make a pipe") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, 0x80)  // POSIX_SPAWN_SETSID (glibc 2.26), hidden without _GNU_SOURCE
        Clipboard.closeOnExec()
        var argv = (["kcar", "secret-service"] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var env: [UnsafeMutablePointer<CChar>?] = [strdup("\(readyVariable)=3")]
        var e = environ
        while let p = e.pointee {
            env.append(strdup(p))
            e += 1
        }
        env.append(nil)
        defer { for p in env { free(p) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, &argv, &env)
        close(fds[1])
        defer { close(fds[0]) }
        guard rc == 0 else { throw CLIError(.io, "cannot start kcar secret-service: \(String(cString: strerror(rc)))") }
        var said: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while said.count < 4096 {
            let n = read(fds[0], &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            said += buffer[0..<n]
        }
        if said.first == UInt8(ascii: "1") {
            warn("serving org.freedesktop.secrets in the background (pid \(pid))")
            return .success
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let why = String(decoding: said.dropFirst(), as: UTF8.self)
        throw CLIError(ExitCode(rawValue: code == 0 ? 1 : code), why.isEmpty ? "secret-service did not start" : why)
    }
}
