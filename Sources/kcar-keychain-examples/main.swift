// What a new user tries first, as a whole process: the README's SecItem and subscript
// examples and the seeds' delete-then-add, run by KeychainTests/FirstTryTests in a fresh environment (no
// variables but HOME). Prints one `name: result` line per step; exits 0 when every step did what iOS does.
import Foundation
import KcarKeychain

nonisolated(unsafe) var failed = false

/// Apple's sample ("Adding a password to the keychain") declares its own `KeychainError`, as Valet does; with
/// the module named `KcarKeychain`, both qualify.
enum KeychainError: Error {
    case noPassword
    case unexpectedPasswordData
    case unhandledError(status: OSStatus)
}
func report(_ name: String, _ value: Any, ok: Bool) {
    print("\(name): \(value)")
    if !ok { failed = true }
}

let scenario = CommandLine.arguments.dropFirst().first ?? "readme"
switch scenario {
case "readme":
    // README.md, "The keychain": SecItemAdd with no group and no list.
    let data = Data("s3cr3t".utf8)
    let query: [CFString: Any] = [
        kSecClass: kSecClassGenericPassword, kSecAttrService: "com.example.app",
        kSecValueData: data, kSecAttrAccessible: kSecAttrAccessibleWhenUnlocked
    ]
    let status = SecItemAdd(query as CFDictionary, nil)
    report("SecItemAdd", status, ok: status == errSecSuccess)
    let keychain = Keychain(service: "com.example.app")
    keychain["token"] = "x"
    report("subscript set", keychain.lastError.map { "\($0.status)" } ?? "ok", ok: keychain.lastError == nil)
    report("subscript get", keychain["token"] ?? "nil", ok: keychain["token"] == "x")
    let group = (try? SecItemConfiguration.store.defaultGroup()) ?? "none"
    report("default group", group, ok: group != "none")
case "seed":
    // The seeds' save: delete the old item, then add the new one (001-004, and 000's KeychainManager).
    func save(_ value: String) -> OSStatus {
        let base: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword, kSecAttrService: "passwordKey",
            kSecAttrAccount: "passwordKey", kSecAttrAccessible: kSecAttrAccessibleAfterFirstUnlock
        ]
        SecItemDelete(base as CFDictionary)
        var add = base
        add[kSecValueData] = Data(value.utf8)
        return SecItemAdd(add as CFDictionary, nil)
    }
    func load() -> String? {
        let q: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword, kSecAttrService: "passwordKey",
            kSecAttrAccount: "passwordKey", kSecReturnData: true, kSecMatchLimit: kSecMatchLimitOne
        ]
        var out: AnyObject?
        guard SecItemCopyMatching(q as CFDictionary, &out) == errSecSuccess, let d = out as? Data else { return nil }
        return String(decoding: d, as: UTF8.self)
    }
    let value = CommandLine.arguments.dropFirst(2).first ?? "first"
    let s = save(value)
    report("save", s, ok: s == errSecSuccess)
    report("load", load() ?? "nil", ok: load() == value)
case "refused":
    // A subscript write that cannot succeed (a group outside KCAR_ACCESS_GROUPS) is visible.
    let keychain = Keychain(service: "com.example.app", accessGroup: "not.entitled")
    keychain["token"] = "hunter2-secret"
    let status = keychain.lastError?.status
    report("lastError", status.map { "\($0)" } ?? "nil", ok: status == .missingEntitlement)
case "naming":
    let apple: KeychainError = .unhandledError(status: errSecItemNotFound)
    let kcar: KcarKeychain.KeychainError = KcarKeychain.KeychainError(.itemNotFound, "no item matches")
    let keychain: KcarKeychain.Keychain = KcarKeychain.Keychain(service: "com.example.app")
    report("apple", apple, ok: true)
    report("kcar", kcar.status, ok: kcar.status.rawValue == errSecItemNotFound)
    report("keychain", keychain.service, ok: true)
default:
    print("usage: kcar-keychain-examples readme | seed [VALUE] | refused | naming")
    exit(2)
}
exit(failed ? 1 : 0)
