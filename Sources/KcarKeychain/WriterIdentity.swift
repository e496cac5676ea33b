import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The writer id a user's version 2 commits record in their versions (SPEC.md Part 4, V5): 8 random bytes made
/// once per user and kept as 16 hex digits in `STATE/writer-id` (the keychain's state folder,
/// `$XDG_STATE_HOME/kcar`, else `~/.local/state/kcar`), mode 0600, so that every commit of one user on one
/// machine, from the CLI or a keychain, names the same writer. Without a usable state folder a process draws
/// one of its own.
package enum WriterIdentity {
    /// This user's writer id, made and kept on first use.
    package static func current(statePath: String? = KeychainDirectory.defaultStatePath()) -> UInt64 {
        guard let dir = statePath, dir.startsWithSlash else { return fresh() }
        if let id = existing(statePath: dir) { return id }
        let id = fresh()
        // Made as the rollback records' folder beside it is: 0700 with its parents, and trusted (SPEC.md §K1.1
        // rules 1 and 2), or no id is kept there.
        let folder = KeychainDirectory(path: dir, statePath: nil)
        guard (try? folder.create()) != nil, let t = try? folder.requireTrust(), t.sharedGroup == nil else { return id }
        // O_EXCL: two first runs at once keep the one written first (the other reads it).
        let fd = open(dir + "/writer-id", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return existing(statePath: dir) ?? id }
        defer { close(fd) }
        _ = (hex(id) + "\n").withCString { write(fd, $0, strlen($0)) }
        return id
    }

    /// The writer id kept in the state folder, if there is one (nothing is written).
    package static func existing(statePath: String? = KeychainDirectory.defaultStatePath()) -> UInt64? {
        guard let dir = statePath, dir.startsWithSlash else { return nil }
        let fd = open(dir + "/writer-id", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        var buf = [UInt8](repeating: 0, count: 64)
        let n = read(fd, &buf, buf.count)
        guard n >= 16 else { return nil }
        let text =
            String(decoding: buf[0..<n], as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == " " }).first.map(
                String.init) ?? ""
        guard text.utf8.count == 16, let b = Hex.decode(text), b.count == 8 else { return nil }
        return b.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// An id as the file holds it, and as `kcar history` prints it.
    package static func hex(_ id: UInt64) -> String {
        Hex.encode((0..<8).map { UInt8(truncatingIfNeeded: id >> (56 - 8 * UInt64($0))) })
    }

    static func fresh() -> UInt64 { SystemRandom.shared.bytes(8).reduce(0) { $0 << 8 | UInt64($1) } }
}
