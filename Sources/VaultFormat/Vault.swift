#if canImport(Glibc)
    import Glibc
#endif

/// How a vault is opened.
///
/// No lock is held between calls, in either mode: opening and ``Vault/refresh()`` take the file's shared lock
/// for as long as they read a commit, and each change takes its exclusive lock for as long as it runs, so
/// other processes read and write in between (SPEC.md §3).
public enum OpenMode: Sendable {
    /// Reading only: a change throws ``VaultError/Code/invalidArgument``.
    case read
    /// Reading and changing: each commit, compaction or rewrite takes the exclusive lock (waiting up to the
    /// lock timeout), catches up with what others committed, changes the file and lets the lock go.
    case write
}

/// Options that govern how a writer lays out and compresses data.
public struct WriteOptions: Sendable {
    /// Compression level: 0 (store) to 12 (libdeflate's slowest); 6 by default, 1 fastest.
    public var level: Int32
    /// Compact automatically after a commit when dead space passes the threshold (SPEC.md §9).
    public var autoCompact: Bool
    /// Seconds to wait for another process's lock.
    public var lockTimeout: Double
    /// At most this many small values share one solid record. Fewer make reading one value cheaper (its
    /// whole record is decrypted) at a small cost in size: the keychain, which reads single items, uses 32.
    public var solidMembers: Int
    /// Stamp dates as `kcar add` and the keychain do: an item added without a creation or modification date
    /// (``AttributeName/creationDate``, ``AttributeName/modificationDate``) gets the commit's time, and an
    /// update that leaves the modification date as it was sets it to that time (keeping the creation date an
    /// update's attributes leave out). Off by default: the codec stores the attributes it is given, so that
    /// the same items make the same vault (`kcar pack` of an unchanged folder, the golden fixtures).
    public var stampsDates: Bool
    /// Options as given; `solidMembers` is clamped to 1...``Limits/membersMax``.
    public init(
        level: Int32 = 6, autoCompact: Bool = true, lockTimeout: Double = 10, solidMembers: Int = Limits.membersMax,
        stampsDates: Bool = false
    ) {
        self.level = level
        self.autoCompact = autoCompact
        self.lockTimeout = lockTimeout
        self.solidMembers = max(1, min(solidMembers, Limits.membersMax))
        self.stampsDates = stampsDates
    }

    /// The time a transaction under these options stamps, in nanoseconds since 1970 (nil: no stamping).
    var stampTime: Int64? { stampsDates ? HybridClock.nowNanoseconds() : nil }

    func check() throws {
        guard Deflate.levels.contains(level) else {
            throw VaultError(
                .invalidArgument,
                "compression level \(level) outside \(Deflate.levels.lowerBound)...\(Deflate.levels.upperBound)")
        }
    }
}

/// The last complete commit and the chain of index segments that leads to it.
struct Tail {
    var trailer: Trailer
    /// Body offset of the trailer.
    var offset: UInt64
    /// Bytes of the newest checkpoint segment, and of the deltas after it.
    var checkpointBytes: UInt64
    var deltaBytes: UInt64
    /// Plaintext bytes and operations of the whole chain, checkpoint included (``Limits/chainIndexMax``,
    /// ``Limits/chainOpsMax``).
    var chainPlainBytes: Int = 0
    var chainOps: Int = 0
    var end: UInt64 { offset + UInt64(Trailer.size) }
}

