import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `-` as a path: standard input for what a command reads, standard output for what it writes. Binary output is refused on a terminal unless `--force`, as age does.
enum StandardStreams {
    /// A vault read from standard input (`list -`, `extract -`, `verify -`, `info -`) is copied to a
    /// temporary file first, since a vault is read by offset (its index sits at the end): at most this many
    /// bytes (`STDIN_VAULT_MAX`), else nothing is read past it and the command fails.
    static let vaultMax: UInt64 = 4 << 30

    nonisolated(unsafe) private static var spooled: (path: String, registration: Int?)?

    /// `path`, or for `-` the temporary copy of the vault on standard input: mode 0600 in $TMPDIR (as pack -
    /// writes its vault), removed when the command ends, on a fatal signal, or if the copy fails.
    static func vaultInput(_ path: String) throws -> String {
        guard path == "-" else { return path }
        guard isatty(0) != 1 else {
            throw CLIError.usage("VAULT - reads the vault from standard input, which is a terminal; pipe it in")
        }
        let target = PackCommand.temporaryPath()
        let (fd, registration) = TemporaryFiles.creating { () -> (Int32, Int?) in
            let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            return (fd, fd >= 0 ? TemporaryFiles.register(target) : nil)
        }
        guard fd >= 0 else {
            throw CLIError(
                .io,
                "cannot create a temporary file for the vault on standard input: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        spooled = (target, registration)
        var total: UInt64 = 0
        var buf = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = read(0, &buf, buf.count)
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw CLIError(.io, "cannot read standard input: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            total += UInt64(n)
            guard total <= vaultMax else {
                throw CLIError(
                    .io,
                    "standard input: more than \(vaultMax >> 30) GiB, the most a vault read from a pipe may be; save it to a file"
                )
            }
            var done = 0
            while done < n {
                let w = buf.withUnsafeBytes { write(fd, $0.baseAddress! + done, n - done) }
                if w < 0, errno == EINTR { continue }
                guard w > 0 else {
                    throw CLIError(
                        .io, "cannot write the temporary copy of standard input: \(String(cString: strerror(errno)))")
                }
                done += w
            }
        }
        return target
    }

    /// How a report names the vault at `path`: `-` for the copy of standard input.
    static func shown(_ path: String) -> String { path == spooled?.path ? "-" : path }

    /// Removes the temporary copy of a vault read from standard input (called when the command ends).
    static func finish() {
        guard let s = spooled else { return }
        unlink(s.path)
        TemporaryFiles.unregister(s.registration)
        spooled = nil
    }

    /// All of standard input, at most `max` bytes; more is an error naming `what` (exit 4, as a file over the
    /// limit is).
    static func readAll(max: Int, what: String) throws -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = read(0, &buf, buf.count)
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw CLIError(.io, "cannot read standard input: \(String(cString: strerror(errno)))") }
            if n == 0 { return out }
            guard out.count + n <= max else {
                throw CLIError(.damaged, "\(what) on standard input: more than the \(max)-byte limit")
            }
            out += buf[0..<n]
        }
    }

    /// Refuses to write `what` (binary) to standard output when it is a terminal, unless `force`.
    static func refuseTerminal(_ what: String, force: Bool) throws {
        guard !force, Output.out.isTerminal else { return }
        throw CLIError.usage("refusing to write \(what) to a terminal; redirect standard output (or --force)")
    }

    /// What a terminal is shown of a value without --force: at most this many bytes, of text.
    static let terminalValueMax = 1 << 20

    /// Writes a value (get, extract --stdout). To a pipe or a file: its bytes exactly, nothing added. To a
    /// terminal: only text (``isPrintableText(_:)``) of at most 1 MiB unless `force` (binary would garble the
    /// terminal, as age refuses it), followed by a newline when it does not end with one, so the shell's
    /// prompt does not stick to the secret.
    /// Writes all of `bytes` to `fd`; false if a write fails first.
    static func writeExactly(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    /// `count` bytes read from `fd`; nil if it ends sooner or a read fails.
    static func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                wipe(&out)
                return nil
            }
            done += n
        }
        return out
    }

    static func writeValue(_ value: [UInt8], name: String, force: Bool) throws {
        guard Output.out.isTerminal else {
            try value.withUnsafeBytes { try Output.out.writeBytes($0) }
            return
        }
        guard force || (value.count <= terminalValueMax && isPrintableText(value)) else { throw refusal(name) }
        try value.withUnsafeBytes { try Output.out.writeBytes($0) }
        if value.last != 10 { Output.out.write("\n") }
    }

    /// Why a value is not shown on a terminal.
    static func refusal(_ name: String) -> CLIError {
        CLIError.usage(
            "refusing to write \(name) to a terminal: it is not text of at most 1 MiB; redirect standard output (or --force)"
        )
    }

    /// Whether `bytes` is text a terminal may be shown: UTF-8 with no control character but tab and newlines.
    static func isPrintableText(_ bytes: [UInt8]) -> Bool {
        guard let s = String(validating: bytes, as: UTF8.self) else { return false }
        return !s.unicodeScalars.contains { $0 != "\t" && $0 != "\n" && $0 != "\r" && isTerminalControl($0) }
    }
}
