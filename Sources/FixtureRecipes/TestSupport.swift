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
