import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Merges of copies in unusual shapes (SPEC.md Part 4, V9): a copy merged with itself, one side compacted or
/// with pending deltas, copies upgraded apart, a refused merge; upgrades of every golden vault checked in full;
/// and a rekey that leaves nothing readable under the old key.
final class PagedMergeShapeTests: PagedTestCase {
    /// A copy merged with itself (the same file, a byte-identical copy, with or without BASE) changes nothing
    /// and writes nothing.
    func testMergingACopyWithItselfWritesNothing() throws {
        let base = try makeBase()
        let ours = try copy(base, "ours.kcv")
        let o = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
        try o.commit { tx in try tx.update(try item(o, "p1", "me"), value: [1]) }
        let same = try copy(ours, "same.kcv")
        let bytes = try Recipes.read(ours)
        for (b, t) in [(nil, ours), (base, ours), (nil, same), (base, same), (ours, same)] as [(String?, String)] {
            let r = try merge(base: b, ours: ours, theirs: t)
            XCTAssertEqual(r, MergeReport(), "\(String(describing: b)) \(t)")
            XCTAssertEqual(try Recipes.read(ours), bytes)
        }
        // The very instance as THEIRS.
        let again = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
        XCTAssertEqual(try again.merge(base: nil, theirs: again), MergeReport())
        XCTAssertEqual(try Recipes.read(ours), bytes)
    }

    /// One side with pending delta segments (moves, updates, deletes, adds), the other compacted after its
    /// changes (no page shared with BASE, records moved): both orders agree, with and without BASE.
    func testMergingAPendingDeltaSideWithACompactedSide() throws {
        let base = try makeBase(items: 12)
        let a = try copy(base, "a.kcv")
        let b = try copy(base, "b.kcv")
        let va = try PagedVault.open(path: a, secret: secret, mode: .write, writerID: 2)
        try va.commit { tx in
            try tx.update(try item(va, "p1", "me"), value: Array("a 1".utf8))
            try tx.update(try item(va, "p2", "me"), attributes: attrs("p2", "moved-a"))
            try tx.delete(try item(va, "p3", "me"))
            _ = try tx.add(attributes: attrs("new", "both"), value: Array("a new".utf8))
        }
        try va.commit { tx in try tx.update(try item(va, "p4", "me"), attributes: attrs("p4", "me", label: "a")) }
        XCTAssertFalse(va.tail.trailer.wroteRoot, "A's changes are pending deltas")
        usleep(2000)
        let vb = try PagedVault.open(path: b, secret: secret, mode: .write, writerID: 3)
        try vb.commit { tx in
            try tx.update(try item(vb, "p1", "me"), value: Array("b 1".utf8))  // newer than A's
            try tx.update(try item(vb, "p3", "me"), value: Array("b 3".utf8))  // A deleted it, older
            try tx.update(try item(vb, "p4", "me"), attributes: attrs("p4", "moved-b"))  // A relabelled it, older
            try tx.delete(try item(vb, "p5", "me"))
            _ = try tx.add(attributes: attrs("new", "both"), value: Array("b new".utf8))  // shares A's new key
            _ = try tx.add(attributes: attrs("p2", "moved-a"), value: Array("b at a's moved key".utf8))
        }
        try vb.compact()
        try checkBothOrders(base: base, a, b)
        try checkBothOrders(base: nil, a, b)
    }

