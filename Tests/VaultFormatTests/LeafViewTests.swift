import TestSupport
import XCTest

@testable import VaultFormat

/// A leaf searched in place (``LeafView``) is the leaf ``PageCodec/decode(_:)`` decodes: the same pages
/// refused, the same entries read, and a seek lands where a binary search over the decoded entries does.
/// Seeded leaves of the three trees, then structure-aware damage to each (varints, keys, tables, lengths).
final class LeafViewTests: XCTestCase {
    /// A leaf of `tree` with keys that share prefixes as item keys do, and tables of shared records and
    /// writers.
    func leaf(_ tree: TreeID, _ rng: inout SplitMix64) -> [UInt8] {
        let n = 1 + rng.below(rng.below(4) == 0 ? 3 : 120)
        var keys = Set<[UInt8]>()
        while keys.count < n {
            var k: [UInt8] = [UInt8(1 + rng.below(3))]
            for _ in 0..<rng.below(5) { k.append(contentsOf: Array("service-".utf8)) }
            for _ in 0..<(1 + rng.below(6)) { k.append(UInt8(rng.below(4) == 0 ? rng.below(256) : 48 + rng.below(4))) }
            keys.insert(k)
        }
        let records = (0..<(1 + rng.below(8))).map { i in
            RecordRef(
                id: ID128(hi: UInt64(i) << 40 | UInt64(rng.below(1000)), lo: rng.next()),
                offset: UInt64(rng.below(1 << 20)), length: UInt64(1 + rng.below(5000)))
        }
        let writers = (0..<(1 + rng.below(3))).map { _ in rng.next() }
        let entries = keys.sorted { $0.lexicographicallyPrecedes($1) }.map { k in
            var e = LeafEntry(key: k)
            if tree.hasTables {
                e.record = rng.below(5) == 0 ? nil : records[rng.below(records.count)]
                e.writer = rng.below(5) == 0 ? nil : writers[rng.below(writers.count)]
                e.rest = (0..<rng.below(12)).map { _ in UInt8(rng.below(256)) }
            }
            return e
        }
        return PageCodec.encode(Page(tree: tree, level: 0, content: .leaf(entries)))
    }

    /// Damage of the kinds a hostile writer chooses: a byte changed, a small value written over a varint, bytes
    /// cut, dropped or added.
    func damage(_ page: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        guard !page.isEmpty else { return [UInt8(rng.below(3))] }
        var b = page
        let at = rng.below(b.count)
        switch rng.below(6) {
        case 0: b[at] ^= UInt8(1 << rng.below(8))
        case 1: b[at] = UInt8([0, 1, 2, 3, 0x7F, 0x80, 0xFF][rng.below(7)])
        case 2: b[at] = b[at] &+ (rng.below(2) == 0 ? 1 : 255)
        case 3: b.removeSubrange(at...)
        case 4: b.remove(at: at)
        default: b.insert(UInt8(rng.below(4)), at: at)
        }
        return b
    }

    func decodedLeaf(_ bytes: [UInt8]) -> [LeafEntry]? {
        guard let page = try? PageCodec.decode(bytes), case .leaf(let e) = page.content else { return nil }
        return e
    }

    func testALeafSearchedInPlaceIsTheDecodedLeaf() throws {
        var rng = SplitMix64(state: 0x1eaf)
        for round in 0..<600 {
            let tree = [TreeID.items, .attributes, .history][round % 3]
            let bytes = leaf(tree, &rng)
            let decoded = try XCTUnwrap(decodedLeaf(bytes))
            let view = try XCTUnwrap(LeafView.checked(bytes), "round \(round)")
            XCTAssertEqual(view.entries, decoded, "round \(round)")
            XCTAssertEqual(view.firstKey, decoded.first?.key)
            XCTAssertEqual(view.lastKey, decoded.last?.key)
            XCTAssertEqual(view.count, decoded.count)
            // Targets: each key, its prefixes and extensions, keys between, below all and above all.
            var targets: [[UInt8]] = [[], [0], [255, 255]]
            for e in decoded.prefix(20) {
                targets.append(e.key)
                targets.append(Array(e.key.dropLast()))
                targets.append(e.key + [0])
                targets.append(e.key + [UInt8(rng.below(256))])
                var bumped = e.key
                bumped[bumped.count - 1] &+= 1
                targets.append(bumped)
            }
            for t in targets {
                let expected = decoded.firstIndex { !$0.key.lexicographicallyPrecedes(t) } ?? decoded.count
                var cursor = view.seek(t)
                XCTAssertEqual(cursor.index, expected, "round \(round), target \(t)")
                XCTAssertEqual(view.next(&cursor), expected < decoded.count ? decoded[expected] : nil)
                if expected + 1 < decoded.count { XCTAssertEqual(view.next(&cursor), decoded[expected + 1]) }
            }
        }
    }

