import FoundationEssentials
import Synchronization
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Where the SecItem functions find the keychain: by default the directory and access groups the environment
/// names (`KCAR_KEYCHAIN`, `KCAR_ACCESS_GROUPS`; SPEC.md §K1, §K2). Set ``store`` to use another.
///
/// The SecItem functions block as the store's calls do (up to its lock timeout, 10 s by default, for another
/// process's lock); from a Swift task, call them inside ``withKeychainThread(_:)``.
public enum SecItemConfiguration {
    private static let current = Mutex<KeychainStore?>(nil)

    /// The store the SecItem functions use (made from the environment on first use).
    public static var store: KeychainStore {
        get throws {
            try current.withLock { s in
                if let s { return s }
                let made = try KeychainStore()
                s = made
                return made
            }
        }
    }

    /// Replaces the store the SecItem functions use.
    public static func use(_ store: KeychainStore) {
        current.withLock { $0 = store }
    }
}

/// Adds an item (Apple's `SecItemAdd`). `result`, if given, receives what `kSecReturn...` asks for.
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<AnyObject?>?) -> OSStatus {
    secCall(result) {
        let q = try SecQuery(attributes, allowed: SecQuery.addKeys)
        guard let value = q.value else { throw KeychainError(.param, "kSecValueData is required to add an item") }
        let item = try SecItemConfiguration.store.add(
            class: q.itemClass, attributes: q.attributes, value: value, group: q.group)
        return try q.wantsResult ? q.result(for: [item]) : nil
    }
}

/// Finds items (Apple's `SecItemCopyMatching`): the first match, or all with `kSecMatchLimitAll`; their data,
/// attributes or both as `kSecReturn...` asks.
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<AnyObject?>?) -> OSStatus {
    secCall(result) {
        let q = try SecQuery(query, allowed: SecQuery.searchKeys)
        var iq = q.itemQuery
        iq.limit = q.limit
        let found = try SecItemConfiguration.store.find(iq)
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        return try q.result(for: found)
    }
}

/// Changes every matching item (Apple's `SecItemUpdate`); `attributesToUpdate` holds attributes and/or
/// `kSecValueData`.
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    secCall(nil) {
        let q = try SecQuery(query, allowed: SecQuery.modifyKeys)
        let changes = try SecQuery(attributesToUpdate, allowed: SecQuery.updateKeys, itemClass: q.itemClass)
        var set: [String: AttributeValue?] = [:]
        for (name, value) in changes.attributes { set[name] = value }
        if let g = changes.group, g != q.group {
            throw KeychainError(.param, "an item cannot move to another access group (delete and add it there)")
        }
        try SecItemConfiguration.store.update(q.itemQuery, set: set, value: changes.value)
        return nil
    }
}

/// Deletes every matching item (Apple's `SecItemDelete`).
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    secCall(nil) {
        let q = try SecQuery(query, allowed: SecQuery.modifyKeys)
        try SecItemConfiguration.store.delete(q.itemQuery)
        return nil
    }
}

/// Apple's sentence for a status (Apple's `SecCopyErrorMessageString`): "The specified item could not be
/// found in the keychain." for `errSecItemNotFound`; `OSStatus N` for a number Apple does not name. What went
/// wrong in this thread's last SecItem call is ``kcarLastResultMessage()``.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> String? {
    KeychainStatus(rawValue: status).message
}

/// Why this thread's last SecItem call failed, beyond its status ("kSecAttrPort is not an attribute of genp
/// items, nor a key this call takes" behind an `errSecParam`); nil if it succeeded or none was made. Never
/// holds a secret. Per thread, as `errno`: another thread's calls do not change it.
public func kcarLastResultMessage() -> String? { LastResult.current?.message }

/// The error of this thread's last SecItem call, with its status and ``KeychainError/reason``; nil if it
/// succeeded or none was made.
public func kcarLastError() -> KeychainError? { LastResult.current }

/// This thread's last SecItem error, kept in thread-specific storage (a box per thread, released with it).
enum LastResult {
    final class Box {
        let error: KeychainError
        init(_ error: KeychainError) { self.error = error }
    }

    static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { p in
            if let p { Unmanaged<Box>.fromOpaque(p).release() }
        }
        return key
    }()

    static var current: KeychainError? {
        get { pthread_getspecific(key).map { Unmanaged<Box>.fromOpaque($0).takeUnretainedValue().error } }
        set {
            if let old = pthread_getspecific(key) { Unmanaged<Box>.fromOpaque(old).release() }
            pthread_setspecific(key, newValue.map { Unmanaged.passRetained(Box($0)).toOpaque() })
        }
    }
}

