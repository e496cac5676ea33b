import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Issue 26: a transaction refuses a second item with a key a live item has (stored, or added in the same
/// transaction), replaces it when asked, or keeps both when asked; in both formats, and on demand.
final class KeyConflictTests: VaultTestCase {
    func item(_ service: String, _ account: String?, sync: Bool? = nil) -> Attributes {
        var a = Attributes([AttributeName.service: .string(service)])
        if let account { a[AttributeName.account] = .string(account) }
        if let sync { a[AttributeName.synchronizable] = .bool(sync) }
        return a
    }

    /// ``eachWayOfWriting(seed:_:)`` with db/app stored.
    func eachWay(_ body: (_ name: String, _ open: () throws -> Vault) throws -> Void) throws {
        try eachWayOfWriting(seed: { try $0.add(attributes: self.item("db", "app"), value: .bytes([1])) }, body)
    }

    /// `service/account/sync` to value, read from the file by a new instance.
    func values(_ v: Vault) throws -> [String: [UInt8]] {
        let r = try Vault.open(path: v.path, secret: secret)
        var out: [String: [UInt8]] = [:]
        for item in r.items {
            let sync = item.attributes[AttributeName.synchronizable].map { "\($0)" } ?? "-"
            out["\(item.service ?? "")/\(item.account ?? "")/\(sync)"] = try r.read(item)
        }
        return out
    }

    func testASecondItemWithAStoredKeyIsRefusedAndNothingIsWritten() throws {
        try eachWay { name, open in
            let v = try open()
            let stored = try XCTUnwrap(try v.items(class: .genericPassword, key: item("db", "app")).first)
            let generation = v.generation
            XCTAssertThrowsError(
                try v.commit { tx in
                    try tx.add(attributes: self.item("other", "x"), value: .bytes([5]))
                    try tx.add(attributes: self.item("db", "app"), value: .bytes([2]))
                }, name
            ) {
                let e = $0 as? VaultError
                XCTAssertEqual(e?.code, .exists, name)
                XCTAssertEqual(e?.item, stored.id, name)
                XCTAssertTrue(e?.context.contains("already in the vault") ?? false, "\(String(describing: e))")
            }
            XCTAssertEqual(try open().generation, generation, name)
            XCTAssertEqual(try values(v), ["db/app/-": [1]], name)
        }
    }

    func testTwoItemsWithOneKeyInOneTransactionAreRefused() throws {
        try eachWay { name, open in
            let v = try open()
            XCTAssertThrowsError(
                try v.commit { tx in
                    try tx.add(attributes: self.item("new", "a"), value: .bytes([1]))
                    try tx.add(attributes: self.item("new", "a"), value: .bytes([2]))
                }, name
            ) { XCTAssertEqual(($0 as? VaultError)?.code, .exists, name) }
        }
    }

    func testReplaceKeepsTheIdAndKeepBothAddsASecond() throws {
        try eachWay { name, open in
            let v = try open()
            let stored = try XCTUnwrap(try v.items(class: .genericPassword, key: item("db", "app")).first)
            var replaced: ItemID?
            try v.commit { tx in
                replaced = try tx.add(attributes: self.item("db", "app"), value: .bytes([2]), ifKeyExists: .replace)
            }
            XCTAssertEqual(replaced, stored.id, name)
            XCTAssertEqual(try values(v), ["db/app/-": [2]], name)
            try v.commit { tx in
                try tx.add(attributes: self.item("db", "app"), value: .bytes([3]), ifKeyExists: .keepBoth)
            }
            XCTAssertEqual(try open().items(class: .genericPassword, key: item("db", "app")).count, 2, name)
            // Two items with the key: replacing one of them is refused rather than guessed.
            XCTAssertThrowsError(
                try v.commit { tx in
                    try tx.add(attributes: self.item("db", "app"), value: .bytes([4]), ifKeyExists: .replace)
                }, name
            ) { XCTAssertTrue("\($0)".contains("2 items"), "\($0)") }
        }
    }

    /// Adds that keep both (an import through the keychain, which checks its own keys) do not record their
    /// keys as they go; the first add that checks finds them all, and the items added after it too.
    func testAnAddThatChecksFindsTheItemsAddedBeforeWithoutChecks() throws {
        try eachWay { name, open in
            let v = try open()
            var ids: [ItemID] = []
            XCTAssertThrowsError(
                try v.commit { tx in
                    for i in 0..<40 {
                        ids.append(
                            try tx.add(
                                attributes: self.item("bulk", "a\(i)"), value: .bytes([1]), ifKeyExists: .keepBoth))
                    }
                    try tx.add(attributes: self.item("bulk", "checked"), value: .bytes([2]))
                    try tx.add(attributes: self.item("bulk", "a17"), value: .bytes([3]))
                }, name
            ) {
                XCTAssertEqual(($0 as? VaultError)?.code, .exists, name)
                XCTAssertEqual(($0 as? VaultError)?.item, ids[17], name)
            }
            XCTAssertThrowsError(
                try v.commit { tx in
                    try tx.add(attributes: self.item("bulk", "b0"), value: .bytes([1]), ifKeyExists: .keepBoth)
                    try tx.add(attributes: self.item("bulk", "b1"), value: .bytes([1]))
                    try tx.add(attributes: self.item("bulk", "b2"), value: .bytes([1]), ifKeyExists: .keepBoth)
                    try tx.add(attributes: self.item("bulk", "b2"), value: .bytes([2]))
                }, name
            ) { XCTAssertEqual(($0 as? VaultError)?.code, .exists, name) }
            XCTAssertEqual(try values(v), ["db/app/-": [1]], name)
        }
    }

    /// On demand, a replace reads the pages on the way to the key, not every item of a large vault.
    func testAReplaceOnDemandReadsPagesNotEveryItem() throws {
        let path = dir + "/many.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)]) { tx in
            for i in 0..<3000 { try tx.add(attributes: self.item("db", "a\(i)"), value: .bytes([UInt8(i & 0xFF)])) }
        }
        let v = try Vault.open(path: path, secret: secret, mode: .write, itemsOnDemand: true)
        let index = try XCTUnwrap(v.itemIndex)
        let before = index.pagesOpened
        try v.commit { tx in
            try tx.add(attributes: self.item("db", "a1234"), value: .bytes([9]), ifKeyExists: .replace)
            try tx.add(attributes: self.item("db", "new"), value: .bytes([8]))
        }
        let opened = index.pagesOpened - before
        print("pages opened by a replace and an add on demand in 3,000 items: \(opened)")
        XCTAssertLessThan(opened, 20)
        let r = try Vault.open(path: path, secret: secret, itemsOnDemand: true)
        XCTAssertEqual(try r.items(class: .genericPassword, key: item("db", "a1234")).map { try r.read($0) }, [[9]])
        XCTAssertEqual(r.count, 3001)
    }

    /// The key is what the item has now in the transaction: a delete or a move frees it, a move takes another.
    func testADeleteOrAMoveInTheTransactionFreesTheKey() throws {
        try eachWay { name, open in
            let v = try open()
            let stored = try XCTUnwrap(try v.items(class: .genericPassword, key: item("db", "app")).first)
            try v.commit { tx in
                try tx.update(stored.id, attributes: self.item("db", "moved"))
                try tx.add(attributes: self.item("db", "app"), value: .bytes([7]))
                XCTAssertThrowsError(try tx.add(attributes: self.item("db", "moved"), value: .bytes([8])), name)
            }
            XCTAssertEqual(try values(v), ["db/app/-": [7], "db/moved/-": [1]], name)
            let moved = try XCTUnwrap(try open().items(class: .genericPassword, key: item("db", "moved")).first)
            try v.commit { tx in
                try tx.delete(moved.id)
                try tx.add(attributes: self.item("db", "moved"), value: .bytes([9]))
            }
            XCTAssertEqual(try values(v), ["db/app/-": [7], "db/moved/-": [9]], name)
        }
    }

    /// An attribute an item lacks counts as its default; another `sync` is another key; a class without key
    /// attributes never conflicts.
    func testTheKeyIsTheKeyAttributesWithTheirDefaults() throws {
        try eachWay { name, open in
            let v = try open()
            XCTAssertThrowsError(
                try v.commit { tx in try tx.add(attributes: self.item("db", "app", sync: false), value: .bytes([2])) },
                name)
            try v.commit { tx in
                try tx.add(attributes: self.item("db", "app", sync: true), value: .bytes([3]))
                try tx.add(attributes: self.item("db", nil), value: .bytes([4]))
                XCTAssertThrowsError(try tx.add(attributes: self.item("db", ""), value: .bytes([5])), name)
                // Keys compare as bytes: NFC and NFD spellings, equal as Swift strings, are two keys.
                try tx.add(attributes: self.item("caf\u{E9}", "x"), value: .bytes([6]))
                try tx.add(attributes: self.item("cafe\u{301}", "x"), value: .bytes([7]))
                for n in 0..<3 {
                    try tx.add(
                        class: ItemClass(rawValue: "note"), attributes: self.item("db", "app"),
                        value: .bytes([UInt8(n)]))
                }
            }
            XCTAssertEqual(try open().count, 8, name)
            let r = try open()
            XCTAssertEqual(
                try r.items(class: .genericPassword, key: self.item("cafe\u{301}", "x")).map { try r.read($0) }, [[7]],
                name)
        }
    }
}
