#if canImport(Glibc)
import Glibc
#endif
import VaultFormat

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
}

extension KeychainDirectory {
    /// Checks `vault` against the group's record and advances the record (SPEC.md §K6). Throws
    /// ``KeychainStatus/rolledBack`` when the vault is older than the generation last seen.
    public func checkGeneration(_ vault: Vault, group: String, key: SecureBytes) throws {
        let file = seenPath(group)
        let old = readSmallFile(file, max: SeenRecord.size + 1).flatMap { SeenRecord.decode($0, key: key) }
        if let old, old.vaultID == vault.header.vaultID {
            if old.generation > vault.generation {
                throw KeychainError(.rolledBack, "group \(group) was replaced by an older copy of itself: generation "
                    + "\(vault.generation), but \(old.generation) was seen (`kcar groups --accept-rollback` accepts it)")
            }
            if old.generation == vault.generation { return }
        }
        writeSeen(SeenRecord(vaultID: vault.header.vaultID, generation: vault.generation), group: group, key: key)
    }

    /// Forgets the generation seen of a group, so its vault as it is now is accepted.
    public func acceptRollback(_ group: String) throws {
        guard unlink(seenPath(group)) == 0 || errno == ENOENT else {
            throw KeychainError(.io, "cannot remove \(seenPath(group)): \(String(cString: strerror(errno)))")
        }
    }

    /// Best effort: a directory that cannot be written is not an error (SPEC.md §K6). The record only grows:
    /// a process that saw an older generation does not overwrite a newer one another process wrote.
    private func writeSeen(_ record: SeenRecord, group: String, key: SecureBytes) {
        let target = seenPath(group)
        if let current = readSmallFile(target, max: SeenRecord.size + 1).flatMap({ SeenRecord.decode($0, key: key) }),
           current.vaultID == record.vaultID, current.generation >= record.generation {
            return
        }
        let temp = "\(path)/.\(KeychainDirectory.stem(group)).seen.\(Hex.encode(SystemRandom.shared.bytes(6))).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = record.encode(key: key)
        let ok = write(fd, bytes, bytes.count) == bytes.count
        close(fd)
        if !ok || rename(temp, target) != 0 { unlink(temp) }
    }
}

/// Reads a whole file of at most `max` bytes; nil if it cannot be read or is larger.
func readSmallFile(_ path: String, max: Int) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out = [UInt8](repeating: 0, count: max + 1)
    var got = 0
    while got <= max {
        let n = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, max + 1 - got) }
        if n < 0, errno == EINTR { continue }
        if n <= 0 { break }
        got += n
    }
    guard got <= max else { return nil }
    return Array(out[0..<got])
}
