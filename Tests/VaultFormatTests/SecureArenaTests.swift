import Dispatch
import XCTest

@testable import VaultFormat

/// Key material is carved from shared slabs of locked memory: blocks are zeroed before reuse, slabs are reused
/// rather than made per key, sizes past the largest block get memory of their own, and threads share it.
final class SecureArenaTests: XCTestCase {
    func testBlocksAreZeroedAndReusedNotMadeAnew() {
        let arena = SecureArena()
        var kept: [SecureBytes] = []
        for round in 0..<50 {
            // 300 keys of 32 bytes: a few slabs' worth, made and freed 50 times over.
            let keys = (0..<300).map { i in
                SecureBytes(count: 32) { b in
                    XCTAssertTrue(b.allSatisfy { $0 == 0 }, "a block is zero before it is filled")
                    for j in b.indices { b[j] = UInt8(truncatingIfNeeded: i &+ j &+ round) | 1 }
                }
            }
            if round == 0 { kept = keys }
        }
        XCTAssertEqual(kept[7].withUnsafeBytes { Array($0) }, (0..<32).map { UInt8(truncatingIfNeeded: 7 + $0) | 1 })
        // The shared arena: making and freeing keys again does not make slabs.
        let before = SecureArena.shared.slabCount
        for _ in 0..<1000 { _ = SecureBytes(copying: [UInt8](repeating: 0xAA, count: 64)) }
        XCTAssertLessThanOrEqual(SecureArena.shared.slabCount - before, 1)
        // A private arena, used directly: a freed block comes back zeroed.
        let p = arena.allocate(48)
        p.storeBytes(of: UInt64.max, as: UInt64.self)
        arena.free(p, 48)
        let q = arena.allocate(40)
        XCTAssertEqual(q, p, "the same size class reuses the block")
        XCTAssertEqual(q.load(as: UInt64.self), 0)
        arena.free(q, 40)
        XCTAssertEqual(arena.slabCount, 1)
    }

    func testSizesOfEveryClassAndLargerOnesKeepTheirBytes() {
        for count in [0, 1, 15, 16, 17, 32, 33, 100, 1000, 2047, 2048, 2049, 10_000, 65_536] {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ count) }
            let s = SecureBytes(copying: bytes)
            XCTAssertEqual(s.count, count)
            XCTAssertEqual(s.withUnsafeBytes { Array($0) }, bytes, "\(count)")
        }
    }

    func testThreadsShareTheArena() {
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for i in 0..<2000 {
                let n = 1 + (i * 37 + t) % 3000
                let s = SecureBytes(count: n) { b in for j in b.indices { b[j] = UInt8(truncatingIfNeeded: t) } }
                XCTAssertTrue(s.withUnsafeBytes { $0.allSatisfy { $0 == UInt8(truncatingIfNeeded: t) } })
            }
        }
    }
}
