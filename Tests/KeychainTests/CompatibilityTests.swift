import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// Issue 12, item 8: KeychainAccess's, Valet's and keychain-swift's spellings over the typed API.
final class CompatibilityTests: KeychainTestCase {
    func testKeychainAccessSpellings() throws {
        let keychain = Keychain(service: "com.example.github-token", store: try store())
        try keychain.set("01234567-89ab-cdef", key: "kishikawakatsumi")
        XCTAssertEqual(try keychain.get("kishikawakatsumi"), "01234567-89ab-cdef")
        try keychain.set(Data([1, 2]), key: "blob")
        XCTAssertEqual(try keychain.getData("blob"), Data([1, 2]))
        keychain[string: "s"] = "v"
        XCTAssertEqual(keychain[string: "s"], "v")
        XCTAssertEqual(keychain.allKeys(), ["blob", "kishikawakatsumi", "s"])

        try keychain.label("github.com (kishikawakatsumi)").comment("github access token").accessibility(
            .afterFirstUnlock
        )
        .set("changed", key: "kishikawakatsumi")
        let item = try XCTUnwrap(try keychain.allItems().first { $0.account == "kishikawakatsumi" })
        XCTAssertEqual(item.label, "github.com (kishikawakatsumi)")
        XCTAssertEqual(item.attributes.string("icmt"), "github access token")
        XCTAssertEqual(item.attributes.string("pdmn"), Accessibility.afterFirstUnlock.rawValue)
        XCTAssertEqual(try keychain.get("kishikawakatsumi"), "changed")

        try keychain.remove("blob")
        try keychain.remove("blob")  // no error for a key without a value
        XCTAssertFalse(try keychain.contains("blob"))
        try keychain.removeAll()
        XCTAssertEqual(keychain.allKeys(), [])
        XCTAssertEqual(keychain.itemClass, .genericPassword)
    }

    func testKeychainAccessInternetPasswords() throws {
        let s = try store()
        let keychain = Keychain(server: "https://github.com", protocolType: .https, store: s)
        try keychain.set("01234567-89ab-cdef", key: "kishikawakatsumi")
        XCTAssertEqual(keychain["kishikawakatsumi"], "01234567-89ab-cdef")
        XCTAssertEqual(keychain.itemClass, .internetPassword)
        XCTAssertEqual(keychain.server, URL(string: "https://github.com"))
        let item = try XCTUnwrap(try s.find(ItemQuery(class: .internetPassword)).first)
        XCTAssertEqual(item.attributes.string("srvr"), "github.com")
        XCTAssertEqual(item.attributes.string("ptcl"), kSecAttrProtocolHTTPS)
        XCTAssertEqual(item.attributes.string("atyp"), kSecAttrAuthenticationTypeDefault)
        XCTAssertEqual(item.account, "kishikawakatsumi")

        let withPort = Keychain(
            server: URL(string: "http://localhost:8080")!, protocolType: .http,
            authenticationType: .httpBasic, store: s)
        try withPort.set("p", key: "me")
        XCTAssertEqual(
            try s.find(ItemQuery(class: .internetPassword, attributes: Attributes(["port": 8080]))).map(\.account),
            ["me"])
        XCTAssertNil(try keychain.get("me"), "another server")
        XCTAssertEqual(keychain.allKeys(), ["kishikawakatsumi"])
    }

