import Dispatch
import Synchronization

/// One vault file shared by every task and thread of a program, as GRDB's `DatabaseQueue` shares a database:
/// `Sendable`, each call run alone (calls of one `SharedVault` never overlap; several processes, and several
/// `SharedVault`s of one file, are kept apart by the file's locks, SPEC.md §3), and `async` variants that wait
/// off Swift's cooperative pool.
///
/// ```swift
/// let vault = try SharedVault(path: "/etc/app/secrets.kcv", secret: .keyFile(key))
/// // In any task:
/// let password = try await vault.async.value(class: .genericPassword, key: Attributes(["svce": .string("db")]))
/// ```
///
/// It opens the vault with its items on demand (a lookup reads a few pages, not every item) and catches up
/// with other writers before each call, so that a long-running server sees what `kcar` or another program
/// committed. ``close()`` lets go of the file and the key at once; a call after it throws
/// ``VaultError/Code/closed``.
public final class SharedVault: @unchecked Sendable {
    /// The path of the vault file.
    public let path: String
    /// Guards `vault`: every use of the ``Vault`` happens inside it.
    private let mutex = Mutex(())
    private var vault: Vault?
    /// Where the `async` variants run: a serial queue of its own gets a thread even when the pool has none.
    private let queue: DispatchQueue

    /// Opens the vault at `path` (see ``Vault/open(path:secret:mode:lockTimeout:itemsOnDemand:writerID:)``),
    /// its items on demand. With `.write`, ``commit(options:_:)`` may change it; each commit takes the
    /// file's exclusive lock for as long as it runs, not longer.
    public init(path: String, secret: UnlockSecret, mode: OpenMode = .read, lockTimeout: Double = 10) throws {
        self.path = path
        vault = try Vault.open(path: path, secret: secret, mode: mode, lockTimeout: lockTimeout, itemsOnDemand: true)
        queue = DispatchQueue(label: "kcar.vault")
    }

    /// Runs `body` with the vault after catching up with other writers, no other call of this object running
    /// meanwhile. `body` must not keep the ``Vault`` (nor an ``ItemIndex`` taken from it) past its return.
    public func withVault<T>(_ body: (Vault) throws -> T) throws -> T {
        try mutex.withLock { _ in
            guard let vault else { throw VaultError(.closed, path: path, "\(path) was closed") }
            try vault.refresh()
            return try body(vault)
        }
    }

    /// The live items of class `itemClass` whose key is `key` (``Vault/items(class:key:)``).
    public func items(class itemClass: ItemClass, key: Attributes) throws -> [Item] {
        try withVault { try $0.items(class: itemClass, key: key) }
    }

    /// The value of the item of class `itemClass` whose key is `key`, or nil if there is none. Throws
    /// ``VaultError/Code/invalidArgument`` if several items have that key (a key that leaves out attributes
    /// the vault keys by can match several).
    public func value(class itemClass: ItemClass, key: Attributes) throws -> [UInt8]? {
        try withVault { vault in
            let found = try vault.items(class: itemClass, key: key)
            guard found.count <= 1 else {
                throw VaultError(
                    .invalidArgument, path: path, "\(found.count) items of \(path) have that key; name more of it")
            }
            return try found.first.map { try vault.read($0) }
        }
    }

    /// The whole value of `item`. Throws ``VaultError/Code/staleItem`` if the item was deleted or its value
    /// replaced since it was found.
    public func read(_ item: Item) throws -> [UInt8] {
        try withVault { try $0.read(item) }
    }

    /// Appends one commit with the changes `body` makes (``Vault/commit(options:random:_:)``); needs `.write`.
    public func commit(options: WriteOptions = .init(), _ body: (Transaction) throws -> Void) throws {
        try withVault { try $0.commit(options: options, body) }
    }

    /// Lets go of the file and, unless a `body` kept the ``Vault``, of the key material (zeroed as it is
    /// freed) now rather than when the object goes. Waits for a call under way. Calling it again does nothing.
    public func close() {
        let closing: Vault? = mutex.withLock { _ in
            defer { vault = nil }
            return vault
        }
        _ = closing
    }

    /// The `async` variants of this vault's calls: `try await vault.async.read(item)`.
    public var async: Async { Async(vault: self) }

    /// The `async` variants of ``SharedVault``'s calls. Each runs the call of the same name on the vault's own
    /// serial queue, never on the cooperative pool (a call may wait for another process's lock, up to the
    /// lock timeout, and for `fsync`), and suspends the task until it returns. A task cancelled before the call
    /// starts throws `CancellationError`; once started, a call runs to its end.
    public struct Async: Sendable {
        let vault: SharedVault

        /// ``SharedVault/items(class:key:)``, off the cooperative pool.
        public func items(class itemClass: ItemClass, key: Attributes) async throws -> [Item] {
            try await vault.offPool { try vault.items(class: itemClass, key: key) }
        }
        /// ``SharedVault/value(class:key:)``, off the cooperative pool.
        public func value(class itemClass: ItemClass, key: Attributes) async throws -> [UInt8]? {
            try await vault.offPool { try vault.value(class: itemClass, key: key) }
        }
        /// ``SharedVault/read(_:)``, off the cooperative pool.
        public func read(_ item: Item) async throws -> [UInt8] {
            try await vault.offPool { try vault.read(item) }
        }
        /// ``SharedVault/commit(options:_:)``, off the cooperative pool: `body` runs on the vault's queue.
        public func commit(
            options: WriteOptions = .init(), _ body: @escaping @Sendable (Transaction) throws -> Void
        ) async throws {
            try await vault.offPool { try vault.commit(options: options, body) }
        }
        /// ``SharedVault/withVault(_:)``, off the cooperative pool: `body` runs on the vault's queue.
        public func withVault<T: Sendable>(_ body: @escaping @Sendable (Vault) throws -> T) async throws -> T {
            try await vault.offPool { try vault.withVault(body) }
        }
    }

    /// Runs `body` on the vault's queue and suspends the calling task until it returns.
    private func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
