import TestSupport
import VaultFormat
import XCTest

/// The bottom-up builder (compaction, upgrades, imports) makes trees that pass every rule of V3.3 and hold
/// exactly the entries handed to it, at any size; they take copy-on-write changes like any other tree.
final class TreeBuilderTests: XCTestCase {
    func entry(_ n: Int, rng: inout SplitMix64) -> LeafEntry {
        var k = Array("genp".utf8) + [0, 1, 1] + Array("svc\(n % 97)".utf8) + [0, 1]
        k += withUnsafeBytes(of: UInt64(n).bigEndian, Array.init)
        let body = (0..<rng.below(120)).map { _ in UInt8(truncatingIfNeeded: rng.below(256)) }
        return LeafEntry(
            key: k, record: RecordRef(id: ID128(hi: UInt64(n / 50), lo: 1), offset: UInt64(n / 50) * 9, length: 9),
            writer: UInt64(n % 3), rest: body)
    }

    func testBuiltTreesVerifyAndHoldWhatWasGiven() throws {
        var rng = SplitMix64(state: 77)
        for size in [0, 1, 2, 3, 40, 41, 63, 64, 65, 200, 1_000, 4_099, 30_000] {
            let store = MemoryPageStore()
            let entries = (0..<size).map { entry($0, rng: &rng) }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            let builder = TreeBuilder(store: store, tree: .items)
            for e in entries { try builder.append(e) }
            let top = try builder.finish()
            XCTAssertEqual(builder.count, UInt64(size))
            XCTAssertEqual(top == nil, size == 0, "size \(size)")
            var seen: [LeafEntry] = []
            XCTAssertEqual(
                try TreeReader(store: store, tree: .items, top: top).verify { seen.append($0) }, UInt64(size),
                "size \(size)")
            XCTAssertEqual(seen, entries, "size \(size)")
            guard let top else { continue }
            let topPage = try store.read(top)
            if case .branch(let children) = topPage.content {
                XCTAssertGreaterThan(children.count, 1, "a top branch with one child")
            }
            // Pages are full: no more pages than twice what the entries' weight needs, plus a path.
            let leaves = store.pages.count
            let weight = entries.reduce(0) { $0 + $1.weight }
            XCTAssertLessThanOrEqual(
                leaves, 2 * (weight / PagedLimits.pageTarget + 1) + topPage.level + 1, "size \(size)")
            // Lookups, and a copy-on-write change on top of a built tree.
            let reader = TreeReader(store: store, tree: .items, top: top)
            for _ in 0..<10 {
                let e = entries[rng.below(entries.count)]
                XCTAssertEqual(try reader.lookup(e.key), e)
            }
            let after = try TreeWriter(store: store, tree: .items).apply([.remove(entries[0].key)], to: top)
            XCTAssertEqual(try TreeReader(store: store, tree: .items, top: after).verify(), UInt64(size - 1))
        }
    }

    func testOutOfOrderEntriesAreRefused() throws {
        var rng = SplitMix64(state: 1)
        let builder = TreeBuilder(store: MemoryPageStore(), tree: .items)
        try builder.append(entry(5, rng: &rng))
        XCTAssertThrowsError(try builder.append(entry(5, rng: &rng)))
        XCTAssertThrowsError(try builder.append(LeafEntry(key: [])))
    }
}
