import TestSupport
import VaultFormat
import XCTest

/// The version 2 index's key coding, page codec and copy-on-write trees (SPEC.md Part 4, V3), against a
/// sorted-dictionary model.
final class PagedTreeTests: XCTestCase {
    // MARK: Keys

    func testTypedKeyOrderIsValueOrder() throws {
        var rng = SplitMix64(state: 7)
        func randomValue() -> AttributeValue {
            switch rng.below(5) {
            case 0:
                return .string(
                    String(
                        (0..<rng.below(6)).map { _ in ["a", "b", "\u{0}", "é", "z", "\u{10FFFF}"][rng.below(6)] }
                            .joined()))
            case 1: return .integer([Int64.min, -1, 0, 1, Int64.max, Int64(bitPattern: rng.next())][rng.below(6)])
            case 2: return .bool(rng.below(2) == 1)
            case 3: return .date(nanoseconds: Int64(bitPattern: rng.next()))
            default: return .data((0..<rng.below(5)).map { _ in [0, 1, 0xFF, 0x7F][rng.below(4)] })
            }
        }
        func typeRank(_ v: AttributeValue) -> Int {
            switch v {
            case .string: return 1
            case .integer: return 2
            case .bool: return 3
            case .date: return 4
            case .data: return 5
            }
        }
        func less(_ a: AttributeValue, _ b: AttributeValue) -> Bool {
            if typeRank(a) != typeRank(b) { return typeRank(a) < typeRank(b) }
            switch (a, b) {
            case (.string(let x), .string(let y)): return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
            case (.integer(let x), .integer(let y)): return x < y
            case (.bool(let x), .bool(let y)): return !x && y
            case (.date(let x), .date(let y)): return x < y
            case (.data(let x), .data(let y)): return x.lexicographicallyPrecedes(y)
            default: return false
            }
        }
        for _ in 0..<5000 {
            let a = [randomValue(), randomValue()]
            let b = [randomValue(), randomValue()]
            var ka: [UInt8] = []
            var kb: [UInt8] = []
            for v in a { KeyCoding.appendTyped(v, to: &ka) }
            for v in b { KeyCoding.appendTyped(v, to: &kb) }
            let model = less(a[0], b[0]) || (a[0] == b[0] && less(a[1], b[1]))
            XCTAssertEqual(ka.lexicographicallyPrecedes(kb), model, "\(a) vs \(b)")
            var p = 0
            XCTAssertEqual([try KeyCoding.readTyped(ka, &p), try KeyCoding.readTyped(ka, &p)], a)
            XCTAssertEqual(p, ka.count)
        }
    }

    func testItemKeysUseSchemaDefaultsAndParseBack() throws {
        let schema = ClassSchema(keyAttributes: [("sync", .bool(false)), ("svce", .string("")), ("acct", .string(""))])
        let id = ItemID(Array(0..<16))
        var a = Attributes()
        a["svce"] = .string("github.com")
        let (key, absent) = ItemKey.make(class: "genp", attributes: a, schema: schema, id: id)
        XCTAssertEqual(absent, 0b101)
        let parsed = try ItemKey.parse(key) { $0 == "genp" ? schema : nil }
        XCTAssertEqual(parsed.itemClass, "genp")
        XCTAssertEqual(parsed.values, [.bool(false), .string("github.com"), .string("")])
        XCTAssertEqual(parsed.id, id)
        XCTAssertTrue(key.starts(with: ItemKey.prefix(class: "genp", values: [.bool(false), .string("github.com")])))
        // A class without a schema is keyed by its id alone.
        let bare = ItemKey.make(class: "note", attributes: a, schema: nil, id: id).key
        XCTAssertEqual(bare, Array("note".utf8) + [0, 1] + id.bytes)
    }

