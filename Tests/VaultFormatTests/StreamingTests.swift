import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Issue 10: a version 2 vault opened with its items on demand is listed and verified one page of its items
/// tree at a time (`kcar list`, `extract`, `verify`), never holding its items, with the answers of a vault
/// that read them all at open.
final class StreamingTests: PagedTestCase {
    /// `n` items over 13 services, in solid records of `solid` members.
    func make(_ n: Int, solid: Int = 64) throws -> String {
        let path = dir + "/s.kcv"
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema,
            options: WriteOptions(solidMembers: solid)
        ) { tx in
            for i in 0..<n {
                try tx.add(attributes: attrs("s\(i % 13)", "a\(i)"), value: .bytes(Array("value \(i)".utf8)))
            }
        }
        return path
    }

    func testForEachItemStreamsInKeyOrderWithoutKeepingTheItems() throws {
        let path = try make(3000)
        let eager = try Vault.open(path: path, secret: secret)
        let lazy = try Vault.open(path: path, secret: secret, itemsOnDemand: true)
        let opened = try XCTUnwrap(lazy.version2).pagesOpened
        var seen: [Item] = []
        try lazy.forEachItem { item in
            seen.append(item)
            return true
        }
        XCTAssertEqual(Set(seen), Set(eager.unorderedItems))
        // Key order (sync, service, account, id): for these items, `items`' order (service, account, id).
        XCTAssertEqual(seen.map(\.id), eager.items.map(\.id))
        XCTAssertTrue(lazy.itemsOnDemand)
        XCTAssertTrue(lazy.state.isEmpty, "no item kept by the vault")
        let leaves = try XCTUnwrap(lazy.version2).pagesOpened - opened
        XCTAssertGreaterThan(leaves, 20, "3000 items fill many pages, each read once")
        // One page at a time: ten items read a path of pages, not the tree.
        let fresh = try Vault.open(path: path, secret: secret, itemsOnDemand: true)
        let before = try XCTUnwrap(fresh.version2).pagesOpened
        var n = 0
        try fresh.forEachItem { _ in
            n += 1
            return n < 10
        }
        XCTAssertEqual(n, 10)
        XCTAssertLessThanOrEqual(try XCTUnwrap(fresh.version2).pagesOpened - before, PagedLimits.heightMax)
        // An eager vault streams from its trees too, in the same order.
        var again: [ItemID] = []
        try eager.forEachItem { item in
            again.append(item.id)
            return true
        }
        XCTAssertEqual(again, seen.map(\.id))
    }

    func testVerifyReadsEveryRecordOnceWithoutTheItems() throws {
        let path = try make(3000)
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        let some = Array(v.items.prefix(60))
        try v.commit { tx in
            for (i, item) in some.enumerated() {
                if i % 2 == 0 { try tx.update(item.id, value: .bytes([UInt8(i)])) } else { try tx.delete(item.id) }
            }
        }
        let lazy = try Vault.open(path: path, secret: secret, itemsOnDemand: true)
        let r = lazy.verify()
        XCTAssertTrue(r.isIntact, "\(r.problems)")
        XCTAssertEqual(r.items, 2970)
        XCTAssertEqual(r.deadBytes, v.deadBytes, "the figure the items in memory give")
        // Every live value and every kept version's value, authenticated.
        let p = try XCTUnwrap(lazy.version2)
        var kept: UInt64 = 0
        var records = Set(v.unorderedItems.map(\.location.recordID))
        try p.scan(.history) { e in
            let h = try ItemEntries.decodeHistory(e).item
            kept += h.size
            records.insert(h.location.recordID)
            return true
        }
        XCTAssertGreaterThan(kept, 0)
        XCTAssertEqual(r.valueBytes, v.unorderedItems.reduce(0) { $0 + $1.size } + kept)
        XCTAssertEqual(r.records, records.count)
        XCTAssertGreaterThan(r.records, 40, "3000 items in records of 64")
        XCTAssertTrue(lazy.itemsOnDemand)
        XCTAssertTrue(lazy.state.isEmpty)
    }

    /// A damaged record is named by the first of its items in key order, and how many more it holds, as
    /// when verify held every item.
    func testADamagedRecordIsNamedByItsItems() throws {
        let path = try make(300)
        let eager = try Vault.open(path: path, secret: secret)
        let victim = eager.items[150]
        let members = eager.items.filter { $0.location.recordID == victim.location.recordID }
        XCTAssertGreaterThan(members.count, 1)
        var d = try Data(contentsOf: URL(fileURLWithPath: path))
        d[eager.headerLength + Int(victim.location.offset + victim.location.length / 2)] ^= 1
        try d.write(to: URL(fileURLWithPath: path))
        let r = try Vault.open(path: path, secret: secret, itemsOnDemand: true).verify()
        XCTAssertEqual(r.problems.map(\.code), [.damagedRecord], "\(r.problems)")
        XCTAssertTrue(
            r.problems.first?.context.hasPrefix(
                "\(members[0].displayName) (and \(members.count - 1) more in its record): ") == true,
            "\(r.problems)")
        XCTAssertEqual(r.items, 300)
    }

    /// Records past ``RecordClaims/inlineBytesMax`` are checked on every core: the report is the one a check
    /// in file order gives, two damaged records among 25 named by their own items, in file order.
    func testRecordsCheckedOnEveryCoreReportAsInFileOrder() throws {
        let path = dir + "/many.kcv"
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema,
            options: WriteOptions(solidMembers: 16)
        ) { tx in
            for i in 0..<400 {
                try tx.add(
                    attributes: attrs("s\(i % 7)", "a\(i)"), value: .bytes(Recipes.noise(2048, seed: UInt8(i & 0xFF))))
            }
        }
        let eager = try Vault.open(path: path, secret: secret)
        let byRecord = Dictionary(grouping: eager.items, by: \.location.recordID)
        XCTAssertEqual(byRecord.count, 25)
        XCTAssertGreaterThan(
            byRecord.values.reduce(0) { $0 + $1[0].location.length }, RecordClaims.inlineBytesMax,
            "checked on every core")
        var r = try Vault.open(path: path, secret: secret, itemsOnDemand: true).verify()
        XCTAssertTrue(r.isIntact, "\(r.problems)")
        XCTAssertEqual(r.records, 25)
        XCTAssertEqual(r.valueBytes, 400 * 2048)
        let inFileOrder = byRecord.values.map { $0[0].location }.sorted { $0.offset < $1.offset }
        var d = try Data(contentsOf: URL(fileURLWithPath: path))
        for l in [inFileOrder[17], inFileOrder[4]] { d[eager.headerLength + Int(l.offset + l.length / 2)] ^= 1 }
        try d.write(to: URL(fileURLWithPath: path))
        r = try Vault.open(path: path, secret: secret, itemsOnDemand: true).verify()
        XCTAssertEqual(r.problems.map(\.code), [.damagedRecord, .damagedRecord], "\(r.problems)")
        for (problem, l) in zip(r.problems, [inFileOrder[4], inFileOrder[17]]) {
            let first = eager.items.first { $0.location.recordID == l.recordID }!
            XCTAssertTrue(problem.context.hasPrefix("\(first.displayName) (and 15 more in its record): "), "\(problem)")
        }
        XCTAssertEqual(r.records, 23)
        XCTAssertEqual(r.items, 400)
    }

    /// An index whose item names a member the record's table gives to another item (or another size, or
    /// data offset): the record authenticates, the claim does not match, and the item is named.
    func testAMemberTheTableDoesNotNameIsFound() throws {
        let path = try make(200)
        let target = try XCTUnwrap(Vault.open(path: path, secret: secret).items.first { $0.account == "a77" })
        for edit: (inout Item) -> Void in [
            { $0.location.member += 1 }, { $0.location.dataOffset += 1 }, { $0.size += 1 }
        ] {
            let copy = try copy(path, "forged.kcv")
            try forge(copy) { if $0.id == target.id { edit(&$0) } }
            let r = try Vault.open(path: copy, secret: secret, itemsOnDemand: true).verify()
            XCTAssertFalse(r.isIntact)
            XCTAssertTrue(
                r.problems.contains { $0.code == .damagedRecord && $0.context.contains("s12/a77") }, "\(r.problems)")
        }
    }
}
