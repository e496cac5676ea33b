import CSodium
import Synchronization

/// Key material in locked memory, zeroed when it is freed (on deinit). Immutable once made, so it is safe to
/// share between threads.
///
/// Small secrets (keys: up to 2,048 bytes) are carved from slabs of locked pages that many
/// share (`SecureArena`); larger ones (passphrases, identity files) get a `sodium_malloc` of their own
/// (guard pages, `mlock`). Either way the memory is never swapped out nor in a core dump, and is zeroed
/// before it is reused or freed.
public final class SecureBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    /// Number of bytes held.
    public let count: Int

    /// Allocates `count` zero bytes; `fill` may write them. Traps only if the system is out of memory.
    public init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Void = { _ in }) rethrows {
        let p = SecureArena.shared.allocate(count)
        pointer = p
        self.count = count
        do {
            try fill(UnsafeMutableRawBufferPointer(start: p, count: count))
        } catch {
            SecureArena.shared.free(p, count)
            throw error
        }
    }

    /// Copies `bytes` into locked memory. The caller remains responsible for the source buffer.
    public convenience init<C: Collection>(copying bytes: C) where C.Element == UInt8 {
        self.init(count: bytes.count) { dst in for (i, b) in bytes.enumerated() { dst[i] = b } }
    }

    deinit { SecureArena.shared.free(pointer, count) }

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

/// Where ``SecureBytes`` come from: slabs of locked memory (each one `sodium_malloc`: guard pages on both
/// sides, `mlock`, no core dump) cut into blocks of a power of two from 16 to ``largest`` bytes, a free list
/// per size; larger requests get a `sodium_malloc` of their own. A freed block is zeroed before it goes back
/// on its list. Slabs are kept for the process's life: what it holds is bounded by the most secrets it ever
/// held at once.
///
/// One `sodium_malloc` per key cost nine system calls (mmap, three mprotect, mlock, madvise; munlock, mprotect,
/// munmap) and the page faults of three new pages: opening a keychain group made 23 of them, about a fifth of
/// a `kcar get`'s system calls. A slab holds a whole command's keys.
package final class SecureArena: Sendable {
    /// The process's arena.
    package static let shared = SecureArena()
    /// The largest request served from a slab; a larger one is a `sodium_malloc` of its own.
    package static let largest = 2048
    /// Bytes per slab (four pages).
    static let slabBytes = 16_384
    /// Block sizes: 16, 32, ... ``largest``.
    static let classes = (4...11).map { 1 << $0 }

    private struct State: ~Copyable {
        /// Free blocks of each size class, by address (a pointer is not `Sendable`).
        var free: [[UInt]] = Array(repeating: [], count: SecureArena.classes.count)
        /// The address of the slab being cut, and how much of it is used.
        var slab: UInt = 0
        var used = SecureArena.slabBytes
        /// Slabs made (tests read it).
        var slabs = 0
    }

    private let state = Mutex(State())

    init() { Sodium.ensureInitialized() }

    /// The size class of a request of `count` bytes, or nil when it is served on its own.
    private static func sizeClass(_ count: Int) -> Int? {
        guard count <= largest else { return nil }
        return classes.firstIndex { $0 >= count }
    }

    /// `count` zeroed bytes of locked memory (at least 1). Traps only when the system is out of memory.
    package func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        guard let c = SecureArena.sizeClass(max(count, 1)) else {
            guard let p = sodium_malloc(count) else { fatalError("sodium_malloc failed: out of memory") }
            sodium_memzero(p, count)
            return p
        }
        let size = SecureArena.classes[c]
        let address = state.withLock { s -> UInt in
            if let p = s.free[c].popLast() { return p }
            if s.used + size > SecureArena.slabBytes {
                // The rest of the old slab (less than one block of this size) is left unused.
                guard let slab = sodium_malloc(SecureArena.slabBytes) else {
                    fatalError("sodium_malloc failed: out of memory")
                }
                sodium_memzero(slab, SecureArena.slabBytes)
                s.slab = UInt(bitPattern: slab)
                s.used = 0
                s.slabs += 1
            }
            let p = s.slab + UInt(s.used)
            s.used += size
            return p
        }
        return UnsafeMutableRawPointer(bitPattern: address)!
    }

    /// Zeroes and releases what ``allocate(_:)`` gave for `count` bytes.
    package func free(_ pointer: UnsafeMutableRawPointer, _ count: Int) {
        guard let c = SecureArena.sizeClass(max(count, 1)) else {
            sodium_free(pointer)  // zeroes before freeing
            return
        }
        sodium_memzero(pointer, SecureArena.classes[c])
        let address = UInt(bitPattern: pointer)
        state.withLock { $0.free[c].append(address) }
    }

    /// Slabs made so far.
    package var slabCount: Int { state.withLock { $0.slabs } }
}
