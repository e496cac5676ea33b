import FoundationEssentials
import KeyedArchive
import Synchronization
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// When an item may be read, and whether it may leave this device (Apple's `kSecAttrAccessible`).
public struct Accessibility: RawRepresentable, Hashable, Sendable {
    /// Apple's code for the level, as `pdmn` stores it (SPEC.md §K3).
    public let rawValue: String
    /// The level of code `rawValue` (any string: the set is open).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Apple's `kSecAttrAccessibleWhenUnlocked` (`ak`), what an item gets unless told. Kept and shown; a Linux vault has no lock state to wait for.
    public static let whenUnlocked = Accessibility(rawValue: "ak")
    /// Apple's `kSecAttrAccessibleAfterFirstUnlock` (`ck`). Kept and shown; a Linux vault has no lock state to wait for.
    public static let afterFirstUnlock = Accessibility(rawValue: "ck")
    /// Apple's `kSecAttrAccessibleAlways` (`dk`), deprecated by Apple. Kept and shown; a Linux vault has no lock state to wait for.
    public static let always = Accessibility(rawValue: "dk")
    /// Apple's `kSecAttrAccessibleWhenUnlockedThisDeviceOnly` (`aku`) (device-only: see ``isDeviceOnly``). Kept and shown; a Linux vault has no lock state to wait for.
    public static let whenUnlockedThisDeviceOnly = Accessibility(rawValue: "aku")
    /// Apple's `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly` (`cku`) (device-only: see ``isDeviceOnly``). Kept and shown; a Linux vault has no lock state to wait for.
    public static let afterFirstUnlockThisDeviceOnly = Accessibility(rawValue: "cku")
    /// Apple's `kSecAttrAccessibleAlwaysThisDeviceOnly` (`dku`), deprecated by Apple (device-only: see ``isDeviceOnly``). Kept and shown; a Linux vault has no lock state to wait for.
    public static let alwaysThisDeviceOnly = Accessibility(rawValue: "dku")
    /// Apple's `kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly` (`akpu`) (device-only: see ``isDeviceOnly``). Kept and shown; a Linux vault has no lock state to wait for.
    public static let whenPasscodeSetThisDeviceOnly = Accessibility(rawValue: "akpu")

    /// `...ThisDeviceOnly` items never leave through `kcar extract` or `pack` without `--include-device-only`.
    public var isDeviceOnly: Bool { rawValue.hasSuffix("u") }
}

/// Generic passwords of one service, by key (the account), in the style of KeychainAccess and Valet:
///
/// ```swift
/// let keychain = Keychain(service: "com.example.app")      // the default group (SPEC.md §K2.1)
/// try keychain.set("s3cr3t", forKey: "token")                // or keychain["token"] = "s3cr3t" (see lastError)
/// try keychain.set(profile, forKey: "profile")               // any Codable, archived (SPEC.md Part 2)
/// let p = try keychain.get(Profile.self, forKey: "profile")
/// let id = try keychain.loadOrCreate(String.self, forKey: "device-id") { UUID().uuidString }
/// ```
///
/// Strings are stored as UTF-8 and `Data` as it is, so other programs read them; other values as kcar
/// archives. A value type: copies are independent and `Sendable`; every call is one keychain operation.
/// `Keychain(server:protocolType:)` keeps internet passwords of one server instead, KeychainAccess's way
/// (Compatibility/KeychainAccess.swift). Calls block (see ``Keychain/async`` for tasks).
public struct Keychain: Sendable {
    /// The service (`kSecAttrService`) of this keychain's generic passwords; the key is the account.
    public let service: String
    /// The access group; nil writes to the process's default group and reads every group of its list
    /// (SPEC.md §K2, §K2.1).
    public let accessGroup: String?
    /// The accessibility written with each value (`.whenUnlocked` unless set).
    public var accessibility: Accessibility = .whenUnlocked
    /// Whether values are written synchronizable (`kSecAttrSynchronizable`): they then merge between devices (SPEC.md §K9).
    public var synchronizable = false
    /// Optional label and comment written with each value.
    public var label: String?
    /// The comment (`kSecAttrComment`) written with each value.
    public var comment: String?
    /// For an internet-password keychain (``init(server:protocolType:accessGroup:authenticationType:)``): the
    /// server its items are for; nil for generic passwords of ``service``.
    var internet: InternetServer?
    private let explicitStore: KeychainStore?
    /// Shared by copies, as they are one keychain: where the subscripts leave their errors.
    private let outcome = SharedOutcome()

