import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar edit [SERVICE/ACCOUNT] [SELECTORS]` (pass edit): the value of the one matching item, opened in
/// `$VISUAL` or `$EDITOR` (else `vi`) from a file in a private folder of memory-backed storage
/// (`$XDG_RUNTIME_DIR`, else `/dev/shm`, else `$TMPDIR`), and stored as its new value if it changed.
///
/// The file is mode 0600 in a folder of mode 0700, registered for removal on SIGTERM and SIGHUP, and
/// overwritten with zeros and removed, with everything the editor left beside it (swap and backup files),
/// however the edit ends. kcar ignores SIGINT and SIGQUIT while the editor runs (as `system` does), so that
/// an interrupt reaches the editor and the clean-up still happens.
enum EditCommand {
    /// The largest value an edit stores (the file is read whole).
    static let valueMax = 16 << 20

    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try ItemCommands.named(try Arguments(argv, specs: CLI.specs("edit")))
        let s = try ItemCommands.store(args)
        let r = try ItemCommands.searchClasses(s, args, limit: 2)
        guard let item = r.items.first else {
            guard r.skipped.isEmpty else { return ItemCommands.reportSkipped(r.skipped) }
            throw ItemCommands.noMatch(s, args)
        }
        guard r.items.count == 1 else {
            throw CLIError.usage("more than one item matches; narrow the selection (`kcar find` lists them)")
        }
        var old = try s.value(of: item)
        defer { wipe(&old) }
        var new = try edited(old)
        defer { wipe(&new) }
        // Editors end a file with a newline: one added to a value that had none is not part of the edit.
        if old.last != 0x0A, new.last == 0x0A { new.removeLast() }
        let name = describe(item.itemClass, item.attributes)
        guard new.count != old.count || !Digest.constantTimeEqual(new, old) else {
            warn("\(name): unchanged; nothing written")
            return .success
        }
        let stored = try s.transaction(group: item.group) { tx -> Bool in
            // The item may have changed while it was edited: the edit is then not written over that change.
            var now = try tx.value(of: item)
            defer { wipe(&now) }
            guard now.count == old.count, Digest.constantTimeEqual(now, old) else { return false }
            try tx.update([item.id], set: [:], value: new)
            return true
        }
        guard stored else {
            throw CLIError(.failure, "\(name) changed while it was edited; nothing written (kcar edit it again)")
        }
        warn("\(name): new value stored (\(count(new.count, "byte")))")
        return .success
    }

    /// `value` as the user leaves it after editing it in a private temporary file.
    static func edited(_ value: [UInt8]) throws -> [UInt8] {
        let folder = try privateFolder()
        defer { removeAll(in: folder) }
        let path = folder + "/value"
        var written = false
        let token = TemporaryFiles.creating { () -> Int? in
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return nil }
            let token = TemporaryFiles.register(path)
            written = StandardStreams.writeExactly(fd, value)
            close(fd)
            return token
        }
        defer { TemporaryFiles.unregister(token) }
        // A value written in part is never handed to the editor: saved, it would replace the whole value.
        guard written else { throw CLIError(.io, "cannot write the value to a private file in \(folder)") }
        try runEditor(path)
        return try readBack(path)
    }

    /// A new folder of mode 0700 on memory-backed storage where there is one.
    static func privateFolder() throws -> String {
        var bases: [String] = []
        if let d = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), d.startsWithSlash { bases.append(d) }
        bases.append("/dev/shm")
        bases.append(getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.startsWithSlash ? $0 : nil } ?? "/tmp")
        for base in bases {
            var st = stat()
            // A base that is a folder, and, unless sticky (as /dev/shm and /tmp are), this user's own.
            guard stat(base, &st) == 0, st.st_mode & S_IFMT == S_IFDIR,
                st.st_mode & S_ISVTX != 0 || st.st_uid == getuid()
            else { continue }
            var template = Array((base + "/kcar-edit.XXXXXX").utf8CString)
            if template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil {
                return String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
            }
        }
        throw CLIError(.io, "cannot make a private folder for the edit in \(bases.joined(separator: ", "))")
    }

    /// Runs the user's editor on `path` through `/bin/sh` (so that `EDITOR="code --wait"` works), with this
    /// process's terminal, and waits for it; a non-zero exit leaves the value as it was.
    static func runEditor(_ path: String) throws {
        let editor =
            [getenv("VISUAL"), getenv("EDITOR")].compactMap { $0.map { String(cString: $0) } }.first { !$0.isEmpty }
            ?? "vi"
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        let argv = ["/bin/sh", "-c", editor + " \"$1\"", "sh", path]
        var cargs = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        let interrupt = signal(SIGINT, SIG_IGN)
        let quit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, interrupt)
            signal(SIGQUIT, quit)
        }
        var pid = pid_t()
        let rc = posix_spawn(&pid, "/bin/sh", nil, &attributes, &cargs, environ)
        guard rc == 0 else { throw CLIError(.io, "cannot run /bin/sh: \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        guard code == 0 else { throw CLIError(.failure, "the editor (\(editor)) exited with \(code); nothing written") }
    }

    /// The file as the editor left it (a file of at most ``valueMax`` bytes, not a link).
    static func readBack(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError(.io, "the edited value is gone (\(path)); nothing written") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size <= valueMax else {
            throw CLIError(.io, "the edited value is not a file of at most \(valueMax) bytes; nothing written")
        }
        guard let out = StandardStreams.readExactly(fd, Int(st.st_size)) else {
            throw CLIError(.io, "cannot read the edited value back; nothing written")
        }
        return out
    }

    /// Overwrites every file in `folder` with zeros, removes them and the folder.
    static func removeAll(in folder: String) {
        for name in entryNames(folder) {
            let path = folder + "/" + name
            let fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 {
                var st = stat()
                if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size > 0 {
                    let zeros = [UInt8](repeating: 0, count: 65_536)
                    var left = Int(st.st_size)
                    while left > 0 {
                        let n = write(fd, zeros, min(left, zeros.count))
                        guard n > 0 else { break }
                        left -= n
                    }
                    fsync(fd)
                }
                close(fd)
            }
            unlink(path)
        }
        rmdir(folder)
    }
}

/// The names in folder `path` but `.` and `..` (none if it cannot be read).
func entryNames(_ path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let e = readdir(dir) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        if name != ".", name != ".." { names.append(name) }
    }
    return names
}
