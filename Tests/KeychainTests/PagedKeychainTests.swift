import Foundation
import VaultFormat
import XCTest

@testable import KcarKeychain

/// A group's vault is format version 2 (SPEC.md Part 4), opened with its items on demand: a search that
/// gives a primary key or an indexed attribute, an add and a read read a path of pages, not every item;
/// a group made by an earlier kcar (version 1) is upgraded on its first change.
final class PagedKeychainTests: KeychainTestCase {
    let group = "app.shared"

    func fill(_ s: KeychainStore, _ n: Int) throws {
        try s.transaction(group: group) { tx in
            for i in 0..<n {
                try tx.add(
                    attributes: attrs([
                        "svce": .string("s\(i % 10)"), "acct": .string("a\(i)"), "@team": .string("t\(i % 100)")
                    ]),
                    value: Array("secret \(i)".utf8))
            }
        }
    }

    func testLookupsReadAPathOfPages() throws {
        try fill(try store(), 3000)
        XCTAssertEqual(try Vault.inspect(path: dir.vaultPath(group)).header.formatVersion, 2)
        let s = try store()
        let one = try s.values(matching: ItemQuery.password(service: "s7", account: "a1237", group: group))
        XCTAssertEqual(one.map { String(decoding: $0.value, as: UTF8.self) }, ["secret 1237"])
        let afterGet = try XCTUnwrap(s.pagesOpened(group: group))
        XCTAssertLessThanOrEqual(afterGet, 6, "a primary-key search reads one path of the items tree")
        let team = try s.find(ItemQuery(attributes: attrs(["@team": .string("t42")]), group: group))
        XCTAssertEqual(Set(team.compactMap { $0.attributes.string("acct") }), Set((0..<30).map { "a\($0 * 100 + 42)" }))
        let afterFind = try XCTUnwrap(s.pagesOpened(group: group)) - afterGet
        XCTAssertLessThanOrEqual(afterFind, 40, "an indexed attribute reads its range and one path per match")
        // An add checks its primary key with one lookup, and refuses a taken one.
        let before = try XCTUnwrap(s.pagesOpened(group: group))
        try s.add(attributes: attrs(["svce": .string("new"), "acct": .string("one")]), value: [1], group: group)
        assertStatus(
            .duplicateItem,
            try s.add(attributes: attrs(["svce": .string("s3"), "acct": .string("a3")]), value: [2], group: group))
        XCTAssertLessThanOrEqual(try XCTUnwrap(s.pagesOpened(group: group)) - before, 12)
        XCTAssertEqual(try s.groupCounts().first { $0.group == group }?.count, 3001)
        // Without a key or an indexed attribute, a search still finds everything.
        XCTAssertEqual(try s.find(ItemQuery(attributes: attrs(["acct": .string("a2999")]), group: group)).count, 1)
    }

    /// The group checks a vault command makes before it reads the group (`kcar list --group G`) read a path
    /// of pages, not every item: the command reads them itself (they were read twice).
    func testAGroupCheckedForAVaultCommandIsNotReadWhole() throws {
        try fill(try store(), 3000)
        let checked = try store()
        let generation = try checked.withVault(group: group, loadingItems: false) { $0.generation }
        XCTAssertGreaterThan(generation, 0)
        let pathOnly = try XCTUnwrap(checked.pagesOpened(group: group))
        let loaded = try store()
        try loaded.withVault(group: group) { _ in }
        let whole = try XCTUnwrap(loaded.pagesOpened(group: group))
        XCTAssertLessThanOrEqual(pathOnly, 6, "the checks read the index's root and trailer, not the items")
        XCTAssertGreaterThan(whole, 20, "loading the items reads every leaf (\(whole) pages)")
    }

    /// A query that gives a common source (every item's `@app`, a service 300 items share) beside a rare one
    /// (`@key`, one item) reads the rare one's entries, whatever the order of the attributes' names: the
    /// sources are counted before one is read. Before, the first indexed attribute (or the key range) was read
    /// whole: thousands of entries.
    func testAQueryReadsItsSmallestSource() throws {
        try store().transaction(group: group) { tx in
            for i in 0..<3000 {
                try tx.add(
                    attributes: attrs([
                        "svce": .string("s\(i % 10)"), "acct": .string("a\(i)"), "@app": .string("many"),
                        "@key": .string("k\(i)"), "@zone": .string("z")
                    ]), value: [1])
            }
        }
        let queries: [(String, Attributes)] = [
            (
                "two indexed attributes, the common one first",
                attrs(["@app": .string("many"), "@key": .string("k1234")])
            ),
            ("the common one last", attrs(["@key": .string("k1234"), "@zone": .string("z")])),
            ("a service's range beside a rare attribute", attrs(["svce": .string("s4"), "@key": .string("k1234")]))
        ]
        for (what, query) in queries {
            let s = try store()
            let found = try s.find(ItemQuery(attributes: query, group: group))
            XCTAssertEqual(found.compactMap { $0.attributes.string("acct") }, ["a1234"], what)
            XCTAssertLessThanOrEqual(try XCTUnwrap(s.pagesOpened(group: group)), 24, what)
        }
        // Two common sources: both counted past the probe, the first is read; the answer is the same.
        let s = try store()
        XCTAssertEqual(
            try s.find(ItemQuery(attributes: attrs(["@app": .string("many"), "@zone": .string("z")]), group: group))
                .count, 3000)
    }

