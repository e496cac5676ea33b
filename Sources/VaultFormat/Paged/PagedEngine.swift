/// Version 2 (SPEC.md Part 4): the work is done by a ``PagedVault``; the vault keeps what its API promises on
/// top of it (the items in memory, read from the trees at open and after each change made elsewhere, as
/// version 1 reads its index), unless it was opened with its items on demand: then it holds none, and looks
/// them up in the trees. Commands and the keychain need not know the version.
final class PagedEngine: VaultEngine {
    private(set) var paged: PagedVault
    /// The commit whose items the vault holds (generation and trailer offset).
    var seen: (generation: UInt64, offset: UInt64) = (0, 0)
    /// Opened with its items on demand (``Vault/open(path:secret:mode:lockTimeout:itemsOnDemand:writerID:)``)
    /// and not all read since: the vault's `state` stays empty.
    var onDemand: Bool

    init(_ paged: PagedVault, onDemand: Bool) {
        self.paged = paged
        self.onDemand = onDemand
    }

    var generation: UInt64 { paged.generation }
    var bodyLength: UInt64 { paged.tail.offset + UInt64(TrailerV2.size) }
    func indexBytes() throws -> UInt64 { try paged.indexBytes() }
    func setLockTimeout(_ seconds: Double) { paged.lockTimeout = seconds }

    func count(in vault: Vault) -> Int { paged.count }
    func deadBytes(in vault: Vault) -> UInt64 { (try? vault.deadBytes(self)) ?? 0 }
    func shouldCompact(in vault: Vault) -> Bool { paged.shouldCompact }
    func refresh(_ vault: Vault) throws { try vault.refresh(self) }
    func commit(_ vault: Vault, options: WriteOptions, random: RandomSource, _ body: (Transaction) throws -> Void)
        throws
    {
        try vault.commit(self, options: options, random: random, body)
    }
    func cutIncomplete(_ vault: Vault) throws {
        try paged.cutIncomplete()
        vault.incompleteBytes = 0
    }
    func verify(_ vault: Vault) -> VerifyReport { paged.verify() }

    func compact(
        _ vault: Vault, retention: Retention?, droppingHistoryOf dropped: Set<ItemID>, rewindingClock: Bool,
        random: RandomSource, options: WriteOptions
    ) throws {
        try options.check()
        try paged.compact(
            random: random, level: options.level, solidMembers: options.solidMembers, retention: retention,
            droppingHistoryOf: dropped, rewindingClock: rewindingClock)
        try vault.adopt(self, paged, items: true)
    }

    func rekey(_ vault: Vault, slots: [SlotSecret], random: RandomSource, options: WriteOptions) throws {
        try options.check()
        try paged.rekey(slots: slots, random: random, level: options.level, solidMembers: options.solidMembers)
        try vault.adopt(self, paged, items: true)
    }

    func changeSlots(_ vault: Vault, remove: [Int], removing: [KeySlot], add: [SlotSecret], random: RandomSource)
        throws
    {
        try paged.changeSlots(remove: remove, add: add, random: random)
        try vault.adopt(self, paged, items: false)
    }

    var itemsOnDemand: Bool { onDemand }

    func loadItems(_ vault: Vault) throws {
        guard onDemand else { return }
        onDemand = false
        do {
            try vault.adopt(self, paged, items: true)
        } catch {
            onDemand = true
            throw error
        }
    }

    func forEachItem(_ vault: Vault, inOrder: Bool, _ body: (Item) throws -> Bool) throws {
        try paged.forEachItem(body)
    }

    func findItem(_ vault: Vault, _ id: ItemID) throws -> Item? {
        guard onDemand else { return vault.state[id] }
        var found: Item?
        try paged.forEachItem { i in
            if i.id == id { found = i }
            return found == nil
        }
        return found
    }

    func liveItem(_ vault: Vault, id: ItemID, class itemClass: ItemClass, attributes: Attributes) throws -> Item? {
        guard onDemand else { return vault.state[id] }
        if let found = try paged.liveItem(id: id, class: itemClass, attributes: attributes) { return found }
        return try findItem(vault, id)
    }

    var versioning: Versioning? { Versioning(paged) }
    var itemIndex: ItemIndex? { ItemIndex(paged) }
    var retention: Retention? { paged.root.retention }
    var version2: PagedVault? { paged }

    /// Takes `p` as the engine (a reopened file is a new ``PagedVault``).
    func replace(_ p: PagedVault) { paged = p }
}