    /// Generic passwords of `service` in `accessGroup` (nil: the default group), in `store` (nil: the process's keychain folder, SPEC.md §K2).
    public init(service: String, accessGroup: String? = nil, store: KeychainStore? = nil) {
        self.service = service
        self.accessGroup = accessGroup
        explicitStore = store
    }

    /// A copy that writes with another accessibility.
    public func accessibility(_ a: Accessibility) -> Keychain {
        var k = self
        k.accessibility = a
        return k
    }

    /// A copy that reads and writes synchronizable items.
    public func synchronizable(_ s: Bool) -> Keychain {
        var k = self
        k.synchronizable = s
        return k
    }

    func store() throws -> KeychainStore { try explicitStore ?? SecItemConfiguration.store }

    func query(_ key: String?, extra: [String: AttributeValue] = [:]) -> ItemQuery {
        var a = Attributes()
        if let internet { internet.select(&a) } else { a[AttributeName.service] = .string(service) }
        if let key { a[AttributeName.account] = .string(key) }
        if synchronizable { a["sync"] = .bool(true) }
        for (k, v) in extra { a[Schema.userPrefix + k] = v }
        return ItemQuery(
            class: internet == nil ? .genericPassword : .internetPassword, attributes: a, group: accessGroup)
    }

    // MARK: Bytes

    /// The value under `key`, or nil.
    public func getData(_ key: String) throws -> Data? {
        let s = try store()
        var q = query(key)
        q.limit = 1
        guard let item = try s.find(q).first else { return nil }
        return Data(try s.value(of: item))
    }

    /// Stores `bytes` under `key`, replacing what is there (one transaction); `attributes` are user
    /// attributes kept in the index, searchable without decrypting (``keys(where:)``). A value already
    /// stored keeps its other user attributes, unless `replacingAttributes` is true: then its user
    /// attributes become exactly `attributes` (`[:]` removes them all). Without an access group, the item
    /// ``getData(_:)`` would read is the one replaced, in whichever group of the list holds it (as
    /// `SecItemUpdate` without `kSecAttrAccessGroup` does on iOS); a new key goes to the default group.
    public func setData(
        _ bytes: Data, forKey key: String, attributes: [String: AttributeValue] = [:],
        replacingAttributes: Bool = false
    ) throws {
        let s = try store()
        let q = query(key)
        let group = accessGroup == nil ? try s.find(q).first?.group ?? resolveGroup(s) : try resolveGroup(s)
        try s.transaction(group: group) { tx in
            var set: [String: AttributeValue?] = ["pdmn": .string(accessibility.rawValue)]
            if let label { set["labl"] = .string(label) }
            if let comment { set["icmt"] = .string(comment) }
            for (k, v) in attributes { set[Schema.userPrefix + k] = v }
            if let existing = try tx.find(q).first {
                if replacingAttributes {
                    for (name, _) in existing.attributes where name.hasPrefix(Schema.userPrefix) && set[name] == nil {
                        set[name] = .some(nil)
                    }
                }
                try tx.update([existing.id], set: set, value: [UInt8](bytes))
            } else {
                var a = q.attributes
                for (k, v) in set { a[k] = v }
                try tx.add(class: q.itemClass, attributes: a, value: [UInt8](bytes))
            }
        }
    }

