/// ``Vault``'s work on a version 2 file, for its ``PagedEngine``.
extension Vault {
    /// The version 2 engine of this vault, nil for a version 1 file (for commands that only version 2 has:
    /// merge, history).
    package var version2: PagedVault? { engine.version2 }

    /// The live items of `p`, by id (the whole items tree, the deltas applied).
    static func items(of p: PagedVault) throws -> [ItemID: Item] {
        var out: [ItemID: Item] = [:]
        out.reserveCapacity(p.count)
        try p.forEachItem { item in
            out[item.id] = item
            return true
        }
        return out
    }

    /// Takes on what `p` now holds: its file, header and keys (a rewrite replaces them) and, when `items`
    /// (or when another writer committed since they were read), its items.
    func adopt(_ e: PagedEngine, _ p: PagedVault, items reload: Bool) throws {
        e.replace(p)
        file = p.file
        header = p.header
        keys = p.keys
        vaultKey = p.vaultKey
        incompleteBytes = p.incompleteBytes
        let seen = (p.generation, p.tail.offset)
        if e.onDemand {
            // Nothing kept to reload; a new `state` still tells callers that the items changed.
            if e.seen.generation != seen.0 || e.seen.offset != seen.1 { state = [:] }
            e.seen = seen
            return
        }
        if reload || e.seen.generation != seen.0 || e.seen.offset != seen.1 {
            state = try Vault.items(of: p)
            e.seen = seen
        }
    }

    /// The version 2 vault at `path` again, when a rewrite (here or in another process) renamed a new file
    /// over the one held: same vault id, and the header must verify under this instance's vault key (a
    /// rekeyed file does not: open it again with a secret). Reads it under a shared lock, as ``refresh()`` does.
    func reopen(_ e: PagedEngine) throws {
        let file = try Vault.lockedFile(path, mode: mode, exclusive: false, timeout: lockTimeout)
        defer { file.unlock() }
        let size = try file.size()
        let (h, hb) = try Vault.readHeader(file, size: size)
        guard h.formatVersion == 2, h.vaultID == header.vaultID, Header.verifyMAC(hb, key: keys.header) else {
            throw VaultError(
                .replaced, path: path, "\(path) was rekeyed or replaced since it was opened; open it again")
        }
        headerBytes = hb
        let q = try PagedVault.open(
            file: file, path: path, header: h, vaultKey: vaultKey, size: size, mode: mode,
            writerID: e.paged.writerID, lockTimeout: lockTimeout)
        try adopt(e, q, items: true)
        reopened += 1
    }

    /// Whether this vault was opened with its items on demand and has not read them all yet.
    package var itemsOnDemand: Bool { engine.itemsOnDemand }

    /// Reads every item (a vault opened with its items on demand): ``items``, ``unorderedItems`` and
    /// ``item(_:)`` then answer from memory, as for a vault opened without.
    package func loadItems() throws { try engine.loadItems(self) }

    /// ``loadItems()`` for the accessors that cannot throw (``items``, ``unorderedItems``, ``item(_:)``), which a
    /// caller of a vault opened with its items on demand reaches only after ``loadItems()``: it reports a damaged
    /// page there. Reached before it, the items are read here, and a page that does not read stops the process
    /// with the error rather than answer with no items (an empty answer would read as "no such item", and a
    /// caller that then adds one writes over what it could not see).
    func loadOnDemand() {
        guard engine.itemsOnDemand else { return }
        assert(false, "items of a vault opened with its items on demand, before loadItems()")
        do {
            try loadItems()
        } catch {
            preconditionFailure(
                "\(path): the items of a vault opened with its items on demand, before loadItems(): \(error)")
        }
    }

    /// The live item with `item`'s id as the vault holds it now: looked up at its key (one path of pages),
    /// or, if its key attributes changed since `item` was taken, found by a scan.
    package func liveItem(like item: Item) throws -> Item? {
        try liveItem(id: item.id, class: item.itemClass, attributes: item.attributes)
    }

