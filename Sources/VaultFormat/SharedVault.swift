import Dispatch
import Synchronization

/// One vault file shared by every task and thread of a program, as GRDB's `DatabaseQueue` and `DatabasePool`
/// share a database: `Sendable`; writes run one at a time, reads on up to `readers` instances of the vault at
/// once (several processes, and several `SharedVault`s of one file, are kept apart by the file's locks,
/// SPEC.md §3); and `async` variants that wait off Swift's cooperative pool.
///
/// ```swift
/// let vault = try SharedVault(path: "/etc/app/secrets.kcv", secret: .keyFile(key), readers: 4)
/// // In any task:
/// let password = try await vault.async.value(class: .genericPassword, key: Attributes(["svce": .string("db")]))
/// ```
///
/// Each instance opens the vault with its items on demand (a lookup reads a few pages, not every item) and
/// catches up with other writers before each call, so that a long-running server sees what `kcar` or another
/// program committed. ``close()`` lets go of the file and the key at once; a call after it throws
/// ``VaultError/Code/closed``.
public final class SharedVault: @unchecked Sendable {
    /// The path of the vault file.
    public let path: String
    /// Held by a write (and by ``close()``): every use of `writer` happens while it is held.
    private let writing = DispatchSemaphore(value: 1)
    /// The instance writes go to (`.write`), nil when opened to read or closed.
    private var writer: Vault?
    /// Held while `free` and `closed` are read or changed.
    private let poolLock = DispatchSemaphore(value: 1)
    /// The reading instances not in use.
    private var free: [Vault]
    /// Whether ``close()`` ran.
    private var closed = false
    /// Counts the free reading instances.
    private let available: DispatchSemaphore
    /// Held by a write for as long as it runs; a read passes it before it catches up. A file lock is taken by
    /// polling, so readers of this process taking the shared lock one after another would starve a write
    /// waiting for the exclusive one (64 tasks on four readers did, for the whole lock timeout).
    private let gate = DispatchSemaphore(value: 1)
    private let readers: Int
    /// Where the `async` variants run: serial queues of their own get threads even when the pool has none.
    /// One per reader, taken in turn (a concurrent queue whose blocks wait for a reader gets new threads only
    /// slowly: 56 reads of 64 tasks took 47 s that way).
    private let writeQueue = DispatchQueue(label: "kcar.vault.write")
    private let readQueues: [DispatchQueue]
    private let nextReadQueue = Atomic<Int>(0)

    /// Opens the vault at `path` (see ``Vault/open(path:secret:mode:lockTimeout:itemsOnDemand:writerID:)``)
    /// `readers` times for reading (1 to 64), and once more with `.write` to write, its items on demand. With
    /// `.write`, ``commit(options:_:)`` may change it; each commit takes the file's exclusive lock for as
    /// long as it runs, not longer. Each instance holds its own copy of the vault key (in locked memory).
    public init(
        path: String, secret: UnlockSecret, mode: OpenMode = .read, lockTimeout: Double = 10, readers: Int = 1
    ) throws {
        guard (1...64).contains(readers) else {
            throw VaultError(.invalidArgument, path: path, "a shared vault has 1 to 64 readers, not \(readers)")
        }
        self.path = path
        self.readers = readers
        let open = { (mode: OpenMode) in
            try Vault.open(path: path, secret: secret, mode: mode, lockTimeout: lockTimeout, itemsOnDemand: true)
        }
        writer = mode == .write ? try open(.write) : nil
        free = try (0..<readers).map { _ in try open(.read) }
        available = DispatchSemaphore(value: readers)
        readQueues = (0..<readers).map { DispatchQueue(label: "kcar.vault.read.\($0)") }
    }

    private func closedError() -> VaultError { VaultError(.closed, path: path, "\(path) was closed") }

    /// Runs `body` with a reading instance of the vault, caught up with other writers: up to `readers` run at
    /// once. `body` must not keep the ``Vault`` (nor an ``ItemIndex`` taken from it) past its return.
    public func withReader<T>(_ body: (Vault) throws -> T) throws -> T {
        available.wait()
        defer { available.signal() }
        poolLock.wait()
        let taken = closed ? nil : free.popLast()
        poolLock.signal()
        guard let vault = taken else { throw closedError() }
        defer {
            poolLock.wait()
            free.append(vault)
            poolLock.signal()
        }
        gate.wait()
        gate.signal()
        try vault.refresh()
        return try body(vault)
    }