    private func resolveGroup(_ s: KeychainStore) throws -> String { try s.writeTarget(accessGroup) }

    // MARK: Strings and Codable values

    /// The string under `key` (UTF-8), or nil; throws ``KeychainStatus/decode`` if it is not UTF-8.
    public func getString(_ key: String) throws -> String? {
        guard let d = try getData(key) else { return nil }
        guard let s = String(validating: [UInt8](d), as: UTF8.self) else {
            throw KeychainError(.decode, "the value of \(key) is not UTF-8")
        }
        return s
    }

    /// Stores a string as UTF-8; `attributes` and `replacingAttributes` as in ``setData(_:forKey:attributes:replacingAttributes:)``.
    public func setString(
        _ value: String, forKey key: String, attributes: [String: AttributeValue] = [:],
        replacingAttributes: Bool = false
    ) throws {
        try setData(Data(value.utf8), forKey: key, attributes: attributes, replacingAttributes: replacingAttributes)
    }

    /// Stores any Encodable value: `String` as UTF-8, `Data` and `[UInt8]` as they are, anything else as a
    /// kcar archive. A value already stored keeps its other user attributes unless `replacingAttributes`.
    public func set<T: Encodable>(
        _ value: T, forKey key: String, attributes: [String: AttributeValue] = [:],
        replacingAttributes: Bool = false
    ) throws {
        try setData(
            try Keychain.encode(value), forKey: key, attributes: attributes, replacingAttributes: replacingAttributes)
    }

    /// Reads a value stored by ``set(_:forKey:attributes:replacingAttributes:)``, or nil if there is none.
    public func get<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T? {
        guard let d = try getData(key) else { return nil }
        return try Keychain.decode(type, d, key: key)
    }

    /// The value under `key`; if there is none, `create()`'s value, stored first. Atomic across threads and
    /// processes: two callers racing get the same value (a device UUID, say).
    public func loadOrCreate<T: Codable>(_ type: T.Type, forKey key: String, create: () throws -> T) throws -> T {
        if let v = try get(type, forKey: key) { return v }
        // Made outside the store's lock, so `create` may itself use the keychain; a racer that stored a value
        // meanwhile wins, and its value is returned.
        let v = try create()
        let s = try store()
        let q = query(key)
        var bytesFound: [UInt8]?
        try s.transaction(group: try resolveGroup(s)) { tx in
            if let existing = try tx.find(q).first {
                bytesFound = try tx.value(of: existing)
                return
            }
            var a = q.attributes
            a["pdmn"] = .string(accessibility.rawValue)
            try tx.add(class: q.itemClass, attributes: a, value: [UInt8](try Keychain.encode(v)))
        }
        guard let bytesFound else { return v }
        return try Keychain.decode(type, Data(bytesFound), key: key)
    }