/// An open vault: header unlocked, index loaded. Reads items, commits changes, and rewrites the file.
///
/// ```swift
/// let vault = try Vault.open(path: "secrets.kcv", secret: .keyFile(key))
/// for item in vault.items { print(item.service ?? "", item.account ?? "", item.size) }
/// let value = try vault.read(vault.items[0])
/// ```
///
/// A `Vault` is not safe to share between threads: open one per thread (the file's locks make that safe), or
/// share one ``SharedVault`` between every task.
public final class Vault {
    /// The path the vault was opened from.
    public let path: String
    /// The parsed header.
    public internal(set) var header: Header
    var headerBytes: [UInt8]
    var file: File {
        didSet { reopened += 1 }
    }
    /// How many times this instance took up another file at its path (its own rewrite, another process's, a
    /// copy put back): what a reader that checks more than the generation (SPEC.md §K6) watches.
    package internal(set) var reopened = 0
    var keys: Subkeys
    var vaultKey: SecureBytes
    var state: [ItemID: Item] {
        didSet { stateVersion &+= 1 }
    }
    /// Counts the changes of this instance's items (commits, catching up with other writers, rewrites): a
    /// process-local version for what callers derive from the items and keep (the keychain's primary-key
    /// index). Equal versions of one instance mean the same items.
    public private(set) var stateVersion: UInt64 = 0
    /// What the file's format version does (``VaultEngine``): ``LogEngine`` for version 1, ``PagedEngine`` for
    /// version 2.
    var engine: any VaultEngine
    /// Bytes after the last complete commit: an interrupted write that the next writer cuts off.
    public internal(set) var incompleteBytes: UInt64
    /// The index of the key slot that opened the vault.
    public internal(set) var unlockedSlot: Int = 0
    let mode: OpenMode
    var lockTimeout: Double = 10
    /// Why the last automatic compaction failed, if it did (the commit before it stood).
    public internal(set) var lastCompactionError: VaultError?
    /// The writer id of this instance's version 2 commits (nil: one drawn when the paged engine is opened).
    var writerID: UInt64?

    init(
        path: String, header: Header, headerBytes: [UInt8], file: File, vaultKey: SecureBytes, state: [ItemID: Item],
        engine: any VaultEngine, incompleteBytes: UInt64, mode: OpenMode
    ) {
        self.path = path
        self.header = header
        self.headerBytes = headerBytes
        self.file = file
        self.vaultKey = vaultKey
        keys = Subkeys(vaultKey: vaultKey)
        self.state = state
        self.engine = engine
        self.incompleteBytes = incompleteBytes
        self.mode = mode
    }

    /// Items sorted by service, then account (bytewise, as UTF-8), then id.
    public var items: [Item] {
        loadOnDemand()
        var all = Array(state.values)
        var order = Vault.sortOrder(all)
        // Permuted in place, following cycles: a second array of every item would double the peak memory of
        // listing a vault of a million items.
        for start in order.indices where order[start] != start {
            let first = all[start]
            var j = start
            while true {
                let k = order[j]
                order[j] = j
                if k == start {
                    all[j] = first
                    break
                }
                all[j] = all[k]
                j = k
            }
        }
        return all
    }