    func testValetSpellings() throws {
        let s = try store()
        let id = try XCTUnwrap(Identifier(nonEmpty: "Druidia"))
        XCTAssertNil(Identifier(nonEmpty: ""))
        let valet = Valet.valet(with: id, accessibility: .whenUnlocked, accessGroup: "app.shared", store: s)
        XCTAssertTrue(valet.canAccessKeychain())
        try valet.setString("12345", forKey: "combination")
        XCTAssertEqual(try valet.string(forKey: "combination"), "12345")
        try valet.setObject(Data([9]), forKey: "blob")
        XCTAssertEqual(try valet.object(forKey: "blob"), Data([9]))
        XCTAssertTrue(try valet.containsObject(forKey: "blob"))
        XCTAssertEqual(try valet.allKeys(), ["combination", "blob"])

        var caught = ""
        do { _ = try valet.string(forKey: "nothing") } catch KeychainError.itemNotFound {
            caught = "itemNotFound"
        } catch { caught = "\(error)" }
        XCTAssertEqual(caught, "itemNotFound")
        do { try valet.setString("", forKey: "k") } catch KeychainError.emptyValue { caught = "emptyValue" } catch {
            caught = "\(error)"
        }
        XCTAssertEqual(caught, "emptyValue")
        do { try valet.setString("v", forKey: "") } catch KeychainError.itemNotFound {
            caught = "wrong"
        } catch KeychainError.emptyKey { caught = "emptyKey" } catch { caught = "\(error)" }
        XCTAssertEqual(caught, "emptyKey")
        let timeout = KeychainError(.interactionNotAllowed, "lock")
        XCTAssertTrue(KeychainError.couldNotAccessKeychain ~= timeout)
        XCTAssertFalse(KeychainError.couldNotAccessKeychain ~= KeychainError(.itemNotFound, "x"))
        XCTAssertFalse(KeychainError.itemNotFound ~= timeout)

        let old = Valet.valet(
            with: try XCTUnwrap(Identifier(nonEmpty: "Old")), accessibility: .afterFirstUnlock,
            accessGroup: "app.shared", store: s)
        try old.setString("a", forKey: "one")
        try old.setObject(Data([2]), forKey: "two")
        try valet.migrateObjects(from: old, removeOnCompletion: true)
        XCTAssertEqual(try valet.string(forKey: "one"), "a")
        XCTAssertEqual(try valet.object(forKey: "two"), Data([2]))
        XCTAssertEqual(try old.allKeys(), [])
        try old.setString("b", forKey: "one")
        XCTAssertThrowsError(try valet.migrateObjects(from: old, removeOnCompletion: true)) { e in
            XCTAssertEqual((e as? KeychainError)?.status, .duplicateItem)
        }
        XCTAssertEqual(try valet.string(forKey: "one"), "a", "nothing written")
        XCTAssertEqual(try old.string(forKey: "one"), "b", "nothing removed")

        try valet.removeObject(forKey: "one")
        try valet.removeObject(forKey: "one")
        try valet.removeAllObjects()
        XCTAssertEqual(try valet.allKeys(), [])
    }

    func testKeychainSwiftSpellings() throws {
        let s = try store()
        let keychain = KeychainSwift(store: s)
        keychain.accessGroup = "app.shared"
        XCTAssertTrue(keychain.set("hello world", forKey: "my key"))
        XCTAssertEqual(keychain.get("my key"), "hello world")
        XCTAssertEqual(keychain.lastResultCode, noErr)
        XCTAssertTrue(keychain.set(Data([1, 2]), forKey: "data", withAccess: .accessibleAfterFirstUnlockThisDeviceOnly))
        XCTAssertEqual(keychain.getData("data"), Data([1, 2]))
        keychain.set(true, forKey: "flag")
        XCTAssertEqual(keychain.getBool("flag"), true)
        XCTAssertEqual(keychain.allKeys.sorted(), ["data", "flag", "my key"])

        XCTAssertNil(keychain.get("missing"))
        XCTAssertEqual(keychain.lastResultCode, errSecItemNotFound)
        XCTAssertTrue(keychain.delete("my key"))
        XCTAssertFalse(keychain.delete("my key"))
        XCTAssertEqual(keychain.lastResultCode, errSecItemNotFound)

        // Items without a service, as SecItem code with only an account finds them.
        SecItemConfiguration.use(s)
        var out: AnyObject?
        let q: [CFString: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "flag", kSecReturnData: true]
        XCTAssertEqual(SecItemCopyMatching(q as CFDictionary, &out), errSecSuccess)
        XCTAssertEqual(out as? Data, Data([1]))

        let prefixed = KeychainSwift(keyPrefix: "app_", store: s)
        prefixed.accessGroup = "app.shared"
        prefixed.set("p", forKey: "k")
        XCTAssertEqual(keychain.get("app_k"), "p")
        XCTAssertTrue(keychain.clear())
        XCTAssertEqual(keychain.allKeys, [])

        keychain.accessGroup = "not.mine"
        XCTAssertFalse(keychain.set("x", forKey: "y"))
        XCTAssertEqual(keychain.lastResultCode, errSecMissingEntitlement)
        XCTAssertNotNil(keychain.lastError)
    }

    /// Apple's KeychainItemWrapper deletes with its item's whole dictionary, kSecValueData included: Apple
    /// ignores the value in a search or delete (it was errSecParam here, and the sample's assertion failed).
    func testValueDataInASearchOrDeleteIsIgnoredAsOnApple() throws {
        SecItemConfiguration.use(try store())
        let item: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword, kSecAttrService: "s", kSecValueData: Data("pw".utf8)
        ]
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecSuccess)
        var wrong = item
        wrong[kSecValueData] = Data("not the value".utf8)
        var out: AnyObject?
        XCTAssertEqual(SecItemCopyMatching(wrong as CFDictionary, &out), errSecSuccess, "not a match criterion")
        XCTAssertEqual(SecItemUpdate(wrong as CFDictionary, [kSecAttrLabel: "L"] as CFDictionary), errSecSuccess)
        XCTAssertEqual(SecItemDelete(wrong as CFDictionary), errSecSuccess)
        XCTAssertEqual(SecItemDelete(item as CFDictionary), errSecItemNotFound)
    }
}
