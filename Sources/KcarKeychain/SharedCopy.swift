import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Shared copies of a group (SPEC.md Part 3, §K9): the device-only rule, and joining a group from a copy.
extension MergePolicy {
    /// A merge that keeps each side's ThisDeviceOnly items and sends none (the pull of a sync, and `kcar merge`).
    package static let deviceOnly = MergePolicy(isOwn: { Schema.isDeviceOnly($0.attributes) })
    /// The push of a sync into a shared copy: the device-only rule, and no tombstone of an item the copy never held.
    package static let deviceOnlyPush = MergePolicy(
        isOwn: { Schema.isDeviceOnly($0.attributes) }, takesUnknownTombstones: false)
}

extension KeychainDirectory {
    /// Joins group `group` from its shared copy at `source` (§K9): writes `key` as the group's key file and a copy
    /// of the file at `source` as its vault, in the create order of §K1. `check` is given the copy once it is the
    /// group's vault (the file at `source` may have changed since the caller looked at it), and throws if `key`
    /// does not open it or it does not hold `group`: the copy is then removed again. A key file already there must be the same
    /// key (else *auth failed*); a vault already there is kept (a concurrent join), and false is returned.
    package func joinGroup(_ group: String, key: SecureBytes, copying source: String, check: (String) throws -> Void)
        throws -> Bool
    {
        let trust = try prepareGroup(group)
        var st = stat()
        let wrote = lstat(keyPath(group), &st) != 0 ? try writeNew(keyPath(group), key, .key, trust) : false
        if !wrote {
            guard try readKey(group, trust).constantTimeEquals(key) else {
                throw KeychainError(
                    .authFailed,
                    "access group \(group) already has another key in \(path): the key given is not its key")
            }
        } else {
            // A record left by an earlier group of this name cannot verify under this key (§K6).
            unlink(seenPath(group))
        }
        if exists(group) { return false }
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw KeychainError(.io, "cannot open \(source): \(String(cString: strerror(errno)))") }
        defer { close(input) }
        let target = vaultPath(group)
        let linked = try writeNew(target, .vault, trust) { fd in
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress!, $0.count) }
                if n < 0, errno == EINTR { continue }
                guard n >= 0 else {
                    throw KeychainError(.io, "cannot read \(source): \(String(cString: strerror(errno)))")
                }
                if n == 0 { return true }
                var done = 0
                while done < n {
                    let w = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + done, n - done) }
                    if w < 0, errno == EINTR { continue }
                    guard w > 0 else { return false }
                    done += w
                }
            }
        }
        guard linked else { return false }
        do {
            try check(target)
        } catch {
            unlink(target)
            throw error
        }
        return true
    }
}
