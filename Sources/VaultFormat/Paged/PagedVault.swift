import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A vault of format version 2 (SPEC.md Part 4): its index is three copy-on-write B+trees of sealed
/// pages plus a short chain of delta segments, so opening it reads a trailer and a root, and one lookup
/// reads a path of pages, whatever the number of items. Package-only: ``Vault`` is the public API of both
/// format versions and hands a version 2 file to this engine (Vault+Version2.swift).
package final class PagedVault {
    package let path: String
    package internal(set) var header: Header { didSet { indexChanges = PagedVault.freshStamp() } }
    var file: File { didSet { indexChanges = PagedVault.freshStamp() } }
    var keys: Subkeys { didSet { indexChanges = PagedVault.freshStamp() } }
    var vaultKey: SecureBytes
    var store: FilePageStore { didSet { indexChanges = PagedVault.freshStamp() } }
    var root: IndexRoot { didSet { indexChanges = PagedVault.freshStamp() } }
    /// The changes of the delta segments since the last fold, by tree and key (later ones replace earlier).
    var overlay: [TreeID: [[UInt8]: OverlayChange]] = [:] {
        didSet {
            sortedOverlay = [:]
            overlayClock = nil
            indexChanges = PagedVault.freshStamp()
        }
    }
    /// Changes with every change of what a lookup reads (the file, its header and keys, the page store, the
    /// root, the overlay and the last commit): while it stands still, an item a lookup returned is still live
    /// as it was returned (``liveItem(id:class:attributes:)``). Each change takes a value no instance has had
    /// (``freshStamp()``), so that a value kept across a reopen (a new instance) cannot match by chance
    /// (``Vault/indexStamp``).
    private(set) var indexChanges: UInt64 = PagedVault.freshStamp()
    private static let stamps = Atomic<UInt64>(0)
    private static func freshStamp() -> UInt64 { stamps.wrappingAdd(1, ordering: .relaxed).newValue }
    /// The items the last lookup by key returned, with ``indexChanges`` then: reading one of them right after
    /// (a get) needs no second lookup to prove its handle current. At most ``keptLookupMax`` items.
    var keptLookup: (changes: UInt64, items: [Item])?
    static let keptLookupMax = 4
    private var overlayClock: UInt64?
    /// Keys whose remove in the chain follows a put in the chain: the tree may never have held them, and a
    /// fold drops such a remove; any other remove of a key the tree lacks is a damaged index (V6).
    var cancelled: [TreeID: Set<[UInt8]>] = [:]
    /// Records named by puts of the chain that a later change of the chain replaced, with the bytes each
    /// counts as garbage if the fold that ends the chain leaves it unnamed (V8.1).
    var supersededRecords: [ID128: UInt64] = [:]

    /// Makes the overlay the changes of a chain, oldest first.
    func replay(_ chain: [(tree: TreeID, change: TreeWriter.Change)]) {
        overlay = [:]
        cancelled = [:]
        supersededRecords = [:]
        for c in chain { addToOverlay(c.tree, c.change) }
    }

    /// Records `change` in the overlay (as the next of the chain).
    func addToOverlay(_ tree: TreeID, _ change: TreeWriter.Change) {
        if let share = pendingRecordShare(tree, change.key) { supersededRecords[share.id] = share.bytes }
        switch change {
        case .remove(let k):
            if case .put = overlay[tree]?[k] { cancelled[tree, default: []].insert(k) }
        case .put(let e):
            cancelled[tree]?.remove(e.key)
        }
        overlay[tree, default: [:]][change.key] = OverlayChange(change)
    }

    /// The greatest hlc in the vault (V5): the root's clock, or a later one that a pending delta segment's
    /// items-tree entries carry (a delta commit writes no root). A writer's versions start above it.
    var clock: UInt64 {
        if let c = overlayClock { return max(root.clock, c) }
        var c: UInt64 = 0
        for case .put(let e) in (overlay[.items] ?? [:]).values {
            var r = ByteReader(e.rest, failure: .damagedIndex, what: "item entry")
            if (try? r.readU8()) != nil, let hlc = try? r.readVarint() { c = max(c, hlc) }
        }
        overlayClock = c
        return max(root.clock, c)
    }
    /// `overlay` in key order, per tree, made on first need after each change: scans merge it in order.
    private var sortedOverlay: [TreeID: [(key: [UInt8], value: TreeWriter.Change)]] = [:]

    func sortedChanges(_ tree: TreeID) -> [(key: [UInt8], value: TreeWriter.Change)] {
        if let s = sortedOverlay[tree] { return s }
        // Sorted in place (a chain of 750,000 changes is 67 MiB of pairs: never held twice).
        var s = (overlay[tree] ?? [:]).map { (key: $0.key, value: $0.value.change) }
        PagedRebuild.sortByKey(&s, key: \.key)
        sortedOverlay[tree] = s
        return s
    }
    /// Plaintext bytes of those segments.
    var overlayBytes = 0
    var tail: (trailer: TrailerV2, offset: UInt64) { didSet { indexChanges = PagedVault.freshStamp() } }
    package let writerID: UInt64
    let mode: OpenMode
    /// A file being created, with its header and no commit yet (``Vault/create(path:group:slots:schema:retention:options:overwrite:random:now:_:)``):
    /// its first commit is a fold at the start of the body, generation 1, with no previous commit.
    var uncommitted = false
    var lockTimeout: Double = 10
    /// Why the last automatic compaction failed, if it did (the commit before it stood).
    package internal(set) var lastCompactionError: VaultError?

    init(
        path: String, header: Header, file: File, vaultKey: SecureBytes, store: FilePageStore, root: IndexRoot,
        tail: (TrailerV2, UInt64), writerID: UInt64, mode: OpenMode
    ) {
        self.path = path
        self.vaultKey = vaultKey
        self.header = header
        self.file = file
        keys = Subkeys(vaultKey: vaultKey)
        self.store = store
        self.root = root
        self.tail = tail
        self.writerID = writerID
        self.mode = mode
    }

    var source: RecordSource {
        RecordSource(file: file, headerLength: UInt64(header.length), vaultID: header.vaultID, keys: keys)
    }

    /// Live items.
    package var count: Int { Int(tail.trailer.itemCount) }
    /// Bytes after the last complete commit: an interrupted write (or a damaged last trailer), which the
    /// next writer cuts off.
    package var incompleteBytes: UInt64 {
        let size = (try? file.size()) ?? 0
        let end = UInt64(header.length) + tail.offset + UInt64(TrailerV2.size)
        return size > end ? size - end : 0
    }
    package var generation: UInt64 { tail.trailer.generation }
    package var schema: IndexSchema { root.schema }
    /// Pages opened from the file so far (not from the cache).
    package var pagesOpened: Int { store.opened }

    // MARK: Creating and opening

    /// Creates an empty version 2 vault (one fold commit of empty trees), written under a temporary name and
    /// linked into place.
    package static func create(
        path: String, group: String, slots: [SlotSecret], schema: IndexSchema, retention: Retention = .init(),
        overwrite: Bool = false, random: RandomSource = SystemRandom.shared
    ) throws {
        let tmp = try Vault.startCreating(path: path, group: group, slots: slots, overwrite: overwrite)
        do {
            let (vaultID, keys, headerBytes, _, _) = try Vault.writeNewHeader(
                tmp, group: group, slots: slots, formatVersion: 2, random: random)
            let store = FilePageStore(
                source: RecordSource(
                    file: tmp.file, headerLength: UInt64(headerBytes.count), vaultID: vaultID, keys: keys), limit: 0)
            store.random = random
            let root = IndexRoot(schema: schema, retention: retention)
            _ = try writeFold(root: root, store: store, commitStart: 0, generation: 1, previous: nil, itemCount: 0)
            try tmp.commit(overwrite: overwrite)
        } catch {
            tmp.abandon()
            throw error
        }
    }

    package static func open(
        path: String, secret: UnlockSecret, mode: OpenMode = .read, writerID: UInt64? = nil,
        lockTimeout: Double = 10
    ) throws -> PagedVault {
        let file = try Vault.lockedFile(path, mode: mode, exclusive: false, timeout: lockTimeout)
        defer { file.unlock() }
        let size = try file.size()
        let prefix = try file.read(Int(min(size, 4096)), at: 0)
        let (header, headerBytes) = try Header.parse(prefix: prefix, fileSize: size, versions: 2...2) {
            try file.read($0, at: 0)
        }
        var vk: SecureBytes?
        for s in header.slots {
            if let k = s.unwrap(with: secret, vaultID: header.vaultID) {
                vk = k
                break
            }
        }
        guard let vk else {
            throw VaultError(.wrongKey, path: path, "no key slot of \(path) opens with the \(secret.kindName) given")
        }
        guard Header.verifyMAC(headerBytes, key: Subkeys(vaultKey: vk).header) else {
            throw VaultError(.tamperedHeader, path: path, "\(path): the header MAC does not verify")
        }
        return try open(
            file: file, path: path, header: header, vaultKey: vk, size: size, mode: mode, writerID: writerID,
            lockTimeout: lockTimeout)
    }

    /// Opens the version 2 vault in `file` (locked by the caller), whose header has been parsed and its MAC
    /// checked under `vaultKey`.
    static func open(
        file: File, path: String, header: Header, vaultKey vk: SecureBytes, size: UInt64, mode: OpenMode,
        writerID: UInt64?, lockTimeout: Double
    ) throws -> PagedVault {
        let source = RecordSource(
            file: file, headerLength: UInt64(header.length), vaultID: header.vaultID, keys: Subkeys(vaultKey: vk))
        let (root, chain, bytes, tail) = try load(source, bodySize: size - UInt64(header.length))
        let store = FilePageStore(source: source, limit: tail.1)
        let v = PagedVault(
            path: path, header: header, file: file, vaultKey: vk, store: store, root: root, tail: tail,
            writerID: writerID ?? UInt64(bigEndianBytes: SystemRandom.shared.bytes(8)), mode: mode)
        v.replay(chain)
        v.overlayBytes = bytes
        v.lockTimeout = lockTimeout
        return v
    }

    /// Finds the last commit, reads its root and applies its delta chain (V6, V7).
    package static func load(_ source: RecordSource, bodySize: UInt64) throws
        -> (IndexRoot, [(tree: TreeID, change: TreeWriter.Change)], Int, (TrailerV2, UInt64))
    {
        let reader = TailReader(
            file: source.file, headerLength: source.headerLength, bodySize: bodySize, vaultID: source.vaultID,
            keys: source.keys)
        let (last, lastOffset) = try reader.lastCommit(TrailerV2.self)
        // Back to the fold, then the deltas oldest first.
        var chain = [(last, lastOffset)]
        while !chain[chain.count - 1].0.wroteRoot {
            let t = chain[chain.count - 1].0
            let b = try source.file.read(TrailerV2.size, at: source.headerLength + t.previous)
            guard let p = TrailerV2.decode(b, at: t.previous, vaultID: source.vaultID, key: source.keys.trailer),
                p.generation == t.generation - 1, p.chain + 1 == t.chain,
                p.rootOffset == t.rootOffset, p.rootLength == t.rootLength, p.rootID == t.rootID
            else {
                throw VaultError(
                    .damagedIndex, "the trailer before generation \(t.generation) does not verify or names another root"
                )
            }
            chain.append((p, t.previous))
        }
        let fail = { (m: String) in VaultError(.damagedIndex, "index root of generation \(last.generation): \(m)") }
        let root = try IndexRoot.decode(
            try PagedSealing.open(
                source, key: .page(source.keys, vaultID: source.vaultID, pageID: last.rootID),
                offset: last.rootOffset, length: last.rootLength, max: PagedLimits.rootMax, fail: fail))
        var changes: [(tree: TreeID, change: TreeWriter.Change)] = []
        var bytes = 0
        for (t, _) in chain.reversed() where !t.wroteRoot {
            let dfail = { (m: String) in VaultError(.damagedIndex, "delta segment of generation \(t.generation): \(m)")
            }
            let plain = try PagedSealing.open(
                source, key: .delta(source.keys, vaultID: source.vaultID, generation: t.generation),
                offset: t.deltaOffset, length: t.deltaLength,
                max: min(PagedLimits.deltaMax, PagedLimits.deltaTotalMax - bytes), fail: dfail)
            bytes += plain.count
            let decoded = try DeltaCodec.decode(plain)
            try PageCodec.checkRecordsEnd(
                decoded.lazy.compactMap(\.change.entry), before: t.deltaOffset,
                "delta segment of generation \(t.generation)")
            changes += decoded
        }
        return (root, changes, bytes, (last, lastOffset))
    }
}
