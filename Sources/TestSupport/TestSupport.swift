/// SplitMix64: a small seeded generator for test values and benchmarks (never for secrets).
package struct SplitMix64: RandomNumberGenerator {
    package var state: UInt64
    package init(state: UInt64) { self.state = state }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    package mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// FNV-1a over the sorted (account, value) pairs of a vault's state: what `kcar-stress` prints and the crash
/// test recomputes on the vault it finds.
package func stateDigest(_ state: [String: [UInt8]]) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    func mix(_ b: UInt8) {
        h ^= UInt64(b)
        h = h &* 0x100_0000_01b3
    }
    for k in state.keys.sorted() {
        for b in k.utf8 { mix(b) }
        mix(0)
        for b in state[k]! { mix(b) }
        mix(0xFF)
    }
    return h
}

#if canImport(Glibc)
    import Glibc
    import VaultFormat

    /// A vault at `path` opened by the fixtures' key file, of generic passwords (service, account, further
    /// attributes, value): hostile packed vaults as an attacker would make them with the library.
    package func keyFileVault(
        _ path: String, group: String = "g", _ items: [(String, String, [String: AttributeValue], [UInt8])]
    ) throws {
        try Vault.create(
            path: path, group: group, slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: .version1,
            overwrite: true
        ) { tx in
            for (s, a, more, v) in items {
                var attributes = Attributes(more)
                attributes[AttributeName.service] = .string(s)
                attributes[AttributeName.account] = .string(a)
                try tx.add(attributes: attributes, value: .bytes(v))
            }
        }
    }

    /// A small tmpfs mounted for a test (full-disk and read-only-file-system tests). `mount` returns nil when
    /// mounting is not permitted (not root, no CAP_SYS_ADMIN, a restricted container): the test then skips.
    /// `unmount` is safe to call twice and detaches lazily if something still holds a file open.
    package final class ScratchMount {
        package let path: String
        private var mounted = true

        private init(path: String) { self.path = path }

        package static func mount(at path: String, size: String) -> ScratchMount? {
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else { return nil }
            guard Glibc.mount("tmpfs", path, "tmpfs", 0, "size=\(size),mode=0700") == 0 else {
                rmdir(path)
                return nil
            }
            return ScratchMount(path: path)
        }

        /// Makes the file system read-only (fails, returning false, while a file on it is open for writing).
        package func remountReadOnly() -> Bool {
            Glibc.mount(nil, path, nil, UInt(MS_REMOUNT | MS_RDONLY), nil) == 0
        }

        package func remountReadWrite() -> Bool {
            Glibc.mount(nil, path, nil, UInt(MS_REMOUNT), nil) == 0
        }

        /// Bytes still free.
        package var freeBytes: UInt64 {
            var s = statvfs()
            guard statvfs(path, &s) == 0 else { return 0 }
            return UInt64(s.f_bavail) * UInt64(s.f_frsize)
        }

        /// Fills the file system up with `name`, leaving at most `leave` bytes free (rounded to pages).
        package func fill(_ name: String, leave: UInt64 = 0) {
            let fd = open(path + "/" + name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return }
            defer { close(fd) }
            let page = [UInt8](repeating: 0xA5, count: 4096)
            while freeBytes > leave {
                let n = page.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) }
                if n <= 0 { break }
            }
        }

        package func unmount() {
            guard mounted else { return }
            if umount2(path, 0) != 0 { umount2(path, Int32(MNT_DETACH)) }
            mounted = false
            rmdir(path)
        }

        deinit { unmount() }
    }
#endif

/// The concurrency test's batches: writer `writer`'s commit `commit` puts items `i0`..`i(n-1)` of service
/// `w<writer>`, each holding this value (a header naming writer, commit and item, then seeded bytes; a few
/// large enough to get records of their own). A reader checks that the items of a writer are all present,
/// all from one commit and whole, or all absent (every 4th commit deletes them).
package func batchValue(writer: Int, commit: Int, item: Int) -> [UInt8] {
    var out = Array("w\(writer) c\(commit) i\(item)|".utf8)
    let size = commit % 5 == 2 && item == 0 ? 150_000 : 64 + (commit * 37 + item * 11 + writer * 5) % 2000
    var r = SplitMix64(state: UInt64(writer << 40 | commit << 16 | item))
    while out.count < size { out.append(UInt8(truncatingIfNeeded: r.next())) }
    return out
}

/// The commit a batch value names, if it is one.
package func batchCommit(_ value: [UInt8]) -> Int? {
    guard let bar = value.firstIndex(of: 0x7C) else { return nil }
    let fields = String(decoding: value[..<bar], as: UTF8.self).split(separator: " ")
    guard fields.count == 3, fields[1].hasPrefix("c") else { return nil }
    return Int(fields[1].dropFirst())
}

/// Whether a commit of the batch scheme deletes the writer's items.
package func batchDeletes(_ commit: Int) -> Bool { commit % 4 == 0 }

/// Writer `writer`'s commit `commit` of the batch scheme, as one vault commit.
package func commitBatch(_ vault: Vault, writer: Int, commit c: Int, items: Int) throws {
    let service = "w\(writer)"
    try vault.commit { tx in
        let mine = tx.items.filter { $0.service == service }
        if batchDeletes(c) {
            for item in mine { try tx.delete(item.id) }
            return
        }
        for i in 0..<items {
            let value = ValueSource.bytes(batchValue(writer: writer, commit: c, item: i))
            if let existing = mine.first(where: { $0.account == "i\(i)" }) {
                try tx.update(existing.id, value: value)
            } else {
                var a = Attributes()
                a[AttributeName.service] = .string(service)
                a[AttributeName.account] = .string("i\(i)")
                try tx.add(attributes: a, value: value)
            }
        }
    }
}
