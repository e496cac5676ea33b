/// What a vault whose items carry versions can do (SPEC.md Part 4: V5 clocks, V8 history and retention, V9
/// merge): list an item's kept versions and bring one back, merge another copy of the vault, write a shared copy,
/// and read its items with their versions. A vault of a format that keeps versions has this capability (version
/// 2); version 1 has none (``Vault/upgrade(schema:retention:writerID:random:options:)`` gives it one). Callers
/// name this capability, never the engine behind it, so that a later format is one more engine that provides
/// it. Reads look the trees up as they go; nothing holds every item. Take it from a vault
/// (``Vault/versioning``) and use it while the vault is open.
public struct Versioning {
    let engine: PagedVault
    /// The vault this was taken from, which a change made here (restore, merge, dropping history) brings up
    /// to date, as its own commit would: its items, when it holds them, are the new commit's.
    fileprivate(set) var vault: Vault?

    init(_ engine: PagedVault) { self.engine = engine }

    /// `change`, then the vault this was taken from caught up with it. The change is on disk once `change`
    /// returns: a vault that cannot catch up (its file replaced meanwhile) says so at its next call, not here,
    /// where an error would tell the caller that a change it made had failed.
    private func changing<T>(_ change: () throws -> T) throws -> T {
        let result = try change()
        try? vault?.refresh()
        return result
    }

    /// The file's path, as it was opened.
    public var path: String { engine.path }
    /// Live items in the last commit.
    public var count: Int { engine.count }
    /// The last commit's generation.
    public var generation: UInt64 { engine.generation }

    // MARK: Reading

    /// Every live item in key order (class, then key attributes, then id), until `body` returns false.
    public func forEachItem(_ body: (Item) throws -> Bool) throws { try naming { try engine.forEachItem(body) } }

    /// Every live item with its version, in key order, until `body` returns false.
    public func forEachLiveState(_ body: (ItemState) throws -> Bool) throws {
        try naming { try engine.forEachLiveState(body) }
    }

    /// ``forEachLiveState(_:)``'s states in runs, each given to `transform` on any core, its result handed to
    /// `body` here, in order (``PagedVault/mapLiveStateLeaves(_:_:)``); false, having handed nothing, for a tree
    /// too small to be walked so (the caller uses ``forEachLiveState(_:)``).
    package func mapLiveStateRuns<T>(
        _ transform: @escaping @Sendable ([ItemState]) throws -> T, _ body: (T) throws -> Void
    ) throws -> Bool {
        try naming { try engine.mapLiveStateLeaves(transform, body) }
    }

    /// Every kept version of every item (by item id, then version), until `body` returns false.
    public func forEachKeptVersion(_ body: (KeptVersion) throws -> Bool) throws {
        try naming { try engine.forEachKeptVersion(body) }
    }

    /// The kept earlier versions of the item with this id, oldest first.
    public func keptVersions(of id: ItemID) throws -> [KeptVersion] { try naming { try engine.keptVersions(of: id) } }

    /// The item's entry now (its live version or its tombstone), nil if the vault holds none.
    public func state(of item: Item) throws -> ItemState? { try naming { try engine.state(of: item) } }

    /// The value of `item`, live or kept.
    public func read(_ item: Item) throws -> [UInt8] { try naming { try engine.read(item) } }

    /// The values of `items` (live or kept) in record order, each as `begin`, its bytes, `end`.
    package func readValues(
        of items: [Item], begin: (Item) throws -> Void, bytes: (UnsafeRawBufferPointer) throws -> Void,
        end: (Item) throws -> Void
    ) throws {
        try engine.readValues(of: items, begin: begin, bytes: bytes, end: end)
    }

    // MARK: Changing

    /// Brings `kept` back as its item's newest version, in one commit: the item's current version (if it was
    /// not deleted) is kept in history in turn, so a restore can itself be undone. Needs `.write`.
    public func restore(_ kept: KeptVersion) throws {
        try naming {
            let value = try engine.read(kept.item)
            let current = try engine.state(of: kept.item)
            try restore(kept.item, value: value, over: current)
        }
    }

    /// Brings a kept version back as the item's newest version (its current one, `current`, is kept in turn).
    package func restore(_ kept: Item, value: [UInt8], over current: ItemState?) throws {
        try changing { try engine.commit { tx in try tx.restore(kept, value: value, over: current) } }
    }

    /// Drops the kept versions of the items in `ids` by a compaction, so that their values leave the file.
    public func dropHistory(of ids: Set<ItemID>) throws {
        try naming { try changing { try engine.compact(droppingHistoryOf: ids) } }
    }

    /// Merges THEIRS, another copy of this vault, into this one (OURS) given their common ancestor BASE (nil:
    /// none), in one commit (SPEC.md Part 4, V9): each item's newest version wins, the loser is kept in
    /// history, and the same merge in any order gives the same items. THEIRS and BASE are only read; this
    /// vault needs `.write`. With `listingTaken`, the report lists each entry taken from THEIRS.
    public func merge(base: Versioning?, theirs: Versioning, listingTaken: Bool = false) throws -> MergeReport {
        try merge(base: base, theirs: theirs, policy: .plain, listingTaken: listingTaken)
    }

    /// ``merge(base:theirs:listingTaken:)`` under `policy` (the keychain's device-only rule, SPEC.md §K9).
    package func merge(
        base: Versioning?, theirs: Versioning, policy: MergePolicy, listingTaken: Bool = false
    ) throws -> MergeReport {
        try changing {
            try engine.merge(base: base?.engine, theirs: theirs.engine, policy: policy, listingTaken: listingTaken)
        }
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

extension Versioning {
    /// `body`, its ``VaultError`` naming this vault's file.
    private func naming<T>(_ body: () throws -> T) throws -> T { try Vault.naming(engine.path, body) }
}

extension Vault {
    /// The vault's versions (kept history, restore, merge), or nil when its format keeps none (version 1).
    public var versioning: Versioning? {
        guard var versioning = engine.versioning else { return nil }
        versioning.vault = self
        return versioning
    }
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
