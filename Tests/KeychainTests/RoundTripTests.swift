import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// Apple's KeychainItemWrapper (the iOS sample "GenericKeychain"), ported to Swift line for line: it reads an
/// item's attributes with kSecReturnAttributes and passes them back, as a query and to SecItemUpdate.
final class KeychainItemWrapper {
    let genericPasswordQuery: [String: Any]
    var keychainItemData: [String: Any] = [:]

    init(identifier: String, accessGroup: String?) {
        var q: [String: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrGeneric: identifier]
        if let accessGroup { q[kSecAttrAccessGroup] = accessGroup }
        q[kSecMatchLimit] = kSecMatchLimitOne
        q[kSecReturnAttributes] = kCFBooleanTrue
        genericPasswordQuery = q
        var outDictionary: AnyObject?
        if SecItemCopyMatching(q as CFDictionary, &outDictionary) != noErr {
            resetKeychainItem()
            keychainItemData[kSecAttrGeneric] = identifier
            if let accessGroup { keychainItemData[kSecAttrAccessGroup] = accessGroup }
        } else {
            keychainItemData = secItemFormatToDictionary(outDictionary as? [String: Any] ?? [:])
        }
    }

    func setObject(_ value: String, forKey key: String) {
        if keychainItemData[key] as? String != value {
            keychainItemData[key] = value
            writeToKeychain()
        }
    }

    func object(forKey key: String) -> Any? { keychainItemData[key] }

    func resetKeychainItem() {
        keychainItemData = [kSecAttrAccount: "", kSecAttrLabel: "", kSecAttrDescription: "", kSecValueData: ""]
    }

    /// The attributes returned by a search, plus the password, read with those attributes as the query.
    func secItemFormatToDictionary(_ dictionaryToConvert: [String: Any]) -> [String: Any] {
        var returnDictionary = dictionaryToConvert
        returnDictionary[kSecReturnData] = kCFBooleanTrue
        returnDictionary[kSecClass] = kSecClassGenericPassword
        var passwordData: AnyObject?
        if SecItemCopyMatching(returnDictionary as CFDictionary, &passwordData) == noErr {
            returnDictionary[kSecReturnData] = nil
            returnDictionary[kSecValueData] = String(decoding: passwordData as? Data ?? Data(), as: UTF8.self)
        } else {
            fatalError("Serious error, no matching item found in the keychain.")
        }
        return returnDictionary
    }

    func dictionaryToSecItemFormat(_ dictionaryToConvert: [String: Any]) -> [String: Any] {
        var returnDictionary = dictionaryToConvert
        returnDictionary[kSecClass] = kSecClassGenericPassword
        returnDictionary[kSecValueData] = Data((dictionaryToConvert[kSecValueData] as? String ?? "").utf8)
        return returnDictionary
    }

    @discardableResult
    func writeToKeychain() -> OSStatus {
        var attributes: AnyObject?
        if SecItemCopyMatching(genericPasswordQuery as CFDictionary, &attributes) == noErr {
            var updateItem = attributes as? [String: Any] ?? [:]
            updateItem[kSecClass] = genericPasswordQuery[kSecClass]
            var tempCheck = dictionaryToSecItemFormat(keychainItemData)
            tempCheck[kSecClass] = nil
            return SecItemUpdate(updateItem as CFDictionary, tempCheck as CFDictionary)
        }
        return SecItemAdd(dictionaryToSecItemFormat(keychainItemData) as CFDictionary, nil)
    }
}

/// Issue 12, item 2: attributes returned by kSecReturnAttributes find their own item again (SPEC.md §K5).
final class RoundTripTests: KeychainTestCase {
    /// A date a `Date` cannot hold exactly: it reads back a few hundred nanoseconds off.
    let preciseDate: Int64 = 1_764_633_600_123_456_789

    override func setUpWithError() throws {
        try super.setUpWithError()
        SecItemConfiguration.use(try store(["com.yourApp"]))
    }

    func testReturnedAttributesFindTheirItem() throws {
        XCTAssertNotEqual(
            KeychainDate.nanoseconds(KeychainDate.date(preciseDate)), preciseDate, "the date must not survive Date")
        let s = try SecItemConfiguration.store
        try s.add(
            attributes: Attributes([
                "svce": .string("s"), "acct": .string("a"), "cdat": .date(nanoseconds: preciseDate),
                "mdat": .date(nanoseconds: preciseDate), "@when": .date(nanoseconds: preciseDate)
            ]),
            value: Array("pw".utf8))
        var out: AnyObject?
        let q: [String: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrService: "s", kSecReturnAttributes: true]
        XCTAssertEqual(SecItemCopyMatching(q as CFDictionary, &out), errSecSuccess)
        var attributes = try XCTUnwrap(out as? [String: Any])
        XCTAssertNotNil(attributes[kSecAttrCreationDate] as? Date)
        attributes[kSecClass] = kSecClassGenericPassword
        var again: AnyObject?
        XCTAssertEqual(
            SecItemCopyMatching(attributes as CFDictionary, &again), errSecSuccess, kcarLastResultMessage() ?? "")
        XCTAssertEqual(
            SecItemUpdate(attributes as CFDictionary, [kSecAttrLabel: "L"] as CFDictionary), errSecSuccess,
            kcarLastResultMessage() ?? "")
        // A date one Date step away is another date.
        var later = attributes
        let cdat = try XCTUnwrap(attributes[kSecAttrCreationDate] as? Date)
        later[kSecAttrCreationDate] = Date(timeIntervalSince1970: cdat.timeIntervalSince1970 + 1e-6)
        XCTAssertEqual(SecItemCopyMatching(later as CFDictionary, &again), errSecItemNotFound)
    }

    func testKeychainItemWrapperPattern() throws {
        let wrapper = KeychainItemWrapper(identifier: "Password", accessGroup: nil)
        wrapper.setObject("bob", forKey: kSecAttrAccount)
        XCTAssertEqual(wrapper.writeToKeychain(), errSecSuccess, kcarLastResultMessage() ?? "")
        // A new wrapper reads the item, then writes through the attributes it was given back.
        let reread = KeychainItemWrapper(identifier: "Password", accessGroup: nil)
        XCTAssertEqual(reread.object(forKey: kSecAttrAccount) as? String, "bob")
        reread.setObject("hunter2", forKey: kSecValueData)
        XCTAssertEqual(reread.writeToKeychain(), errSecSuccess, kcarLastResultMessage() ?? "")
        XCTAssertEqual(
            KeychainItemWrapper(identifier: "Password", accessGroup: nil).object(forKey: kSecValueData) as? String,
            "hunter2")
        XCTAssertEqual(try SecItemConfiguration.store.find(ItemQuery()).count, 1, "updated in place, not added again")
    }
}