private func secCall(_ result: UnsafeMutablePointer<AnyObject?>?, _ body: () throws -> Any?) -> OSStatus {
    do {
        let r = try body()
        result?.pointee = r.map { $0 as AnyObject }
        LastResult.current = nil
        return errSecSuccess
    } catch {
        let e = KeychainError.from(error)
        LastResult.current = e
        return e.status.rawValue
    }
}

/// A SecItem dictionary taken apart and checked: every key must be one this call accepts.
struct SecQuery {
    var itemClass: ItemClass
    var attributes = Attributes()
    var group: String?
    var value: [UInt8]?
    var limit: Int? = 1
    var returnData = false
    var returnAttributes = false
    var caseInsensitive = false
    var synchronizableAny = false

    static let returnKeys: Set<String> = [kSecReturnData, kSecReturnAttributes, kSecReturnRef, kSecReturnPersistentRef]
    static let addKeys = returnKeys.union([kSecClass, kSecValueData, kSecAttrAccessGroup, kSecUseDataProtectionKeychain]
    )
    /// Apple takes kSecValueData in every query and uses it only to add or update (securityd's query_set_data):
    /// a search or delete ignores it, as here. Apple's KeychainItemWrapper deletes with its item's whole
    /// dictionary, password included.
    static let searchKeys = returnKeys.union([
        kSecClass, kSecAttrAccessGroup, kSecMatchLimit, kSecMatchCaseInsensitive,
        kSecUseDataProtectionKeychain, kSecValueData
    ])
    static let updateKeys: Set<String> = [kSecValueData, kSecAttrAccessGroup]
    /// Update and delete apply to every match: a match limit or a return key is an error, as on Apple's.
    static let modifyKeys: Set<String> = [
        kSecClass, kSecAttrAccessGroup, kSecMatchCaseInsensitive, kSecUseDataProtectionKeychain,
        kSecValueData
    ]

    init(_ dict: [String: Any], allowed: Set<String>, itemClass given: ItemClass? = nil) throws {
        if let given {
            if dict[kSecClass] != nil { throw KeychainError(.param, "kSecClass cannot be changed by an update") }
            itemClass = given
        } else {
            guard let c = dict[kSecClass] as? String else { throw KeychainError(.param, "kSecClass is required") }
            itemClass = ItemClass(rawValue: c)
            guard Schema.all.contains(c) else { throw KeychainError(.param, "unknown kSecClass \"\(c)\"") }
        }
        for (key, raw) in dict {
            if allowed.contains(key) {
                try take(key, raw)
                continue
            }
            if key == kSecAttrSynchronizable, raw as? String == kSecAttrSynchronizableAny {
                guard allowed == SecQuery.searchKeys || allowed == SecQuery.modifyKeys else {
                    throw KeychainError(.param, "kSecAttrSynchronizableAny only selects items")
                }
                synchronizableAny = true
                continue
            }
            let isUser = key.hasPrefix(Schema.userPrefix)
            guard isUser || Schema.kind(of: key, class: itemClass.rawValue) != nil else {
                throw KeychainError(
                    .param, "\(key) is not an attribute of \(itemClass.rawValue) items, nor a key this call takes")
            }
            attributes[key] = try SecQuery.attributeValue(
                raw, key: key, kind: Schema.kind(of: key, class: itemClass.rawValue))
        }
        try Schema.validate(attributes, class: itemClass.rawValue)
    }

    private mutating func take(_ key: String, _ raw: Any) throws {
        func flag() throws -> Bool {
            guard let b = raw as? Bool else { throw KeychainError(.param, "\(key) takes a Bool") }
            return b
        }
        switch key {
        case kSecValueData:
            if let d = raw as? Data {
                value = [UInt8](d)
            } else if let b = raw as? [UInt8] {
                value = b
            } else {
                throw KeychainError(.param, "kSecValueData takes Data")
            }
        case kSecAttrAccessGroup:
            guard let g = raw as? String else { throw KeychainError(.param, "kSecAttrAccessGroup takes a String") }
            group = g
        case kSecMatchLimit:
            if let s = raw as? String, s == kSecMatchLimitOne {
                limit = 1
            } else if let s = raw as? String, s == kSecMatchLimitAll {
                limit = nil
            } else if let n = raw as? Int, n > 0 {
                limit = n
            } else {
                throw KeychainError(
                    .param, "kSecMatchLimit takes kSecMatchLimitOne, kSecMatchLimitAll or a positive Int")
            }
        case kSecMatchCaseInsensitive: caseInsensitive = try flag()
        case kSecReturnData: returnData = try flag()
        case kSecReturnAttributes: returnAttributes = try flag()
        case kSecReturnRef, kSecReturnPersistentRef:
            if try flag() {
                throw KeychainError(.unimplemented, "\(key): kcar returns data and attributes, not references")
            }
        case kSecUseDataProtectionKeychain: _ = try flag()
        case kSecClass: break
        default: throw KeychainError(.param, "\(key) is not accepted here")
        }
    }

