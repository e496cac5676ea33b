import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Compaction and rekey of version 2 vaults (SPEC.md Part 4, V8): everything retention keeps survives with
/// its version (live items, values, history, tombstones), what it no longer keeps leaves the file, and a
/// failed rewrite leaves the file as it was.
final class PagedCompactionTests: PagedTestCase {
    static let day: UInt64 = 86_400_000 << 16

    struct Live: Hashable {
        let id: ItemID
        let attributes: Attributes
        let value: [UInt8]
        let version: Version
    }

    /// What a reader sees: live items with values and versions, each item's history, and the tombstones.
    func state(_ v: PagedVault, ids: [ItemID]) throws -> (
        live: Set<Live>, history: [ItemID: [Version]], values: [[UInt8]]
    ) {
        var live = Set<Live>()
        try v.forEachItem { item in
            live.insert(
                Live(
                    id: item.id, attributes: item.attributes, value: try v.read(item),
                    version: try XCTUnwrap(v.version(of: item))))
            return true
        }
        var history: [ItemID: [Version]] = [:]
        for id in ids { history[id] = try v.history(of: id).map(\.version) }
        return (live, history, [])
    }

    /// Seeded adds, updates (values and keys) and deletes over 30 commits, some of them folds.
    func build(_ path: String, retention: Retention = .init()) throws -> (PagedVault, [ItemID]) {
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema,
            retention: retention)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        var rng = SplitMix64(state: 99)
        var ids: [ItemID] = []
        for round in 0..<30 {
            try v.commit(solidMembers: 8) { tx in
                for k in 0..<(round == 0 ? 300 : 1 + rng.below(12)) {
                    var a = Attributes()
                    a["svce"] = .string("svc\(rng.below(40))")
                    a["acct"] = .string("user\(round)-\(k)")
                    a["@team"] = .string("t\(rng.below(9))")
                    let value = (0..<rng.below(300)).map { _ in UInt8(truncatingIfNeeded: rng.below(256)) }
                    ids.append(try tx.add(attributes: a, value: value))
                }
            }
            guard round > 0 else { continue }
            var all: [Item] = []
            try v.forEachItem {
                all.append($0)
                return true
            }
            try v.commit { tx in
                for _ in 0..<rng.below(10) {
                    let item = all.remove(at: rng.below(all.count))
                    switch rng.below(3) {
                    case 0: try tx.delete(item)
                    case 1: try tx.update(item, value: Array("round \(round)".utf8))
                    default:
                        var a = item.attributes
                        a["acct"] = .string("moved\(round)")
                        try tx.update(item, attributes: a)
                    }
                }
            }
        }
        return (v, ids)
    }

    func fileSize(_ path: String) throws -> UInt64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? 0
    }

    func testCompactionKeepsWhatRetentionKeepsAndDropsTheRest() throws {
        let path = dir + "/v.kcv"
        let (v, ids) = try build(path)
        let before = try state(v, ids: ids)
        let sizeBefore = try fileSize(path)
        XCTAssertGreaterThan(before.history.values.map(\.count).reduce(0, +), 50)
        // Now: everything is younger than 90 days, so all of it stays.
        try v.compact(now: PagedRebuild.clockNow())
        XCTAssertEqual(try state(v, ids: ids).live, before.live)
        XCTAssertEqual(try state(v, ids: ids).history, before.history)
        XCTAssertEqual(try v.verifyIndex(), before.live.count)
        let reopened = try PagedVault.open(path: path, secret: secret, mode: .write)
        XCTAssertEqual(try state(reopened, ids: ids).live, before.live)
        XCTAssertEqual(try state(reopened, ids: ids).history, before.history)
        XCTAssertLessThan(try fileSize(path), sizeBefore, "dead pages and delta segments left the file")
        // A primary-key and an attribute lookup on the rebuilt trees.
        let some = try XCTUnwrap(before.live.first)
        XCTAssertEqual(
            try reopened.items(
                class: .genericPassword, keyValues: [.bool(false), some.attributes["svce"]!, some.attributes["acct"]!]
            ).map(\.id), [some.id])
        XCTAssertTrue(
            try reopened.items(attribute: "@team", equals: some.attributes["@team"]!).contains { $0.id == some.id })
        // A commit after compaction, then folds, still agree.
        try reopened.commit { tx in
            _ = try tx.add(attributes: Attributes(["svce": .string("new"), "acct": .string("one")]), value: [1])
        }
        XCTAssertEqual(try reopened.verifyIndex(), before.live.count + 1)

        // A hundred days on: history and tombstones are past retention, and their values leave the file.
        let sizeKept = try fileSize(path)
        try reopened.compact(now: PagedRebuild.clockNow() + 100 * Self.day)
        let after = try state(reopened, ids: ids)
        XCTAssertEqual(after.live.count, before.live.count + 1)
        XCTAssertTrue(after.history.values.allSatisfy(\.isEmpty))
        XCTAssertLessThan(try fileSize(path), sizeKept)
        XCTAssertEqual(try reopened.verifyIndex(), before.live.count + 1)
    }

    /// `keep` bounds every item's history as commits touch it (V8), and compaction keeps what is left.
    func testHistoryIsTrimmedToKeep() throws {
        // The same seeded edits under keep 10 and keep 1 (item ids differ: compare the counts).
        let (wide, wideIDs) = try build(dir + "/wide.kcv")
        let counts = try state(wide, ids: wideIDs).history.values.map(\.count)
        XCTAssertTrue(counts.contains { $0 > 1 }, "the seeded rounds change some item twice")
        let (v, ids) = try build(dir + "/keep.kcv", retention: Retention(keep: 1, days: 90, tombstoneDays: 90))
        let before = try state(v, ids: ids)
        XCTAssertEqual(before.history.values.map(\.count).sorted(), counts.map { min($0, 1) }.sorted())
        try v.compact()
        let after = try state(v, ids: ids)
        XCTAssertEqual(after.live, before.live)
        XCTAssertEqual(after.history, before.history)
    }

    func testRekeyKeepsEverythingUnderTheNewKeyOnly() throws {
        let path = dir + "/rekey.kcv"
        let (v, ids) = try build(path)
        let before = try state(v, ids: ids)
        let newKey = SecureBytes(copying: [UInt8](repeating: 0x5A, count: 32))
        try v.rekey(slots: [.keyFile(newKey)])
        XCTAssertThrowsError(try PagedVault.open(path: path, secret: secret)) {
            XCTAssertEqual(($0 as? VaultError)?.code, .wrongKey)
        }
        let r = try PagedVault.open(path: path, secret: .keyFile(newKey))
        XCTAssertEqual(try state(r, ids: ids).live, before.live)
        XCTAssertEqual(try state(r, ids: ids).history, before.history)
        XCTAssertEqual(try r.verifyIndex(), before.live.count)
    }

    /// `passwd` on a version 2 vault: slots change, the body and the format version do not.
    func testChangingSlotsKeepsTheBody() throws {
        let path = dir + "/slots.kcv"
        let (v, ids) = try build(path)
        let before = try state(v, ids: ids)
        let bodyBefore = Array(try Recipes.read(path).dropFirst(v.header.length))
        let other = SecureBytes(copying: [UInt8](repeating: 0x33, count: 32))
        try v.changeSlots(remove: [0], add: [.keyFile(other)])
        XCTAssertThrowsError(try PagedVault.open(path: path, secret: secret)) {
            XCTAssertEqual(($0 as? VaultError)?.code, .wrongKey)
        }
        let r = try PagedVault.open(path: path, secret: .keyFile(other), mode: .write)
        XCTAssertEqual(r.header.formatVersion, 2)
        XCTAssertEqual(Array(try Recipes.read(path).dropFirst(r.header.length)), bodyBefore)
        XCTAssertEqual(try state(r, ids: ids).live, before.live)
        // The instance that changed them goes on committing to the new file.
        try v.commit { tx in
            _ = try tx.add(attributes: Attributes(["svce": .string("after"), "acct": .string("passwd")]), value: [2])
        }
        XCTAssertEqual(try PagedVault.open(path: path, secret: .keyFile(other)).verify().problems, [])
    }

    /// Flips a byte in the last chunk of the first item's record; returns the file's bytes and where.
    func flipRecordByte(_ v: PagedVault, _ path: String) throws -> ([UInt8], Int) {
        var item: Item?
        try v.forEachItem {
            item = $0
            return false
        }
        let l = item!.location
        var bytes = try Recipes.read(path)
        let at = v.header.length + Int(l.offset) + Int(l.length) - 20
        bytes[at] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (bytes, at)
    }

    /// A record that fails to authenticate stops compaction: the file is unchanged, no temporary is left.
    func testAFailedCompactionLeavesTheFile() throws {
        let path = dir + "/bad.kcv"
        let (v, _) = try build(path)
        let (bytes, _) = try flipRecordByte(v, path)
        let damaged = try PagedVault.open(path: path, secret: secret, mode: .write)
        XCTAssertThrowsError(try damaged.compact()) { XCTAssertEqual(($0 as? VaultError)?.code, .damagedRecord) }
        XCTAssertEqual(try Recipes.read(path), bytes)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["bad.kcv"])
    }

    // MARK: Verification: trailers, delta chain, trees and every record
    func testVerifyAccountsForEveryByteAndFindsDamage() throws {
        let path = dir + "/verify.kcv"
        let (v, _) = try build(path)
        var r = v.verify()
        XCTAssertEqual(r.problems, [])
        XCTAssertEqual(r.items, v.count)
        XCTAssertGreaterThan(r.records, 10)
        XCTAssertGreaterThan(r.commits, 50)
        XCTAssertGreaterThan(r.deadBytes, 0, "replaced pages, old roots, trailers and delta segments")
        // After compaction every byte of the file is a kept record, a page of the trees, the root or the trailer.
        try v.compact()
        r = v.verify()
        XCTAssertEqual(r.problems, [])
        XCTAssertEqual(r.commits, 1)
        XCTAssertEqual(r.deadBytes, 0)
        // A flipped byte in a record is found, naming the item.
        var (bytes, at) = try flipRecordByte(v, path)
        r = try PagedVault.open(path: path, secret: secret).verify()
        XCTAssertEqual(r.problems.map(\.code), [.damagedRecord])
        // Bytes after the last commit are reported as an incomplete commit.
        bytes[at] ^= 0x40
        try Data(bytes + [1, 2, 3]).write(to: URL(fileURLWithPath: path))
        r = try PagedVault.open(path: path, secret: secret).verify()
        XCTAssertEqual(r.problems.map(\.code), [.incompleteCommit])
        XCTAssertEqual(r.incompleteBytes, 3)
    }

    /// A trailer of the middle of the chain that no longer verifies is reported.
    func testABrokenTrailerChainIsReported() throws {
        let path = dir + "/chain.kcv"
        let (v, _) = try build(path)
        // The trailer before the last fold: open does not read it, verify does.
        var bytes = try Recipes.read(path)
        var t = v.tail.trailer
        func trailer(at offset: UInt64) throws -> TrailerV2 {
            let at = v.header.length + Int(offset)
            return try XCTUnwrap(
                TrailerV2.decode(
                    Array(bytes[at..<at + TrailerV2.size]), at: offset, vaultID: v.header.vaultID, key: v.keys.trailer))
        }
        while !t.wroteRoot { t = try trailer(at: t.previous) }
        let previous = t.previous
        XCTAssertNotEqual(previous, TrailerV2.none)
        bytes[v.header.length + Int(previous) + 100] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let r = try PagedVault.open(path: path, secret: secret).verify()
        XCTAssertTrue(
            r.problems.contains { $0.code == .damagedIndex && $0.context.contains("trailer before generation") },
            "\(r.problems)")
    }
}
