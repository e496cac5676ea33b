import Dispatch
import FoundationEssentials
import VaultFormat

// Async variants. Every keychain call is synchronous and may block: on another process's
// vault lock for up to the store's `lockTimeout` (10 s by default; then errSecInteractionNotAllowed), on
// another thread of this process using the same store, and on file I/O and fsync. Called from a Swift task,
// that wait would hold one of the few threads of the cooperative pool. The variants below run the same
// call on a thread of the store's own dispatch queue and suspend the task until it returns, so other tasks
// keep running. They have their own names (`store.async.find(q)`, `keychain.async.get(...)`), because an
// `async` overload of the same name would make existing synchronous calls in async functions fail to compile.

extension KeychainStore {
    /// The async variants of this store's calls: `try await store.async.find(query)`. Each runs the
    /// synchronous call of the same name on a thread of the store's own serial queue (calls on one store are
    /// serialised anyway), never on the cooperative pool; the task waits suspended. A task cancelled before
    /// the call starts throws `CancellationError`; once started, a call runs to its end (at most the lock
    /// timeout of waiting).
    public var async: Async { Async(store: self) }

    /// The async variants of ``KeychainStore``'s calls (see ``KeychainStore/async``).
    public struct Async: Sendable {
        let store: KeychainStore

        /// ``KeychainStore/find(_:)``, off the cooperative pool.
        public func find(_ query: ItemQuery) async throws -> [KeychainItem] {
            try await store.offPool { try store.find(query) }
        }
        /// ``KeychainStore/search(_:)``, off the cooperative pool.
        public func search(_ query: ItemQuery) async throws -> SearchResult {
            try await store.offPool { try store.search(query) }
        }
        /// ``KeychainStore/value(of:)``, off the cooperative pool.
        public func value(of item: KeychainItem) async throws -> [UInt8] {
            try await store.offPool { try store.value(of: item) }
        }
        /// ``KeychainStore/values(of:)``, off the cooperative pool.
        public func values(of items: [KeychainItem]) async throws -> [[UInt8]] {
            try await store.offPool { try store.values(of: items) }
        }
        /// ``KeychainStore/values(matching:)``, off the cooperative pool.
        public func values(matching query: ItemQuery) async throws -> [(item: KeychainItem, value: [UInt8])] {
            try await store.offPool { try store.values(matching: query) }
        }
        /// ``KeychainStore/add(class:attributes:value:group:)``, off the cooperative pool.
        @discardableResult
        public func add(
            class itemClass: ItemClass = .genericPassword, attributes: Attributes, value: [UInt8],
            group: String? = nil
        ) async throws -> KeychainItem {
            try await store.offPool {
                try store.add(class: itemClass, attributes: attributes, value: value, group: group)
            }
        }
        /// ``KeychainStore/update(_:set:value:)``, off the cooperative pool.
        @discardableResult
        public func update(_ query: ItemQuery, set changes: [String: AttributeValue?] = [:], value: [UInt8]? = nil)
            async throws -> Int
        {
            try await store.offPool { try store.update(query, set: changes, value: value) }
        }
        /// ``KeychainStore/delete(_:)``, off the cooperative pool.
        @discardableResult
        public func delete(_ query: ItemQuery) async throws -> Int {
            try await store.offPool { try store.delete(query) }
        }
        /// ``KeychainStore/transaction(group:_:)``, off the cooperative pool: `body` runs on the store's thread.
        public func transaction<T: Sendable>(
            group: String? = nil, _ body: @escaping @Sendable (GroupTransaction) throws -> T
        ) async throws -> T {
            try await store.offPool { try store.transaction(group: group, body) }
        }
        /// ``KeychainStore/groupCounts()``, off the cooperative pool.
        public func groupCounts() async throws -> [(group: String, count: Int)] {
            try await store.offPool { try store.groupCounts() }
        }
    }

    /// Runs `body` on the store's serial queue and suspends the calling task until it returns.
    func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            blockingQueue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}