    static func attributeValue(_ raw: Any, key: String, kind: AttributeKind?) throws -> AttributeValue {
        switch kind {
        case .string?:
            guard let s = raw as? String else { throw KeychainError(.param, "\(key) takes a String") }
            return .string(s)
        case .integer?:
            guard let n = integer(raw) else { throw KeychainError(.param, "\(key) takes an integer") }
            return .integer(n)
        case .bool?:
            guard let b = raw as? Bool else { throw KeychainError(.param, "\(key) takes a Bool") }
            return .bool(b)
        case .date?:
            guard let d = raw as? Date else { throw KeychainError(.param, "\(key) takes a Date") }
            return .date(nanoseconds: KeychainDate.nanoseconds(d))
        case .data?:
            if let d = raw as? Data { return .data([UInt8](d)) }
            if let b = raw as? [UInt8] { return .data(b) }
            // Apple stores a string given for a data attribute as its UTF-8 (KeychainItemWrapper's kSecAttrGeneric).
            if let s = raw as? String { return .data(Array(s.utf8)) }
            throw KeychainError(.param, "\(key) takes Data")
        case nil:
            if let s = raw as? String { return .string(s) }
            if let b = raw as? Bool { return .bool(b) }
            if let n = integer(raw) { return .integer(n) }
            if let d = raw as? Date { return .date(nanoseconds: KeychainDate.nanoseconds(d)) }
            if let d = raw as? Data { return .data([UInt8](d)) }
            if let b = raw as? [UInt8] { return .data(b) }
            throw KeychainError(.param, "\(key) takes a String, Bool, integer, Date or Data")
        }
    }

    private static func integer(_ raw: Any) -> Int64? {
        switch raw {
        case let n as Int: return Int64(n)
        case let n as Int64: return n
        case let n as Int32: return Int64(n)
        case let n as UInt32: return Int64(n)
        case let n as UInt16: return Int64(n)
        case let n as UInt: return Int64(exactly: n)
        case let n as UInt64: return Int64(exactly: n)
        default: return nil
        }
    }

    var itemQuery: ItemQuery {
        var q = ItemQuery(
            class: itemClass, attributes: attributes, group: group, limit: nil, caseInsensitive: caseInsensitive,
            synchronizableAny: synchronizableAny)
        q.datesAsDate = true  // every date of a SecItem dictionary is a Date
        return q
    }

    var wantsResult: Bool { returnData || returnAttributes }

    /// What `kSecReturn...` asks for: Data, an attribute dictionary, or a dictionary with both; an array of
    /// them when the limit allows more than one.
    func result(for items: [KeychainItem]) throws -> Any? {
        guard wantsResult else { return nil }
        let store = try SecItemConfiguration.store
        let chosen = limit == 1 ? [items[0]] : items
        // Several values are read in one pass, each record decrypted once (KeychainStore.values(of:)).
        let values = returnData ? try store.values(of: chosen).map { Data($0) } : nil
        let all: [Any] = chosen.indices.map { n in
            if let values, !returnAttributes { return values[n] }
            var d = SecQuery.dictionary(chosen[n])
            if let values { d[kSecValueData] = values[n] }
            return d
        }
        return limit == 1 ? all[0] : all
    }

    /// An item's attributes as a SecItem dictionary.
    static func dictionary(_ item: KeychainItem) -> [String: Any] {
        var d: [String: Any] = [kSecClass: item.itemClass.rawValue, kSecAttrAccessGroup: item.group]
        for (name, value) in item.attributes {
            switch value {
            case .string(let s): d[name] = s
            case .integer(let n): d[name] = Int(n)
            case .bool(let b): d[name] = b
            case .date(let ns): d[name] = KeychainDate.date(ns)
            case .data(let b): d[name] = Data(b)
            }
        }
        if d[kSecAttrSynchronizable] == nil { d[kSecAttrSynchronizable] = false }
        return d
    }
}