    /// Every live item, one at a time, until `body` returns false, without holding them all: a version 2
    /// vault's in its items tree's key order (class, then the class's key attributes, then id; for `pack`'s
    /// vaults service, then account, bytewise), one page at a time, whether or not its items were read at
    /// open; a version 1 vault's (its whole index is read at open, by design) in ``items`` order, or in no
    /// order when `inOrder` is false (a pass that only sums or finds a largest value needs none, and sorting a
    /// version 1 vault's items is most of the cost of a pass over them).
    package func forEachItem(inOrder: Bool = true, _ body: (Item) throws -> Bool) throws {
        try engine.forEachItem(self, inOrder: inOrder, body)
    }

    /// ``forEachItem(inOrder:_:)``'s items in runs, each given to `transform` on any core, its result handed to
    /// `body` here, in order: a version 2 vault's a leaf of its items tree at a time
    /// (``PagedVault/mapItemLeaves(bytesMax:_:_:)``). False, having handed nothing, for a vault not walked so (version 1,
    /// a small tree): the caller walks it with ``forEachItem(inOrder:_:)``.
    package func mapItemRuns<T>(_ transform: @escaping @Sendable ([Item]) throws -> T, _ body: (T) throws -> Void)
        throws -> Bool
    {
        guard let p = version2 else { return false }
        return try p.mapItemLeaves(transform, body)
    }

    /// The largest value size among the live items (0 for none): a version 2 vault's read from its items tree
    /// without building the items (``PagedVault/largestItemSize()``), a version 1 vault's from its index.
    package func largestItemSize() throws -> UInt64 {
        if let p = version2 { return try p.largestItemSize() }
        var largest: UInt64 = 0
        try forEachItem(inOrder: false) { item in
            largest = max(largest, item.size)
            return true
        }
        return largest
    }

    /// The live item with this id: from memory, or for a vault opened with its items on demand, found by a
    /// scan.
    package func findItem(_ id: ItemID) throws -> Item? { try engine.findItem(self, id) }

    /// ``liveItem(like:)`` for an item known by its id, class and attributes (as a search returned it).
    package func liveItem(id: ItemID, class itemClass: ItemClass, attributes: Attributes) throws -> Item? {
        try engine.liveItem(self, id: id, class: itemClass, attributes: attributes)
    }

    /// ``refresh()`` of a version 2 file.
    func refresh(_ e: PagedEngine) throws {
        let p = e.paged
        DebugSeam.pause("refresh-before-lock")
        try p.file.lock(exclusive: false, timeout: lockTimeout)
        defer { p.file.unlock() }
        // Checked under the lock, not before it: a rewrite renames its new file over the path while it holds the
        // old file's lock, so a file still at the path now stays there until this lock is given up. Checked
        // before, a rewrite that ended between the check and the lock left this instance reading the old file
        // as current (a keychain then took the new file's generation record for a rollback).
        guard try p.file.isStill(path) else { return try reopen(e) }
        try p.catchUp()
        try adopt(e, p, items: false)
    }

