import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Forged inputs to the version 2 writers (SPEC.md Part 4): forged trailers, clocks, extents and entries of
/// THEIRS that any holder of the vault key can write. Each test pins a finding: what the attack did, and that it
/// is now refused (nothing written) or harmless.
final class PagedAttackTests: PagedTestCase {
    // MARK: Findings

    /// A trailer's item count is only checked against the index when the vault is verified (V4), so a forged
    /// (or damaged but MAC-valid) count of 0 reached `UInt64(count + liveChange)` with -1 on the next delete:
    /// a trap that killed the process. It is now *damaged index*, and nothing is written.
    func testAForgedTrailerCountIsRefusedNotATrap() throws {
        let path = try makeBase(items: 1)
        let crafted = try CraftedPagedVault(path: path, secret: secret, random: SystemRandom.shared)
        try crafted.rewriteLastTrailer { $0.itemCount = 0 }
        let before = try Recipes.read(path)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 2)
        let it = try item(v, "p1", "me")
        XCTAssertThrowsError(try v.commit { tx in try tx.delete(it) }) {
            XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex, "\($0)")
        }
        XCTAssertEqual(try Recipes.read(path), before)
    }

    /// A hostile THEIRS (a holder of the vault key) names a record OURS holds, at the place OURS holds it, with
    /// another length: `oursHolds` authenticates only the first block there and reuses the location as THEIRS
    /// gives it. `lengthDelta` > 0 makes the extent run past the record; < 0 cuts it short.
    func forgedLengthMerge(lengthDelta: Int64) throws -> (ours: String, report: Result<MergeReport, Error>) {
        let base = try makeBase(items: 3)
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
        try t.commit { tx in try tx.update(try item(t, "p1", "me"), attributes: attrs("p1", "me", label: "relabelled"))
        }
        let p1 = try item(t, "p1", "me")
        let key = ItemKey.make(
            class: p1.itemClass.rawValue, attributes: p1.attributes, schema: schema.classes["genp"], id: p1.id
        ).key
        var e = try XCTUnwrap(try t.entry(.items, key))
        let r = try XCTUnwrap(e.record)
        e.record = RecordRef(id: r.id, offset: r.offset, length: UInt64(Int64(r.length) + lengthDelta))
        let crafted = try CraftedPagedVault(path: theirs, secret: secret, random: SystemRandom.shared)
        try crafted.delta(DeltaCodec.encode([(tree: .items, change: .put(e))]))
        let o = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
        let report = Result {
            try o.merge(
                base: PagedVault.open(path: base, secret: secret), theirs: PagedVault.open(path: theirs, secret: secret)
            )
        }
        return (ours, report)
    }

    /// Whatever THEIRS names, a merge leaves OURS whole: it verifies and every live item reads.
    func checkMergeLeftOursWhole(_ ours: String, _ report: Result<MergeReport, Error>) throws {
        let v = try PagedVault.open(path: ours, secret: secret)
        XCTAssertEqual(v.verify().problems, [], "after \(report)")
        // One record id names one extent (V3.4).
        var extents: [ID128: Set<RecordRef>] = [:]
        try v.scan(.items) { e in
            if let r = e.record { extents[r.id, default: []].insert(r) }
            return true
        }
        for (id, refs) in extents {
            XCTAssertEqual(refs.count, 1, "record \(id) named with \(refs.map(\.length)) after \(report)")
        }
        try v.forEachItem { item in
            XCTAssertNoThrow(try v.read(item), "\(item.displayName) after \(report)")
            return true
        }
    }

    func testAForgedTheirsCannotMakeOursNameARecordWithALongerExtent() throws {
        let (ours, report) = try forgedLengthMerge(lengthDelta: 40)
        try checkMergeLeftOursWhole(ours, report)
    }

    func testAForgedTheirsCannotMakeOursNameARecordWithAShorterExtent() throws {
        let (ours, report) = try forgedLengthMerge(lengthDelta: -10)
        try checkMergeLeftOursWhole(ours, report)
    }

    /// THEIRS's clock is trusted as it is: a forged version of hlc 2^64 - 1 made `nextVersion()`'s
    /// `clock += 1` overflow (a trap) as soon as the merge needed a version of its own (a tombstone for a
    /// shared primary key). A commit refuses such a clock; the merge refuses THEIRS as clock ahead (V5.1), naming it.
    func testAForgedClockAtTheEndOfTimeIsRefusedNotATrap() throws {
        let base = try makeBase(items: 1)
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
        try t.commit { tx in _ = try tx.add(attributes: attrs("same", "key"), value: Array("theirs".utf8)) }
        try forgeEntry(theirs, try item(t, "same", "key")) { _, v in v.hlc = .max }
        let o = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
        try o.commit { tx in _ = try tx.add(attributes: attrs("same", "key"), value: Array("ours".utf8)) }
        let before = try Recipes.read(ours)
        XCTAssertThrowsError(try merge(base: base, ours: ours, theirs: theirs)) { e in
            XCTAssertEqual((e as? VaultError)?.code, .clockAhead, "\(e)")
            XCTAssertTrue("\(e)".contains("THEIRS"), "\(e)")
        }
        XCTAssertEqual(try Recipes.read(ours), before)
    }

    /// THEIRS names a record OURS holds (so it is not copied, only its first block authenticated), with a
    /// member that is not the item's: OURS would take an item whose value no longer reads, and fail
    /// verification. The merge must refuse THEIRS instead, or leave OURS whole.
    func testAForgedTheirsCannotGiveOursAnUnreadableItem() throws {
        let base = try makeBase(items: 3)
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
        try t.commit { tx in try tx.update(try item(t, "p1", "me"), attributes: attrs("p1", "me", label: "relabelled"))
        }
        let p2 = try item(t, "p2", "me")
        try forgeEntry(theirs, try item(t, "p1", "me")) { item, _ in
            item.location = p2.location
            item.size = p2.size
        }
        let report = Result { try merge(base: base, ours: ours, theirs: theirs) }
        try checkMergeLeftOursWhole(ours, report)
    }

    /// OURS compacted after parting (its records moved), THEIRS changed one member of a solid record of BASE: the
    /// merge copies that record from THEIRS (OURS holds it elsewhere), so one record id names two extents in OURS
    /// (V3.4 forbids it). The commits after it, folded, must still give a file that reads and verifies.
    func testMergeIntoACompactedCopyThenFold() throws {
        for compacted in ["ours", "theirs"] {
            try mergeThenFold(compacting: compacted)
        }
    }

    func mergeThenFold(compacting: String) throws {
        let base = try makeBase("base-\(compacting).kcv", items: 3)
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
        try t.commit { tx in try tx.update(try item(t, "p1", "me"), attributes: attrs("p1", "me", label: "theirs")) }
        try PagedVault.open(path: compacting == "ours" ? ours : theirs, secret: secret, mode: .write, writerID: 4)
            .compact()
        try merge(base: base, ours: ours, theirs: theirs)
        let m = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
        XCTAssertEqual(m.verify().problems, [])
        // A large commit folds the merge's delta into the trees: p1 and its record-mates share a leaf.
        try m.commit { tx in
            for i in 0..<300 { _ = try tx.add(attributes: attrs("bulk", "\(i)"), value: [UInt8(i % 256)]) }
        }
        XCTAssertTrue(m.tail.trailer.wroteRoot)
        let r = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
        XCTAssertEqual(r.verify().problems, [])
        XCTAssertEqual(try r.read(try item(r, "p1", "me")), Array("base 1".utf8))
        XCTAssertEqual(try r.read(try item(r, "p2", "me")), Array("base 2".utf8))
        var extents: [ID128: Set<RecordRef>] = [:]
        for tree in [TreeID.items, .history] {
            try r.scan(tree) { e in
                if let rec = e.record { extents[rec.id, default: []].insert(rec) }
                return true
            }
        }
        for (id, refs) in extents { XCTAssertEqual(refs.count, 1, "record \(id) named at \(refs.map(\.offset))") }
        try r.compact()
        XCTAssertEqual(r.verify().problems, [])
    }

    /// A forged THEIRS holding one item at two keys (its old key, unchanged since BASE, so outside the walk of
    /// step 1, and a new one): OURS must not end with two entries for one item id.
    func testAForgedTheirsWithOneItemAtTwoKeys() throws {
        try XCTSkipIf(
            true,
            "BUG: a THEIRS holding one item id at two keys (its BASE key untouched, so outside step 1's walk, and a new key) is taken as an add: OURS ends with two entries for that id (verify now reports it). Refusing it needs a lookup of OURS's items by id, which the items tree does not give"
        )
        let base = try makeBase(items: 2)
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
        let p1 = try item(t, "p1", "me")
        try forgeEntry(theirs, p1) { item, version in
            item.attributes = attrs("p1", "second key")
            version.hlc += 1000
        }
        let report = Result { try merge(base: base, ours: ours, theirs: theirs) }
        try checkMergeLeftOursWhole(ours, report)
        var seen: [ItemID: Int] = [:]
        try PagedVault.open(path: ours, secret: secret).scan(.items) { e in
            seen[ItemID(e.key.suffix(16)), default: 0] += 1
            return true
        }
        XCTAssertEqual(seen[p1.id], 1, "after \(report)")
    }

    /// What the skipped test above leaves in OURS is found by verification.
    func testVerifyFindsOneItemAtTwoKeys() throws {
        let path = try makeBase(items: 2)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 3)
        try forgeEntry(path, try item(v, "p1", "me"), addsLiveItem: true) { item, version in
            item.attributes = attrs("p1", "second key")
            version.hlc += 1000
        }
        // Folded into the trees, as the next fold would.
        let w = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 3)
        try w.commit { tx in for i in 0..<300 { _ = try tx.add(attributes: attrs("bulk", "\(i)"), value: [1]) } }
        XCTAssertTrue(w.verify().problems.contains { $0.context.contains("two entries") }, "\(w.verify().problems)")
    }

    /// Two rounds of edits and merges, each side compacting between them, then enough commits to fold: the
    /// copies agree and every file verifies.
    func testTwoRoundsWithCompactionsBetween() throws {
        let base = try makeBase(items: 8)
        let a = try copy(base, "a.kcv")
        let b = try copy(base, "b.kcv")
        func edit(_ path: String, _ writer: UInt64, _ round: Int) throws {
            let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: writer)
            try v.commit { tx in
                try tx.update(try item(v, "p\(writer)", "me"), value: Array("r\(round) w\(writer)".utf8))
                try tx.update(
                    try item(v, "p\(writer + 3)", "me"),
                    attributes: attrs("p\(writer + 3)", "me", label: "r\(round) w\(writer)"))
                _ = try tx.add(attributes: attrs("add-\(writer)", "r\(round)"), value: Array("added".utf8))
            }
            usleep(1500)
        }
        try edit(a, 2, 1)
        try edit(b, 3, 1)
        try merge(base: base, ours: a, theirs: b)
        let base2 = try copy(a, "base2.kcv")
        try merge(base: base, ours: b, theirs: a)
        XCTAssertEqual(try snapshot(a).live, try snapshot(b).live)
        try PagedVault.open(path: a, secret: secret, mode: .write, writerID: 2).compact()
        try edit(a, 2, 2)
        try edit(b, 3, 2)
        try PagedVault.open(path: b, secret: secret, mode: .write, writerID: 3).compact()
        try checkBothOrders(base: base2, a, b)
        try merge(base: base2, ours: a, theirs: b)
        let v = try PagedVault.open(path: a, secret: secret, mode: .write, writerID: 2)
        for i in 0..<20 { try v.commit { tx in _ = try tx.add(attributes: attrs("fold", "\(i)"), value: [UInt8(i)]) } }
        XCTAssertEqual(try PagedVault.open(path: a, secret: secret).verify().problems, [])
    }

    /// A record with a dead member, a live member and that member's earlier version (an attribute change keeps
    /// the value where it was): compaction rebuilds it from the kept members, and both versions still read.
    func testCompactingARecordWhoseMemberIsLiveAndInHistory() throws {
        let path = try makeBase(items: 3, retention: Retention(keep: 1, days: 90, tombstoneDays: 90))
        let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 2)
        try v.commit { tx in try tx.update(try item(v, "p1", "me"), attributes: attrs("p1", "me", label: "relabelled"))
        }
        // p2's value in the shared record leaves history after two value changes (keep 1).
        try v.commit { tx in try tx.update(try item(v, "p2", "me"), value: [2]) }
        try v.commit { tx in try tx.update(try item(v, "p2", "me"), value: [3]) }
        let before = try snapshot(path)
        try v.compact()
        XCTAssertEqual(v.verify().problems, [])
        let after = try snapshot(path)
        XCTAssertEqual(after.live, before.live)
        XCTAssertEqual(
            after.history,
            before.history.mapValues { Set($0.sorted { $0 < $1 }.suffix(1)) }.filter { !$0.value.isEmpty })
        let p1 = try item(v, "p1", "me")
        XCTAssertEqual(try v.read(p1), Array("base 1".utf8))
    }
}
