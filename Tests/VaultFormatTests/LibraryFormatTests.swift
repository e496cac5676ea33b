import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Issue 26: the library writes the current format unless told, and finds an item by its key or an indexed
/// attribute by reading pages, not every item (what `kcar extract NAME` does).
final class LibraryFormatTests: PagedTestCase {
    let key = SecureBytes(copying: Recipes.keyFile)

    func item(_ service: String, _ account: String?, label: String? = nil) -> Attributes {
        var a = Attributes()
        a[AttributeName.service] = .string(service)
        if let account { a[AttributeName.account] = .string(account) }
        if let label { a["labl"] = .string(label) }
        return a
    }

    func testCreateWritesTheCurrentFormatUnlessToldAndTheOldOneWhenAsked() throws {
        let current = dir + "/current.kcv"
        let old = dir + "/old.kcv"
        try Vault.create(path: current, group: "g", slots: [.keyFile(key)]) { tx in
            try tx.add(attributes: item("s", "a"), value: .bytes([1]))
        }
        try Vault.create(path: old, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: item("s", "a"), value: .bytes([1]))
        }
        let v2 = try Vault.open(path: current, secret: .keyFile(key))
        XCTAssertEqual(v2.formatVersion, 2)
        XCTAssertEqual(v2.itemIndex?.schema, .primaryKeys)
        XCTAssertEqual(v2.retention, Retention())
        let v1 = try Vault.open(path: old, secret: .keyFile(key))
        XCTAssertEqual(v1.formatVersion, 1)
        XCTAssertNil(v1.itemIndex)
        XCTAssertEqual(try v1.read(try XCTUnwrap(v1.items.first)), try v2.read(try XCTUnwrap(v2.items.first)))
    }

    /// 3,000 items: one lookup by service and account opens a handful of pages and reads no other item.
    func testALookupByServiceAndAccountReadsAFewPages() throws {
        let path = dir + "/many.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)]) { tx in
            for i in 0..<3000 {
                try tx.add(attributes: item("svc\(i % 7)", "user\(i)"), value: .bytes(Array("secret \(i)".utf8)))
            }
        }
        let vault = try Vault.open(path: path, secret: .keyFile(key), itemsOnDemand: true)
        let index = try XCTUnwrap(vault.itemIndex)
        let before = index.pagesOpened
        let found = try index.items(class: .genericPassword, key: item("svc4", "user1705"))
        let opened = index.pagesOpened - before
        XCTAssertEqual(found.count, 1)
        XCTAssertEqual(try vault.read(found[0]), Array("secret 1705".utf8))
        let p = try XCTUnwrap(vault.version2)
        let height = try p.store.read(try XCTUnwrap(p.root.items)).level + 1
        XCTAssertGreaterThan(height, 1)
        XCTAssertLessThanOrEqual(opened, height + 1, "at most one page per level, plus the next leaf")
        XCTAssertEqual(try index.items(class: .genericPassword, key: item("svc4", "user1706")), [])
        // Fewer values than key attributes select a range: every item of one service, in account order.
        let service = try index.items(class: .genericPassword, keyValues: [.bool(false), .string("svc0")])
        XCTAssertEqual(service.count, 429)
        XCTAssertEqual(service.map { $0.account ?? "" }, service.map { $0.account ?? "" }.sorted())
    }

    func testAMissingKeyAttributeStandsForItsDefault() throws {
        let path = dir + "/defaults.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)]) { tx in
            try tx.add(attributes: item("s", nil), value: .bytes([1]))
            try tx.add(attributes: item("s", "a"), value: .bytes([2]))
        }
        let vault = try Vault.open(path: path, secret: .keyFile(key), itemsOnDemand: true)
        let index = try XCTUnwrap(vault.itemIndex)
        let noAccount = try index.items(class: .genericPassword, key: item("s", nil))
        XCTAssertEqual(try noAccount.map { try vault.read($0) }, [[1]])
        // An item that lacks the account is keyed as one whose account is "" (SPEC.md §K4).
        XCTAssertEqual(try index.items(class: .genericPassword, key: item("s", "")).count, 1)
    }

    func testAKeyOrAttributeTheVaultDoesNotIndexIsRefusedNotIgnored() throws {
        let path = dir + "/refused.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)]) { tx in
            try tx.add(attributes: item("s", "a", label: "L"), value: .bytes([1]))
        }
        let index = try XCTUnwrap(try Vault.open(path: path, secret: .keyFile(key), itemsOnDemand: true).itemIndex)
        XCTAssertThrowsError(try index.items(class: .genericPassword, key: item("s", "a", label: "L"))) {
            XCTAssertEqual(($0 as? VaultError)?.code, .invalidArgument)
            XCTAssertTrue("\($0)".contains("labl is not a key attribute of class genp"), "\($0)")
        }
        XCTAssertThrowsError(try index.items(attribute: "labl", equals: .string("L"))) {
            XCTAssertEqual(($0 as? VaultError)?.code, .invalidArgument)
        }
    }

    func testAnIndexedAttributeIsFoundThroughTheAttributesTree() throws {
        let path = dir + "/labels.kcv"
        let schema = IndexSchema(classes: IndexSchema.primaryKeys.classes, indexed: ["labl"])
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .current(schema: schema)) { tx in
            for i in 0..<500 {
                try tx.add(attributes: item("s", "a\(i)", label: i % 100 == 0 ? "rare" : "common"), value: .bytes([1]))
            }
        }
        let vault = try Vault.open(path: path, secret: .keyFile(key), itemsOnDemand: true)
        let rare = try XCTUnwrap(vault.itemIndex).items(attribute: "labl", equals: .string("rare"))
        XCTAssertEqual(Set(rare.compactMap(\.account)), ["a0", "a100", "a200", "a300", "a400"])
    }
}