    func testMalformedKeysAreDamagedIndex() {
        for bad: [UInt8] in [[1, 0x61, 0x00, 0x02], [1, 0x61], [2, 1, 2, 3], [3, 2], [9, 0], [1, 0xC3, 0x28, 0, 1]] {
            var p = 0
            XCTAssertThrowsError(try KeyCoding.readTyped(bad, &p)) {
                XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex)
            }
        }
    }

    /// `readEscaped` copies runs of bytes whole: over a seeded sweep of short keys of the bytes that matter
    /// (0x00, 0x01, 0xFF, another), at limits around their lengths, it returns, advances and refuses (with
    /// the same message) exactly as a byte-by-byte reading of the escaping rule does.
    func testEscapedStringsReadAsTheByteByByteRule() {
        func reference(_ key: [UInt8], _ p: inout Int, max: Int) throws -> [UInt8] {
            var out: [UInt8] = []
            while true {
                guard p < key.count else { throw KeyCoding.damaged("a key ends inside a string") }
                let b = key[p]
                p += 1
                if b == 0 {
                    guard p < key.count else { throw KeyCoding.damaged("a key ends inside a string") }
                    let next = key[p]
                    p += 1
                    if next == 1 { return out }
                    guard next == 0xFF else {
                        throw KeyCoding.damaged("0x00 followed by 0x\(String(next, radix: 16)) in a key string")
                    }
                }
                out.append(b)
                guard out.count <= max else { throw KeyCoding.damaged("a key string longer than \(max) bytes") }
            }
        }
        var rng = SplitMix64(state: 29)
        let alphabet: [UInt8] = [0, 1, 0xFF, 0x61]
        for _ in 0..<20_000 {
            let key = (0..<Int(rng.next() % 12)).map { _ in alphabet[Int(rng.next() % 4)] }
            let start = key.isEmpty ? 0 : Int(rng.next() % UInt64(key.count))
            let max = Int(rng.next() % 8)
            var p1 = start
            var p2 = start
            let a = Result { try reference(key, &p1, max: max) }
            let b = Result { try KeyCoding.readEscaped(key, &p2, max: max) }
            switch (a, b) {
            case (.success(let x), .success(let y)):
                XCTAssertEqual(x, y, "\(key) from \(start), max \(max)")
                XCTAssertEqual(p1, p2, "\(key) from \(start), max \(max)")
            case (.failure(let x), .failure(let y)):
                XCTAssertEqual(x as? VaultError, y as? VaultError, "\(key) from \(start), max \(max)")
            default:
                XCTFail("\(key) from \(start), max \(max): \(a) against \(b)")
            }
        }
    }

    // MARK: Pages
    /// SPEC.md Part 4, V10: the vectors are what the code writes.
    func testSpecVectors() throws {
        func hex(_ s: String) -> [UInt8] {
            let d = s.filter { !$0.isWhitespace }
            return stride(from: 0, to: d.count, by: 2).map { UInt8(d.dropFirst($0).prefix(2), radix: 16)! }
        }
        func typed(_ v: AttributeValue) -> [UInt8] {
            var out: [UInt8] = []
            KeyCoding.appendTyped(v, to: &out)
            return out
        }
        XCTAssertEqual(typed(.string("a\u{0}b")), hex("01 61 00 ff 62 00 01"))
        XCTAssertEqual(typed(.integer(-1)), hex("02 7f ff ff ff ff ff ff ff"))
        XCTAssertEqual(typed(.bool(true)), hex("03 01"))
        XCTAssertEqual(typed(.date(nanoseconds: 0)), hex("04 80 00 00 00 00 00 00 00"))
        XCTAssertEqual(typed(.data([])), hex("05 00 01"))
        let schema = ClassSchema(keyAttributes: [("sync", .bool(false)), ("svce", .string("")), ("acct", .string(""))])
        var a = Attributes()
        a["svce"] = .string("gh")
        let (key, absent) = ItemKey.make(class: "genp", attributes: a, schema: schema, id: ItemID(Array(0..<16)))
        XCTAssertEqual(absent, 5)
        XCTAssertEqual(
            key,
            hex("67 65 6e 70 00 01  03 00  01 67 68 00 01  01 00 01  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"))
        XCTAssertEqual(
            PageCodec.encode(leaf([[1, 1], [1, 2]], tree: .attributes)),
            hex("01 02 00  02  00 02 01 01 00  01 01 02 00"))
        XCTAssertEqual(
            PageCodec.encode(Page(tree: .items, level: 0, content: .leaf([LeafEntry(key: [1], writer: 5)]))),
            hex("01 01 00  00  01 00 00 00 00 00 00 00 05  01  00 01 01 02 00 01"))
    }

    func leaf(_ keys: [[UInt8]], tree: TreeID = .items) -> Page {
        Page(
            tree: tree, level: 0,
            content: .leaf(
                keys.enumerated().map { i, k in
                    tree.hasTables
                        ? LeafEntry(
                            key: k,
                            record: RecordRef(
                                id: ID128(hi: 0, lo: UInt64(i % 3 + 1)), offset: UInt64(i % 3) * 100, length: 100),
                            writer: UInt64(i % 2 + 7), rest: [UInt8(i), 0xAA])
                        : LeafEntry(key: k)
                }))
    }

    func testPagesRoundTripCanonically() throws {
        for tree in [TreeID.items, .attributes, .history] {
            let page = leaf([[1], [1, 2], [1, 2, 3], [2], [2, 0], [200, 7]], tree: tree)
            let bytes = PageCodec.encode(page)
            XCTAssertEqual(try PageCodec.decode(bytes), page)
            XCTAssertEqual(PageCodec.encode(try PageCodec.decode(bytes)), bytes)
        }
        let branch = Page(
            tree: .attributes, level: 3,
            content: .branch([
                ([5], PageRef(id: ID128(hi: 1, lo: 2), offset: 10, length: 20, count: 30)),
                ([5, 1], PageRef(id: ID128(hi: 3, lo: 4), offset: 40, length: 50, count: 60))
            ]))
        XCTAssertEqual(try PageCodec.decode(PageCodec.encode(branch)), branch)
        XCTAssertEqual(branch.count, 90)
    }

    /// Each non-canonical or inconsistent page a writer would not make is refused.
    func testNonCanonicalPagesAreRefused() throws {
        let good = PageCodec.encode(leaf([[1, 1], [1, 2]], tree: .attributes))
        // kind 1, tree 2, level 0, count 2, key (0, 2, 1 1), body 0, key (1, 1, 2), body 0
        XCTAssertEqual(good, [1, 2, 0, 2, 0, 2, 1, 1, 0, 1, 1, 2, 0])
        var cases: [(String, [UInt8])] = [
            ("trailing byte", good + [0]),
            ("unknown kind", [9] + good.dropFirst()),
            ("unknown tree", [1, 9] + good.dropFirst(2)),
            ("leaf at level 1", [1, 2, 1] + good.dropFirst(3)),
            ("no entries", [1, 2, 0, 0]),
            ("shares less than the common prefix", [1, 2, 0, 2, 0, 2, 1, 1, 0, 0, 2, 1, 2, 0]),
            ("keys out of order", [1, 2, 0, 2, 0, 2, 1, 2, 0, 1, 1, 1, 0]),
            ("equal keys", [1, 2, 0, 2, 0, 2, 1, 1, 0, 2, 0, 0]),
            ("a key adding no byte", [1, 2, 0, 2, 0, 2, 1, 1, 0, 2, 0, 0]),
            ("shares more than the previous key", [1, 2, 0, 2, 0, 2, 1, 1, 0, 3, 1, 2, 0]),
            ("body past the end", [1, 2, 0, 1, 0, 1, 1, 5, 0]),
            ("branch at level 8", [2, 1, 8, 1, 0, 1, 1] + [UInt8](repeating: 0, count: 16) + [0, 1, 1]),
            ("child of length 0", [2, 1, 1, 1, 0, 1, 1] + [UInt8](repeating: 0, count: 16) + [0, 0, 1])
        ]
        // A record table entry no entry names; writer positions out of range.
        let items = PageCodec.encode(Page(tree: .items, level: 0, content: .leaf([LeafEntry(key: [1], writer: 5)])))
        XCTAssertEqual(items, [1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 1, 0, 1, 1, 2, 0, 1])
        cases.append(("unused record", [1, 1, 0, 1] + [UInt8](repeating: 0, count: 16) + [0, 1] + items.dropFirst(4)))
        cases.append(("writer position past the table", Array(items.prefix(18)) + [0, 2]))
        cases.append(
            (
                "writers not ascending",
                [1, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 5, 1, 0, 1, 1, 2, 0, 1]
            ))
        for (name, bytes) in cases {
            XCTAssertThrowsError(try PageCodec.decode(bytes), name) {
                XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex, name)
            }
        }
    }

    // MARK: Trees

    func key(_ n: Int) -> [UInt8] {
        // Keys of varied length sharing prefixes, as item keys do.
        var k = Array("genp".utf8) + [0, 1, 1] + Array("svc\(n % 97)".utf8) + [0, 1]
        k += withUnsafeBytes(of: UInt64(n).bigEndian, Array.init)
        return k
    }

    func entry(_ n: Int, version: Int) -> LeafEntry {
        LeafEntry(
            key: key(n),
            record: RecordRef(id: ID128(hi: UInt64(n / 50), lo: 1), offset: UInt64(n / 50) * 1000, length: 1000),
            writer: UInt64(version % 3),
            rest: Array("v\(version)-\(n)".utf8) + [UInt8](repeating: UInt8(n % 251), count: n % 40))
    }

    /// Random batches of puts and removes, each applied copy-on-write to the previous tree: after each, a full
    /// verify, a scan and lookups match the model, and the tree before it still reads as it was.
    func testCopyOnWriteTreesMatchAModel() throws {
        let store = MemoryPageStore()
        let writer = TreeWriter(store: store, tree: .items)
        var rng = SplitMix64(state: 2026)
        var model: [[UInt8]: LeafEntry] = [:]
        var top: PageRef?
        var previous: (top: PageRef?, model: [[UInt8]: LeafEntry]) = (nil, [:])
        for round in 0..<40 {
            var changes: [[UInt8]: TreeWriter.Change] = [:]
            let n = round % 10 == 0 ? 1500 : 1 + rng.below(60)
            for _ in 0..<n {
                let k = rng.below(4000)
                if model[key(k)] != nil, rng.below(3) == 0 {
                    changes[key(k)] = .remove(key(k))
                } else if changes[key(k)] == nil {
                    changes[key(k)] = .put(entry(k, version: round))
                }
            }
            let sorted = changes.values.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            previous = (top, model)
            top = try writer.apply(sorted, to: top)
            for c in sorted {
                switch c {
                case .put(let e): model[e.key] = e
                case .remove(let k): model[k] = nil
                }
            }
            let reader = TreeReader(store: store, tree: .items, top: top)
            var seen: [LeafEntry] = []
            XCTAssertEqual(try reader.verify { seen.append($0) }, UInt64(model.count))
            XCTAssertEqual(seen, model.values.sorted { $0.key.lexicographicallyPrecedes($1.key) })
            for _ in 0..<20 {
                let k = key(rng.below(4000))
                XCTAssertEqual(try reader.lookup(k), model[k])
            }
            // The tree before this change is untouched (copy-on-write).
            if round % 10 == 1 {
                XCTAssertEqual(
                    try TreeReader(store: store, tree: .items, top: previous.top).verify(), UInt64(previous.model.count)
                )
            }
        }
        XCTAssertGreaterThan(model.count, 1000)
    }

    /// A range read by prefix returns exactly the keys that start with it, in order, reading one path down
    /// and then only the leaves it needs.
    func testPrefixScanReadsFewPages() throws {
        let store = MemoryPageStore()
        let entries = (0..<20_000).map { entry($0, version: 1) }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        let top = try TreeWriter(store: store, tree: .items).apply(entries.map { .put($0) }, to: nil)
        let reader = TreeReader(store: store, tree: .items, top: top)
        let prefix = Array("genp".utf8) + [0, 1, 1] + Array("svc42".utf8) + [0, 1]
        let before = store.reads
        var got: [[UInt8]] = []
        try reader.scan(from: prefix) { e in
            guard e.key.starts(with: prefix) else { return false }
            got.append(e.key)
            return true
        }
        XCTAssertEqual(got, entries.map(\.key).filter { $0.starts(with: prefix) })
        XCTAssertEqual(got.count, 206)
        let height = try store.read(top!).level + 1
        XCTAssertLessThanOrEqual(height, 3)
        // 206 entries of about 50 bytes fill a few leaves; the descent costs `height` pages.
        XCTAssertLessThanOrEqual(store.reads - before, height + 6)
        // One change rewrites one path: a leaf and its branches.
        let pagesBefore = store.pages.count
        _ = try TreeWriter(store: store, tree: .items).apply([.put(entry(5, version: 2))], to: top)
        XCTAssertEqual(store.pages.count - pagesBefore, height)
    }

    /// Forged trees: a child at the wrong level, under the wrong separator, out of its range, of another tree,
    /// or with a count that does not add up, are each a damaged index, whichever way the tree is read.
    func testForgedTreesAreDamagedIndex() throws {
        func build() throws -> (MemoryPageStore, PageRef, Page) {
            let store = MemoryPageStore()
            let entries = (0..<600).map { entry($0, version: 1) }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            let top = try TreeWriter(store: store, tree: .items).apply(entries.map { .put($0) }, to: nil)!
            return (store, top, try store.read(top))
        }
        let (_, _, sample) = try build()
        guard case .branch(let children) = sample.content, children.count >= 3 else {
            return XCTFail("expected a branch top")
        }
        let forgeries: [(String, (inout [(key: [UInt8], child: PageRef)]) -> Void)] = [
            ("same child twice", { $0[1].child = $0[0].child }),
            ("separator not the child's first key", { $0[1].key.append(0) }),
            ("child's keys past the next separator", { $0[2].key = $0[1].key + [0] }),
            ("count that does not add up", { $0[0].child.count += 1 })
        ]
        for (name, forge) in forgeries {
            let (store, top, page) = try build()
            guard case .branch(var c) = page.content else { return XCTFail() }
            forge(&c)
            store.overwrite(top.id, with: PageCodec.encode(Page(tree: .items, level: page.level, content: .branch(c))))
            let reader = TreeReader(store: store, tree: .items, top: top)
            XCTAssertThrowsError(try reader.verify(), name) {
                XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex, name)
            }
        }
        // Another tree's page, and a leaf claiming a level.
        let (store, top, _) = try build()
        XCTAssertThrowsError(try TreeReader(store: store, tree: .history, top: top).scan { _ in true })
        XCTAssertThrowsError(
            try TreeReader(
                store: store, tree: .items,
                top: PageRef(id: top.id, offset: top.offset + 1, length: top.length, count: top.count)
            ).verify())
    }

    func testRemovingEverythingEmptiesTheTree() throws {
        let store = MemoryPageStore()
        let writer = TreeWriter(store: store, tree: .attributes)
        let keys = (0..<3000).map { key($0) }.sorted { $0.lexicographicallyPrecedes($1) }
        var top = try writer.apply(keys.map { .put(LeafEntry(key: $0)) }, to: nil)
        top = try writer.apply(keys.dropLast().map { .remove($0) }, to: top)
        // A branch left with one child gives way to it: the single entry's tree is one leaf.
        XCTAssertEqual(try store.read(top!).level, 0)
        top = try writer.apply([.remove(keys.last!)], to: top)
        XCTAssertNil(top)
        XCTAssertThrowsError(try writer.apply([.remove(keys[0])], to: top))
    }
}
