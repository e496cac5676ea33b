import FoundationEssentials
import VaultFormat

// Valet's common spellings, so code written for Square's Valet compiles with its import
// changed: `Valet.valet(with:accessibility:)`, `string(forKey:)`, `object(forKey:)`, `setString(_:forKey:)`,
// `setObject(_:forKey:)`, `containsObject(forKey:)`, `allKeys()`, `removeObject(forKey:)`,
// `removeAllObjects()`, `canAccessKeychain()`, `migrateObjects(from:removeOnCompletion:)`, and
// `catch KeychainError.itemNotFound`. A Valet is a ``Keychain`` whose service is its identifier; errors are
// kcar's ``KeychainError``, matched by Valet's case names.

/// A non-empty name of a ``Valet`` (Valet's `Identifier(nonEmpty:)`).
public struct Identifier: CustomStringConvertible, Hashable, Sendable {
    private let name: String
    /// nil for nil or an empty string.
    public init?(nonEmpty string: String?) {
        guard let string, !string.isEmpty else { return nil }
        name = string
    }
    /// The identifier's text.
    public var description: String { name }
}

/// Values by key, in the style of Square's Valet: one ``Keychain`` whose service is the identifier, written
/// with the Valet's accessibility. Getters throw ``KeychainError/itemNotFound`` for a key without a value,
/// as Valet's do. Safe from any thread.
public final class Valet: Sendable, CustomStringConvertible {
    /// The name the Valet was made with; its items' service.
    public let identifier: Identifier
    /// When its values may be read (written with each value).
    public let accessibility: Accessibility
    /// The typed keychain beneath.
    public let keychain: Keychain

    init(identifier: Identifier, accessibility: Accessibility, accessGroup: String?, store: KeychainStore?) {
        self.identifier = identifier
        self.accessibility = accessibility
        keychain = Keychain(service: identifier.description, accessGroup: accessGroup, store: store).accessibility(
            accessibility)
    }

    /// Valet's `Valet.valet(with:accessibility:)`: the process's default access group (SPEC.md §K2.1).
    public class func valet(with identifier: Identifier, accessibility: Accessibility) -> Valet {
        Valet(identifier: identifier, accessibility: accessibility, accessGroup: nil, store: nil)
    }

    /// A Valet in a named access group, or over another store (tests, another keychain folder).
    public class func valet(
        with identifier: Identifier, accessibility: Accessibility, accessGroup: String?,
        store: KeychainStore? = nil
    ) -> Valet {
        Valet(identifier: identifier, accessibility: accessibility, accessGroup: accessGroup, store: store)
    }

    /// The identifier and accessibility, as Valet describes itself.
    public var description: String { "Valet(\(identifier), \(accessibility.rawValue))" }

    /// Whether the keychain can be written and read: a value is stored under a key of its own, read back and
    /// removed, as Valet checks.
    public func canAccessKeychain() -> Bool {
        let probe = "kcar.canAccessKeychain"
        do {
            try keychain.setString("probe", forKey: probe)
            defer { try? keychain.remove(probe) }
            return try keychain.getString(probe) == "probe"
        } catch {
            return false
        }
    }

    /// Stores bytes under `key`. Empty keys and values are refused (``KeychainError/emptyKey``,
    /// ``KeychainError/emptyValue``), as Valet refuses them.
    public func setObject(_ object: Data, forKey key: String) throws(KeychainError) {
        try checked(key, value: object.isEmpty) { try keychain.setData(object, forKey: key) }
    }

    /// The bytes under `key`; ``KeychainError/itemNotFound`` if there are none.
    public func object(forKey key: String) throws(KeychainError) -> Data {
        try required(key) { try keychain.getData(key) }
    }

    /// Stores a string (UTF-8) under `key`.
    public func setString(_ string: String, forKey key: String) throws(KeychainError) {
        try checked(key, value: string.isEmpty) { try keychain.setString(string, forKey: key) }
    }

    /// The string under `key`; ``KeychainError/itemNotFound`` if there is none.
    public func string(forKey key: String) throws(KeychainError) -> String {
        try required(key) { try keychain.getString(key) }
    }

    /// Whether a value is stored under `key` (the index only).
    public func containsObject(forKey key: String) throws(KeychainError) -> Bool {
        try checked(key) { try keychain.contains(key) }
    }

    /// Every key with a value.
    public func allKeys() throws(KeychainError) -> Set<String> {
        try checked(nil) { Set(try keychain.keys(where: [:])) }
    }

    /// Removes the value under `key`; no error if there is none.
    public func removeObject(forKey key: String) throws(KeychainError) {
        try checked(key) { try keychain.remove(key) }
    }

