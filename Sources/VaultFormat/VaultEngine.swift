/// What one format version does for a ``Vault``. The vault holds what every version shares (its path, file,
/// header, keys and the items it has read) and hands every operation whose work depends on the format to its
/// engine, chosen when the file is opened and replaced only when another process upgrades the file (version
/// 1's catch-up notices it). Beyond the places that choose an engine (opening, that catch-up, creating a file,
/// and the upgrade from version 1) and the checks that read a file without opening it (KeylessSummary,
/// LastCommit: no key, so no engine; they pick the trailer's layout by the header's version), nothing in the
/// module branches on the format: a new format version is one new type that conforms, with its own extension
/// of ``Vault`` for the work on the shared file.
///
/// Each method takes the vault it works for: an engine belongs to one vault, which holds it.
protocol VaultEngine: AnyObject {
    /// The generation of the last complete commit.
    var generation: UInt64 { get }
    /// Bytes of the body up to the end of the last complete commit.
    var bodyLength: UInt64 { get }
    /// Bytes on disk of the index the last commit names (version 1: its chain's segments; version 2: its
    /// tree pages, root and delta segments).
    func indexBytes() throws -> UInt64
    /// How long a writer waits for the file's lock.
    func setLockTimeout(_ seconds: Double)

    func count(in vault: Vault) -> Int
    func deadBytes(in vault: Vault) -> UInt64
    func shouldCompact(in vault: Vault) -> Bool
    func refresh(_ vault: Vault) throws
    func commit(_ vault: Vault, options: WriteOptions, random: RandomSource, _ body: (Transaction) throws -> Void)
        throws
    func cutIncomplete(_ vault: Vault) throws
    func verify(_ vault: Vault) -> VerifyReport
    func compact(
        _ vault: Vault, retention: Retention?, droppingHistoryOf dropped: Set<ItemID>, rewindingClock: Bool,
        random: RandomSource, options: WriteOptions) throws
    func rekey(_ vault: Vault, slots: [SlotSecret], random: RandomSource, options: WriteOptions) throws
    /// Replaces the header's slots `removing` (at indexes `remove` of the header the caller saw) by slots for `add`.
    func changeSlots(_ vault: Vault, remove: [Int], removing: [KeySlot], add: [SlotSecret], random: RandomSource)
        throws

    // The items, for a format that can look them up without holding them all (version 2 on demand).

    /// Whether the items were not read at open and have not all been read since.
    var itemsOnDemand: Bool { get }
    func loadItems(_ vault: Vault) throws
    func forEachItem(_ vault: Vault, inOrder: Bool, _ body: (Item) throws -> Bool) throws
    func findItem(_ vault: Vault, _ id: ItemID) throws -> Item?
    func liveItem(_ vault: Vault, id: ItemID, class itemClass: ItemClass, attributes: Attributes) throws -> Item?

    // Capabilities a format has or has not (nil).

    var versioning: Versioning? { get }
    var itemIndex: ItemIndex? { get }
    var retention: Retention? { get }
    var version2: PagedVault? { get }
}

extension VaultEngine {
    var itemsOnDemand: Bool { false }
    func loadItems(_ vault: Vault) throws {}
    func findItem(_ vault: Vault, _ id: ItemID) throws -> Item? { vault.state[id] }
    func liveItem(_ vault: Vault, id: ItemID, class itemClass: ItemClass, attributes: Attributes) throws -> Item? {
        vault.state[id]
    }
    var versioning: Versioning? { nil }
    var itemIndex: ItemIndex? { nil }
    var retention: Retention? { nil }
    var version2: PagedVault? { nil }
}

/// Version 1 (SPEC.md Part 1): a chain of index segments, read whole at open into the vault's items; `tail`
/// names the last complete commit. Its work on the file is in the vault's extensions (Vault.swift,
/// Vault+Writing, +Rewrite, +Verify), each given this engine.
final class LogEngine: VaultEngine {
    var tail: Tail

    init(tail: Tail) {
        self.tail = tail
    }

    var generation: UInt64 { tail.trailer.generation }
    var bodyLength: UInt64 { tail.end }
    func indexBytes() throws -> UInt64 { tail.checkpointBytes + tail.deltaBytes }
    func setLockTimeout(_ seconds: Double) {}

    func count(in vault: Vault) -> Int { vault.state.count }
    func deadBytes(in vault: Vault) -> UInt64 { vault.deadBytes(self) }
    func shouldCompact(in vault: Vault) -> Bool {
        Vault.passesCompactionThreshold(dead: vault.deadBytes(self), body: tail.end)
    }
    func refresh(_ vault: Vault) throws { try vault.refresh(self) }
    func commit(_ vault: Vault, options: WriteOptions, random: RandomSource, _ body: (Transaction) throws -> Void)
        throws
    {
        try vault.commit(self, options: options, random: random, body)
    }
    func cutIncomplete(_ vault: Vault) throws { try vault.exclusively(self) { try vault.cutIncompleteLocked(self) } }
    func verify(_ vault: Vault) -> VerifyReport { vault.verify(self) }

    func compact(
        _ vault: Vault, retention: Retention?, droppingHistoryOf dropped: Set<ItemID>, rewindingClock: Bool,
        random: RandomSource, options: WriteOptions
    ) throws {
        guard retention == nil else {
            throw VaultError(
                .invalidArgument, "\(vault.path) is vault format version 1, which keeps no history or tombstones")
        }
        guard !rewindingClock else {
            throw VaultError(.invalidArgument, "\(vault.path) is vault format version 1, which has no version clock")
        }
        try vault.rewrite(
            self, header: vault.header, headerBytes: vault.headerBytes, newKey: nil, random: random, options: options)
    }

    func rekey(_ vault: Vault, slots: [SlotSecret], random: RandomSource, options: WriteOptions) throws {
        let (newHeader, bytes, vk) = try Vault.rekeyedHeader(vault.header, slots: slots, random: random)
        try vault.rewrite(self, header: newHeader, headerBytes: bytes, newKey: vk, random: random, options: options)
    }

    func changeSlots(_ vault: Vault, remove: [Int], removing: [KeySlot], add: [SlotSecret], random: RandomSource)
        throws
    {
        try vault.exclusively(self) { try vault.changeSlotsLocked(self, removing: removing, add: add, random: random) }
    }

    func forEachItem(_ vault: Vault, inOrder: Bool, _ body: (Item) throws -> Bool) throws {
        // The whole index is read at open, by design: in ``Vault/items`` order, or in no order when `inOrder` is
        // false (sorting is most of the cost of a pass that only sums or finds a largest value).
        if inOrder {
            for item in vault.items { guard try body(item) else { return } }
        } else {
            for item in vault.unorderedItems { guard try body(item) else { return } }
        }
    }
}
