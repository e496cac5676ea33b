import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `get --clip` (pass -c): a value put on the desktop's clipboard through the tool there is for it
/// (`wl-copy` under Wayland, else `xclip` or `xsel` under X11), and cleared after a while by a detached shell,
/// only if the clipboard still holds that value.
///
/// The shell learns the value's BLAKE2b-512 digest (as `b2sum` prints it) through its standard input, never
/// its arguments or environment, which other local users can read; the value itself goes to the tool through
/// a pipe.
enum Clipboard {
    static let defaultSeconds = 45

    struct Tool {
        let copy: [String]
        let paste: String
        let clear: String
    }

    /// The clipboard tool for this session, or why there is none.
    static func tool() throws -> Tool {
        let env = { (n: String) in getenv(n).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } }
        if env("WAYLAND_DISPLAY") != nil, onPath("wl-copy") {
            return Tool(copy: ["wl-copy"], paste: "wl-paste -n", clear: "wl-copy --clear")
        }
        if env("DISPLAY") != nil {
            if onPath("xclip") {
                return Tool(
                    copy: ["xclip", "-selection", "clipboard", "-in"], paste: "xclip -selection clipboard -out",
                    clear: "xclip -selection clipboard -in < /dev/null")
            }
            if onPath("xsel") {
                return Tool(
                    copy: ["xsel", "--clipboard", "--input"], paste: "xsel --clipboard --output",
                    clear: "xsel --clipboard --clear")
            }
        }
        throw CLIError(
            .failure,
            "no clipboard: --clip needs a desktop session (WAYLAND_DISPLAY or DISPLAY) and wl-copy (wl-clipboard), "
                + "xclip or xsel")
    }

    static func onPath(_ name: String) -> Bool {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains { access("\($0)/\(name)", X_OK) == 0 }
    }

    /// Puts `value` on the clipboard, and has it cleared after `seconds` (0: never) if it is still there.
    static func copy(_ value: [UInt8], clearAfter seconds: Int) throws {
        let t = try tool()
        let status = try spawn(t.copy, input: value, wait: true)
        guard status == 0 else {
            throw CLIError(.failure, "\(t.copy[0]) exited with \(status); the clipboard is unchanged")
        }
        guard seconds > 0 else { return }
        let digest = Hex.encode(Digest.blake2b(value, outputBytes: 64))
        let script =
            "read d; sleep \(seconds); [ \"$(\(t.paste) 2>/dev/null | b2sum | cut -d ' ' -f 1)\" = \"$d\" ] && \(t.clear)"
        _ = try spawn(["setsid", "/bin/sh", "-c", script], input: Array((digest + "\n").utf8), wait: false)
    }

    /// Marks every descriptor above standard error close-on-exec.
    static func closeOnExec() {
        // Listed first: the listing's own descriptor is closed before any is marked.
        for fd in entryNames("/proc/self/fd").compactMap({ Int32($0) }) where fd > 2 {
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    /// Runs `argv` (found on PATH) with `input` on its standard input and its output at /dev/null; its exit
    /// status when `wait`, else 0 once it runs.
    static func spawn(_ argv: [String], input: [UInt8], wait: Bool) throws -> Int32 {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw CLIError(.io, "cannot make a pipe") }
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[0], 0)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else of this process's: a clipboard owner or the clearer outlives it, and must not hold a pipe
        // (a caller reading this process's output to its end would wait for them).
        closeOnExec()
        var cargs = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var pid = pid_t()
        let rc = posix_spawnp(&pid, argv[0], &actions, nil, &cargs, environ)
        close(fds[0])
        guard rc == 0 else {
            close(fds[1])
            throw CLIError(.io, "cannot run \(argv[0]): \(String(cString: strerror(rc)))")
        }
        // A tool that exits without reading all of it must not kill this process with SIGPIPE.
        let previous = signal(SIGPIPE, SIG_IGN)
        _ = StandardStreams.writeExactly(fds[1], input)
        close(fds[1])
        signal(SIGPIPE, previous)
        guard wait else { return 0 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
