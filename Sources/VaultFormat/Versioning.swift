/// What a vault whose items carry versions can do (SPEC.md Part 4: V5 clocks, V8 history and retention, V9
/// merge): list an item's kept versions and bring one back, merge another copy of the vault, write a shared copy,
/// and read its items with their versions. A vault of a format that keeps versions has this capability (version
/// 2); version 1 has none (`kcar upgrade` gives it one). Commands name this capability, never the engine behind
/// it, so that a later format is one more engine that provides it. Reads look the trees up as they go; nothing
/// holds every item.
package struct Versioning {
    let engine: PagedVault

    init(_ engine: PagedVault) { self.engine = engine }

    /// The file's path, as it was opened.
    package var path: String { engine.path }
    /// Live items in the last commit.
    package var count: Int { engine.count }
    /// The last commit's generation.
    package var generation: UInt64 { engine.generation }

    // MARK: Reading

    /// Every live item in key order (class, then key attributes, then id), until `body` returns false.
    package func forEachItem(_ body: (Item) throws -> Bool) throws { try engine.forEachItem(body) }

    /// Every live item with its version, in key order, until `body` returns false.
    package func forEachLiveState(_ body: (ItemState) throws -> Bool) throws { try engine.forEachLiveState(body) }

    /// Every kept version of every item (by item id, then version), until `body` returns false.
    package func forEachKeptVersion(_ body: (KeptVersion) throws -> Bool) throws {
        try engine.forEachKeptVersion(body)
    }

    /// The kept earlier versions of the item with this id, oldest first.
    package func keptVersions(of id: ItemID) throws -> [KeptVersion] { try engine.keptVersions(of: id) }

    /// The item's entry now (its live version or its tombstone), nil if the vault holds none.
    package func state(of item: Item) throws -> ItemState? { try engine.state(of: item) }

    /// The value of `item`, live or kept.
    package func read(_ item: Item) throws -> [UInt8] { try engine.read(item) }

    /// The values of `items` (live or kept) in record order, each as `begin`, its bytes, `end`.
    package func readValues(
        of items: [Item], begin: (Item) throws -> Void, bytes: (UnsafeRawBufferPointer) throws -> Void,
        end: (Item) throws -> Void
    ) throws {
        try engine.readValues(of: items, begin: begin, bytes: bytes, end: end)
    }

    // MARK: Changing

    /// Brings a kept version back as the item's newest version (its current one, `current`, is kept in turn).
    package func restore(_ kept: Item, value: [UInt8], over current: ItemState?) throws {
        try engine.commit { tx in try tx.restore(kept, value: value, over: current) }
    }

    /// Drops the kept versions of the items in `ids` by a compaction, so that their values leave the file.
    package func dropHistory(of ids: Set<ItemID>) throws { try engine.compact(droppingHistoryOf: ids) }

    /// Merges THEIRS into this vault (OURS) given their common ancestor BASE (nil: none), in one commit
    /// (SPEC.md Part 4, V9). THEIRS and BASE are only read.
    package func merge(
        base: Versioning?, theirs: Versioning, policy: MergePolicy = .plain, listingTaken: Bool = false
    ) throws -> MergeReport {
        try engine.merge(base: base?.engine, theirs: theirs.engine, policy: policy, listingTaken: listingTaken)
    }

    /// Writes a new vault at `target` with the items (and their kept versions) for which `keeping` holds, and
    /// no tombstones (a shared copy's first push, SPEC.md Part 3, §K9). Never replaces a file.
    package func writeCopy(to target: String, keeping: @escaping (Item) -> Bool) throws {
        try engine.writeCopy(to: target, keeping: keeping)
    }

    /// Refuses a copy taken whole (a sync's join) whose clock, or any version it holds, runs past the bound on
    /// the clock `now` (an hlc) allows (V5.1 rule 2).
    package func checkClockTakenWhole(now: UInt64) throws { try engine.checkClockTakenWhole(now: now) }
}

extension Vault {
    /// The vault's versions (kept history, restore, merge), or nil when its format keeps none (version 1).
    package var versioning: Versioning? { engine.versioning }
}

extension Header {
    /// Whether the file's format keeps per-item versions (history and merge): readable without a key, so that
    /// a command can say before asking for one that a vault needs `kcar upgrade`.
    package var keepsVersions: Bool { formatVersion >= 2 }

    /// The format version new vaults are written in, and `kcar upgrade` rewrites older ones to.
    package static let currentFormatVersion: UInt16 = 2

    /// Whether the file is in the format new vaults are written in (nothing for an upgrade to do).
    package var isCurrentFormat: Bool { formatVersion == Header.currentFormatVersion }
}
