import Foundation
import KcarKeychain  // was: import KeychainSwift

// keychain-swift's README, as an app calls it: only the import changed.
public enum KeychainSwiftUsage {
    public static func run() -> [String: Bool] {
        var results: [String: Bool] = [:]
        let keychain = KeychainSwift()
        keychain.set("hello world", forKey: "my key")
        results["set/get"] = keychain.get("my key") == "hello world"
        results["getData"] = keychain.getData("my key") == Data("hello world".utf8)
        keychain.set(true, forKey: "my bool")
        results["getBool"] = keychain.getBool("my bool") == true
        keychain.set("hello world", forKey: "key 1", withAccess: .accessibleWhenUnlocked)
        // Every generic password's account, as keychain-swift lists them (the seeds' items too).
        results["allKeys"] = Set(keychain.allKeys).isSuperset(of: ["my key", "my bool", "key 1"])

        keychain.delete("my key")
        results["delete"] = keychain.get("my key") == nil && keychain.lastResultCode == errSecItemNotFound

        let prefixed = KeychainSwift(keyPrefix: "myTestKey_")
        prefixed.set("v", forKey: "k")
        results["keyPrefix"] = keychain.get("myTestKey_k") == "v"

        keychain.accessGroup = "CS671JRA62.com.myapp.KeychainGroup"
        keychain.set("shared", forKey: "in group")
        results["accessGroup"] = keychain.lastResultCode == noErr && keychain.get("in group") == "shared"
        keychain.clear()
        keychain.accessGroup = nil
        keychain.clear()
        if keychain.lastResultCode != noErr { /* Report error */ }
        results["clear"] = keychain.allKeys.isEmpty
        return results
    }
}
