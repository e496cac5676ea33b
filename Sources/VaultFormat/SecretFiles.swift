#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension UnlockSecret {
    /// The 32-byte key of a key file, as `kcar keygen` writes one (or an X25519 secret key: `kcar keygen
    /// --x25519`), read with the checks `kcar --key-file` makes: a regular file (a FIFO, device, socket or
    /// folder is refused with ``VaultError/Code/unsafeFile`` before it is read, so nothing blocks), read into
    /// locked memory that is wiped, of exactly 32 bytes (else ``VaultError/Code/invalidArgument``, which says
    /// so when the file is an age identity file: read that with ``identities(atPath:)``).
    public static func keyFile(atPath path: String) throws -> UnlockSecret {
        .keyFile(try SecretFiles.keyFile(path))
    }

    /// The keys of an identity file, as `kcar --identity` (`-i`) reads one: a 32-byte kcar key file, or an
    /// age identity file (`age-keygen`'s output: one `AGE-SECRET-KEY-1...` per line, blank lines and `#`
    /// comments ignored). Each opens the vault's key-file and X25519 slots; try them in turn (a
    /// ``VaultError/Code/wrongKey`` from one means: try the next). A regular file or an anonymous pipe.
    public static func identities(atPath path: String) throws -> [UnlockSecret] {
        try SecretFiles.identities(path).map { .keyFile($0) }
    }

    /// The passphrase in a file, as `kcar --passphrase-file` reads one: the file's bytes without one trailing
    /// newline (LF or CRLF), not empty. A regular file or an anonymous pipe (`<(pass show x)`).
    public static func passphraseFile(atPath path: String) throws -> UnlockSecret {
        .passphrase(
            try SecretFiles.passphrase(
                from: try SecretFiles.read(path, what: "passphrase file", allowPipe: true), source: path))
    }
}

extension SecureBytes {
    /// The 32 bytes of a key file, as `kcar keygen` writes one, read with the checks of
    /// ``UnlockSecret/keyFile(atPath:)``: for a new vault's slot (`SlotSecret.keyFile(key)`) and for opening it
    /// (`UnlockSecret.keyFile(key)`).
    public static func keyFile(atPath path: String) throws -> SecureBytes { try SecretFiles.keyFile(path) }
}