    /// ``commit(options:random:_:)`` of a version 2 file: one commit of the changes `body` makes, through a
    /// ``Transaction`` that keeps this instance's items up to date.
    func commit(
        _ e: PagedEngine, options: WriteOptions, random: RandomSource, _ body: (Transaction) throws -> Void
    ) throws {
        var after: [ItemID: Item]?
        var paged: PagedTransaction?
        let onDemand = e.onDemand
        var replacedBeforeLock = 0
        var p: PagedVault
        var generation: UInt64
        while true {
            if try !e.paged.file.isStill(path) { try reopen(e) }
            DebugSeam.pause("commit-before-lock")
            p = e.paged
            generation = p.generation
            var locked = false
            do {
                try p.commit(
                    level: options.level, random: random, solidMembers: options.solidMembers,
                    autoCompact: options.autoCompact
                ) { [p] ptx in
                    locked = true
                    // Under the lock, caught up with other writers: the items this instance holds may be older.
                    try adopt(e, p, items: false)
                    ptx.keepsValueLocations = !onDemand
                    paged = ptx
                    let tx = Transaction(
                        onDemand ? OnDemandPagedChanges(ptx) : PagedChanges(ptx, state: state),
                        stamp: options.stampTime)
                    try body(tx)
                    after = tx.heldItems
                }
                break
            } catch let error as VaultError
                where error.code == .io && !locked && replacedBeforeLock < 8 && !((try? p.file.isStill(path)) ?? true)
            {
                // A rewrite (another writer's compaction) renamed its file over the path between the check above
                // and the lock: nothing was written; the commit is made again on the new file.
                replacedBeforeLock += 1
            }
        }
        lastCompactionError = p.lastCompactionError
        if onDemand { return try adopt(e, p, items: false) }
        // An automatic compaction after the commit moved every record: read the items again.
        if p.generation > generation &+ 1 { return try adopt(e, p, items: true) }
        guard var items = after, let ptx = paged else { return }
        for (id, v) in ptx.valueLocations where items[id] != nil {
            items[id]!.size = v.size
            items[id]!.location = v.location
        }
        state = items
        e.seen = (p.generation, p.tail.offset)
        incompleteBytes = 0
    }

    /// Bytes of the body that nothing the current commit reaches needs: the body less the live items'
    /// records, the index (every page of the three trees, the root and the chain's deltas), the history's
    /// records and the trailers of the chain. Reads every page of the trees.
    func deadBytes(_ e: PagedEngine) throws -> UInt64 {
        let p = e.paged
        var records: [ID128: UInt64] = [:]
        for item in state.values { records[item.location.recordID] = item.location.length }
        try p.scan(.history) { e in
            if let r = e.record { records[r.id] = r.length }
            return true
        }
        // Saturating: a record's length is any varint whose extent does not overflow (a key holder can name
        // records far larger than the file), so their sum may not fit.
        let trailers = UInt64(TrailerV2.size) * (UInt64(p.tail.trailer.chain) + 1)
        var needed = try p.indexBytes().saturatingAdding(trailers)
        for length in records.values { needed = needed.saturatingAdding(length) }
        let end = p.tail.offset + UInt64(TrailerV2.size)
        return end - min(end, needed)
    }
}

extension PagedVault {
    /// Cuts off an incomplete commit (what `kcar recover` does). Needs `.write`.
    func cutIncomplete() throws {
        try exclusively {
            let end = UInt64(header.length) + tail.offset + UInt64(TrailerV2.size)
            guard try file.size() > end else { return }
            try file.truncate(to: end)
            try file.sync()
        }
    }
}

