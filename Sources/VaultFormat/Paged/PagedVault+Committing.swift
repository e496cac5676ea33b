#if canImport(Glibc)
    import Glibc
#endif

/// Writing a version 2 vault (SPEC.md Part 4, V6): folds and trailers, the commit protocol under the lock,
/// the delta chain, and catching up with another writer's commits.
extension PagedVault {
    /// Writes `root` and a fold trailer after the pages at `store.position`; syncs the data before the trailer.
    static func writeFold(
        root: IndexRoot, store: FilePageStore, commitStart: UInt64, generation: UInt64,
        previous: UInt64?, itemCount: UInt64
    ) throws -> (TrailerV2, UInt64) {
        let rootID = ID128(store.random.bytes(16))
        let plain = root.encode()
        guard plain.count <= PagedLimits.rootMax else {
            throw VaultError(.invalidArgument, "an index root of \(plain.count) bytes")
        }
        let (offset, length) = try store.append(
            plain, key: .page(store.source.keys, vaultID: store.source.vaultID, pageID: rootID))
        let t = TrailerV2(
            generation: generation, commitStart: commitStart, previous: previous ?? TrailerV2.none, rootOffset: offset,
            rootLength: length, rootID: rootID, deltaOffset: TrailerV2.none, deltaLength: 0, itemCount: itemCount,
            wroteRoot: true, chain: 0)
        return (t, try writeTrailer(t, store: store))
    }

    static func writeTrailer(_ t: TrailerV2, store: FilePageStore) throws -> UInt64 {
        try store.source.file.sync()
        let at = store.position
        _ = try store.source.file.write(
            t.encode(vaultID: store.source.vaultID, key: store.source.keys.trailer), at: store.source.headerLength + at)
        store.position += UInt64(TrailerV2.size)
        store.limit = store.position
        try store.source.file.sync()
        return at
    }

    /// Appends one commit with the changes `body` makes: a delta commit, or a fold when the chain would grow
    /// past its policy (V6). On error the file is cut back to the last complete commit.
    /// `now` gives the milliseconds the versions' clock starts from (V5); fixtures pass a fixed clock.
    /// With `autoCompact`, a commit whose fold leaves the root's garbage count past the threshold
    /// (``shouldCompact``, V8.1) is followed by a compaction, outside the lock; a compaction that fails leaves
    /// the vault as it was and the commit standing, and is reported in ``lastCompactionError`` and to the
    /// handler of ``Vault/reportCompactionFailures(to:)`` (as version 1 does).
    package func commit(
        level: Int32 = 6, random: RandomSource = SystemRandom.shared, solidMembers: Int = Limits.membersMax,
        autoCompact: Bool = true, now: () -> UInt64 = HybridClock.nowMilliseconds,
        _ body: (PagedTransaction) throws -> Void
    ) throws {
        let started = now()
        try committing(
            autoCompact: autoCompact, random: random, level: level, solidMembers: solidMembers, now: started << 16
        ) {
            try commitLocked(level: level, random: random, solidMembers: solidMembers, now: started, body)
        }
    }

    /// Runs `body`, which appends at most one commit, under the exclusive lock (``exclusively(_:)``); then, if
    /// it appended one and `autoCompact` is set and the root's garbage count has passed the threshold
    /// (``shouldCompact``, V8.1), compacts outside the lock (judging retention at `now`, an hlc). The commit
    /// stands whatever the compaction does: a failure goes to ``lastCompactionError`` and the handler of
    /// ``Vault/reportCompactionFailures(to:)``, never to the caller. A commit that changed nothing does not
    /// compact (as version 1).
    func committing<T>(
        autoCompact: Bool, random: RandomSource, level: Int32, solidMembers: Int, now: UInt64, _ body: () throws -> T
    ) throws -> T {
        let (result, due) = try exclusively { () throws -> (T, Bool) in
            let generation = self.generation
            let result = try body()
            return (result, autoCompact && self.generation != generation && shouldCompact)
        }
        if due {
            lastCompactionError = Vault.compactAfterCommit(path: path) {
                try compact(random: random, level: level, solidMembers: solidMembers, now: now)
            }
        }
        return result
    }

    /// Runs `body` under the exclusive lock, caught up with the last commit, if the file is still at the path:
    /// a rewrite (or anyone) may have renamed another file over it, and a commit to the file held would be
    /// lost (v1's `ensureStillAtPath`, SPEC.md §10).
    func exclusively<T>(_ body: () throws -> T) throws -> T {
        guard mode == .write else { throw VaultError(.invalidArgument, "the vault was opened read-only") }
        try file.lock(exclusive: true, timeout: lockTimeout)
        defer { file.unlock() }
        guard try file.isStill(path) else {
            throw VaultError(
                .io, path: path, "\(path) was replaced since it was opened; nothing was changed, open it again")
        }
        try catchUp()
        return try body()
    }