    /// Removes every value of this Valet.
    public func removeAllObjects() throws(KeychainError) {
        try checked(nil) { try keychain.removeAll() }
    }

    /// Copies every value of `valet` into this one in one transaction, read in one pass
    /// (``Keychain/getAll(_:where:)``); with `removeOnCompletion`, then removes them from `valet`. Nothing
    /// is written if a key already has a value here (``KeychainStatus/duplicateItem``), as Valet refuses
    /// to overwrite.
    public func migrateObjects(from valet: Valet, removeOnCompletion: Bool) throws(KeychainError) {
        try checked(nil) {
            let values = try valet.keychain.getAll(Data.self)
            let s = try keychain.store()
            try s.transaction(group: try s.writeTarget(keychain.accessGroup)) { tx in
                for key in values.keys.sorted() {
                    guard try tx.find(keychain.query(key)).isEmpty else {
                        throw KeychainError(
                            .duplicateItem, "\(key) already has a value in \(self); nothing was migrated")
                    }
                    var a = keychain.query(key).attributes
                    a[AttributeName.accessible] = .string(accessibility.rawValue)
                    try tx.add(class: .genericPassword, attributes: a, value: [UInt8](values[key] ?? Data()))
                }
            }
            if removeOnCompletion { try valet.keychain.removeAll() }
        }
    }

    /// The value `read` finds under `key`, or ``KeychainError/itemNotFound`` (Valet's getters do not return nil).
    private func required<T>(_ key: String, _ read: () throws -> T?) throws(KeychainError) -> T {
        try checked(key) {
            guard let v = try read() else { throw KeychainError.itemNotFound }
            return v
        }
    }

    /// Runs `body` with Valet's checks (a key must not be empty, nor a value written), its errors as
    /// ``KeychainError``.
    private func checked<T>(_ key: String?, value isEmpty: Bool = false, _ body: () throws -> T) throws(KeychainError)
        -> T
    {
        if key?.isEmpty == true { throw KeychainError.emptyKey }
        if isEmpty { throw KeychainError.emptyValue }
        do { return try body() } catch { throw KeychainError.from(error) }
    }
}

extension KeychainReason {
    /// An empty key given to a ``Valet`` (status ``KeychainStatus/param``).
    public static let emptyKey = KeychainReason(rawValue: "emptyKey")
    /// An empty value given to a ``Valet`` (status ``KeychainStatus/param``).
    public static let emptyValue = KeychainReason(rawValue: "emptyValue")
}

// Valet's error cases as values of kcar's error, for `catch KeychainError.itemNotFound`: a pattern matches an
// error of its status (and reason, for emptyKey and emptyValue); `couldNotAccessKeychain` matches every
// error that none of the others does, as Valet maps statuses.
extension KeychainError {
    /// No value for the key (`errSecItemNotFound`).
    public static let itemNotFound = KeychainError(.itemNotFound, "no value for this key")
    /// The user cancelled (`errSecUserCanceled`).
    public static let userCancelled = KeychainError(.userCanceled, "cancelled")
    /// The access group may not be used (`errSecMissingEntitlement`).
    public static let missingEntitlement = KeychainError(.missingEntitlement, "the access group may not be used")
    /// An empty key.
    public static let emptyKey = KeychainError(.param, "the key is empty", reason: .emptyKey)
    /// An empty value.
    public static let emptyValue = KeychainError(.param, "the value is empty", reason: .emptyValue)
    /// Any other failure (as a pattern, it matches every error the cases above do not).
    public static let couldNotAccessKeychain = KeychainError(.notAvailable, "the keychain could not be used")

    private static let valetCases: [KeychainError] = [
        .itemNotFound, .userCancelled, .missingEntitlement, .emptyKey, .emptyValue
    ]

    private func isValetCase(_ c: KeychainError) -> Bool {
        c.reason == nil ? status == c.status && reason != .emptyKey && reason != .emptyValue : reason == c.reason
    }

    /// Valet's matching: `catch KeychainError.itemNotFound` catches every not-found error.
    public static func ~= (pattern: KeychainError, value: any Error) -> Bool {
        guard let e = value as? KeychainError else { return false }
        return pattern ~= e
    }

    /// The same for an error already typed (a Valet call throws `KeychainError`).
    public static func ~= (pattern: KeychainError, value: KeychainError) -> Bool {
        if pattern == couldNotAccessKeychain { return !valetCases.contains(where: value.isValetCase) }
        return value.isValetCase(pattern)
    }
}