    /// Every damaged leaf is refused by both readers or read alike by both; records named past the page's own
    /// offset are refused by the view exactly when ``PageCodec/checkRecordsEnd(_:before:_:)`` refuses them.
    func testDamagedLeavesAreRefusedByBothReadersAlike() throws {
        var rng = SplitMix64(state: 0xda4a9e)
        var refused = 0
        var read = 0
        for round in 0..<300 {
            let tree = [TreeID.items, .attributes, .history][round % 3]
            let bytes = leaf(tree, &rng)
            for _ in 0..<40 {
                var d = damage(bytes, &rng)
                if rng.below(4) == 0 { d = damage(d, &rng) }
                let decoded = decodedLeaf(d)
                let view = LeafView.checked(d)
                XCTAssertEqual(view != nil, decoded != nil, "round \(round): \(d)")
                if let view, let decoded {
                    XCTAssertEqual(view.entries, decoded)
                    read += 1
                } else {
                    refused += 1
                }
            }
            if let decoded = decodedLeaf(bytes) {
                let ends = decoded.compactMap { $0.record.map { $0.offset + $0.length } }
                for before in [0] + ends + ends.map({ $0 - 1 }) {
                    let endsBefore = (try? PageCodec.checkRecordsEnd(decoded, before: UInt64(before), "page")) != nil
                    XCTAssertEqual(LeafView.checked(bytes, recordsBefore: UInt64(before)) != nil, endsBefore)
                }
            }
        }
        // Both outcomes were reached, many times: the comparison is not vacuous.
        XCTAssertGreaterThan(refused, 3000)
        XCTAssertGreaterThan(read, 500)
    }

    /// A leaf of more than `searchMax` entries is decoded and bisected, not walked: a legal leaf of
    /// PAGE_ENTRIES_MAX entries would otherwise cost every lookup a walk of tens of thousands of entries.
    func testALargeLeafIsDecodedForLookups() throws {
        for n in [LeafView.searchMax, LeafView.searchMax + 1, 5_000] {
            let store = MemoryPageStore()
            let entries = (0..<n).map { i in LeafEntry(key: [1] + Array(String(i + 100_000).utf8), writer: 9, rest: [])
            }
            let ref = try store.write(Page(tree: .items, level: 0, content: .leaf(entries)))
            switch try store.node(ref) {
            case .leaf: XCTAssertLessThanOrEqual(n, LeafView.searchMax)
            case .page(let p):
                XCTAssertGreaterThan(n, LeafView.searchMax)
                XCTAssertEqual(p.content, .leaf(entries))
            }
            let reader = TreeReader(store: store, tree: .items, top: ref)
            for i in stride(from: 0, to: n, by: 37) { XCTAssertEqual(try reader.lookup(entries[i].key), entries[i]) }
            XCTAssertNil(try reader.lookup([1, 0x30]))
        }
    }

    /// A damaged leaf met by a lookup is refused with the words the page decoder uses.
    func testALookupRefusesADamagedLeafAsTheDecoderDoes() throws {
        let store = MemoryPageStore()
        var rng = SplitMix64(state: 7)
        let entries = (0..<50).map { i in LeafEntry(key: [1, UInt8(i)], writer: 9, rest: [UInt8(i)]) }
        let ref = try store.write(Page(tree: .items, level: 0, content: .leaf(entries)))
        let reader = TreeReader(store: store, tree: .items, top: ref)
        XCTAssertEqual(try reader.lookup([1, 7])?.rest, [7])
        var bytes = try XCTUnwrap(store.pages[ref.id]).bytes
        while true {
            let d = damage(bytes, &rng)
            guard d.count == bytes.count, decodedLeaf(d) == nil else { continue }
            bytes = d
            break
        }
        store.overwrite(ref.id, with: bytes)
        var expected = ""
        XCTAssertThrowsError(try PageCodec.decode(bytes)) { expected = "\($0)" }
        XCTAssertThrowsError(try reader.lookup([1, 7])) { XCTAssertEqual("\($0)", expected) }
    }
}