    func commitLocked(
        level: Int32, random: RandomSource, solidMembers: Int, now: UInt64, _ body: (PagedTransaction) throws -> Void
    ) throws {
        var bulk: Bulk?
        try appendCommit(level: level, random: random, solidMembers: solidMembers, bulk: { bulk }) { writer in
            let tx = try PagedTransaction(vault: self, writer: writer, random: random, now: now)
            try body(tx)
            let changes = (try tx.finish(), tx.clock, tx.liveChange)
            bulk = Bulk(runs: tx.spilled, refusesEqualKeys: tx.refusesEqualKeys)
            return changes
        }
    }

    /// What a bulk commit adds to its tree changes: the runs it spilled, and whether two live items of one
    /// class and key values are refused (``PagedTransaction/refusesEqualKeys``).
    struct Bulk {
        var runs: SpillRuns?
        var refusesEqualKeys: Bool
    }

    /// Changes applied to a tree at a time when runs are merged (or, if sooner, about ``mergeChunkBytes`` of
    /// them): the merge holds a chunk, not the commit.
    static let mergeChunk = 65_536
    static let mergeChunkBytes = 32 << 20

    /// Throws ``VaultError/Code/exists`` when `e`, a put to the items tree, and the live entry before it in key
    /// order (`previous`) name one class and key values (their keys differ only in the item id that ends them).
    func refuseEqualKeys(_ c: TreeWriter.Change, after previous: inout [UInt8]?) throws {
        guard case .put(let e) = c, e.record != nil, e.key.count > 16 else { return }
        if let p = previous, p.count == e.key.count,
            p.prefix(p.count - 16).elementsEqual(e.key.prefix(e.key.count - 16))
        {
            var shown = "(the same class and key values)"
            if let parsed = try? ItemKey.parse(e.key, schemaFor: { self.root.schema.classes[$0] }) {
                // A class without key attributes never conflicts (its keys are its ids).
                let names = root.schema.classes[parsed.itemClass]?.keyAttributes.map(\.name) ?? []
                guard !names.isEmpty else {
                    previous = e.key
                    return
                }
                shown =
                    ItemKeyValues(itemClass: ItemClass(rawValue: parsed.itemClass), names: names, values: parsed.values)
                    .text
            }
            throw VaultError(
                .exists, item: ItemID(Array(e.key.suffix(16))),
                "two items of this commit have the key \(shown)")
        }
        previous = e.key
    }

    /// The tree changes of one commit, per tree in ascending key order; the clock of its last version; the
    /// change in live items.
    typealias CommitChanges = (perTree: [(tree: TreeID, changes: [TreeWriter.Change])], clock: UInt64, liveChange: Int)

