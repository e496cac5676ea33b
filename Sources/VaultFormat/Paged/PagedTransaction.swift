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

    /// Flushes the records and turns the changes into tree changes, per tree in ascending key order. Keys of
    /// different items never collide (item keys end in the item id), so each tree's changes are gathered in an
    /// array and sorted once, however many items the commit changes. The transaction's items are let go as
    /// their entries are made: a large commit holds its items or its entries, not both.
    func finish() throws -> [(tree: TreeID, changes: [TreeWriter.Change])] {
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
