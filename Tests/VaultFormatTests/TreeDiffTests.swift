import TestSupport
import VaultFormat
import XCTest

/// The walk that finds where two trees differ (V9 step 1) finds exactly the differing keys, and reads pages
/// in proportion to the changes when the trees share their other pages.
final class TreeDiffTests: XCTestCase {
    func key(_ n: Int) -> [UInt8] {
        Array("genp".utf8) + [0, 1] + Array("svc\(n % 53)".utf8) + [0, 1]
            + withUnsafeBytes(of: UInt64(n).bigEndian, Array.init)
    }

    func entry(_ n: Int, _ v: Int) -> LeafEntry {
        LeafEntry(
            key: key(n), record: RecordRef(id: ID128(hi: UInt64(n), lo: 7), offset: UInt64(n) * 10, length: 10),
            writer: 1,
            rest: Array("v\(v)".utf8) + [UInt8](repeating: 1, count: n % 30))
    }

    func all(_ r: TreeReader) throws -> [[UInt8]: LeafEntry] {
        var out: [[UInt8]: LeafEntry] = [:]
        try r.scan {
            out[$0.key] = $0
            return true
        }
        return out
    }

    func randomChanges(_ rng: inout SplitMix64, _ count: Int, from model: [[UInt8]: LeafEntry], version: Int)
        -> [TreeWriter.Change]
    {
        var changes: [[UInt8]: TreeWriter.Change] = [:]
        for _ in 0..<count {
            let n = rng.below(30_000)
            if model[key(n)] != nil, rng.below(3) == 0 {
                changes[key(n)] = .remove(key(n))
            } else {
                changes[key(n)] = .put(entry(n, version))
            }
        }
        return changes.values.sorted { $0.key.lexicographicallyPrecedes($1.key) }
    }

    func testTheWalkFindsExactlyTheDifferences() throws {
        var rng = SplitMix64(state: 11)
        for round in 0..<12 {
            let store = MemoryPageStore()
            let base = (0..<(round * 2_000)).filter { _ in rng.below(3) > 0 }.map { entry($0, 0) }.sorted {
                $0.key.lexicographicallyPrecedes($1.key)
            }
            let builder = TreeBuilder(store: store, tree: .items)
            for e in base { try builder.append(e) }
            let top = try builder.finish()
            let model = try all(TreeReader(store: store, tree: .items, top: top))
            // Two copies changed apart: few changes, or many, or one side not at all.
            let counts = [(0, 5), (3, 3), (40, 1), (700, 900)][round % 4]
            let ta = try TreeWriter(store: store, tree: .items).apply(
                randomChanges(&rng, counts.0, from: model, version: 1), to: top)
            let tb = try TreeWriter(store: store, tree: .items).apply(
                randomChanges(&rng, counts.1, from: model, version: 2), to: top)
            let (ra, rb) = (
                TreeReader(store: store, tree: .items, top: ta), TreeReader(store: store, tree: .items, top: tb)
            )
            let (ma, mb) = (try all(ra), try all(rb))
            let expected: [[UInt8]] = Set(ma.keys).union(mb.keys).filter { ma[$0] != mb[$0] }.sorted {
                $0.lexicographicallyPrecedes($1)
            }
            let before = store.reads
            var found: [[UInt8]] = []
            try TreeDiff.walk(ra, rb) { d in
                XCTAssertEqual(d.a, ma[d.key])
                XCTAssertEqual(d.b, mb[d.key])
                found.append(d.key)
            }
            XCTAssertEqual(found, expected, "round \(round)")
            if counts.0 + counts.1 <= 10, let top {
                // A few changes: a few paths, not the whole tree.
                let height = try store.read(top).level + 1
                XCTAssertLessThanOrEqual(store.reads - before, 4 * height * (counts.0 + counts.1) + 4, "round \(round)")
            }
        }
    }
}