    /// Appends one commit (under the lock): `make` writes its records through the writer it is given and
    /// returns its tree changes, which become a delta segment or a fold.
    func appendCommit(
        level: Int32, random: RandomSource, solidMembers: Int, bulk: () -> Bulk? = { nil },
        _ make: (CommitWriter) throws -> CommitChanges
    ) throws {
        let generation = uncommitted ? 1 : try Vault.nextGeneration(after: tail.trailer.generation, path)
        let end = uncommitted ? 0 : tail.offset + UInt64(TrailerV2.size)
        if try file.size() != UInt64(header.length) + end { try file.truncate(to: UInt64(header.length) + end) }
        let writer = CommitWriter(
            file: file, headerLength: UInt64(header.length), vaultID: header.vaultID, keys: keys,
            random: random, level: level, solidMembers: solidMembers, at: end)
        do {
            var (perTree, clock, liveChange) = try make(writer)
            let bulk = bulk()
            let runs = bulk?.runs
            let changeCount = perTree.reduce(0) { $0 + $1.changes.count } + (runs?.counts.values.reduce(0, +) ?? 0)
            if bulk?.refusesEqualKeys == true, runs == nil, let i = perTree.firstIndex(where: { $0.tree == .items }) {
                var previous: [UInt8]?
                for c in perTree[i].changes { try refuseEqualKeys(c, after: &previous) }
            }
            guard changeCount > 0 else {
                try file.truncate(to: UInt64(header.length) + end)
                return
            }
            store.position = writer.position
            store.limit = writer.position
            store.random = random
            store.level = level
            let chain = Int(tail.trailer.chain) + 1
            // The trailer's count is only checked against the index by verification (V4): a forged or damaged
            // one must not trap here.
            guard count + liveChange >= 0 else {
                throw VaultError(
                    .damagedIndex,
                    "the commit would leave \(count + liveChange) live items (the trailer counts \(count))")
            }
            // ITEMS_MAX, which a trailer must respect to be read (V7): checked here, where the count is known
            // (a transaction on demand holds only the items it touched).
            guard count + liveChange <= Limits.itemsMax else {
                throw VaultError(.invalidArgument, "a vault holds at most \(Limits.itemsMax) items")
            }
            let itemCount = UInt64(count + liveChange)
            // A commit of many changes folds without being encoded as a delta first.
            let changes =
                changeCount > PagedLimits.foldAfterChanges || runs != nil
                ? [] : perTree.flatMap { t in t.changes.map { (tree: t.tree, change: $0) } }
            try PageCodec.checkOneExtentPerRecord(changes.lazy.compactMap(\.change.entry))
            let delta = changes.isEmpty ? [] : DeltaCodec.encode(changes)
            // A delta segment's keys and entries count their tree and operation bytes against KEY_MAX and
            // ENTRY_MAX (V2): a change that one cannot hold folds, and the tree writers check it against a page's.
            let fitsDelta = changes.allSatisfy {
                PageCodec.fits($0.change.entry ?? LeafEntry(key: $0.change.key), inDelta: true)
            }
            if uncommitted || runs != nil || chain >= PagedLimits.deltaChainMax
                || overlayBytes + delta.count > PagedLimits.foldAfterBytes || changeCount > PagedLimits.foldAfterChanges
                || delta.count > PagedLimits.deltaMax || !fitsDelta
            {
                var newRoot = root
                newRoot.clock = clock
                // Garbage (V8.1): the root and chain this fold supersedes, the pages it replaces, and the
                // records of replaced entries that none of its puts names.
                let last = tail.trailer
                // The first commit of a new vault supersedes nothing: its root counts 0 (V8.1).
                if !uncommitted {
                    newRoot.addGarbage(
                        last.rootLength + UInt64(TrailerV2.size) * (UInt64(last.chain) + 1) + (try chainDeltaBytes()))
                }
                var deadRecords = supersededRecords
                var namedRecords = Set<ID128>()
                for t in perTree.indices {
                    let tree = perTree[t].tree
                    let earlier = sortedChanges(tree)
                    // A put of the chain that this commit replaces never reaches the tree: its record counts here.
                    if !earlier.isEmpty {
                        for c in perTree[t].changes {
                            if let share = pendingRecordShare(tree, c.key) { deadRecords[share.id] = share.bytes }
                        }
                    }
                    // The keys only the chain changed: stored items, which a bulk commit's check of equal keys
                    // leaves alone (§K4 keeps two items of one key another program wrote; the keychain checked
                    // this commit's adds against them as it made them).
                    var chainOnly = Set<[UInt8]>()
                    if tree == .items, runs != nil, bulk?.refusesEqualKeys == true, !earlier.isEmpty {
                        chainOnly = Set(earlier.map(\.key)).subtracting(perTree[t].changes.map(\.key))
                    }
                    let pending =
                        earlier.isEmpty
                        ? perTree[t].changes : PagedVault.combine(earlier.map(\.value), perTree[t].changes)
                    perTree[t].changes = []
                    // The counts follow what each change replaces (an items-tree entry is live exactly when it
                    // names a record; wrapping, since a forged root's counts are only compared afterwards); a
                    // remove that cancels a put of the same chain never reached the tree and is dropped.
                    let mayBeMissing = { (k: [UInt8]) -> Bool in
                        if self.cancelled[tree]?.contains(k) == true { return true }
                        if case .put = self.overlay[tree]?[k] { return true }  // this commit removes what the chain put
                        return false
                    }
                    let apply = { (chunk: [TreeWriter.Change], top: PageRef?) throws -> PageRef? in
                        try TreeWriter(store: self.store, tree: tree).apply(
                            chunk, to: top,
                            onMissingRemove: { k in
                                guard mayBeMissing(k) else {
                                    throw VaultError(
                                        .damagedIndex,
                                        "a delta segment removes a key of the \(tree) tree that neither the tree nor the chain holds"
                                    )
                                }
                            }, dropped: { newRoot.addGarbage($0.length) }
                        ) { old, c in
                            if let old, let share = self.recordShare(tree, old) { deadRecords[share.id] = share.bytes }
                            if case .put(let e) = c, let r = e.record { namedRecords.insert(r.id) }
                            switch tree {
                            case .items:
                                if let old {
                                    if old.record != nil { newRoot.liveItems &-= 1 } else { newRoot.tombstones &-= 1 }
                                }
                                if case .put(let e) = c {
                                    if e.record != nil { newRoot.liveItems &+= 1 } else { newRoot.tombstones &+= 1 }
                                }
                            case .history:
                                if old != nil { newRoot.historyEntries &-= 1 }
                                if case .put = c { newRoot.historyEntries &+= 1 }
                            case .attributes:
                                break
                            }
                        }
                    }
                    let cursors = runs?.cursors(tree) ?? []
                    var top = root.top(tree)
                    if cursors.isEmpty {
                        top = try apply(pending, top)
                    } else {
                        // The runs and the changes kept in memory, merged in key order and applied a chunk at a
                        // time (each chunk's keys follow the last's, so a chunk rewrites the pages it reaches and
                        // the path above them).
                        var merged = try MergedCursors(cursors + [SpillRuns.Cursor(memory: pending)])
                        var chunk: [TreeWriter.Change] = []
                        var chunkBytes = 0
                        chunk.reserveCapacity(PagedVault.mergeChunk)
                        var lastKey: [UInt8]?
                        var previousLive: [UInt8]?
                        while let c = try merged.next() {
                            if let l = lastKey, !l.lexicographicallyPrecedes(c.key) {
                                throw VaultError(
                                    .invalidArgument, "two changes of one commit to one key of the \(tree) tree")
                            }
                            lastKey = c.key
                            if tree == .items, bulk?.refusesEqualKeys == true, !chainOnly.contains(c.key) {
                                try refuseEqualKeys(c, after: &previousLive)
                            }
                            chunk.append(c)
                            chunkBytes += c.weight
                            if chunk.count == PagedVault.mergeChunk || chunkBytes >= PagedVault.mergeChunkBytes {
                                top = try apply(chunk, top)
                                chunk.removeAll(keepingCapacity: true)
                                chunkBytes = 0
                            }
                        }
                        if !chunk.isEmpty { top = try apply(chunk, top) }
                    }
                    newRoot.setTop(tree, top)
                }
                for (id, bytes) in deadRecords where !namedRecords.contains(id) { newRoot.addGarbage(bytes) }
                guard newRoot.liveItems == itemCount else {
                    throw VaultError(
                        .damagedIndex, "folding gives \(newRoot.liveItems) live items where \(itemCount) were expected")
                }
                let t = try PagedVault.writeFold(
                    root: newRoot, store: store, commitStart: end, generation: generation,
                    previous: uncommitted ? nil : tail.offset, itemCount: itemCount)
                uncommitted = false
                root = newRoot
                replay([])
                overlayBytes = 0
                tail = t
            } else {
                let (offset, length) = try store.append(
                    delta, key: .delta(keys, vaultID: header.vaultID, generation: generation))
                let p = tail.trailer
                let t = TrailerV2(
                    generation: generation, commitStart: end, previous: tail.offset, rootOffset: p.rootOffset,
                    rootLength: p.rootLength, rootID: p.rootID, deltaOffset: offset, deltaLength: length,
                    itemCount: itemCount, wroteRoot: false, chain: UInt16(chain))
                let at = try PagedVault.writeTrailer(t, store: store)
                for (tree, c) in changes { addToOverlay(tree, c) }
                overlayBytes += delta.count
                tail = (t, at)
            }
        } catch {
            try? file.truncate(to: UInt64(header.length) + end)
            store.position = end
            store.limit = end
            throw error
        }
    }