extension Vault {
    /// Creates a new version 2 vault at `path` (SPEC.md Part 4) keyed by `schema`, holding what `body` adds in
    /// one fold commit (generation 1, as a version 1 vault's first checkpoint: a cut file has no complete
    /// commit), written under a temporary name that is renamed into place only when complete (as
    /// ``create(path:group:slots:format:options:overwrite:random:_:)``).
    package static func create(
        path: String, group: String, slots: [SlotSecret], schema: IndexSchema, retention: Retention = .init(),
        options: WriteOptions = .init(), overwrite: Bool = false, random: RandomSource = SystemRandom.shared,
        now: UInt64 = HybridClock.nowMilliseconds(), writerID: UInt64? = nil,
        _ body: (Transaction) throws -> Void
    ) throws {
        try options.check()
        let tmp = try startCreating(path: path, group: group, slots: slots, overwrite: overwrite)
        do {
            let (vaultID, keys, headerBytes, header, vaultKey) = try writeNewHeader(
                tmp, group: group, slots: slots, formatVersion: 2, random: random)
            let store = FilePageStore(
                source: RecordSource(
                    file: tmp.file, headerLength: UInt64(headerBytes.count), vaultID: vaultID, keys: keys), limit: 0)
            store.random = random
            store.level = options.level
            let root = IndexRoot(schema: schema, retention: retention)
            let none = TrailerV2(
                generation: 0, commitStart: 0, previous: TrailerV2.none, rootOffset: 0, rootLength: 0,
                rootID: ID128(hi: 0, lo: 0),
                deltaOffset: TrailerV2.none, deltaLength: 0, itemCount: 0, wroteRoot: true, chain: 0)
            // The temporary file stays locked by `tmp` (a lock released here would let another writer take it
            // for a killed writer's): the commit is appended without taking the lock again.
            let p = PagedVault(
                path: tmp.tempPath, header: header, file: tmp.file, vaultKey: vaultKey, store: store, root: root,
                tail: (none, 0), writerID: writerID ?? UInt64(bigEndianBytes: random.bytes(8)), mode: .write)
            p.uncommitted = true
            try p.commitLocked(level: options.level, random: random, solidMembers: options.solidMembers, now: now) {
                ptx in
                try body(Transaction(PagedChanges(ptx, state: [:]), stamp: options.stampTime))
            }
            // Nothing added: the vault is one fold of empty trees.
            if p.uncommitted {
                _ = try PagedVault.writeFold(
                    root: root, store: store, commitStart: 0, generation: 1, previous: nil, itemCount: 0)
            }
            try tmp.commit(overwrite: overwrite)
        } catch {
            tmp.abandon()
            throw error
        }
    }
}

/// The format of a new vault (``Vault/create(path:group:slots:format:options:overwrite:random:_:)``).
public enum NewVaultFormat: Sendable {
    /// Version 1 (SPEC.md Part 1): a chain of index segments, no history, no versions to merge by; only for
    /// readers that know nothing newer (kcar before format 2). Its items are found by reading them all.
    case version1
    /// The current format, version 2 (SPEC.md Part 4): items kept in B+trees keyed by `schema` (so that a
    /// lookup by key or by indexed attribute reads a few pages, ``Vault/itemIndex``), past versions kept
    /// by `retention`, and each change stamped with a version of writer `writerID` (nil: one drawn at
    /// random), by which copies of the vault merge.
    case current(schema: IndexSchema = .primaryKeys, retention: Retention = .init(), writerID: UInt64? = nil)
}

extension Vault {
    /// Creates a new vault at `path` holding what `body` adds, in its first commit. The file is written
    /// under a temporary name and renamed into place only when complete: an error, here or thrown by `body`,
    /// leaves nothing behind.
    ///
    /// - Parameters:
    ///   - path: Where the vault is written.
    ///   - group: The access group the vault holds (its header names it).
    ///   - slots: The secrets that may open it, 1 to ``Limits/slotsMax``: a key, a passphrase, ...
    ///   - format: The current format (version 2, SPEC.md Part 4) unless told: `.version1` writes the format
    ///     older readers know.
    ///   - options: The compression level and how small values share records.
    ///   - overwrite: Whether to replace a file at `path`; if false and one exists, throws
    ///     ``VaultError/Code/exists``.
    ///   - random: Where the vault id, keys and nonces come from (the system's generator unless a test
    ///     asks for a deterministic one).
    ///   - body: Adds the vault's first items through a ``Transaction``.
    public static func create(
        path: String, group: String, slots: [SlotSecret], format: NewVaultFormat = .current(),
        options: WriteOptions = .init(), overwrite: Bool = false, random: RandomSource = SystemRandom.shared,
        _ body: (Transaction) throws -> Void
    ) throws {
        try naming(path) {
            switch format {
            case .version1:
                try createVersion1(
                    path: path, group: group, slots: slots, options: options, overwrite: overwrite, random: random,
                    body)
            case .current(let schema, let retention, let writerID):
                try create(
                    path: path, group: group, slots: slots, schema: schema, retention: retention, options: options,
                    overwrite: overwrite, random: random, writerID: writerID, body)
            }
        }
    }
}