    /// Runs `body` with the writing instance of the vault (opened with `.write`), caught up with other writers,
    /// no other write of this object running meanwhile; reads go on beside it. `body` must not keep the
    /// ``Vault`` past its return. A vault opened to read runs `body` with a reading instance.
    public func withVault<T>(_ body: (Vault) throws -> T) throws -> T {
        writing.wait()
        defer { writing.signal() }
        guard let writer else { return try withReader(body) }
        gate.wait()
        defer { gate.signal() }
        try writer.refresh()
        return try body(writer)
    }

    /// The live items of class `itemClass` whose key is `key` (``Vault/items(class:key:)``).
    public func items(class itemClass: ItemClass, key: Attributes) throws -> [Item] {
        try withReader { try $0.items(class: itemClass, key: key) }
    }

    /// The value of the item of class `itemClass` whose key is `key`, or nil if there is none. Throws
    /// ``VaultError/Code/invalidArgument`` if several items have that key (a key that leaves out attributes
    /// the vault keys by can match several).
    public func value(class itemClass: ItemClass, key: Attributes) throws -> [UInt8]? {
        try withReader { vault in
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
        try withReader { try $0.read(item) }
    }

    /// Appends one commit with the changes `body` makes (``Vault/commit(options:random:_:)``); needs `.write`.
    public func commit(options: WriteOptions = .init(), _ body: (Transaction) throws -> Void) throws {
        try withVault { try $0.commit(options: options, body) }
    }

    /// Lets go of the file and, unless a `body` kept a ``Vault``, of the key material (zeroed as it is freed)
    /// now rather than when the object goes. Waits for the calls under way. Calling it again does nothing.
    public func close() {
        writing.wait()
        writer = nil
        writing.signal()
        // Every reading instance back in the pool: no read is under way.
        for _ in 0..<readers { available.wait() }
        poolLock.wait()
        free = []
        closed = true
        poolLock.signal()
        for _ in 0..<readers { available.signal() }
    }

    /// The `async` variants of this vault's calls: `try await vault.async.read(item)`.
    public var async: Async { Async(vault: self) }

    /// The `async` variants of ``SharedVault``'s calls. Each runs the call of the same name on a queue of the
    /// vault's own (reads on one per reader, writes on one), never on the cooperative pool (a call may wait for another process's lock, up to the
    /// lock timeout, and for `fsync`), and suspends the task until it returns. A task cancelled before the call
    /// starts throws `CancellationError`; once started, a call runs to its end.
    public struct Async: Sendable {
        let vault: SharedVault

        /// ``SharedVault/items(class:key:)``, off the cooperative pool.
        public func items(class itemClass: ItemClass, key: Attributes) async throws -> [Item] {
            try await vault.offPool(reading: true) { try vault.items(class: itemClass, key: key) }
        }
        /// ``SharedVault/value(class:key:)``, off the cooperative pool.
        public func value(class itemClass: ItemClass, key: Attributes) async throws -> [UInt8]? {
            try await vault.offPool(reading: true) { try vault.value(class: itemClass, key: key) }
        }
        /// ``SharedVault/read(_:)``, off the cooperative pool.
        public func read(_ item: Item) async throws -> [UInt8] {
            try await vault.offPool(reading: true) { try vault.read(item) }
        }
        /// ``SharedVault/commit(options:_:)``, off the cooperative pool: `body` runs on the vault's queue.
        public func commit(
            options: WriteOptions = .init(), _ body: @escaping @Sendable (Transaction) throws -> Void
        ) async throws {
            try await vault.offPool(reading: false) { try vault.commit(options: options, body) }
        }
        /// ``SharedVault/withVault(_:)``, off the cooperative pool: `body` runs on the vault's write queue.
        public func withVault<T: Sendable>(_ body: @escaping @Sendable (Vault) throws -> T) async throws -> T {
            try await vault.offPool(reading: false) { try vault.withVault(body) }
        }
        /// ``SharedVault/withReader(_:)``, off the cooperative pool.
        public func withReader<T: Sendable>(_ body: @escaping @Sendable (Vault) throws -> T) async throws -> T {
            try await vault.offPool(reading: true) { try vault.withReader(body) }
        }
    }

    /// Runs `body` on the vault's read or write queue and suspends the calling task until it returns.
    private func offPool<T: Sendable>(reading: Bool, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            let queue =
                reading
                ? readQueues[nextReadQueue.wrappingAdd(1, ordering: .relaxed).oldValue % readQueues.count]
                : writeQueue
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
