import Foundation
import KcarKeychain  // was: import Security

// Apple's samples, ported with the import changed: "Adding a password to the keychain" (with the sample's
// own KeychainError, which hides kcar's in this module, as it would in an app) and the GenericKeychain
// sample's KeychainItemWrapper in Swift, which passes a search's attributes back as a query and to
// SecItemUpdate.

public struct Credentials: Sendable, Equatable {
    public var username: String
    public var password: String
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }
}

public enum KeychainError: Error {
    case noPassword
    case unexpectedPasswordData
    case unhandledError(status: OSStatus)
}

public enum AppleSample {
    static let server = "www.example.com"

    public static func addCredentials(_ credentials: Credentials) throws {
        let account = credentials.username
        let password = credentials.password.data(using: String.Encoding.utf8)!
        let query: [String: Any] = [kSecClass as String: kSecClassInternetPassword,
                                    kSecAttrAccount as String: account,
                                    kSecAttrServer as String: server,
                                    kSecValueData as String: password]
        let status = SecItemAdd(query as CFDictionary, nil)
        guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    }

    public static func readCredentials() throws -> Credentials {
        let query: [String: Any] = [kSecClass as String: kSecClassInternetPassword,
                                    kSecAttrServer as String: server,
                                    kSecMatchLimit as String: kSecMatchLimitOne,
                                    kSecReturnAttributes as String: true,
                                    kSecReturnData as String: true]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        guard status != errSecItemNotFound else { throw KeychainError.noPassword }
        guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
        guard let existingItem = item as? [String: Any],
              let passwordData = existingItem[kSecValueData as String] as? Data,
              let password = String(data: passwordData, encoding: String.Encoding.utf8),
              let account = existingItem[kSecAttrAccount as String] as? String
        else {
            throw KeychainError.unexpectedPasswordData
        }
        return Credentials(username: account, password: password)
    }

    public static func updateCredentials(_ credentials: Credentials) throws {
        let query: [String: Any] = [kSecClass as String: kSecClassInternetPassword,
                                    kSecAttrServer as String: server]
        let account = credentials.username
        let password = credentials.password.data(using: String.Encoding.utf8)!
        let attributes: [String: Any] = [kSecAttrAccount as String: account,
                                         kSecValueData as String: password]
        let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
        guard status != errSecItemNotFound else { throw KeychainError.noPassword }
        guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    }

    public static func deleteCredentials() throws {
        let query: [String: Any] = [kSecClass as String: kSecClassInternetPassword,
                                    kSecAttrServer as String: server]
        let status = SecItemDelete(query as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError.unhandledError(status: status) }
    }
}

/// GenericKeychain's KeychainItemWrapper: one item found by kSecAttrGeneric, its attributes kept in a
/// dictionary, written back through the attributes the search returned.
public final class KeychainItemWrapper {
    let genericPasswordQuery: [String: Any]
    var keychainItemData: [String: Any] = [:]

    public init(identifier: String, accessGroup: String?) {
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrGeneric as String: identifier]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        query[kSecReturnAttributes as String] = kCFBooleanTrue
        genericPasswordQuery = query
        var outDictionary: AnyObject?
        if SecItemCopyMatching(query as CFDictionary, &outDictionary) != noErr {
            resetKeychainItem()
            keychainItemData[kSecAttrGeneric as String] = identifier
            if let accessGroup { keychainItemData[kSecAttrAccessGroup as String] = accessGroup }
        } else {
            keychainItemData = secItemFormatToDictionary(outDictionary as? [String: Any] ?? [:])
        }
    }

    public func setObject(_ inObject: String, forKey key: String) {
        let currentObject = keychainItemData[key] as? String
        if currentObject != inObject {
            keychainItemData[key] = inObject
            writeToKeychain()
        }
    }

    public func object(forKey key: String) -> Any? { keychainItemData[key] }

    public func resetKeychainItem() {
        if keychainItemData.isEmpty {
            keychainItemData = [:]
        } else {
            let tempDictionary = dictionaryToSecItemFormat(keychainItemData)
            let junk = SecItemDelete(tempDictionary as CFDictionary)
            assert(junk == noErr || junk == errSecItemNotFound, "Problem deleting current dictionary.")
        }
        keychainItemData[kSecAttrAccount as String] = ""
        keychainItemData[kSecAttrLabel as String] = ""
        keychainItemData[kSecAttrDescription as String] = ""
        keychainItemData[kSecValueData as String] = ""
    }

    func dictionaryToSecItemFormat(_ dictionaryToConvert: [String: Any]) -> [String: Any] {
        var returnDictionary = dictionaryToConvert
        returnDictionary[kSecClass as String] = kSecClassGenericPassword
        let passwordString = dictionaryToConvert[kSecValueData as String] as? String ?? ""
        returnDictionary[kSecValueData as String] = passwordString.data(using: .utf8)
        return returnDictionary
    }

    func secItemFormatToDictionary(_ dictionaryToConvert: [String: Any]) -> [String: Any] {
        var returnDictionary = dictionaryToConvert
        returnDictionary[kSecReturnData as String] = kCFBooleanTrue
        returnDictionary[kSecClass as String] = kSecClassGenericPassword
        var passwordData: AnyObject?
        if SecItemCopyMatching(returnDictionary as CFDictionary, &passwordData) == noErr {
            returnDictionary[kSecReturnData as String] = nil
            let password = String(data: passwordData as? Data ?? Data(), encoding: .utf8) ?? ""
            returnDictionary[kSecValueData as String] = password
        } else {
            assertionFailure("Serious error, no matching item found in the keychain.")
        }
        return returnDictionary
    }

    @discardableResult
    public func writeToKeychain() -> OSStatus {
        var attributes: AnyObject?
        if SecItemCopyMatching(genericPasswordQuery as CFDictionary, &attributes) == noErr {
            var updateItem = attributes as? [String: Any] ?? [:]
            updateItem[kSecClass as String] = genericPasswordQuery[kSecClass as String]
            var tempCheck = dictionaryToSecItemFormat(keychainItemData)
            tempCheck[kSecClass as String] = nil
            return SecItemUpdate(updateItem as CFDictionary, tempCheck as CFDictionary)
        }
        return SecItemAdd(dictionaryToSecItemFormat(keychainItemData) as CFDictionary, nil)
    }
}