    /// Merges two change lists, each in ascending key order, into one; on equal keys the newer (`later`) wins.
    static func combine<S: Sequence<TreeWriter.Change>>(_ earlier: [TreeWriter.Change], _ later: S) -> [TreeWriter
        .Change]
    {
        var out: [TreeWriter.Change] = []
        out.reserveCapacity(earlier.count)
        var i = 0
        for c in later {
            while i < earlier.count, earlier[i].key.lexicographicallyPrecedes(c.key) {
                out.append(earlier[i])
                i += 1
            }
            if i < earlier.count, earlier[i].key == c.key { i += 1 }
            out.append(c)
        }
        out.append(contentsOf: earlier[i...])
        return out
    }

    /// Reloads the tail, root and deltas if another writer committed since they were read.
    func catchUp() throws {
        let size = try file.size()
        let known = try? file.read(TrailerV2.size, at: UInt64(header.length) + tail.offset)
        if size == UInt64(header.length) + tail.offset + UInt64(TrailerV2.size),
            known == tail.trailer.encode(vaultID: header.vaultID, key: keys.trailer)
        {
            return
        }
        let (r, chain, b, t) = try PagedVault.load(source, bodySize: size - UInt64(header.length))
        (root, overlayBytes, tail) = (r, b, t)
        replay(chain)
        store.limit = t.1
    }
}