    /// A change on one side and a key change on the other, each order of versions: one live entry, at the
    /// winner's key, and the loser in history.
    func testAChangeAgainstAKeyChange() throws {
        for moverIsNewer in [false, true] {
            let base = try makeBase("base-\(moverIsNewer).kcv", items: 2)
            let a = try copy(base, "a.kcv")
            let b = try copy(base, "b.kcv")
            func edit(_ path: String, _ writer: UInt64, move: Bool) throws {
                let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: writer)
                try v.commit { tx in
                    if move {
                        try tx.update(try item(v, "p1", "me"), attributes: attrs("p1", "elsewhere"))
                    } else {
                        try tx.update(try item(v, "p1", "me"), value: Array("changed".utf8))
                    }
                }
                usleep(2000)
            }
            if moverIsNewer {
                try edit(a, 2, move: false)
                try edit(b, 3, move: true)
            } else {
                try edit(b, 3, move: true)
                try edit(a, 2, move: false)
            }
            try checkBothOrders(base: base, a, b)
            let m = try copy(a, "m.kcv")
            try merge(base: base, ours: m, theirs: b)
            let v = try PagedVault.open(path: m, secret: secret)
            let at = try v.items(
                class: .genericPassword,
                keyValues: [.bool(false), .string("p1"), .string(moverIsNewer ? "elsewhere" : "me")])
            XCTAssertEqual(at.count, 1)
            XCTAssertEqual(
                try v.items(
                    class: .genericPassword,
                    keyValues: [.bool(false), .string("p1"), .string(moverIsNewer ? "me" : "elsewhere")]
                ).count, 0)
        }
    }

    /// Every golden version 1 vault, upgraded, passes the whole-file verification, compacts, rekeys and still
    /// holds its items.
    func testUpgradedGoldensVerifyInFullAndCompact() throws {
        for g in Recipes.goldens {
            let path = dir + "/\(g.name).kcv"
            try FileManager.default.copyItem(atPath: FixtureTests.fixture("\(g.name).kcv"), toPath: path)
            let v1 = try Vault.open(path: path, secret: g.secret, mode: .write)
            let count = v1.items.count
            try v1.upgrade(schema: schema, writerID: 7)
            let v2 = try PagedVault.open(path: path, secret: g.secret, mode: .write, writerID: 8)
            XCTAssertEqual(v2.verify().problems, [], g.name)
            try v2.compact()
            XCTAssertEqual(v2.verify().problems, [], g.name)
            XCTAssertEqual(try v2.verifyIndex(), count, g.name)
        }
    }

    /// After a rekey, no record the new index names (live or kept, rebuilt or copied whole) and no page opens under
    /// the old vault key: someone who kept the old key learns nothing from the new file.
    func testRekeyLeavesNothingReadableUnderTheOldKey() throws {
        let path = try makeBase(items: 4, retention: Retention(keep: 1, days: 90, tombstoneDays: 90))
        let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 2)
        try v.commit { tx in
            try tx.update(try item(v, "p1", "me"), value: [1])  // p1's member of the base record is history
            try tx.delete(try item(v, "p2", "me"))
        }
        try v.commit { tx in try tx.update(try item(v, "p3", "me"), value: [3]) }
        try v.commit { tx in try tx.update(try item(v, "p3", "me"), value: [4]) }  // p3's base member dead (keep 1)
        let oldKeys = Subkeys(vaultKey: v.vaultKey)
        let newKey = SecureBytes(copying: [UInt8](repeating: 0x5A, count: 32))
        try v.rekey(slots: [.keyFile(newKey)])
        var values: [Item] = []
        try v.forEachItem {
            values.append($0)
            return true
        }
        try v.scan(.history) {
            values.append(try ItemEntries.decodeHistory($0).item)
            return true
        }
        XCTAssertGreaterThan(values.count, 3)
        let old = RecordSource(
            file: v.file, headerLength: UInt64(v.header.length), vaultID: v.header.vaultID, keys: oldKeys)
        for item in values {
            XCTAssertNoThrow(try v.read(item))
            XCTAssertThrowsError(try old.read(item) { _ in }, "\(item.displayName) reads under the old key")
        }
        let root = v.tail.trailer
        XCTAssertThrowsError(
            try PagedSealing.open(
                old, key: .page(oldKeys, vaultID: v.header.vaultID, pageID: root.rootID), offset: root.rootOffset,
                length: root.rootLength, max: PagedLimits.rootMax
            ) { VaultError(.damagedIndex, $0) })
    }

    /// OURS unchanged since BASE takes THEIRS's state whole: the same live items and history.
    func testMergeIntoAnUnchangedCopyTakesTheirsWhole() throws {
        let base = try makeBase(items: 5)
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
        try t.commit { tx in
            try tx.update(try item(t, "p1", "me"), value: [1])
            try tx.delete(try item(t, "p2", "me"))
            try tx.update(try item(t, "p3", "me"), attributes: attrs("p3", "moved"))
            _ = try tx.add(attributes: attrs("new", "one"), value: [9])
        }
        try merge(base: base, ours: ours, theirs: theirs)
        let (m, th) = (try snapshot(ours), try snapshot(theirs))
        XCTAssertEqual(m.live, th.live)
        XCTAssertEqual(m.history, th.history)
        // THEIRS's tombstone came too: merging OURS's result back changes nothing in THEIRS.
        let back = try Recipes.read(theirs)
        XCTAssertEqual(try merge(base: base, ours: theirs, theirs: ours), MergeReport())
        XCTAssertEqual(try Recipes.read(theirs), back)
    }

    /// A merge THEIRS fails (a record that does not name the item) leaves OURS byte for byte as it was.
    func testARefusedMergeLeavesOursByteForByte() throws {
        let base = try makeBase(items: 3)
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        let o = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
        try o.commit { tx in _ = try tx.add(attributes: attrs("ours", "pending"), value: [5]) }
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
        try t.commit { tx in
            // a merge that folds
            for i in 0..<300 { _ = try tx.add(attributes: attrs("theirs", "\(i)"), value: [UInt8(i % 256)]) }
            try tx.update(try item(t, "p1", "me"), attributes: attrs("p1", "me", label: "x"))
        }
        let p2 = try item(t, "p2", "me")
        try forgeEntry(theirs, try item(t, "p1", "me")) { item, _ in
            item.location = p2.location
            item.size = p2.size
        }
        let before = try Recipes.read(ours)
        XCTAssertThrowsError(try merge(base: base, ours: ours, theirs: theirs)) {
            XCTAssertEqual(($0 as? VaultError)?.code, .damagedRecord)
        }
        XCTAssertEqual(try Recipes.read(ours), before)
        // And the same instance commits afterwards.
        try o.commit { tx in _ = try tx.add(attributes: attrs("ours", "after"), value: [6]) }
        XCTAssertEqual(o.verify().problems, [])
    }

    /// Two copies of one version 1 vault, each upgraded by its own writer (kcar upgrades on the first write, so
    /// teammates do it apart), then merged without BASE (a version 1 BASE cannot be one): the items are the
    /// same items, and two items that shared a primary key in version 1 (on both sides, before the merge)
    /// must be left as they are (V9 step 3).
    func testCopiesUpgradedApartMergeWithoutLosingAnItem() throws {
        let v1 = dir + "/v1.kcv"
        try Vault.create(
            path: v1, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: .version1
        ) { tx in
            try tx.add(
                attributes: Attributes(["svce": .string("twin"), "acct": .string("me")]), value: .bytes([1]),
                ifKeyExists: .keepBoth)
            try tx.add(
                attributes: Attributes(["svce": .string("twin"), "acct": .string("me")]), value: .bytes([2]),
                ifKeyExists: .keepBoth)
            try tx.add(attributes: Attributes(["svce": .string("single"), "acct": .string("me")]), value: .bytes([3]))
        }
        let a = try copy(v1, "a.kcv")
        let b = try copy(v1, "b.kcv")
        try Vault.open(path: a, secret: secret, mode: .write).upgrade(schema: schema, writerID: 2)
        usleep(2000)
        try Vault.open(path: b, secret: secret, mode: .write).upgrade(schema: schema, writerID: 3)
        try merge(base: nil, ours: a, theirs: b)
        let m = try snapshot(a)
        XCTAssertEqual(m.live.count, 3, "an item of the version 1 vault is gone")
    }

    /// The walk of V9 step 1 over hostile trees: two copies sharing pages, one byte of one page flipped at a
    /// time (the codec sees it, as a page that authenticates but says anything), in each order. The walk ends,
    /// with the differences or *damaged index*, and never traps.
    func testTreeDiffOverFlippedPagesEndsWithoutATrap() throws {
        func key(_ n: Int) -> [UInt8] {
            Array("genp".utf8) + [0, 1] + Array("s\(n % 17)".utf8) + [0, 1]
                + withUnsafeBytes(of: UInt64(n).bigEndian, Array.init)
        }
        func entry(_ n: Int, _ v: Int) -> LeafEntry {
            LeafEntry(
                key: key(n),
                record: RecordRef(id: ID128(hi: UInt64(n % 40), lo: 7), offset: UInt64(n % 40) * 10, length: 10),
                writer: UInt64(v + 1),
                rest: Array("v\(v)".utf8) + [UInt8](repeating: 1, count: n % 20))
        }
        let store = MemoryPageStore()
        let base = (0..<1500).map { entry($0, 0) }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        let top = try TreeWriter(store: store, tree: .items).apply(base.map { .put($0) }, to: nil)
        let changesA: [TreeWriter.Change] = [3, 400, 401, 999].map { .put(entry($0, 1)) }.sorted {
            $0.key.lexicographicallyPrecedes($1.key)
        }
        let changesB: [TreeWriter.Change] = ([7, 400, 1200].map { .put(entry($0, 2)) } + [.remove(key(12))]).sorted {
            $0.key.lexicographicallyPrecedes($1.key)
        }
        let ta = try TreeWriter(store: store, tree: .items).apply(changesA, to: top)
        let tb = try TreeWriter(store: store, tree: .items).apply(changesB, to: top)
        let (ra, rb) = (
            TreeReader(store: store, tree: .items, top: ta), TreeReader(store: store, tree: .items, top: tb)
        )
        var honest: [[UInt8]] = []
        try TreeDiff.walk(ra, rb) { honest.append($0.key) }
        XCTAssertEqual(honest.count, 7)
        var rng = SplitMix64(state: 5)
        let ids = store.pages.keys.sorted { ($0.hi, $0.lo) < ($1.hi, $1.lo) }
        var outcomes = (ended: 0, damaged: 0)
        for _ in 0..<400 {
            let id = ids[rng.below(ids.count)]
            let original = store.pages[id]!.bytes
            var forged = original
            forged[rng.below(forged.count)] ^= UInt8(1 + rng.below(255))
            store.overwrite(id, with: forged)
            defer { store.overwrite(id, with: original) }
            for (x, y) in [(ra, rb), (rb, ra)] {
                do {
                    var n = 0
                    try TreeDiff.walk(x, y) { _ in n += 1 }
                    XCTAssertLessThanOrEqual(n, 2 * 1500 + 2)
                    outcomes.ended += 1
                } catch let e as VaultError {
                    XCTAssertEqual(e.code, .damagedIndex, "\(e)")
                    outcomes.damaged += 1
                }
            }
        }
        XCTAssertGreaterThan(outcomes.damaged, 0)
        XCTAssertGreaterThan(outcomes.ended, 0)
    }
}
