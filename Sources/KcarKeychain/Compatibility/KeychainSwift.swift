import FoundationEssentials
import Synchronization
import VaultFormat

// keychain-swift's spellings, so code written for `KeychainSwift` compiles with its import
// changed: `set(_:forKey:withAccess:)` for strings, data and booleans, `get(_:)`, `getData(_:)`,
// `getBool(_:)`, `delete(_:)`, `clear()`, `allKeys`, `lastResultCode`, `accessGroup`, `synchronizable` and
// `init(keyPrefix:)`. Items are generic passwords with an account (the prefixed key) and no service, as
// keychain-swift writes them, so SecItem code that asks for `kSecAttrAccount` alone finds them too.

/// When a ``KeychainSwift`` value may be read (keychain-swift's `KeychainSwiftAccessOptions`).
public enum KeychainSwiftAccessOptions: Int, Sendable {
    /// ``Accessibility/whenUnlocked``.
    case accessibleWhenUnlocked
    /// ``Accessibility/whenUnlockedThisDeviceOnly``.
    case accessibleWhenUnlockedThisDeviceOnly
    /// ``Accessibility/afterFirstUnlock``.
    case accessibleAfterFirstUnlock
    /// ``Accessibility/afterFirstUnlockThisDeviceOnly``.
    case accessibleAfterFirstUnlockThisDeviceOnly
    /// ``Accessibility/whenPasscodeSetThisDeviceOnly``.
    case accessibleWhenPasscodeSetThisDeviceOnly

    /// The same level as kcar's ``Accessibility``.
    public var accessibility: Accessibility {
        switch self {
        case .accessibleWhenUnlocked: .whenUnlocked
        case .accessibleWhenUnlockedThisDeviceOnly: .whenUnlockedThisDeviceOnly
        case .accessibleAfterFirstUnlock: .afterFirstUnlock
        case .accessibleAfterFirstUnlockThisDeviceOnly: .afterFirstUnlockThisDeviceOnly
        case .accessibleWhenPasscodeSetThisDeviceOnly: .whenPasscodeSetThisDeviceOnly
        }
    }
}

/// Strings, data and booleans by key, in the style of keychain-swift: calls return a `Bool` or an optional,
/// and ``lastResultCode`` holds the last call's status (`noErr` after a success, `errSecItemNotFound` for a
/// key without a value); ``lastError`` says why beyond the status. Safe from any thread: every call is one
/// keychain operation, and the properties are guarded.
open class KeychainSwift: @unchecked Sendable {
    private struct State {
        var lastResultCode: OSStatus = noErr
        var lastError: KeychainError?
        var accessGroup: String?
        var synchronizable = false
    }
    private let state = Mutex(State())
    private let keyPrefix: String
    private let store: KeychainStore?

    /// The status of the last call: `noErr` (0) after a success.
    open var lastResultCode: OSStatus {
        get { state.withLock { $0.lastResultCode } }
        set { state.withLock { $0.lastResultCode = newValue } }
    }

    /// The last call's error with its message (nil after a success); never holds a value.
    public var lastError: KeychainError? { state.withLock { $0.lastError } }

    /// The access group every call uses; nil writes to the default group and reads every group of the list.
    open var accessGroup: String? {
        get { state.withLock { $0.accessGroup } }
        set { state.withLock { $0.accessGroup = newValue } }
    }

    /// Whether values are written and read as synchronizable items.
    open var synchronizable: Bool {
        get { state.withLock { $0.synchronizable } }
        set { state.withLock { $0.synchronizable = newValue } }
    }

    /// keychain-swift's `KeychainSwift()`: keys without a prefix, in the process's default group.
    public init() {
        keyPrefix = ""
        store = nil
    }

    /// Every key is written and read with `keyPrefix` in front (``clear()`` still removes every key).
    public init(keyPrefix: String) {
        self.keyPrefix = keyPrefix
        store = nil
    }

    /// Over another store than the SecItem functions' (tests, another keychain folder).
    public init(keyPrefix: String = "", store: KeychainStore) {
        self.keyPrefix = keyPrefix
        self.store = store
    }

    /// Generic passwords without a service, as keychain-swift writes them.
    private var keychain: Keychain {
        Keychain(service: "", accessGroup: accessGroup, store: store).synchronizable(synchronizable)
    }

    /// Stores a string (UTF-8) under `key`; true on success.
    @discardableResult
    open func set(_ value: String, forKey key: String, withAccess access: KeychainSwiftAccessOptions? = nil) -> Bool {
        set(Data(value.utf8), forKey: key, withAccess: access)
    }

    /// Stores bytes under `key`, replacing any value; true on success.
    @discardableResult
    open func set(_ value: Data, forKey key: String, withAccess access: KeychainSwiftAccessOptions? = nil) -> Bool {
        let k = keychain.accessibility((access ?? .accessibleWhenUnlocked).accessibility)
        return record { try k.setData(value, forKey: keyPrefix + key) } != nil
    }

    /// Stores a boolean as one byte (1 or 0), as keychain-swift does; true on success.
    @discardableResult
    open func set(_ value: Bool, forKey key: String, withAccess access: KeychainSwiftAccessOptions? = nil) -> Bool {
        set(Data([value ? 1 : 0]), forKey: key, withAccess: access)
    }

    /// The string under `key`, or nil (``lastResultCode`` says why).
    open func get(_ key: String) -> String? {
        guard let d = getData(key) else { return nil }
        guard let s = String(validating: [UInt8](d), as: UTF8.self) else {
            fail(KeychainError(.decode, "the value of \(key) is not UTF-8"))
            return nil
        }
        return s
    }

    /// The bytes under `key`, or nil (``lastResultCode`` is `errSecItemNotFound` when there is none).
    open func getData(_ key: String) -> Data? {
        let k = keychain
        // nil: the read failed (recorded); .some(nil): no value under the key.
        let found = record { try k.getData(keyPrefix + key) }
        guard let found else { return nil }
        guard let found else {
            fail(KeychainError(.itemNotFound, "no value for \(key)"))
            return nil
        }
        return found
    }

    /// The boolean under `key`, or nil.
    open func getBool(_ key: String) -> Bool? {
        guard let first = getData(key)?.first else { return nil }
        return first == 1
    }

    /// Deletes the value under `key`; false if there was none (``lastResultCode`` `errSecItemNotFound`).
    @discardableResult
    open func delete(_ key: String) -> Bool {
        let k = keychain
        return record { try k.store().delete(k.query(keyPrefix + key)) } != nil
    }

    /// Deletes every generic password of the access group (all groups of the list without one), whatever
    /// its key or prefix, as keychain-swift's does.
    @discardableResult
    open func clear() -> Bool {
        let k = keychain
        return record { try k.store().delete(ItemQuery(class: .genericPassword, group: k.accessGroup)) } != nil
    }

    /// The keys with a value (prefix included), as keychain-swift lists them.
    open var allKeys: [String] {
        let k = keychain
        return record {
            try k.store().find(ItemQuery(class: .genericPassword, group: k.accessGroup)).compactMap(\.account)
        } ?? []
    }

    private func record<T>(_ body: () throws -> T) -> T? {
        do {
            let r = try body()
            state.withLock {
                $0.lastResultCode = noErr
                $0.lastError = nil
            }
            return r
        } catch {
            fail(KeychainError.from(error))
            return nil
        }
    }

    private func fail(_ e: KeychainError) {
        state.withLock {
            $0.lastResultCode = e.status.rawValue
            $0.lastError = e
        }
    }
}
