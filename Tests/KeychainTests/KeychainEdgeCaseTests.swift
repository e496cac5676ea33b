import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// The keychain at its edges: errors caught inside a transaction, a store kept across a rekey, the keychain
/// called inside its own transaction, primary keys with kSecAttrSynchronizable, strings compared as bytes,
/// match limits on update and delete, and one group's cleanup beside another's temporary files.
final class KeychainEdgeCaseTests: KeychainTestCase {
    /// A caller that catches an error inside a transaction and goes on cannot commit a duplicate.
    func testCaughtErrorInsideATransactionLeavesNoDuplicate() throws {
        let s = try store()
        var many = Attributes(["svce": .string("b"), "acct": .string("x"), "labl": .string("L")])
        for i in 0..<250 { many["@u\(i)"] = .integer(Int64(i)) }
        try s.add(attributes: attrs(["svce": .string("a"), "acct": .string("x"), "labl": .string("L")]), value: [1])
        try s.add(attributes: many, value: [2])
        var changes: [String: AttributeValue?] = ["acct": .string("z")]
        for i in 0..<10 { changes["@n\(i)"] = .integer(Int64(i)) }
        assertStatus(
            .duplicateItem,
            try s.transaction { tx in
                let ids = try tx.find(ItemQuery(attributes: self.attrs(["labl": .string("L")]))).map(\.id)
                // the second item passes 256 attributes
                XCTAssertThrowsError(try tx.update(ids, set: changes, value: nil))
                try tx.add(attributes: self.attrs(["svce": .string("a"), "acct": .string("z")]), value: [3])
            })
    }

    func testALongLivedStoreSurvivesARekey() throws {
        let s = try store()
        try s.add(attributes: attrs(["svce": .string("a")]), value: [1])
        XCTAssertEqual(try s.find(ItemQuery()).count, 1)
        let key = try dir.readKey("app.shared")
        try Vault.open(path: dir.vaultPath("app.shared"), secret: .keyFile(key), mode: .write).rekey(slots: [
            .keyFile(key)
        ])
        XCTAssertEqual(try s.find(ItemQuery()).count, 1)
        try s.add(attributes: attrs(["svce": .string("b")]), value: [2])
    }

    func testCallingTheKeychainInsideItsOwnTransactionIsAnErrorNotACrash() throws {
        let s = try store()
        assertStatus(.param, try s.transaction { _ in _ = try s.find(ItemQuery()) })
        let k = Keychain(service: "svc", store: s)
        k["legacy"] = "from-before"
        XCTAssertEqual(
            try k.loadOrCreate(String.self, forKey: "id") { try k.getString("legacy") ?? "new" }, "from-before")
        XCTAssertEqual(try k.loadOrCreate(String.self, forKey: "id") { "other" }, "from-before")
    }

    func testSynchronizableIsPartOfEveryPrimaryKey() throws {
        let s = try store()
        let cert: [String: AttributeValue] = ["ctyp": .integer(1), "issr": .data([1]), "slnr": .data([2])]
        try s.add(class: .certificate, attributes: attrs(cert), value: [1])
        var synced = cert
        synced["sync"] = .bool(true)
        try s.add(class: .certificate, attributes: attrs(synced), value: [2])
        XCTAssertEqual(try s.find(ItemQuery(class: .certificate)).count, 1)
        XCTAssertEqual(try s.find(ItemQuery(class: .certificate, synchronizableAny: true)).count, 2)
        assertStatus(
            .param,
            try s.add(attributes: attrs(["svce": .string("x"), "sync": .bool(true), "pdmn": .string("aku")]), value: [])
        )
    }

    func testStringsCompareAsBytes() throws {
        let s = try store()
        try s.add(attributes: attrs(["svce": .string("caf\u{E9}")]), value: [1])  // NFC
        try s.add(attributes: attrs(["svce": .string("cafe\u{301}")]), value: [2])  // NFD: another item, as on Apple's
        XCTAssertEqual(try s.find(.password(service: "caf\u{E9}")).count, 1)
    }

    func testUpdateAndDeleteRefuseAMatchLimit() throws {
        SecItemConfiguration.use(try store())
        for a in ["1", "2"] {
            XCTAssertEqual(
                SecItemAdd(
                    [
                        kSecClass: kSecClassGenericPassword, kSecAttrService: "s", kSecAttrAccount: a,
                        kSecValueData: Data([1])
                    ], nil), errSecSuccess)
        }
        XCTAssertEqual(
            SecItemDelete([kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitOne]), errSecParam)
        XCTAssertEqual(
            SecItemUpdate([kSecClass: kSecClassGenericPassword, kSecReturnData: true], [kSecAttrLabel: "x"]),
            errSecParam)
        var all: AnyObject?
        XCTAssertEqual(
            SecItemCopyMatching(
                [
                    kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll,
                    kSecReturnAttributes: true
                ], &all), errSecSuccess)
        XCTAssertEqual((all as? [[String: Any]])?.count, 2)
    }

    func testAGroupsCleanupLeavesOtherGroupsTemporaryFilesAlone() throws {
        let s = try store(["x", "x.kcv.y"])
        try s.add(attributes: attrs(["svce": .string("a")]), value: [1], group: "x")
        let planted = dir.path + "/.x.kcv.y.key.0123456789ab.tmp"
        XCTAssertTrue(FileManager.default.createFile(atPath: planted, contents: Data([1])))
        try s.withVault(group: "x", write: true) { try $0.compact() }
        XCTAssertTrue(FileManager.default.fileExists(atPath: planted))
    }
}
