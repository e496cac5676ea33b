import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// The changes of one commit to a ``PagedVault``.
package final class PagedTransaction {
    let vault: PagedVault
    let writer: CommitWriter
    let random: RandomSource
    /// Changes so far, by item id: the item now (nil: deleted), and apart (adds have none, and a large
    /// import should not carry an empty slot per item) the entry it had before the commit.
    private var changed: [ItemID: Item?] = [:]
    private var before: [ItemID: ItemState] = [:]
    /// The items given a value in this commit whose record is not written yet, each with the writer's number
    /// of its latest value.
    private var valued: [ItemID: Int] = [:]
    private(set) var clock: UInt64
    var liveChange = 0
    /// Whether ``finish()`` records where each new value went in ``valueLocations`` (for a caller that keeps
    /// its own copy of the items: ``Vault`` over a version 2 file).
    var keepsValueLocations = false
    private(set) var valueLocations: [ItemID: (size: UInt64, location: RecordLocation)] = [:]
    /// A bulk commit (an import of any size) in bounded memory: once this many items changed since the last
    /// spill, the items added since whose records are written leave memory as their tree entries, sorted and
    /// sealed into a temporary file (``SpillRuns``) that the commit merges back in key order. An item spilled
    /// is no longer known here: an update or delete of it in the same commit finds no such item, and
    /// ``changedItems`` leaves it out. Nil: nothing spills.
    package var spillAfter: Int?
    /// Whether the commit refuses two live items of the items tree whose keys differ only in their item id
    /// (one class and key values), as the keychain's primary keys (SPEC.md §K4) do when its own check of them
    /// holds no state per item: ``VaultError/Code/exists``. Checked when runs are merged.
    package var refusesEqualKeys = false
    /// The runs spilled so far (nil: none).
    private(set) var spilled: SpillRuns?
    private var spillAt = 0
    /// About how many bytes the items added since the last spill hold (their attributes, and their keys in
    /// their entries): a spill comes when they pass `spillBytes` too, however few they are (an item may carry
    /// 256 attributes of 64 KiB, and its key once per indexed attribute).
    private var heldBytes = 0
    package var spillBytes = 32 << 20
    /// The spill being written on another thread (its entries made, sorted, sealed and written while this
    /// thread reads on): at most one, so that memory holds the batch being written and the one being filled.
    private var spilling: DispatchGroup?
    private let spillFailure = SpillFailure()

    init(vault: PagedVault, writer: CommitWriter, random: RandomSource, now: UInt64) throws {
        self.vault = vault
        self.writer = writer
        self.random = random
        // A root's clock is read from the file: one at the ceiling leaves no versions to give (never a trap;
        // V5.1: only a file kcar did not write can be there, and a rewind brings it back).
        guard vault.clock < HybridClock.ceiling else {
            throw VaultError(
                .invalidArgument,
                "the vault's clock is at \(vault.clock): no versions are left to give; "
                    + "`kcar compact --rewind-clock` renumbers the versions that run ahead of this machine's clock")
        }
        clock = max(min(now, HybridClock.nowMaxMilliseconds) << 16, vault.clock + 1) - 1
    }

    private func nextVersion() -> Version {
        clock += 1
        return Version(hlc: clock, writer: vault.writerID)
    }

    /// Adds a new item and returns it.
    @discardableResult
    package func add(class itemClass: ItemClass = .genericPassword, attributes: Attributes, value: [UInt8]) throws
        -> ItemID
    {
        try add(class: itemClass, attributes: attributes, value: .bytes(value))
    }

    /// Adds a new item whose value comes from `value` (bytes, or a descriptor streamed in bounded memory).
    @discardableResult
    package func add(class itemClass: ItemClass, attributes: Attributes, value: ValueSource) throws -> ItemID {
        try Transaction.check(itemClass, attributes)
        if let n = spillAfter {
            if changed.count >= max(n, spillAt) || heldBytes >= spillBytes { try spill(every: n) }
            // An item holds its attributes, and its key again in its entry and in each attribute entry.
            var key = 24 + itemClass.rawValue.utf8.count
            for k in vault.root.schema.classes[itemClass.rawValue]?.keyAttributes ?? [] {
                key += attributes[k.name]?.byteCount ?? 0
            }
            heldBytes += 64 + attributes.weight + (attributes.count + 1) * key
        }
        let id = ItemID(random.bytes(16))
        let item = Item(
            id: id, itemClass: itemClass, attributes: attributes, size: 0,
            location: RecordLocation(recordID: ID128(hi: 0, lo: 0), offset: 0, length: 0, member: 0, dataOffset: 0))
        try writer.add(item, value: value)
        changed[id] = item
        valued[id] = writer.sequence
        liveChange += 1
        takeLocations()
        return id
    }

    /// The items this commit changed, as they stand now (nil: deleted; an item added and deleted again is
    /// not there): one copy of each, which ``Transaction`` reads instead of keeping its own.
    package var changedItems: [ItemID: Item?] { changed }

    /// Takes where the writer put the values whose records it wrote, as they are written (so that neither
    /// it nor `valued` holds an entry per item until ``finish()``): the latest value of each item (records
    /// are not written in the order values were given).
    private func takeLocations() {
        for w in writer.takeWritten() where valued[w.item.id] == w.sequence {
            valued[w.item.id] = nil
            guard case .some(.some(var a)) = changed[w.item.id] else { continue }
            a.size = w.item.size
            a.location = w.item.location
            changed[w.item.id] = a
            if keepsValueLocations { valueLocations[w.item.id] = (a.size, a.location) }
        }
    }

    /// The current state of `item` (as this transaction left it, or as the vault holds it).
    private func current(_ item: Item) throws -> (before: ItemState?, now: Item) {
        if let c = changed[item.id] {
            guard let now = c else {
                throw VaultError(.itemNotFound, "item \(item.id) was deleted in this transaction")
            }
            return (before[item.id], now)
        }
        let key = ItemKey.make(
            class: item.itemClass.rawValue, attributes: item.attributes,
            schema: vault.root.schema.classes[item.itemClass.rawValue], id: item.id
        ).key
        guard let e = try vault.entry(.items, key),
            var s = Optional(try ItemEntries.decode(e, schema: vault.root.schema)), let now = s.item
        else {
            throw VaultError(.itemNotFound, "item \(item.id)")
        }
        // The caller's copy where it is the same item, so that a commit of many changes holds each item once
        // (a delete of a quarter of a million items held them twice: 150 MiB).
        if now == item { s.item = item }
        return (s, s.item!)
    }

    /// Changes `item`'s attributes, its value, or both.
    package func update(_ item: Item, attributes: Attributes? = nil, value: [UInt8]? = nil) throws {
        try update(item, class: nil, attributes: attributes, value: value.map { .bytes($0) })
    }

    /// Changes `item`'s class, its attributes, its value, or any of them (a new class or new key attributes
    /// move its entry to another key).
    package func update(_ item: Item, class itemClass: ItemClass?, attributes: Attributes?, value: ValueSource?) throws
    {
        let (was, now) = try current(item)
        var next = now
        if let itemClass { next.itemClass = itemClass }
        if let attributes { next.attributes = attributes }
        try Transaction.check(next.itemClass, next.attributes)
        if let value {
            try writer.add(next, value: value)
            valued[item.id] = writer.sequence
        }
        before[item.id] = was
        changed[item.id] = next
        takeLocations()
    }

    /// Makes `kept` (a kept version of an item, its attributes and class) the item's new version with
    /// `value`, under the same item id: an update of the live item `current` names, or the item brought back
    /// over its tombstone (or where the vault no longer holds it).
    package func restore(_ kept: Item, value: [UInt8], over current: ItemState?) throws {
        if let current, let live = current.item {
            try update(live, attributes: kept.attributes, value: value)
            return
        }
        guard changed[kept.id] == nil else {
            throw VaultError(.invalidArgument, "item \(kept.id) was changed in this transaction")
        }
        try Transaction.check(kept.itemClass, kept.attributes)
        var item = kept
        item.size = 0
        try writer.add(item, value: .bytes(value))
        if let current { before[kept.id] = current }
        changed[kept.id] = item
        valued[kept.id] = writer.sequence
        liveChange += 1
        takeLocations()
    }

    package func delete(_ item: Item) throws {
        let (was, _) = try current(item)
        if let was {
            before[item.id] = was
            changed.updateValue(nil, forKey: item.id)
        } else {
            changed[item.id] = nil
            valued[item.id] = nil
        }
        liveChange -= 1
    }

    /// Moves the added items whose records are written out of memory, as one sorted run of their tree
    /// entries (versions given in id order, as ``finish()`` gives them), and sets when the next spill comes:
    /// once `every` more items changed.
    private func spill(every n: Int) throws {
        // The values given so far are written (a solid record ends here), so that every add has its location.
        try writer.flush()
        takeLocations()
        var ids: [ItemID] = []
        for (id, c) in changed where c != nil && before[id] == nil && valued[id] == nil { ids.append(id) }
        spillAt = changed.count - ids.count + n
        heldBytes = 0
        guard !ids.isEmpty else { return }
        ids.sort()
        let batch = SpillBatch()
        batch.items.reserveCapacity(ids.count)
        for id in ids {
            guard case .some(.some(let a)) = changed.removeValue(forKey: id) else { continue }
            batch.items.append((a, nextVersion()))
        }
        try waitForSpill()
        if spilled == nil { spilled = try SpillRuns(directory: directoryOf(vault.path)) }
        let runs = spilled!
        let schema = vault.root.schema
        let failure = spillFailure
        let group = DispatchGroup()
        spilling = group
        DispatchQueue.global().async(group: group) {
            do {
                var items: [TreeWriter.Change] = []
                var attributes: [TreeWriter.Change] = []
                items.reserveCapacity(batch.items.count)
                for (a, version) in batch.items {
                    let e = ItemEntries.entry(a, version: version, schema: schema)
                    items.append(.put(e))
                    for k in ItemEntries.attributeKeys(a, itemKey: e.key, schema: schema) {
                        attributes.append(.put(LeafEntry(key: k)))
                    }
                }
                batch.items = []
                PagedRebuild.sortByKey(&items, key: \.key)
                PagedRebuild.sortByKey(&attributes, key: \.key)
                try runs.append([(.items, items), (.attributes, attributes)])
            } catch {
                failure.error = error
            }
        }
    }

    /// Waits for the spill being written, and throws what it failed with.
    private func waitForSpill() throws {
        guard let group = spilling else { return }
        group.wait()
        spilling = nil
        if let e = spillFailure.error { throw e }
    }

    /// Flushes the records and turns the changes into tree changes, per tree in ascending key order. Keys of
    /// different items never collide (item keys end in the item id), so each tree's changes are gathered in an
    /// array and sorted once, however many items the commit changes. The transaction's items are let go as
    /// their entries are made: a large commit holds its items or its entries, not both.
    func finish() throws -> [(tree: TreeID, changes: [TreeWriter.Change])] {
        try waitForSpill()
        try writer.flush()
        takeLocations()
        valued = [:]
        let schema = vault.root.schema
        var items: [TreeWriter.Change] = []
        var attributes: [TreeWriter.Change] = []
        var history: [TreeWriter.Change] = []
        items.reserveCapacity(changed.count)
        for id in changed.keys.sorted() {
            guard let after = changed.removeValue(forKey: id) else { continue }
            let was = before.removeValue(forKey: id)
            // A change gives the item a version above the one it has, even one above the root's clock (a
            // damaged index, V4) that the clock did not see (V5).
            if let old = was, old.version.hlc >= clock {
                guard old.version.hlc < HybridClock.ceiling else {
                    throw VaultError(
                        .invalidArgument, "item \(id) has a version at \(old.version.hlc): no versions are left to give"
                    )
                }
                clock = old.version.hlc
            }
            let version = nextVersion()
            var oldAttributeKeys: [[UInt8]] = []
            if let old = was, let oldItem = old.item {
                oldAttributeKeys = ItemEntries.attributeKeys(oldItem, itemKey: old.key, schema: schema)
                if vault.root.retention.keep > 0 {
                    history.append(.put(ItemEntries.history(oldItem, version: old.version, why: after == nil ? 3 : 1)))
                    for k in try vault.historyPastRetention(of: id, adding: 1, now: clock) {
                        history.append(.remove(k))
                    }
                }
            }
            var newAttributeKeys: [[UInt8]] = []
            if let a = after {
                let e = ItemEntries.entry(a, version: version, schema: schema)
                if let old = was, old.key != e.key { items.append(.remove(old.key)) }
                items.append(.put(e))
                newAttributeKeys = ItemEntries.attributeKeys(a, itemKey: e.key, schema: schema)
            } else if let old = was {
                items.append(.put(ItemEntries.tombstone(key: old.key, version: version)))
            }
            // An attribute entry that stays is neither removed nor put again.
            for k in oldAttributeKeys where !newAttributeKeys.contains(k) { attributes.append(.remove(k)) }
            for k in newAttributeKeys where !oldAttributeKeys.contains(k) { attributes.append(.put(LeafEntry(key: k))) }
        }
        PagedRebuild.sortByKey(&items, key: \.key)
        PagedRebuild.sortByKey(&attributes, key: \.key)
        PagedRebuild.sortByKey(&history, key: \.key)
        return [(.items, items), (.attributes, attributes), (.history, history)]
    }
}

/// Items leaving memory, handed to the thread that writes them (and only to it until it is done).
private final class SpillBatch: @unchecked Sendable {
    var items: [(item: Item, version: Version)] = []
}

/// What the spilling thread failed with, read once it is done (``PagedTransaction`` waits on its group).
private final class SpillFailure: @unchecked Sendable {
    var error: Error?
}

extension Attributes {
    /// Bytes of the names and values, about (16 more for each): what a bulk commit weighs the items it holds by.
    var weight: Int {
        var n = 0
        for (name, value) in self { n += name.utf8.count + 16 + value.byteCount }
        return n
    }
}
