import Foundation
import VaultFormat
import XCTest

@testable import KcarKeychain

/// Review of the on-demand (version 2) keychain path against the eager one: the same query must find the
/// same items, and a transaction must see its own changes and refuse the same duplicates.
final class OnDemandQueryTests: KeychainTestCase {
    let group = "app.shared"

    /// Commits `items` straight into the group's vault (as another tool holding the key could).
    func commitRaw(_ items: [(ItemClass, Attributes)]) throws {
        let v = try Vault.open(path: dir.vaultPath(group), secret: .keyFile(dir.readKey(group)), mode: .write)
        try v.commit { tx in
            for (c, a) in items { _ = try tx.add(class: c, attributes: a, value: .bytes([7])) }
        }
    }

    /// An item whose `sync` is not a bool (an integer 1, a string) is not "synchronizable" to ItemQuery.matches,
    /// so a search without `sync` finds it in a version 1 group; the key-range lookup pins `sync` to false and
    /// misses it.
    /// The library's schema for new vaults (VaultFormat's `IndexSchema.primaryKeys`, written out by hand)
    /// keys each class exactly by its §K4 primary key with the keychain's defaults, so that a vault a program
    /// writes with the library is searched by the keychain as one `kcar pack` wrote.
    func testTheLibrarysDefaultSchemaKeysEveryClassByItsPrimaryKey() {
        XCTAssertEqual(Set(IndexSchema.primaryKeys.classes.keys), Set(ItemClass.keychainClasses.map(\.rawValue)))
        for c in ItemClass.keychainClasses {
            XCTAssertTrue(Schema.keysByPrimaryKey(.primaryKeys, c.rawValue), c.rawValue)
        }
        XCTAssertEqual(IndexSchema.primaryKeys.indexed, [])
    }

    func testASearchFindsAnItemWhoseSyncIsNotABool() throws {
        let s = try store()
        try s.add(attributes: attrs(["svce": .string("seed")]), value: [0], group: group)
        try commitRaw([
            (.genericPassword, attrs(["svce": .string("odd"), "acct": .string("a"), "sync": .integer(1)])),
            (.genericPassword, attrs(["svce": .string("odd"), "acct": .string("b"), "sync": .string("x")]))
        ])
        // What the eager path answers (the items in memory).
        let eager = ItemQuery.password(service: "odd", group: group)
        let all = try Vault.open(path: dir.vaultPath(group), secret: .keyFile(dir.readKey(group))).items
        XCTAssertEqual(eager.select(all).count, 2)
        let fresh = try store()
        XCTAssertEqual(try fresh.find(ItemQuery.password(service: "odd", group: group)).count, 2, "by service")
        XCTAssertEqual(
            try fresh.find(ItemQuery.password(service: "odd", account: "a", group: group)).count, 1, "by primary key")
        var any = ItemQuery.password(service: "odd", group: group)
        any.synchronizableAny = true
        XCTAssertEqual(try fresh.find(any).count, 2, "kSecAttrSynchronizableAny")
        try fresh.transaction(group: group) { tx in
            XCTAssertEqual(try tx.find(ItemQuery.password(service: "odd", group: group)).count, 2, "in a transaction")
        }
    }

    /// A version 2 group whose schema gives a key attribute another default than §K4's (a file made by
    /// another writer): an item without `svce` matches a query for svce "" (§K4's default) but is keyed
    /// under the schema's default, so a key-range lookup misses it.
    func testASearchIgnoresAKeyRangeWhoseDefaultIsNotTheKeychains() throws {
        let s = try store()
        try s.add(attributes: attrs(["svce": .string("seed")]), value: [0], group: group)
        let key = try dir.readKey(group)
        let schema = IndexSchema(classes: [
            "genp": ClassSchema(keyAttributes: [
                ("sync", .bool(false)), ("svce", .string("none")), ("acct", .string(""))
            ])
        ])
        try Vault.create(
            path: dir.vaultPath(group), group: group, slots: [.keyFile(key)], schema: schema, overwrite: true
        ) { tx in
            _ = try tx.add(attributes: attrs(["acct": .string("x")]), value: .bytes([1]))
        }
        let fresh = try store()
        try fresh.acceptRollback(group: group)
        let q = ItemQuery(attributes: attrs(["svce": .string(""), "acct": .string("x")]), group: group)
        let all = try Vault.open(path: dir.vaultPath(group), secret: .keyFile(key)).items
        XCTAssertEqual(q.select(all).count, 1)
        XCTAssertEqual(try fresh.find(q).count, 1)
    }

    /// One update that swaps the primary keys of two items; then a third item may not take either key, and a
    /// deleted key may be taken again, within one transaction.
    func testSwapsDeletesAndReAddsInOneTransaction() throws {
        let s = try store()
        try s.transaction(group: group) { tx in
            for i in 0..<50 {
                try tx.add(attributes: attrs(["svce": .string("s"), "acct": .string("a\(i)")]), value: [UInt8(i)])
            }
        }
        let fresh = try store()
        try fresh.transaction(group: group) { tx in
            let a = try tx.find(ItemQuery.password(service: "s", account: "a1", group: group))[0]
            let b = try tx.find(ItemQuery.password(service: "s", account: "a2", group: group))[0]
            try tx.update([a.id], set: ["acct": .string("tmp")], value: nil)
            try tx.update([b.id], set: ["acct": .string("a1")], value: nil)
            try tx.update([a.id], set: ["acct": .string("a2")], value: nil)
            assertStatus(
                .duplicateItem, try tx.add(attributes: attrs(["svce": .string("s"), "acct": .string("a1")]), value: [1])
            )
            assertStatus(
                .duplicateItem, try tx.add(attributes: attrs(["svce": .string("s"), "acct": .string("a2")]), value: [1])
            )
            let tmpFree = try tx.add(attributes: attrs(["svce": .string("s"), "acct": .string("tmp2")]), value: [1])
            assertStatus(.duplicateItem, try tx.update([tmpFree.id], set: ["acct": .string("a2")], value: nil))
            XCTAssertEqual(try tx.find(ItemQuery.password(service: "s", account: "a1", group: group)).map(\.id), [b.id])
            XCTAssertEqual(try tx.find(ItemQuery.password(service: "s", account: "a2", group: group)).map(\.id), [a.id])
            XCTAssertEqual(
                try tx.value(of: tx.find(ItemQuery.password(service: "s", account: "a2", group: group))[0]), [1])
            // Delete, then add at the same key: allowed, and found once.
            let c = try tx.find(ItemQuery.password(service: "s", account: "a3", group: group))[0]
            try tx.delete(c.id)
            try tx.add(attributes: attrs(["svce": .string("s"), "acct": .string("a3")]), value: [3])
            assertStatus(
                .duplicateItem, try tx.add(attributes: attrs(["svce": .string("s"), "acct": .string("a3")]), value: [3])
            )
            XCTAssertEqual(try tx.find(ItemQuery.password(service: "s", account: "a3", group: group)).count, 1)
            // Add, then move it onto a taken key: refused.
            let d = try tx.add(attributes: attrs(["svce": .string("s"), "acct": .string("new")]), value: [4])
            assertStatus(.duplicateItem, try tx.update([d.id], set: ["acct": .string("a4")], value: nil))
            XCTAssertEqual(try tx.find(ItemQuery.password(service: "s", group: group)).count, 52)
        }
        let after = try store().find(ItemQuery.password(service: "s", group: group))
        XCTAssertEqual(after.count, 52)
        XCTAssertEqual(Set(after.map { $0.attributes.string("acct") ?? "" }).count, 52)
    }
}
