import CSodium

/// Key material in locked memory (`sodium_malloc`: guard pages, `mlock`), zeroed and freed on deinit.
/// Immutable once made, so it is safe to share between threads.
public final class SecureBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    /// Number of bytes held.
    public let count: Int

    /// Allocates `count` zero bytes; `fill` may write them. Traps only if the system is out of memory.
    public init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Void = { _ in }) rethrows {
        Sodium.ensureInitialized()
        guard let p = sodium_malloc(max(count, 1)) else { fatalError("sodium_malloc failed: out of memory") }
        pointer = p
        self.count = count
        sodium_memzero(p, max(count, 1))
        do {
            try fill(UnsafeMutableRawBufferPointer(start: p, count: count))
        } catch {
            sodium_free(p)
            throw error
        }
    }

    /// Copies `bytes` into locked memory. The caller remains responsible for the source buffer.
    public convenience init<C: Collection>(copying bytes: C) where C.Element == UInt8 {
        self.init(count: bytes.count) { dst in for (i, b) in bytes.enumerated() { dst[i] = b } }
    }

    deinit { sodium_free(pointer) }  // sodium_free zeroes before freeing

    /// Calls `body` with the bytes; do not let the pointer escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    var baseAddress: UnsafePointer<UInt8> { UnsafePointer(pointer.assumingMemoryBound(to: UInt8.self)) }

    /// Constant-time comparison.
    public func constantTimeEquals(_ other: SecureBytes) -> Bool {
        count == other.count && sodium_memcmp(pointer, other.pointer, count) == 0
    }
}

/// Zeroes a byte array in place (for transient plaintext copies of secrets), in a way the compiler keeps.
public func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { b in
        if let p = b.baseAddress { sodium_memzero(p, b.count) }
    }
}
