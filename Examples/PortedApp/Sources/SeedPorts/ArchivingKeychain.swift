import Foundation
import KcarKeychain  // was: #import <Security/Security.h>

// Seeds 001-004: the Objective-C helpers TCKeychain, CHKeychain, GQKeyChain and WQKeychain, one class with
// their methods, translated to Swift as an iOS developer would (same dictionaries, same calls): any object
// is kept with NSKeyedArchiver under service = account = key, kSecAttrAccessibleAfterFirstUnlock; saving
// deletes the old item first; GQKeyChain updates with SecItemUpdate and shares through kSecAttrAccessGroup;
// CHKeychain keeps a device UUID.

public enum ArchivingKeychain {
    static func getKeychainQuery(_ service: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword,
         kSecAttrService as String: service,
         kSecAttrAccount as String: service,
         kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]
    }

    /// `+ (void)save:(NSString *)service data:(id)data` (TCKeychain's setObject:forKey:).
    public static func save(_ service: String, data: Any, accessGroup: String? = nil) {
        var keychainQuery = getKeychainQuery(service)
        if let accessGroup { keychainQuery[kSecAttrAccessGroup as String] = accessGroup }
        SecItemDelete(keychainQuery as CFDictionary)
        keychainQuery[kSecValueData as String] = try? NSKeyedArchiver.archivedData(withRootObject: data, requiringSecureCoding: false)
        SecItemAdd(keychainQuery as CFDictionary, nil)
    }

    /// `+ (id)load:(NSString *)service`.
    public static func load(_ service: String, accessGroup: String? = nil) -> Any? {
        var ret: Any? = nil
        var keychainQuery = getKeychainQuery(service)
        if let accessGroup { keychainQuery[kSecAttrAccessGroup as String] = accessGroup }
        keychainQuery[kSecReturnData as String] = kCFBooleanTrue
        keychainQuery[kSecMatchLimit as String] = kSecMatchLimitOne
        var keyData: AnyObject? = nil
        if SecItemCopyMatching(keychainQuery as CFDictionary, &keyData) == noErr, let data = keyData as? Data {
            ret = try? NSKeyedUnarchiver.unarchivedObject(ofClasses: [NSString.self, NSNumber.self, NSArray.self, NSDictionary.self,
                                                                      NSDate.self, NSData.self], from: data)
        }
        return ret
    }

    /// GQKeyChain's `+ (BOOL)updateKeychain:(id)data forService:(NSString *)service`.
    public static func update(_ data: Any, forService service: String) -> Bool {
        let keychainQuery = getKeychainQuery(service)
        var updateDictionary: [String: Any] = [:]
        updateDictionary[kSecValueData as String] = try? NSKeyedArchiver.archivedData(withRootObject: data, requiringSecureCoding: false)
        let status = SecItemUpdate(keychainQuery as CFDictionary, updateDictionary as CFDictionary)
        if status == errSecSuccess {
            return true
        }
        return false
    }

    /// `+ (void)delete:(NSString *)service`.
    public static func delete(_ service: String) {
        let keychainQuery = getKeychainQuery(service)
        SecItemDelete(keychainQuery as CFDictionary)
    }

    /// CHKeychain's caller: the device UUID, made once and kept across launches (and reinstalls).
    public static func uuid() -> String {
        let uuidKey = "UUID"
        if let result = load(uuidKey) as? String {
            return result
        }
        let result = UUID().uuidString
        save(uuidKey, data: result)
        return result
    }
}