/// Reading secrets and small inputs from files without blocking and without leaving copies: what the
/// library's key loaders (``UnlockSecret/keyFile(atPath:)``, ...) and every kcar command that reads a key,
/// passphrase or input file share. Errors are ``VaultError``s naming the file: ``VaultError/Code/unsafeFile``
/// for a file of the wrong type, ``VaultError/Code/invalidArgument`` for a secret of the wrong shape,
/// ``VaultError/Code/io`` (with its errno) for a failed system call.
package enum SecretFiles {
    /// Secrets and identity files are at most this long.
    package static let secretMax = 65_536

    /// The key of a 32-byte key file.
    package static func keyFile(_ path: String) throws -> SecureBytes {
        let k = try read(path, what: "key file", allowPipe: false)
        guard k.count == 32 else {
            // The intuitive mistake: an age identity file given where a key file goes.
            // Searched in place: the file may hold a secret, which must not be copied into an unwiped String.
            let marker = Array("AGE-SECRET-KEY-1".utf8)
            let isAgeIdentity = k.withUnsafeBytes { b in
                b.count >= marker.count
                    && (0...(b.count - marker.count)).contains { i in
                        marker.indices.allSatisfy { b[i + $0] == marker[$0] }
                    }
            }
            if isAgeIdentity {
                throw VaultError(
                    .invalidArgument, path: path,
                    "\(path) is an age identity file, not a key file: give it with --identity \(path) (-i)")
            }
            throw VaultError(
                .invalidArgument, path: path,
                "key file \(path) must hold exactly 32 bytes (make one with `kcar keygen`; an age identity "
                    + "file goes with --identity)")
        }
        return k
    }

    /// The secret keys of an identity file: a 32-byte kcar key file, or an age identity file.
    package static func identities(_ path: String) throws -> [SecureBytes] {
        let file = try read(path, what: "identity file", allowPipe: true)
        // A 32-byte file cannot be an age identity (one line is 74 characters): it is a kcar key.
        if file.count == 32 { return [file] }
        var keys: [SecureBytes] = []
        var failure: String?
        file.withUnsafeBytes { b in
            var lineNumber = 0
            for raw in b.split(separator: 10, omittingEmptySubsequences: false) {
                lineNumber += 1
                var line = Array(raw)
                defer { wipe(&line) }
                while let last = line.last, last == 13 || last == 32 || last == 9 { line.removeLast() }
                while let first = line.first, first == 32 || first == 9 { line.removeFirst() }
                if line.isEmpty || line.first == UInt8(ascii: "#") { continue }
                guard let key = AgeKey.identity(line) else {
                    failure =
                        failure
                        ?? "identity file \(path), line \(lineNumber): not an age X25519 identity (AGE-SECRET-KEY-1...) "
                        + "nor a 32-byte kcar key; age's SSH and plugin identities are not supported"
                    continue
                }
                keys.append(key)
            }
        }
        if let failure { throw VaultError(.invalidArgument, path: path, failure) }
        guard !keys.isEmpty else {
            throw VaultError(.invalidArgument, path: path, "identity file \(path) holds no identity")
        }
        return keys
    }

    /// `raw` without one trailing newline (LF or CRLF); an empty passphrase is refused.
    package static func passphrase(from raw: SecureBytes, source: String) throws -> SecureBytes {
        let p = raw.withUnsafeBytes { b -> SecureBytes in
            var n = b.count
            if n > 0, b[n - 1] == 10 { n -= 1 }
            if n > 0, b[n - 1] == 13 { n -= 1 }
            return SecureBytes(copying: UnsafeRawBufferPointer(rebasing: b[0..<n]))
        }
        guard p.count > 0 else { throw VaultError(.invalidArgument, "the passphrase from \(source) is empty") }
        return p
    }

    /// The whole of the file at `path` (at most ``secretMax`` bytes), read into locked memory.
    package static func read(_ path: String, what: String, allowPipe: Bool) throws -> SecureBytes {
        let fd = try open(path, what: what, allowPipe: allowPipe)
        defer { close(fd) }
        return try Vault.naming(path) { try read(fd, what: "\(what) \(path)") }
    }

    /// Reads at most ``secretMax`` bytes from `fd` into locked memory.
    package static func read(_ fd: Int32, what: String) throws -> SecureBytes {
        let cap = secretMax
        var count = 0
        var failed: Int32 = 0
        let buf = SecureBytesBuilder(capacity: cap)
        while count < cap {
            let n = Glibc.read(fd, buf.pointer + count, cap - count)
            if n < 0 {
                if errno == EINTR { continue }
                failed = errno
                break
            }
            if n == 0 { break }
            count += n
        }
        if failed != 0 {
            var e = VaultError(.io, "cannot read \(what): \(String(cString: strerror(failed)))")
            e.errnoCode = failed
            throw e
        }
        guard count < cap else { throw VaultError(.invalidArgument, "\(what) is larger than 64 KiB") }
        return buf.finish(count: count)
    }

    /// Whether the open FIFO `fd` is an anonymous pipe (`|`, and `<(...)`'s /dev/fd/N), which the kernel
    /// names `pipe:[inode]`, rather than a FIFO in a file system.
    static func isAnonymousPipe(_ fd: Int32) -> Bool {
        var buf = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/self/fd/\(fd)", &buf, buf.count - 1)
        guard n > 0 else { return false }
        return String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self).hasPrefix("pipe:[")
    }

    /// Opens a file kcar reads a secret or an input from without ever blocking: a regular file, or with
    /// `allowPipe` an anonymous pipe (`--passphrase-file <(pass show x)`: it was made with its writer, so it
    /// ends when the writer does) or the null device. Anything else is refused with
    /// ``VaultError/Code/unsafeFile`` before it is read: a named FIFO (its open and reads wait for a writer
    /// anyone who can create it may withhold; read one on purpose with `--passphrase-fd 3 3<FIFO`, where the
    /// shell does the waiting), a device, socket or folder. A symbolic link given as the path is followed;
    /// what it names is checked.
    package static func open(_ path: String, what: String, allowPipe: Bool) throws -> Int32 {
        func check(_ st: stat, _ fd: Int32?) throws {
            let type = st.st_mode & S_IFMT
            if type == S_IFREG { return }
            if type == S_IFIFO, allowPipe, let fd {
                if isAnonymousPipe(fd) { return }
            }
            if type == S_IFIFO, fd == nil, allowPipe { return }  // decided once it is open (named or not)
            // The null device reads empty at once: `--value-file /dev/null` is the usual way to give an empty value.
            var null = stat()
            if type == S_IFCHR, allowPipe, stat("/dev/null", &null) == 0, null.st_mode & S_IFMT == S_IFCHR,
                st.st_rdev == null.st_rdev
            {
                return
            }
            let kind =
                type == S_IFIFO
                ? (allowPipe ? "a named FIFO" : "a FIFO or pipe")
                : type == S_IFDIR
                    ? "a folder"
                    : type == S_IFCHR || type == S_IFBLK
                        ? "a device" : type == S_IFSOCK ? "a socket" : "not a regular file"
            throw VaultError(
                .unsafeFile, path: path,
                "\(what) \(path) is \(kind), not a regular file\(allowPipe ? " or a pipe" : ""); refusing to read it")
        }
        var st = stat()
        if stat(path, &st) == 0 { try check(st, nil) }
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw VaultError(
                path: path, errno: errno, "cannot open \(what) \(path): \(String(cString: strerror(errno)))")
        }
        do {
            guard fstat(fd, &st) == 0 else {
                throw VaultError(
                    path: path, errno: errno, "cannot stat \(what) \(path): \(String(cString: strerror(errno)))")
            }
            try check(st, fd)
        } catch {
            close(fd)
            throw error
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }
}

/// Builds a ``SecureBytes`` in locked scratch memory, wiped when done.
package final class SecureBytesBuilder {
    package let pointer: UnsafeMutablePointer<UInt8>
    let capacity: Int

    package init(capacity: Int) {
        self.capacity = capacity
        pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        pointer.initialize(repeating: 0, count: capacity)
        mlock(pointer, capacity)
    }

    /// The first `count` bytes, copied into a ``SecureBytes``.
    package func finish(count: Int) -> SecureBytes {
        SecureBytes(copying: UnsafeBufferPointer(start: pointer, count: count))
    }

    deinit {
        // explicit_bzero is not optimised away.
        explicit_bzero(pointer, capacity)
        munlock(pointer, capacity)
        pointer.deallocate()
    }
}
