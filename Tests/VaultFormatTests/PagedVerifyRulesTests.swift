import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// The MUST rules of SPEC.md Part 4 that `verify` checks beyond what a lookup reads, each on a file forged with
/// the vault's key (what any key holder can write) that breaks that rule and no other: the state rules after
/// the delta segments (V3.4: "the deltas are part of the state"), bodies that must be empty (V3.2, V6), a kept
/// version's class (V3.4), record extents against the pages and segments that name them and against each
/// other (V3.4), the root's clock (V4) and what a writer does with a version above it (V5), the garbage count
/// of a new vault (V8.1), and what KEY_MAX and ENTRY_MAX count (V2). Each test names the error the forged
/// file must give, and what opening or reading it does.
final class PagedVerifyRulesTests: PagedTestCase {
    /// A vault of `count` items `p1/me` ... (each added by its own commit, so each in its own record), compacted:
    /// one fold, everything in pages (one leaf per tree), no delta segment.
    func folded(_ count: Int = 2) throws -> String {
        let path = dir + "/v.kcv"
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 1)
        for i in 1...count {
            try v.commit { tx in _ = try tx.add(attributes: attrs("p\(i)", "me"), value: Array("value \(i)".utf8)) }
        }
        try v.compact()
        XCTAssertEqual(
            try PagedVault.open(path: path, secret: secret).verify().problems, [], "the vault before it is forged")
        return path
    }

    func itemKey(_ v: PagedVault, _ item: Item) -> [UInt8] {
        ItemKey.make(
            class: item.itemClass.rawValue, attributes: item.attributes,
            schema: v.schema.classes[item.itemClass.rawValue], id: item.id
        ).key
    }

    func crafted(_ path: String) throws -> CraftedPagedVault {
        try CraftedPagedVault(path: path, secret: secret, random: SystemRandom.shared)
    }

    /// A delta segment of `changes`, each a tree and a change, sorted by key as a writer sorts them.
    func delta(
        _ path: String, _ changes: [(tree: TreeID, change: TreeWriter.Change)],
        trailer: (inout CraftedPagedVault.Trailer) -> Void = { _ in }
    ) throws {
        let sorted = changes.sorted {
            ([$0.tree.rawValue] + $0.change.key).lexicographicallyPrecedes([$1.tree.rawValue] + $1.change.key)
        }
        try crafted(path).delta(DeltaCodec.encode(sorted), trailer: trailer)
    }

    /// Replaces the only leaf of `tree` by `edit`'s, in a fold that keeps the rest of the root but what
    /// `counts` changes.
    func forgeLeaf(
        _ path: String, _ tree: TreeID, counts: (inout CraftedPagedVault.Root) -> Void = { _ in },
        _ edit: (inout [LeafEntry]) throws -> Void
    ) throws {
        let c = try crafted(path)
        let top = [TreeID.items: c.root.items, .attributes: c.root.attributes, .history: c.root.history][tree]
        guard case .leaf(var entries) = try c.page(try XCTUnwrap(top ?? nil)).content else {
            return XCTFail("one leaf")
        }
        try edit(&entries)
        let ref = try c.write(Page(tree: tree, level: 0, content: .leaf(entries)))
        try c.fold {
            switch tree {
            case .items: $0.items = ref
            case .attributes: $0.attributes = ref
            case .history: $0.history = ref
            }
            counts(&$0)
        }
    }

    /// Replaces the items tree's only leaf by `edit`'s, in a fold that keeps the rest of the root.
    func forgeItemsLeaf(_ path: String, _ edit: (inout [LeafEntry]) throws -> Void) throws {
        try forgeLeaf(path, .items, edit)
    }

    func assertVerify(
        _ path: String, _ code: VaultError.Code, _ message: String = "", file: StaticString = #filePath,
        line: UInt = #line
    ) throws {
        let problems = try PagedVault.open(path: path, secret: secret).verify().problems
        XCTAssertEqual(problems.first?.code, code, "\(message): \(problems)", file: file, line: line)
        // Vault, which the commands use, reports the same.
        XCTAssertEqual(
            try Vault.open(path: path, secret: secret, itemsOnDemand: true).verify().problems.first?.code, code,
            message, file: file, line: line)
    }

    func assertThrows<T>(
        _ code: VaultError.Code, _ message: String, file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> T
    ) {
        XCTAssertThrowsError(try body(), message, file: file, line: line) {
            XCTAssertEqual(($0 as? VaultError)?.code, code, "\(message): \($0)", file: file, line: line)
        }
    }

    // MARK: Records, checked against the items the index check decoded

    /// Flips one byte inside the record that holds `item`'s value.
    func damageRecord(_ path: String, of item: Item, header: Header) throws {
        let fd = open(path, O_RDWR)
        defer { close(fd) }
        let at = off_t(UInt64(header.length) + item.location.offset + item.location.length / 2)
        var b: UInt8 = 0
        XCTAssertEqual(pread(fd, &b, 1, at), 1)
        b ^= 0x40
        XCTAssertEqual(pwrite(fd, &b, 1, at), 1)
    }

    /// verify checks every record against the live items that its index check decodes (each entry decoded
    /// once): with the items in pages (a fold), with items in delta segments (the state is then scanned with
    /// the deltas applied), and, when the index check fails part way, against items read in a scan of their own.
    /// In each case a damaged record is found and named, and the intact ones are counted.
    func testEveryRecordIsCheckedWhereverTheStatesItemsCameFrom() throws {
        // A fold: every item in the items tree's pages.
        let folded = try folded(3)
        var v = try PagedVault.open(path: folded, secret: secret)
        try damageRecord(folded, of: try item(v, "p2", "me"), header: v.header)
        var report = try PagedVault.open(path: folded, secret: secret).verify()
        XCTAssertEqual(report.problems.map(\.code), [.damagedRecord], "\(report.problems)")
        XCTAssertTrue(report.problems.first?.context.contains("p2") == true, "\(report.problems)")
        XCTAssertEqual(report.records, 2)
        XCTAssertEqual(report.items, 3)

        // Items in delta segments: two commits after the fold.
        try FileManager.default.removeItem(atPath: folded)
        let path = try self.folded(1)
        let w = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 1)
        for name in ["d1", "d2"] {
            try w.commit { tx in _ = try tx.add(attributes: attrs(name, "me"), value: Array("value \(name)".utf8)) }
        }
        v = try PagedVault.open(path: path, secret: secret)
        XCTAssertFalse(v.tail.trailer.wroteRoot, "the last commit wrote a delta segment")
        XCTAssertEqual(v.verify().problems, [])
        XCTAssertEqual(v.verify().records, 3)
        try damageRecord(path, of: try item(v, "d2", "me"), header: v.header)
        report = try PagedVault.open(path: path, secret: secret).verify()
        XCTAssertEqual(report.problems.map(\.code), [.damagedRecord], "\(report.problems)")
        XCTAssertTrue(report.problems.first?.context.contains("d2") == true, "\(report.problems)")
        XCTAssertEqual(report.records, 2)
        XCTAssertEqual(report.items, 3)

        // An index that fails its check after every item was decoded (an attribute entry no item has): the
        // records are still checked, against the items read again.
        let p1 = try item(v, "p1", "me")
        try delta(
            path,
            [
                (
                    .attributes,
                    .put(LeafEntry(key: ItemEntries.attributePrefix("@team", .string("forged")) + itemKey(v, p1)))
                )
            ])
        report = try PagedVault.open(path: path, secret: secret).verify()
        XCTAssertEqual(report.problems.map(\.code), [.damagedIndex, .damagedRecord], "\(report.problems)")
        XCTAssertEqual(report.records, 2)
        XCTAssertEqual(report.items, 3)
    }

    // MARK: State rules, the deltas applied (V3.4)

    /// A delta segment puts an attributes-tree entry that no live item has: the trees alone were checked, so
    /// verify called it intact. The file opens (a reader checks the state rules only when it verifies).
    func testADeltaPuttingAnAttributeEntryNoItemHasIsDamagedIndex() throws {
        let path = try folded()
        let v = try PagedVault.open(path: path, secret: secret)
        let p1 = try item(v, "p1", "me")
        try delta(
            path,
            [
                (
                    .attributes,
                    .put(LeafEntry(key: ItemEntries.attributePrefix("@team", .string("forged")) + itemKey(v, p1)))
                )
            ])
        XCTAssertNoThrow(try PagedVault.open(path: path, secret: secret))
        try assertVerify(path, .damagedIndex, "an attribute entry no live item has")
    }

    /// A delta segment removes an attributes-tree entry that a live item has.
    func testADeltaRemovingAnAttributeEntryOfALiveItemIsDamagedIndex() throws {
        let path = try folded()
        let v = try PagedVault.open(path: path, secret: secret)
        let p1 = try item(v, "p1", "me")
        let k = try XCTUnwrap(ItemEntries.attributeKeys(p1, itemKey: itemKey(v, p1), schema: v.schema).first)
        try delta(path, [(.attributes, .remove(k))])
        XCTAssertNoThrow(try PagedVault.open(path: path, secret: secret))
        try assertVerify(path, .damagedIndex, "a live item's attribute entry removed")
    }

    /// A delta segment puts an existing item id under a second key (its attribute entries and the trailer's
    /// count made to agree): one item id, two items-tree entries, which `list` showed twice.
    func testADeltaPuttingAnItemIDUnderASecondKeyIsDamagedIndex() throws {
        let path = try folded()
        let v = try PagedVault.open(path: path, secret: secret)
        var moved = try item(v, "p1", "me")
        moved.attributes["svce"] = .string("moved")
        let e = ItemEntries.entry(moved, version: Version(hlc: v.clock + 1, writer: 1), schema: v.schema)
        var changes: [(tree: TreeID, change: TreeWriter.Change)] = [(.items, .put(e))]
        for k in ItemEntries.attributeKeys(moved, itemKey: e.key, schema: v.schema) {
            changes.append((.attributes, .put(LeafEntry(key: k))))
        }
        try delta(path, changes) { $0.itemCount += 1 }
        let r = try PagedVault.open(path: path, secret: secret)
        var seen: [ItemID] = []
        try r.forEachItem {
            seen.append($0.id)
            return true
        }
        XCTAssertEqual(seen.filter { $0 == moved.id }.count, 2, "the forged state: one id at two keys")
        try assertVerify(path, .damagedIndex, "one item id, two entries")
    }

    /// The same two rules on a fold without delta segments, where verify reads the state from the tree pages
    /// in the pass that checks them: an item id at a second key of the items tree's leaf (the root's counts made
    /// to agree), and an attributes-tree leaf that lacks an entry of a live item.
    func testAFoldHoldingAnItemIDTwiceIsDamagedIndex() throws {
        let path = try folded()
        let v = try PagedVault.open(path: path, secret: secret)
        var moved = try item(v, "p1", "me")
        moved.attributes["svce"] = .string("moved")
        let e = ItemEntries.entry(moved, version: Version(hlc: v.clock, writer: 1), schema: v.schema)
        try forgeLeaf(path, .items, counts: { $0.liveItems += 1 }) { entries in
            entries.append(e)
            entries.sort { $0.key.lexicographicallyPrecedes($1.key) }
        }
        try assertVerify(path, .damagedIndex, "one item id, two entries of the tree pages")
        let problems = try PagedVault.open(path: path, secret: secret).verify().problems
        XCTAssert(problems.first?.description.contains("item \(moved.id) has two entries") == true, "\(problems)")
    }

    func testAFoldWhoseAttributesTreeLacksAnEntryIsDamagedIndex() throws {
        let path = try folded()
        try forgeLeaf(path, .attributes) { $0.removeLast() }
        try assertVerify(path, .damagedIndex, "a live item's attribute entry missing from the pages")
        let problems = try PagedVault.open(path: path, secret: secret).verify().problems
        XCTAssert(problems.first?.description.contains("the attributes tree holds") == true, "\(problems)")
    }

    // MARK: Bodies that must be empty, and a kept version's class

    /// An attributes-tree leaf entry with a body (V3.2: tree 2's bodies are empty): the page is refused
    /// wherever it is read, by a query as by verify.
    func testAnAttributesLeafEntryWithABodyIsDamagedIndex() throws {
        let path = try folded()
        try forgeLeaf(path, .attributes) { $0[0].rest = [0] }
        let v = try PagedVault.open(path: path, secret: secret)
        assertThrows(.damagedIndex, "a query by attribute") { try v.items(attribute: "@team", equals: .string("t")) }
        try assertVerify(path, .damagedIndex, "an attribute entry with a body")
    }

    /// A delta segment's put to the attributes tree with a body (V6: the op byte alone): refused when the
    /// segment is read, at open.
    func testADeltaPutToTheAttributesTreeWithABodyIsDamagedIndex() throws {
        let path = try folded()
        let v = try PagedVault.open(path: path, secret: secret)
        let p1 = try item(v, "p1", "me")
        let k = try XCTUnwrap(ItemEntries.attributeKeys(p1, itemKey: itemKey(v, p1), schema: v.schema).first)
        try delta(path, [(.attributes, .put(LeafEntry(key: k, rest: [0])))])
        assertThrows(.damagedIndex, "open") { try PagedVault.open(path: path, secret: secret) }
        assertThrows(.damagedIndex, "open") { try Vault.open(path: path, secret: secret) }
    }

    /// A history entry whose class is empty (V3.4: 1 to ATTR_NAME_MAX bytes), put by a delta segment and
    /// naming its item's own record as it is: refused when read, by `history` as by verify.
    func testAKeptVersionWithAnEmptyClassIsDamagedIndex() throws {
        let path = try folded()
        let v = try PagedVault.open(path: path, secret: secret)
        var p1 = try item(v, "p1", "me")
        p1.itemClass = ItemClass(rawValue: "")
        try delta(path, [(.history, .put(ItemEntries.history(p1, version: Version(hlc: 1, writer: 1), why: 1)))])
        let r = try PagedVault.open(path: path, secret: secret)
        assertThrows(.damagedIndex, "history") { try r.keptVersions(of: p1.id) }
        try assertVerify(path, .damagedIndex, "a kept version of class \"\"")
    }

    // MARK: Record extents (V3.4)

    /// A page names a record that ends after the page's own offset, inside the file: a record is written
    /// before the first page that names it. The page is refused wherever it is read.
    func testARecordEndingAfterThePageThatNamesItIsDamagedIndex() throws {
        let path = try folded()
        let at = try crafted(path).commitStart  // where the forged leaf will be written
        try forgeItemsLeaf(path) { entries in
            let r = try XCTUnwrap(entries[0].record)
            entries[0].record = RecordRef(id: r.id, offset: r.offset, length: at + 16 - r.offset)
        }
        XCTAssertLessThan(at + 16, UInt64(try Recipes.read(path).count), "inside the file")
        let v = try PagedVault.open(path: path, secret: secret)
        assertThrows(.damagedIndex, "a lookup") {
            try v.items(class: .genericPassword, keyValues: [.bool(false), .string("p1"), .string("me")])
        }
        try assertVerify(path, .damagedIndex, "a record after its page")
    }

    /// A delta segment names a record that ends after the segment's offset (V6): refused at open, where the
    /// segment is read.
    func testARecordEndingAfterTheDeltaSegmentThatNamesItIsDamagedIndex() throws {
        let path = try folded()
        let v = try PagedVault.open(path: path, secret: secret)
        var p1 = try item(v, "p1", "me")
        let at = try crafted(path).commitStart  // where the segment will be written
        p1.location.length = at + 16 - p1.location.offset
        try delta(
            path,
            [(.items, .put(ItemEntries.entry(p1, version: Version(hlc: v.clock + 1, writer: 1), schema: v.schema)))])
        assertThrows(.damagedIndex, "open") { try PagedVault.open(path: path, secret: secret) }
    }

    /// A page names a record past the end of the file: *damaged index* (§11: the index breaks a rule), not
    /// *truncated*, which is about the file's last commit.
    func testARecordPastTheEndOfTheFileIsDamagedIndexNotTruncated() throws {
        let path = try folded()
        try forgeItemsLeaf(path) { entries in
            let r = try XCTUnwrap(entries[0].record)
            entries[0].record = RecordRef(id: r.id, offset: 1 << 40, length: r.length)
        }
        let v = try PagedVault.open(path: path, secret: secret)
        assertThrows(.damagedIndex, "a lookup") {
            try v.items(class: .genericPassword, keyValues: [.bool(false), .string("p1"), .string("me")])
        }
        try assertVerify(path, .damagedIndex, "a record past the end of the file")
    }

    /// One record id named at two extents: the leaf names p1's record where it is, a delta segment names the
    /// same id at p2's record's extent for p2.
    func testOneRecordIDAtTwoExtentsIsDamagedIndex() throws {
        let path = try folded()
        let v = try PagedVault.open(path: path, secret: secret)
        let p1 = try item(v, "p1", "me")
        var p2 = try item(v, "p2", "me")
        XCTAssertNotEqual(p1.location.recordID, p2.location.recordID)
        p2.location.recordID = p1.location.recordID
        try delta(
            path,
            [(.items, .put(ItemEntries.entry(p2, version: Version(hlc: v.clock + 1, writer: 1), schema: v.schema)))])
        XCTAssertNoThrow(try PagedVault.open(path: path, secret: secret))
        try assertVerify(path, .damagedIndex, "one record id, two extents")
    }

    /// Two records whose extents overlap: a delta segment gives p2 a record of its own id that starts one byte
    /// into p1's.
    func testOverlappingRecordsAreDamagedIndex() throws {
        let path = try folded()
        let v = try PagedVault.open(path: path, secret: secret)
        let p1 = try item(v, "p1", "me")
        var p2 = try item(v, "p2", "me")
        p2.location.recordID = ID128(hi: 0x6b63_6172, lo: 2)  // a record of its own (p2's is still named by the leaf)
        p2.location.offset = p1.location.offset + 1
        p2.location.length = p1.location.length
        try delta(
            path,
            [(.items, .put(ItemEntries.entry(p2, version: Version(hlc: v.clock + 1, writer: 1), schema: v.schema)))])
        XCTAssertNoThrow(try PagedVault.open(path: path, secret: secret))
        try assertVerify(path, .damagedIndex, "overlapping records")
    }

    // MARK: The root's clock (V4, V5)

    /// A root whose clock is below a version of its trees (V4: the clock is the greatest hlc in the trees).
    /// The file opens and reads; verify reports it.
    func testARootClockBelowAVersionOfItsTreesIsDamagedIndex() throws {
        let path = try folded()
        try crafted(path).fold { $0.clock = 0 }
        let v = try PagedVault.open(path: path, secret: secret)
        XCTAssertEqual(try v.read(try item(v, "p1", "me")), Array("value 1".utf8))
        try assertVerify(path, .damagedIndex, "a root clock below its versions")
    }

    /// A writer that meets, while changing an item, a version above the clock (a root whose clock is below its
    /// trees' versions) gives a version above that one: an update or a delete never makes a change older than
    /// what it replaces (V5).
    func testAChangeGivesAVersionAboveTheItemsEvenPastTheClock() throws {
        let path = try folded()
        let future = (HybridClock.nowMilliseconds() + 86_400_000) << 16
        let v = try PagedVault.open(path: path, secret: secret)
        try forgeItemsLeaf(path) { entries in
            entries = try entries.map { e in
                let s = try ItemEntries.decode(e, schema: v.schema)
                return ItemEntries.entry(
                    try XCTUnwrap(s.item), version: Version(hlc: future, writer: 1), schema: v.schema)
            }
        }
        let w = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 2)
        XCTAssertLessThan(w.root.clock, future, "the forged vault")
        let (p1, p2) = (try item(w, "p1", "me"), try item(w, "p2", "me"))
        try w.commit(autoCompact: false) { tx in
            try tx.update(p1, value: Array("new".utf8))
            try tx.delete(p2)
        }
        let after = try PagedVault.open(path: path, secret: secret)
        XCTAssertGreaterThan(try XCTUnwrap(after.version(of: try item(after, "p1", "me"))).hlc, future, "the update")
        XCTAssertGreaterThan(try XCTUnwrap(after.state(of: p2)).version.hlc, future, "the tombstone")
    }

    // MARK: Garbage (V8.1)

    /// Creating a vault with items (what `kcar pack` does) writes a root whose garbage count is 0: its file
    /// holds nothing dead. It counted the absent previous trailer (128).
    func testANewVaultWithItemsCountsNoGarbage() throws {
        let path = dir + "/new.kcv"
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            schema: .servicesAndAccounts
        ) { tx in
            for i in 1...3 {
                _ = try tx.add(
                    attributes: Attributes(["svce": .string("s\(i)"), "acct": .string("a")]),
                    value: .bytes(Array("v".utf8)))
            }
        }
        let v = try PagedVault.open(path: path, secret: secret)
        XCTAssertEqual(v.garbage, 0)
        let report = v.verify()
        XCTAssertEqual(report.problems, [])
        XCTAssertEqual(report.countedGarbage, 0)
        XCTAssertEqual(report.deadBytes, 0)
    }

    // MARK: KEY_MAX and ENTRY_MAX (V2)

    /// KEY_MAX and ENTRY_MAX count an entry as it is encoded where it is (the whole key after prefix coding,
    /// and the body; in a delta segment the tree byte and the operation byte too), without the varints of
    /// the prefix coding and the body length. Readers check exactly that.
    func testEntryMaxCountsKeyAndBodyAsEncodedWhereTheEntryIs() throws {
        func leaf(key: Int, body: Int) -> [UInt8] {
            // A history-tree leaf of one entry, no tables: body = record 0, writer 0, then filler.
            var w = ByteWriter()
            w.append(contentsOf: [1, 3, 0, 0, 0, 1, 0])
            w.appendVarint(key)
            w.append(contentsOf: [UInt8](repeating: 7, count: key))
            w.appendVarint(body)
            w.append(contentsOf: [0, 0] + [UInt8](repeating: 9, count: body - 2))
            return w.bytes
        }
        XCTAssertNoThrow(try PageCodec.decode(leaf(key: 32, body: PagedLimits.entryMax - 32)))
        assertThrows(.damagedIndex, "one byte past ENTRY_MAX") {
            try PageCodec.decode(leaf(key: 32, body: PagedLimits.entryMax - 31))
        }
        func segment(key: Int, body: Int) -> [UInt8] {
            // A delta segment of one put to the history tree, no tables.
            var w = ByteWriter()
            w.append(contentsOf: [4, 0, 0, 0, 0, 1, 0])
            w.appendVarint(key + 1)
            w.append(3)
            w.append(contentsOf: [UInt8](repeating: 7, count: key))
            w.appendVarint(body + 1)
            w.append(contentsOf: [1, 0, 0] + [UInt8](repeating: 9, count: body - 2))
            return w.bytes
        }
        XCTAssertNoThrow(
            try DeltaCodec.decode(segment(key: 32, body: PagedLimits.entryMax - 34)), "tree and op bytes counted")
        assertThrows(.damagedIndex, "one byte past ENTRY_MAX in a segment") {
            try DeltaCodec.decode(segment(key: 32, body: PagedLimits.entryMax - 33))
        }
    }

    /// An item key of exactly KEY_MAX bytes fits a page but not a delta segment, where the tree byte makes it
    /// KEY_MAX + 1: the commit that puts it folds instead of writing a segment no reader opens. A key past
    /// KEY_MAX is refused, and nothing is written.
    func testAKeyThatADeltaSegmentCannotHoldFolds() throws {
        let path = dir + "/v.kcv"
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 1)
        try v.commit { tx in _ = try tx.add(attributes: attrs("small", "me"), value: Array("v".utf8)) }
        // genp + terminator (6), sync (2), svce (1 + n + 2), acct "me" (5), id (16): 32 + n.
        // No attribute indexed: an attributes-tree key holds the item key and more.
        func unindexed(_ service: String) -> Attributes {
            Attributes(["svce": .string(service), "acct": .string("me")])
        }
        let service = String(repeating: "s", count: PagedLimits.keyMax - 32)
        try v.commit { tx in _ = try tx.add(attributes: unindexed(service), value: Array("long".utf8)) }
        XCTAssertTrue(v.tail.trailer.wroteRoot, "a fold")
        let r = try PagedVault.open(path: path, secret: secret)
        XCTAssertEqual(try r.read(try item(r, service, "me")), Array("long".utf8))
        XCTAssertEqual(r.verify().problems, [])
        let before = try Recipes.read(path)
        XCTAssertThrowsError(
            try v.commit { tx in _ = try tx.add(attributes: unindexed(service + "s"), value: Array("v".utf8)) }
        ) {
            XCTAssertEqual(($0 as? VaultError)?.code, .invalidArgument, "\($0)")
        }
        XCTAssertEqual(try Recipes.read(path), before)
    }
}