    static func encode<T: Encodable>(_ value: T) throws -> Data {
        if let s = value as? String { return Data(s.utf8) }
        if let d = value as? Data { return d }
        if let b = value as? [UInt8] { return Data(b) }
        do { return try ArchiveEncoder().encode(value) } catch {
            throw KeychainError(.param, "cannot archive the value: \(error)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ d: Data, key: String) throws -> T {
        if T.self == String.self {
            guard let s = String(validating: [UInt8](d), as: UTF8.self) else {
                throw KeychainError(.decode, "the value of \(key) is not UTF-8")
            }
            return s as! T
        }
        if T.self == Data.self { return d as! T }
        if T.self == [UInt8].self { return [UInt8](d) as! T }
        do { return try ArchiveDecoder().decode(type, from: d) } catch {
            throw KeychainError(.decode, "the value of \(key) does not decode as \(T.self): \(error)")
        }
    }

    /// KeychainAccess-style subscript: a string, nil if absent; assigning nil removes. Unlike KeychainAccess's,
    /// it drops nothing silently: a read or write that fails leaves its error in ``lastError`` (nil after one
    /// that succeeds) and, for a write, prints one line naming the key and the status on standard error
    /// (never the value). Use ``set(_:forKey:attributes:replacingAttributes:)`` and ``get(_:forKey:)``, which throw, where the
    /// program must react.
    public subscript(key: String) -> String? {
        get { recording(key, write: false) { try getString(key) } ?? nil }
        nonmutating set {
            recording(key, write: true) {
                if let newValue { try setString(newValue, forKey: key) } else { try remove(key) }
            }
        }
    }

    /// The same for bytes.
    public subscript(data key: String) -> Data? {
        get { recording(key, write: false) { try getData(key) } ?? nil }
        nonmutating set {
            recording(key, write: true) {
                if let newValue { try setData(newValue, forKey: key) } else { try remove(key) }
            }
        }
    }

    /// The error of the last subscript read or write through this keychain or a copy of it, nil if it
    /// succeeded (the throwing methods report theirs by throwing).
    public var lastError: KeychainError? { outcome.value }

    private func recording<T>(_ key: String, write: Bool, _ body: () throws -> T) -> T? {
        do {
            let r = try body()
            outcome.value = nil
            return r
        } catch {
            let e = KeychainError.from(error)
            outcome.value = e
            if write { printError("kcar: keychain \(service)[\"\(key)\"] was not written: \(e)\n") }
            return nil
        }
    }

    // MARK: Several items

    /// Removes the value under `key`; no error if there is none.
    public func remove(_ key: String) throws {
        do { try store().delete(query(key)) } catch let e as KeychainError where e.status == .itemNotFound {}
    }

    /// Removes every value of this service.
    public func removeAll() throws {
        do { try store().delete(query(nil)) } catch let e as KeychainError where e.status == .itemNotFound {}
    }

    /// Whether a value is stored under `key` (the index only).
    public func contains(_ key: String) throws -> Bool {
        var q = query(key)
        q.limit = 1
        return try !store().find(q).isEmpty
    }

    /// The keys (accounts) of this service, sorted. It does not throw, as KeychainAccess's does not (code
    /// ported from it calls it without `try`): a failure gives `[]` and leaves its error in ``lastError``, as
    /// the subscripts' reads do; `try keys(where: [:])` is the same list, throwing.
    public func allKeys() -> [String] {
        recording("keys", write: false) { try keys(where: [:]) } ?? []
    }

    /// The items of this service, from the index (no value decrypted).
    public func allItems() throws -> [KeychainItem] { try store().find(query(nil)) }

    /// The keys whose user attributes have these values, from the index alone: no value is decrypted.
    public func keys(where attributes: [String: AttributeValue]) throws -> [String] {
        try store().find(query(nil, extra: attributes)).compactMap { $0.attributes.string(AttributeName.account) }
    }

    /// The values of every key whose user attributes have these values (`[:]`: every key of the service),
    /// read in one pass: each record is decrypted once, however many of the values it holds
    /// (``KeychainStore/values(matching:)``). Values are decoded as ``get(_:forKey:)`` decodes them; a key in
    /// several groups of the list gives the value of the first.
    public func getAll<T: Decodable>(_ type: T.Type, where attributes: [String: AttributeValue] = [:]) throws
        -> [String: T]
    {
        var out: [String: T] = [:]
        for (item, bytes) in try store().values(matching: query(nil, extra: attributes)) {
            guard let key = item.account, out[key] == nil else { continue }
            out[key] = try Keychain.decode(type, Data(bytes), key: key)
        }
        return out
    }
}

/// The last subscript error of a ``Keychain`` and its copies.
final class SharedOutcome: Sendable {
    private let error = Mutex<KeychainError?>(nil)
    var value: KeychainError? {
        get { error.withLock { $0 } }
        set { error.withLock { $0 = newValue } }
    }
}

/// Writes `line` to standard error, unbuffered.
func printError(_ line: String) {
    let bytes = Array(line.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
