import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar git setup` and `kcar git textconv`: vaults in a git repository that merge item by item (`kcar merge`
/// as the merge driver) and diff as text (one line per item).
enum GitCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        try CLI.subcommand("git", argv, [("setup", "[--global]", setup), ("textconv", "VAULT", textconv)])
    }

    /// The line `.gitattributes` gets, and the configuration git reads it with.
    static let attributesLine = "*.kcv merge=kcar diff=kcar"

    static func setup(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("git", "setup"))
        _ = try args.positionals([])
        let global = args.flag("global")
        let top = (try? git(["rev-parse", "--show-toplevel"]))?.trimmingWhitespace
        guard global || top != nil else {
            throw CLIError.usage(
                "not in a git repository: run `kcar git setup` inside one (or `kcar git setup --global` for your user's git config)"
            )
        }
        if let top {
            let path = top + "/.gitattributes"
            var text = (try? readSmallText(path)) ?? ""
            if text.split(separator: "\n").contains(where: { String($0).trimmingWhitespace == attributesLine }) {
                Output.out.line(terminalSafe("\(path): already has \(attributesLine)"))
            } else {
                if !text.isEmpty, !text.hasSuffix("\n") { text += "\n" }
                text += attributesLine + "\n"
                try Keys.writeFile(path, Array(text.utf8), mode: 0o644, force: true)
                Output.out.line(
                    terminalSafe("\(path): added \(attributesLine) (commit it, so every clone merges and diffs vaults)")
                )
            }
        } else {
            Output.out.line(
                "not in a git repository: no .gitattributes written (add \(attributesLine) to a repository's .gitattributes)"
            )
        }
        let program = kcarCommand()
        let scope = global ? "--global" : "--local"
        for (key, value) in [
            ("merge.kcar.name", "kcar vaults, merged item by item"),
            ("merge.kcar.driver", "\(program) merge %O %A %B --name %P"),
            ("diff.kcar.textconv", "\(program) git textconv")
        ] {
            _ = try git(["config", scope, key, value])
            Output.out.line(terminalSafe("git config \(scope) \(key) '\(value)'"))
        }
        if SecretInput.environmentKeyFile == nil {
            Output.out.line(
                "git runs kcar without a terminal to ask on: export \(SecretInput.keyFileVariable)=/path/to/your.key "
                    + "(a key file of the vaults, never committed) in the shell you run git from")
        }
        if top != nil { warnOfUntrackedFiles() }
        return .success
    }

    /// Untracked files other than vaults in the repository: plaintext that a `git add .` would commit (the tree a
    /// vault was packed from, an extracted copy). Named, up to ten, on standard error; nothing is changed.
    static func warnOfUntrackedFiles() {
        guard let out = try? git(["status", "--porcelain", "--untracked-files=all", "-z"]) else { return }
        let untracked = out.split(separator: "\0").filter { $0.hasPrefix("?? ") }.map { String($0.dropFirst(3)) }
            .filter { !$0.hasSuffix(".kcv") && $0 != ".gitattributes" }
        guard !untracked.isEmpty else { return }
        warn(
            "\(count(untracked.count, "untracked file")) in this repository (\(untracked.prefix(10).joined(separator: ", "))"
                + (untracked.count > 10 ? ", ..." : "")
                + "): if it is a vault's plaintext, move it out of the repository or add it "
                + "to .gitignore, so that `git add .` never commits it; change a vault's items with kcar add VAULT NAME --value-file -"
        )
    }

    /// How git's config names this kcar: `kcar` when that is the kcar on PATH, else this binary's path.
    static func kcarCommand() -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        guard n > 0 else { return "kcar" }
        let me = String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let path = getenv("PATH").map { String(cString: $0) } ?? ""
        for dir in path.split(separator: ":") {
            var a = stat()
            var b = stat()
            if stat("\(dir)/kcar", &a) == 0, stat(me, &b) == 0 {
                if a.st_ino == b.st_ino && a.st_dev == b.st_dev { return "kcar" } else { break }
            }
        }
        return "'" + me.replacing("'", with: "'\\''") + "'"
    }

    /// Runs git with `arguments`; its standard output, or an error with its standard error.
    static func git(_ arguments: [String]) throws -> String {
        let r = try spawn(["git"] + arguments)
        guard r.status == 0 else {
            throw CLIError(
                .failure, "git \(arguments.prefix(2).joined(separator: " ")) failed: \(r.err.trimmingWhitespace)")
        }
        return r.out
    }

    /// Runs `argv` (found on PATH) with standard input at /dev/null; its status, output and error.
    static func spawn(_ argv: [String]) throws -> (status: Int32, out: String, err: String) {
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw CLIError(.io, "cannot make a pipe") }
        // Only the child's own ends (dup2'd to 1 and 2) stay open in it.
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        var cargs = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var pid = pid_t()
        let rc = posix_spawnp(&pid, argv[0], &actions, nil, &cargs, environ)
        close(outPipe[1])
        close(errPipe[1])
        defer {
            close(outPipe[0])
            close(errPipe[0])
        }
        guard rc == 0 else { throw CLIError(.io, "cannot run \(argv[0]): \(String(cString: strerror(rc)))") }
        // git's answers here are short: reading one pipe to its end, then the other, cannot fill the other.
        let out = readAll(outPipe[0])
        let err = readAll(errPipe[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (code, out, err)
    }

    static func readAll(_ fd: Int32) -> String {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buf, buf.count)
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            out.append(contentsOf: buf[0..<n])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