    /// Where each item of `all` goes when sorted (position -> index into `all`). Sort keys are computed once
    /// per item, not once per comparison, and freed when this returns; indexes over them are sorted (moving
    /// Ints is cheaper than moving items); the first 8 bytes of each name, as an integer, decide most
    /// comparisons without touching the strings.
    static func sortOrder(_ all: [Item]) -> [Int] {
        let names = all.map { ($0.service ?? "", $0.account ?? "") }
        func prefix(_ s: String) -> UInt64 {
            var v: UInt64 = 0
            var n = 0
            for b in s.utf8.prefix(8) {
                v = v << 8 | UInt64(b)
                n += 1
            }
            return n == 8 ? v : v << (8 * UInt64(8 - n))
        }
        let prefixes = names.map { (prefix($0.0), prefix($0.1)) }
        func less(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
        var order = Array(all.indices)
        order.sort { i, j in
            if prefixes[i].0 != prefixes[j].0 { return prefixes[i].0 < prefixes[j].0 }
            if names[i].0 != names[j].0 { return less(names[i].0, names[j].0) }
            if prefixes[i].1 != prefixes[j].1 { return prefixes[i].1 < prefixes[j].1 }
            if names[i].1 != names[j].1 { return less(names[i].1, names[j].1) }
            return all[i].id < all[j].id
        }
        return order
    }

    /// The items in no particular order (cheaper than ``items`` when order does not matter).
    public var unorderedItems: Dictionary<ItemID, Item>.Values {
        loadOnDemand()
        return state.values
    }

    /// The item with this id, if any.
    public func item(_ id: ItemID) -> Item? {
        loadOnDemand()
        return state[id]
    }

    /// Number of items.
    public var count: Int { engine.count(in: self) }

    /// The generation of the last complete commit.
    public var generation: UInt64 { engine.generation }

    /// Bytes of the header.
    public var headerLength: Int { header.length }

    /// Bytes on disk of the index the last commit names, in either format (what the scale benchmark reports
    /// per item).
    package func indexBytes() throws -> UInt64 { try naming { try engine.indexBytes() } }

    /// The version of the file's format: 2, the current one (SPEC.md Part 4), or 1 (Part 1).
    public var formatVersion: Int { Int(header.formatVersion) }

    /// Bytes of the body up to the end of the last complete commit.
    public var bodyLength: UInt64 { engine.bodyLength }

    /// Bytes in the body that no live item, nor the current index chain, needs: deleted and replaced
    /// values and superseded index segments. `compact` removes them. A record that still holds a live
    /// value is counted live, except for the values of deleted members that come before a live one in it
    /// (the gaps the index shows between its live members' data); deleted members after the last live one
    /// are not visible without decrypting the record, so this is a lower bound (SPEC.md §9). Deleted values
    /// leave the file only when a compaction rewrites their record: ``compact(random:options:)`` always does.
    public var deadBytes: UInt64 { engine.deadBytes(in: self) }

    /// ``deadBytes`` of a version 1 file.
    func deadBytes(_ log: LogEngine) -> UInt64 {
        let tail = log.tail
        var live: UInt64 = 0
        var records: [ID128: (length: UInt64, end: UInt64, data: UInt64)] = [:]
        for item in state.values {
            let l = item.location
            // Index decoding checked that dataOffset + size fits 64 bits; sizes of distinct members of one
            // record add up to at most its end (else the record is damaged, and then counted as live).
            var r = records[l.recordID] ?? (l.length, 0, 0)
            r.end = max(r.end, l.dataOffset + item.size)
            r.data = r.data.saturatingAdding(item.size)
            records[l.recordID] = r
        }
        var gaps: UInt64 = 0
        for r in records.values {
            live += r.length
            if r.end > r.data { gaps = gaps.saturatingAdding(r.end - r.data) }
        }
        let chain = tail.checkpointBytes + tail.deltaBytes + UInt64(Trailer.size) * (UInt64(tail.trailer.chain) + 1)
        let unneeded = tail.end - min(tail.end, live + chain)
        // Gaps are plaintext bytes, stored compressed or not: never more than the live records' bytes.
        return unneeded + min(gaps, live)
    }

    /// Opens and unlocks the vault at `path`, holding a shared lock while it reads the header, the tail and
    /// the index, so it always sees a whole commit. No lock is held afterwards: commits only append, and
    /// rewrites replace the file by rename, so the commit read stays readable. Reading commands work on the
    /// last complete commit; check ``incompleteBytes`` to learn whether an interrupted write follows it.
    /// With `.write`, each change (commit, compaction, slot change) takes an exclusive lock and first
    /// catches up with whatever other writers committed since.
    public static func open(
        path: String, secret: UnlockSecret, mode: OpenMode = .read,
        lockTimeout: Double = 10
    ) throws -> Vault {
        try open(path: path, secret: secret, mode: mode, lockTimeout: lockTimeout, itemsOnDemand: false)
    }

    /// As ``open(path:secret:mode:lockTimeout:)``; with `itemsOnDemand`, the items of a vault of the current
    /// format (version 2) are not read at open but looked up in its trees as needed, so that opening costs
    /// the same whatever the number of items: find them through ``itemIndex``. ``items``, ``unorderedItems``
    /// and ``item(_:)`` still work, and read every item on first use; a transaction looks up only the items
    /// it changes. A version 1 vault is read whole either way.
    ///
    /// `writerID` names the writer of the versions this instance's commits give a version 2 vault (SPEC.md
    /// Part 4, V5; nil: one drawn at random for this instance).
    public static func open(
        path: String, secret: UnlockSecret, mode: OpenMode = .read,
        lockTimeout: Double = 10, itemsOnDemand: Bool, writerID: UInt64? = nil
    ) throws -> Vault {
        try naming(path) {
            let file = try lockedFile(path, mode: mode, exclusive: false, timeout: lockTimeout)
            defer { file.unlock() }
            let vault = try open(
                file: file, path: path, secret: secret, mode: mode, itemsOnDemand: itemsOnDemand, writerID: writerID)
            vault.lockTimeout = lockTimeout
            vault.engine.setLockTimeout(lockTimeout)
            return vault
        }
    }

    /// Runs `body`, naming the file at `path` in a ``VaultError`` it throws that names no file: every error
    /// a vault's public API throws says which file it is about (``VaultError/path``).
    static func naming<T>(_ path: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as VaultError { throw e.about(path) }
    }

    /// ``naming(_:_:)`` with this vault's path.
    func naming<T>(_ body: () throws -> T) throws -> T { try Vault.naming(path, body) }

    /// Opens `path` and locks it, again if a rewrite renamed a new file over the one locked.
    static func lockedFile(_ path: String, mode: OpenMode, exclusive: Bool, timeout: Double) throws -> File {
        while true {
            let file = mode == .read ? try File.openRead(path) : try File.openReadWrite(path)
            try file.lock(exclusive: exclusive, timeout: timeout)
            if try file.isStill(path) { return file }
            file.unlock()
        }
    }

    /// Runs `body` under an exclusive lock, after catching up with commits and rewrites made by others (a
    /// version 1 file: version 2's engine takes its own locks).
    func exclusively<T>(_ log: LogEngine, _ body: () throws -> T) throws -> T {
        guard mode == .write else { throw VaultError(.invalidArgument, "the vault was opened read-only") }
        if try !file.isStill(path) {
            file = try Vault.lockedFile(path, mode: .write, exclusive: true, timeout: lockTimeout)
        } else {
            try file.lock(exclusive: true, timeout: lockTimeout)
            if try !file.isStill(path) {
                file.unlock()
                file = try Vault.lockedFile(path, mode: .write, exclusive: true, timeout: lockTimeout)
            }
        }
        defer { file.unlock() }
        try catchUp(log)
        guard engine === log else {
            // catchUp found the file upgraded to version 2 by another process: nothing was written.
            throw VaultError(
                .io, path: path,
                "\(path) was upgraded to format version 2 by another process while open; nothing was changed, try again"
            )
        }
        return try body()
    }

    /// Catches up with commits and rewrites made since the vault was opened or last refreshed, under a
    /// shared lock (so a whole commit is seen). Cheap when nothing changed: one header and one trailer read.
    public func refresh() throws { try naming { try engine.refresh(self) } }

    /// ``refresh()`` of a version 1 file.
    func refresh(_ log: LogEngine) throws {
        DebugSeam.pause("refresh-before-lock")
        try file.lock(exclusive: false, timeout: lockTimeout)
        // Checked under the lock (as version 2's refresh): a rewrite may have ended before it.
        if try !file.isStill(path) {
            file.unlock()
            file = try Vault.lockedFile(path, mode: mode, exclusive: false, timeout: lockTimeout)
        }
        defer { file.unlock() }
        try catchUp(log)
    }

    /// Reloads header, tail and index if the file is not exactly as this instance last saw it (a version 1
    /// file, which another process may have upgraded: the engine is then version 2's).
    func catchUp(_ log: LogEngine) throws {
        let tail = log.tail
        let size = try file.size()
        let expectedTrailer = tail.trailer.encode(vaultID: header.vaultID, key: keys.trailer)
        let sameHeader = (try? file.read(header.length, at: 0)) == headerBytes
        // With incomplete bytes known, another writer may have cut them and appended a commit of the same
        // size: only a file that ends exactly at the known trailer is taken as unchanged.
        if sameHeader, incompleteBytes == 0, size == fileOffset(tail.end),
            (try? file.read(Trailer.size, at: fileOffset(tail.offset))) == expectedTrailer
        {
            return
        }
        let (h, hb) = try Vault.readHeader(file, size: size)
        guard h.vaultID == header.vaultID, Header.verifyMAC(hb, key: keys.header) else {
            throw VaultError(
                .replaced, path: path, "\(path) was rekeyed or replaced since it was opened; open it again")
        }
        headerBytes = hb
        if h.formatVersion == 2 {
            // Upgraded by another process (SPEC.md Part 4, V1): the same vault under the same key, now paged.
            let p = try PagedVault.open(
                file: file, path: path, header: h, vaultKey: vaultKey, size: size, mode: mode,
                writerID: writerID, lockTimeout: lockTimeout)
            let e = PagedEngine(p, onDemand: false)
            engine = e
            return try adopt(e, p, items: true)
        }
        header = h
        let body = size - UInt64(h.length)
        let reader = TailReader(
            file: file, headerLength: UInt64(h.length), bodySize: body, vaultID: h.vaultID, keys: keys)
        (log.tail, state) = try reader.load()
        incompleteBytes = body - log.tail.end
    }

    static func open(
        file: File, path: String, secret: UnlockSecret, mode: OpenMode, itemsOnDemand: Bool = false,
        writerID: UInt64? = nil
    ) throws -> Vault {
        let size = try file.size()
        let (header, headerBytes) = try readHeader(file, size: size)
        let (slot, vk) = try unlock(header, headerBytes, path: path, secret: secret)
        let keys = Subkeys(vaultKey: vk)
        let body = size - UInt64(header.length)
        if header.formatVersion == 2 {
            let p = try PagedVault.open(
                file: file, path: path, header: header, vaultKey: vk, size: size, mode: mode, writerID: writerID,
                lockTimeout: 10)
            let e = PagedEngine(p, onDemand: itemsOnDemand)
            let vault = Vault(
                path: path, header: header, headerBytes: headerBytes, file: file, vaultKey: vk, state: [:],
                engine: e, incompleteBytes: 0, mode: mode)
            vault.writerID = writerID
            try vault.adopt(e, p, items: !itemsOnDemand)
            vault.unlockedSlot = slot
            return vault
        }
        let reader = TailReader(
            file: file, headerLength: UInt64(header.length), bodySize: body,
            vaultID: header.vaultID, keys: keys)
        let (tail, state) = try reader.load()
        let vault = Vault(
            path: path, header: header, headerBytes: headerBytes, file: file, vaultKey: vk, state: state,
            engine: LogEngine(tail: tail), incompleteBytes: body - tail.end, mode: mode)
        vault.unlockedSlot = slot
        vault.writerID = writerID
        return vault
    }

    /// The slot of `header` that `secret` opens and the vault key it wraps, once the header MAC verifies under it.
    static func unlock(_ header: Header, _ headerBytes: [UInt8], path: String, secret: UnlockSecret) throws -> (
        slot: Int, vaultKey: SecureBytes
    ) {
        // A key of the wrong length opens no slot: that is the caller's mistake, not a wrong key.
        if case .keyFile(let key) = secret, key.count != 32 {
            throw VaultError(
                .invalidArgument, path: path, "a key file holds exactly 32 bytes; the key given holds \(key.count)")
        }
        // A plain loop: each slot is tried once (a lazy compactMap(...).first would run Argon2id twice).
        var opened: (Int, SecureBytes)?
        for (i, s) in header.slots.enumerated() {
            if let vk = s.unwrap(with: secret, vaultID: header.vaultID) {
                opened = (i, vk)
                break
            }
        }
        guard let (slot, vk) = opened else {
            throw VaultError(.wrongKey, path: path, "no key slot of \(path) opens with the \(secret.kindName) given")
        }
        guard Header.verifyMAC(headerBytes, key: Subkeys(vaultKey: vk).header) else {
            throw VaultError(.tamperedHeader, path: path, "\(path): the header MAC does not verify")
        }
        return (slot, vk)
    }

    static func readHeader(_ file: File, size: UInt64) throws -> (Header, [UInt8]) {
        do {
            let prefix = try file.read(Int(min(size, 4096)), at: 0)
            return try Header.parse(prefix: prefix, fileSize: size, versions: 1...2) { try file.read($0, at: 0) }
        } catch let e as VaultError {
            throw e.about(file.path)
        }
    }

    /// Reads only the plaintext header (no key needed): what `info` and `verify` can say without a key.
    /// Reads headers of every format version this kcar knows (versions 1 and 2, whose
    /// header is the same, SPEC.md Part 4, V1).
    public static func inspect(path: String) throws -> (header: Header, fileSize: UInt64) {
        let file = try File.openRead(path)
        let size = try file.size()
        let prefix = try file.read(Int(min(size, 4096)), at: 0)
        return (try Header.parse(prefix: prefix, fileSize: size, versions: 1...2) { try file.read($0, at: 0) }.0, size)
    }

    /// Saturating: a version 2 record offset may be up to 2^64 (the read then fails: no file is that long).
    func fileOffset(_ body: UInt64) -> UInt64 { UInt64(header.length).saturatingAdding(body) }
}

extension UnlockSecret {
    var kindName: String {
        switch self {
        case .passphrase: return "passphrase"
        case .keyFile: return "key file"
        }
    }
}
