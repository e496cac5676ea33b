import CSodium
import Synchronization

/// Where a writer draws its random bytes (ids, keys, salts, nonces).
public protocol RandomSource: AnyObject {
    /// Fills `buffer` with random bytes.
    func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

extension RandomSource {
    /// `n` random bytes (public values: ids, names of temporary files).
    public func bytes(_ n: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        out.withUnsafeMutableBytes { fill($0) }
        return out
    }

    /// `n` random bytes of key material, in locked memory.
    public func secureBytes(_ n: Int) -> SecureBytes { SecureBytes(count: n) { fill($0) } }
}

/// The operating system's CSPRNG (`randombytes_buf`). Use this for every real vault. Draws of up to 24
/// bytes (ids, salts, nonces: public values) are served from a 4 KiB pool refilled from the CSPRNG, so
/// packing 10,000 files does not cost 10,000 `getrandom` calls; bytes handed out are erased from the pool.
/// Keys (32 bytes and more) always come straight from the CSPRNG into locked memory.
public final class SystemRandom: RandomSource, @unchecked Sendable {
    /// The one instance writers use unless told otherwise.
    public static let shared = SystemRandom()
    private static let poolSize = 4096
    private let pool = Mutex<(bytes: [UInt8], used: Int)>(([UInt8](repeating: 0, count: 4096), 4096))

    /// A source of its own (``shared`` serves every writer).
    public init() { Sodium.ensureInitialized() }

    /// Fills `buffer` from the CSPRNG (small draws through the pool).
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let p = buffer.baseAddress, buffer.count > 0 else { return }
        guard buffer.count <= 24 else {
            randombytes_buf(p, buffer.count)
            return
        }
        pool.withLock { pool in
            if pool.used + buffer.count > SystemRandom.poolSize {
                pool.bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
                pool.used = 0
            }
            for i in 0..<buffer.count {
                buffer[i] = pool.bytes[pool.used + i]
                pool.bytes[pool.used + i] = 0
            }
            pool.used += buffer.count
        }
    }
}

/// A reproducible stream: the ChaCha20 keystream that `randombytes_buf_deterministic(seed)` produces, consumed
/// in order. For test vectors and fixtures only; never for a vault that holds secrets.
package final class DeterministicRandom: RandomSource {
    private let seed: [UInt8]
    private var buffer: [UInt8] = []
    private var offset = 0

    /// `seed` must be 32 bytes.
    package init(seed: [UInt8]) {
        precondition(seed.count == 32, "seed must be 32 bytes")
        Sodium.ensureInitialized()
        self.seed = seed
    }

    package func fill(_ out: UnsafeMutableRawBufferPointer) {
        let need = offset + out.count
        if need > buffer.count {
            // Regenerate the prefix long enough: the keystream is a pure function of (seed, length prefix).
            let length = max(need, buffer.count * 2, 4096)
            var stream = [UInt8](repeating: 0, count: length)
            stream.withUnsafeMutableBytes { s in
                seed.withUnsafeBytes { k in
                    randombytes_buf_deterministic(s.baseAddress!, length, k.bindMemory(to: UInt8.self).baseAddress!)
                }
            }
            buffer = stream
        }
        for i in 0..<out.count { out[i] = buffer[offset + i] }
        offset = need
    }
}
