import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The generation record of a group (SPEC.md §K6): the last generation this keychain saw of its vault, so a
/// vault replaced by an older copy of itself is noticed.
struct SeenRecord: Equatable {
    static let magic = Array("kcar-seen-v1".utf8)
    static let size = 68

    let vaultID: [UInt8]
    let generation: UInt64

    func encode(key: SecureBytes) -> [UInt8] {
        var body = SeenRecord.magic + vaultID
        for i in 0..<8 { body.append(UInt8(truncatingIfNeeded: generation >> (8 * UInt64(i)))) }
        return body + Digest.mac(key: key, body)
    }

    /// Nil unless the bytes are a whole record whose MAC holds under `key`.
    static func decode(_ bytes: [UInt8], key: SecureBytes) -> SeenRecord? {
        guard bytes.count == size, Array(bytes[0..<12]) == magic else { return nil }
        let body = Array(bytes[0..<36])
        guard Digest.constantTimeEqual(Digest.mac(key: key, body), Array(bytes[36..<68])) else { return nil }
        var g: UInt64 = 0
        for i in 0..<8 { g |= UInt64(bytes[28 + i]) << (8 * UInt64(i)) }
        return SeenRecord(vaultID: Array(bytes[12..<28]), generation: g)
    }

    /// Whether this record already holds `other`: the same vault, at its generation or later.
    func covers(_ other: SeenRecord) -> Bool { vaultID == other.vaultID && generation >= other.generation }
}

extension KeychainDirectory {
    /// The generation of a group's first commit: a vault past it must have a record (SPEC.md §K6).
    static let firstGeneration: UInt64 = 1

    /// Checks `vault` against the group's record and advances the record (SPEC.md §K6). Throws
    /// ``KeychainStatus/rolledBack`` when the vault is older than the generation last seen, when the record
    /// names another vault or does not verify with the group's key (one of them was replaced), and when the
    /// record is missing although the vault is past its first commit (it was deleted). A record newer than
    /// `vault` is not taken for a rollback before `vault` is caught up (``Vault/refresh()``), after the records
    /// are read: another process may have committed, and written its record, since `vault` was opened.
    public func checkGeneration(_ vault: Vault, group: String, key: SecureBytes) throws {
        try checkGeneration(vault, group: group, key: key, trust: try requireTrust())
    }

    func checkGeneration(_ vault: Vault, group: String, key: SecureBytes, trust: KeychainTrust) throws {
        let file = seenPath(group)
        let accept = "(`kcar groups --accept-rollback \(group)` accepts the vault as it is now)"
        let own = ownRecordFolder(group, trust)
        let owner = privateOwner(group, trust)
        // This user's own copy: it names the vault only while the group is the one this user saw (a group
        // made afresh under the same name has another id, and only the folder's record can tell, below).
        let mine = own.flatMap { own in
            (try? own.folder.readTrusted(
                own.folder.path + "/" + own.name, .seen, own.trust, prefix: SeenRecord.size + 1))
                .flatMap { SeenRecord.decode($0, key: key) }
        }
        // One byte more than a record: a longer file is read no further and fails to decode.
        var seen: SeenRecord?
        if let bytes = try readTrusted(file, .seen, trust, privateTo: owner, prefix: SeenRecord.size + 1) {
            guard let old = SeenRecord.decode(bytes, key: key) else {
                throw KeychainError(
                    .rolledBack,
                    "the generation record \(file) of group \(group) does not verify with the "
                        + "group's key: the key or the record was replaced \(accept)")
            }
            seen = old
        }
        // A writer writes a record after the commit it names. A record past this instance's generation is a
        // commit made since it last caught up (another process's), or a rollback: caught up now, after both
        // records were read, the vault is at every generation they name unless an older copy replaced it.
        // (Caught up before they were read, a commit and its record could both land in between: a false
        // rollback under concurrent writers.)
        if max(mine?.generation ?? 0, seen?.generation ?? 0) > vault.generation { try vault.refresh() }
        let current = SeenRecord(vaultID: vault.header.vaultID, generation: vault.generation)
        if let own, let mine, mine.vaultID == current.vaultID, mine.generation > current.generation {
            throw KeychainError(
                .rolledBack,
                "group \(group) was replaced by an older copy of itself (with its record): "
                    + "generation \(vault.generation), but this user saw \(mine.generation) (\(own.folder.path)/\(own.name)) \(accept)"
            )
        }
        if let old = seen {
            guard old.vaultID == vault.header.vaultID else {
                throw KeychainError(
                    .rolledBack,
                    "group \(group)'s vault was replaced by another vault (id "
                        + "\(Hex.encode(vault.header.vaultID)), but \(Hex.encode(old.vaultID)) was seen) \(accept)")
            }
            if old.generation > vault.generation {
                throw KeychainError(
                    .rolledBack,
                    "group \(group) was replaced by an older copy of itself: generation "
                        + "\(vault.generation), but \(old.generation) was seen \(accept)")
            }
        } else if vault.generation > KeychainDirectory.firstGeneration {
            throw KeychainError(
                .rolledBack,
                "group \(group) has no generation record \(file) although its vault is at "
                    + "generation \(vault.generation): the record was deleted \(accept)")
        }
        // Records read just now that already hold this generation are not read again to be written.
        if !(seen?.covers(current) ?? false) {
            writeRecord(
                current, name: KeychainDirectory.stem(group) + ".seen", key: key, trust: trust, privateTo: owner)
        }
        if let own, !(mine?.covers(current) ?? false) {
            own.folder.writeRecord(current, name: own.name, key: key, trust: own.trust)
        }
    }