/// Runs blocking keychain code, such as the SecItem functions, on a thread outside Swift's cooperative pool
/// and suspends the calling task until it returns (the async form of any call; SecItem results are not
/// `Sendable`, so take what you need from them inside `body`):
///
/// ```swift
/// let token: Data? = try await withKeychainThread {
///     var result: AnyObject?
///     let query: [CFString: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrService: "api", kSecReturnData: true]
///     return SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess ? result as? Data : nil
/// }
/// ```
public func withKeychainThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try Task.checkCancellation()
    return try await withCheckedThrowingContinuation { continuation in
        // A serial queue of its own is overcommitting: it gets a thread even when every pool thread waits.
        DispatchQueue(label: "kcar.keychain.call").async { continuation.resume(with: Result { try body() }) }
    }
}

extension Keychain {
    /// The async variants of this keychain's calls: `try await keychain.async.get(String.self, forKey: "k")`.
    /// Each runs the synchronous call of the same name on its store's own queue, never on the cooperative
    /// pool (see ``KeychainStore/async``).
    public var async: Async { Async(keychain: self) }

    /// The async variants of ``Keychain``'s calls (see ``Keychain/async``).
    public struct Async: Sendable {
        let keychain: Keychain

        private func run<T: Sendable>(_ body: @escaping @Sendable (Keychain) throws -> T) async throws -> T {
            let k = keychain
            return try await k.store().offPool { try body(k) }
        }

        /// ``Keychain/getData(_:)``, off the cooperative pool.
        public func getData(_ key: String) async throws -> Data? { try await run { try $0.getData(key) } }
        /// ``Keychain/getString(_:)``, off the cooperative pool.
        public func getString(_ key: String) async throws -> String? { try await run { try $0.getString(key) } }
        /// ``Keychain/get(_:forKey:)``, off the cooperative pool.
        public func get<T: Decodable & Sendable>(_ type: T.Type, forKey key: String) async throws -> T? {
            try await run { try $0.get(type, forKey: key) }
        }
        /// ``Keychain/getAll(_:where:)``, off the cooperative pool.
        public func getAll<T: Decodable & Sendable>(_ type: T.Type, where attributes: [String: AttributeValue] = [:])
            async throws -> [String: T]
        {
            try await run { try $0.getAll(type, where: attributes) }
        }
        /// ``Keychain/setData(_:forKey:attributes:replacingAttributes:)``, off the cooperative pool.
        public func setData(
            _ bytes: Data, forKey key: String, attributes: [String: AttributeValue] = [:],
            replacingAttributes: Bool = false
        ) async throws {
            try await run {
                try $0.setData(bytes, forKey: key, attributes: attributes, replacingAttributes: replacingAttributes)
            }
        }
        /// ``Keychain/set(_:forKey:attributes:replacingAttributes:)``, off the cooperative pool.
        public func set<T: Encodable & Sendable>(
            _ value: T, forKey key: String, attributes: [String: AttributeValue] = [:],
            replacingAttributes: Bool = false
        ) async throws {
            try await run {
                try $0.set(value, forKey: key, attributes: attributes, replacingAttributes: replacingAttributes)
            }
        }
        /// ``Keychain/loadOrCreate(_:forKey:create:)``, off the cooperative pool (`create` runs there too).
        public func loadOrCreate<T: Codable & Sendable>(
            _ type: T.Type, forKey key: String,
            create: @escaping @Sendable () throws -> T
        ) async throws -> T {
            try await run { try $0.loadOrCreate(type, forKey: key, create: create) }
        }
        /// ``Keychain/remove(_:)``, off the cooperative pool.
        public func remove(_ key: String) async throws { try await run { try $0.remove(key) } }
        /// ``Keychain/removeAll()``, off the cooperative pool.
        public func removeAll() async throws { try await run { try $0.removeAll() } }
        /// ``Keychain/contains(_:)``, off the cooperative pool.
        public func contains(_ key: String) async throws -> Bool { try await run { try $0.contains(key) } }
        /// The keys of the service, sorted; unlike ``Keychain/allKeys()`` it throws.
        public func allKeys() async throws -> [String] { try await run { try $0.keys(where: [:]) } }
        /// ``Keychain/allItems()``, off the cooperative pool.
        public func allItems() async throws -> [KeychainItem] { try await run { try $0.allItems() } }
        /// ``Keychain/keys(where:)``, off the cooperative pool.
        public func keys(where attributes: [String: AttributeValue]) async throws -> [String] {
            try await run { try $0.keys(where: attributes) }
        }
    }
}