    /// Adds, updates and deletes in one transaction, searched within it, against a model of the primary
    /// keys (service, account); then read back by a fresh store.
    func testTransactionsSeeTheirOwnChangesOverLookups() throws {
        try fill(try store(), 500)
        struct Key: Hashable { let service: String, account: String }
        var model = Set((0..<500).map { Key(service: "s\($0 % 10)", account: "a\($0)") })
        var seed: UInt64 = 0x5EED
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        let s = try store()
        var outcomes = [0, 0, 0, 0]
        for round in 0..<20 {
            try s.transaction(group: group) { tx in
                for _ in 0..<15 {
                    let account = "a\(next(520))"
                    let q = ItemQuery(attributes: attrs(["acct": .string(account)]), group: group)
                    let held = model.filter { $0.account == account }
                    switch next(4) {
                    case 0:
                        let k = Key(service: "s\(next(12))", account: account)
                        do {
                            try tx.add(
                                attributes: attrs(["svce": .string(k.service), "acct": .string(account)]), value: [1])
                            XCTAssertFalse(model.contains(k), "round \(round): a duplicate \(k) was added")
                            model.insert(k)
                            outcomes[0] += 1
                        } catch let e as KeychainError where e.status == .duplicateItem {
                            XCTAssertTrue(model.contains(k), "round \(round): \(k) refused as a duplicate")
                        }
                    case 1:
                        let found = try tx.find(q)
                        XCTAssertEqual(found.count, held.count)
                        guard found.count == 1, let from = held.first else { continue }
                        let to = Key(service: "s\(next(12))", account: account)
                        do {
                            try tx.update([found[0].id], set: ["svce": .string(to.service)], value: [9])
                            XCTAssertTrue(to == from || !model.contains(to), "round \(round): moved onto \(to)")
                            model.remove(from)
                            model.insert(to)
                            outcomes[1] += 1
                        } catch let e as KeychainError where e.status == .duplicateItem {
                            XCTFail("round \(round): \(from) -> \(to) refused")
                        }
                    case 2:
                        let found = try tx.find(q)
                        XCTAssertEqual(found.count, held.count)
                        for item in found { try tx.delete(item.id) }
                        model.subtract(held)
                        outcomes[2] += found.count
                    default:
                        XCTAssertEqual(
                            Set(try tx.find(q).compactMap { $0.attributes.string("svce") }), Set(held.map(\.service)),
                            "round \(round): \(account) as the transaction sees it")
                        outcomes[3] += 1
                    }
                }
            }
        }
        XCTAssertTrue(outcomes.allSatisfy { $0 > 5 }, "\(outcomes)")
        // A fresh store, and a whole verify, agree with the model.
        let all = try store().find(ItemQuery(group: group))
        XCTAssertEqual(
            Set(
                all.map {
                    Key(service: $0.attributes.string("svce") ?? "", account: $0.attributes.string("acct") ?? "")
                }), model)
        XCTAssertEqual(all.count, model.count)
        XCTAssertTrue(
            try Vault.open(path: dir.vaultPath(group), secret: .keyFile(dir.readKey(group))).verify().isIntact)
    }

    func testAVersion1GroupIsUpgradedOnItsFirstChange() throws {
        let s = try store()
        try s.add(attributes: attrs(["svce": .string("x")]), value: [0], group: group)
        // The group's vault as an earlier kcar wrote it.
        let key = try dir.readKey(group)
        try Vault.create(
            path: dir.vaultPath(group), group: group, slots: [.keyFile(key)], format: .version1, overwrite: true
        ) { tx in
            for i in 0..<20 {
                _ = try tx.add(
                    attributes: attrs(["svce": .string("old"), "acct": .string("a\(i)")]), value: .bytes([UInt8(i)]))
            }
        }
        let fresh = try store()
        try fresh.acceptRollback(group: group)
        XCTAssertEqual(try fresh.find(ItemQuery.password(service: "old", group: group)).count, 20)
        XCTAssertEqual(
            try Vault.inspect(path: dir.vaultPath(group)).header.formatVersion, 1, "reading does not upgrade")
        let ids = Set(try fresh.find(ItemQuery.password(service: "old", group: group)).map(\.id))
        try fresh.add(attributes: attrs(["svce": .string("new")]), value: [1], group: group)
        XCTAssertEqual(try Vault.inspect(path: dir.vaultPath(group)).header.formatVersion, 2)
        let after = try store()
        XCTAssertEqual(Set(try after.find(ItemQuery.password(service: "old", group: group)).map(\.id)), ids, "ids kept")
        XCTAssertEqual(
            try after.values(matching: ItemQuery.password(service: "old", account: "a7", group: group)).first?.value,
            [7])
        XCTAssertEqual(try after.find(ItemQuery(group: group)).count, 21)
    }
}