    /// Accepts the group's vault as it is now (after a deliberate restore): the record, and this user's
    /// copy of it, are written afresh for it, whatever was there.
    public func acceptRollback(_ group: String) throws {
        let trust = try requireTrust()
        let key = try readKey(group, trust)
        try checkVaultFile(group, trust)
        let v = try Vault.open(path: vaultPath(group), secret: .keyFile(key), mode: .read)
        guard v.header.group == group else {
            throw KeychainError(.decode, "\(v.path) holds group \(v.header.group), not \(group)")
        }
        let record = SeenRecord(vaultID: v.header.vaultID, generation: v.generation)
        guard
            writeRecord(
                record, name: KeychainDirectory.stem(group) + ".seen", key: key, trust: trust,
                privateTo: privateOwner(group, trust), replace: true)
        else {
            throw KeychainError(.io, "cannot write \(seenPath(group))")
        }
        if let own = ownRecordFolder(group, trust) {
            own.folder.writeRecord(record, name: own.name, key: key, trust: own.trust, replace: true)
        }
    }

    /// This user's folder of record copies (created, 0700, if missing) and the copy's name for this
    /// keychain and group: the BLAKE2b-128 of the keychain's real path, a NUL and the group. Nil if there is
    /// no such folder or it is not trusted (K1.1 rules 1 and 2): the copy is then not kept, and the check is
    /// the folder's record alone.
    private func ownRecordFolder(_ group: String, _ trust: KeychainTrust) -> (
        folder: KeychainDirectory, name: String, trust: KeychainTrust
    )? {
        guard let statePath else { return nil }
        let folder = KeychainDirectory(path: statePath + "/seen", statePath: nil)
        guard let t = try? folder.createTrusted().trust, t.sharedGroup == nil else {
            return nil
        }
        let name =
            Hex.encode(Digest.blake2b(Array(trust.realPath.utf8) + [0] + Array(group.utf8), outputBytes: 16)) + ".seen"
        return (folder, name, t)
    }

    /// Writes a record as `name` in this folder (temporary file and rename). Best effort: a directory that
    /// cannot be written is not an error (SPEC.md §K6). Unless `replace`, the record only grows: a process
    /// that saw an older generation does not overwrite a newer one another process wrote. Stale temporary
    /// records of this name (writers that died) are removed first. `owner` is the user a private group's
    /// record belongs to (SPEC.md §K1.2). Returns whether it was written.
    @discardableResult
    private func writeRecord(
        _ record: SeenRecord, name: String, key: SecureBytes, trust: KeychainTrust,
        privateTo owner: uid_t? = nil, replace: Bool = false
    ) -> Bool {
        let target = path + "/" + name
        if !replace, let bytes = try? readTrusted(target, .seen, trust, privateTo: owner, prefix: SeenRecord.size + 1),
            let current = SeenRecord.decode(bytes, key: key), current.covers(record)
        {
            return true
        }
        let prefix = ".\(name)."
        removeStaleTemporaries(prefix: prefix)
        let isPrivate = owner != nil
        guard
            let (fd, temp) = lockedTemporary(
                prefix: prefix, mode: KeychainDirectory.mode(.seen, trust, isPrivate: isPrivate))
        else {
            return false
        }
        let bytes = record.encode(key: key)
        let ok =
            write(fd, bytes, bytes.count) == bytes.count
            && KeychainDirectory.setMode(fd, .seen, trust, isPrivate: isPrivate)
        let placed = ok && rename(temp, target) == 0
        let refused = errno == EPERM
        if !placed { unlink(temp) }
        close(fd)
        if !placed, ok, refused, !isPrivate, trust.sharedGroup != nil { return rewriteInPlace(target, bytes, trust) }
        return placed
    }

    /// A shared group's record that another member owns cannot be renamed over in the sticky shared folder
    /// (SPEC.md §K1.2): it is rewritten in place instead, under an exclusive `flock` that readers take shared,
    /// so that no reader sees half a record. Only a record that passes the rules of §K1.1 for the shared
    /// group is written; best effort, as every record write.
    private func rewriteInPlace(_ target: String, _ bytes: [UInt8], _ trust: KeychainTrust) -> Bool {
        let fd = open(target, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_gid == trust.sharedGroup,
            st.st_mode & S_IWOTH == 0,
            KeychainDirectory.briefLock(fd, LOCK_EX)
        else { return false }
        return pwrite(fd, bytes, bytes.count, 0) == bytes.count && ftruncate(fd, off_t(bytes.count)) == 0
            && fsync(fd) == 0
    }

    /// Creates a temporary file `prefix` + 12 lowercase hex digits + `.tmp`, locked while it exists so that
    /// another writer's clean-up (``removeStaleTemporaries(prefix:)``) leaves it alone. A clean-up can still
    /// remove it between its creation and the lock: then it is made again. Nil (errno set) if it cannot be.
    func lockedTemporary(prefix: String, mode: mode_t) -> (fd: Int32, path: String)? {
        for _ in 0..<8 {
            let temp = "\(path)/\(prefix)\(Hex.encode(SystemRandom.shared.bytes(6))).tmp"
            let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            guard fd >= 0 else { return nil }
            // Blocking: a clean-up holds the lock only to unlink.
            var st = stat()
            if flock(fd, LOCK_EX) == 0, fstat(fd, &st) == 0, st.st_nlink > 0 { return (fd, temp) }
            close(fd)
        }
        errno = EAGAIN
        return nil
    }

    /// Removes temporary files `prefix` + 12 lowercase hex digits + `.tmp` that no process holds a lock on
    /// (SPEC.md §K1): what writers killed before their rename left.
    func removeStaleTemporaries(prefix: String) {
        let hex = Set("0123456789abcdef".utf8)
        for name in fileNames() ?? [] {
            guard name.hasPrefix(prefix), name.hasSuffix(".tmp") else { continue }
            let middle = name.utf8.dropFirst(prefix.utf8.count).dropLast(4)
            guard middle.count == 12, middle.allSatisfy(hex.contains) else { continue }
            let file = "\(path)/\(name)"
            let fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { continue }
            var st = stat()
            if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, flock(fd, LOCK_EX | LOCK_NB) == 0 { unlink(file) }
            close(fd)
        }
    }
}
