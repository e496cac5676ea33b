#if canImport(Glibc)
    import Glibc
#endif

/// Whole-index builds of version 2 files (SPEC.md Part 4, V1 upgrade, V8 compaction): every tree written
/// bottom-up by ``TreeBuilder`` from the full state, then the root and a fold trailer.
package enum PagedRebuild {
    /// The hlc for "now" (V5): milliseconds since 1970 in the upper 48 bits, bounded as V5.1 says.
    package static func clockNow() -> UInt64 { HybridClock.now() }

    /// Sorts by a byte-string key. The keys are copied once into one buffer and compared there with
    /// `memcmp`, so that sorting a million entries moves positions, not entries, and counts no references.
    static func sortedByKey<T>(_ elements: [T], key: (T) -> [UInt8]) -> [T] {
        sortedOrder(elements, key: key).map { elements[$0] }
    }

    /// As ``sortedByKey(_:key:)``, in place: the elements are moved along the cycles of the order, so that a
    /// million changes are never held twice.
    static func sortByKey<T>(_ elements: inout [T], key: (T) -> [UInt8]) {
        let order = sortedOrder(elements, key: key)
        var placed = [Bool](repeating: false, count: elements.count)
        for start in elements.indices where !placed[start] {
            // Position k takes the element at order[k]; follow the cycle through `start`.
            let first = elements[start]
            var k = start
            while true {
                placed[k] = true
                let from = order[k]
                if from == start {
                    elements[k] = first
                    break
                }
                elements[k] = elements[from]
                k = from
            }
        }
    }

    /// The positions of `elements` in ascending order of key.
    private static func sortedOrder<T>(_ elements: [T], key: (T) -> [UInt8]) -> [Int] {
        var flat: [UInt8] = []
        var starts: [Int] = []
        starts.reserveCapacity(elements.count + 1)
        for e in elements {
            starts.append(flat.count)
            flat.append(contentsOf: key(e))
        }
        starts.append(flat.count)
        var order = Array(elements.indices)
        flat.withUnsafeBufferPointer { f in
            starts.withUnsafeBufferPointer { s in
                guard let base = f.baseAddress else { return }
                order.sort { a, b in
                    let la = s[a + 1] - s[a]
                    let lb = s[b + 1] - s[b]
                    let c = memcmp(base + s[a], base + s[b], min(la, lb))
                    return c != 0 ? c < 0 : la < lb
                }
            }
        }
        return order
    }

    static func sortedByKey(_ entries: [LeafEntry]) -> [LeafEntry] { sortedByKey(entries, key: \.key) }

    /// Writes the three trees holding `items` (items-tree entries: live items and tombstones, in any order),
    /// `attributeKeys` and `history` (any order), then the root and a fold trailer that makes them one commit
    /// starting at body offset `commitStart`. Returns the trailer and its offset.
    static func writeFold(
        store: FilePageStore, items: [LeafEntry], attributeKeys: [[UInt8]], history: [LeafEntry],
        base: IndexRoot, clock: UInt64, commitStart: UInt64, generation: UInt64, previous: UInt64?
    ) throws
        -> (root: IndexRoot, tail: (TrailerV2, UInt64))
    {
        try writeFold(
            store: store, base: base, clock: clock, commitStart: commitStart, generation: generation,
            previous: previous,
            items: { builder in
                var live: UInt64 = 0
                for e in sortedByKey(items) {
                    if e.record != nil { live += 1 }
                    try builder.append(e)
                }
                return (live, attributeKeys)
            },
            history: { builder in for e in sortedByKey(history) { try builder.append(e) } })
    }

    /// ``writeFold(store:items:attributeKeys:history:base:clock:commitStart:generation:previous:)`` with the
    /// entries streamed: `items` hands the items tree's entries to its builder in ascending key order and returns
    /// the live count and the attributes-tree keys (any order); `history` hands the history entries over in
    /// ascending key order. Memory holds one page per level of each tree, and the attribute keys.
    static func writeFold(
        store: FilePageStore, base: IndexRoot, clock: UInt64, commitStart: UInt64, generation: UInt64,
        previous: UInt64?,
        items: (TreeBuilder) throws -> (live: UInt64, attributeKeys: [[UInt8]]),
        history: (TreeBuilder) throws -> Void
    ) throws -> (root: IndexRoot, tail: (TrailerV2, UInt64)) {
        var root = base
        root.clock = clock
        root.garbage = 0  // a file written whole holds nothing dead (V8.1)
        let itemsBuilder = TreeBuilder(store: store, tree: .items)
        let (live, attributeKeys) = try items(itemsBuilder)
        root.items = try itemsBuilder.finish()
        root.liveItems = live
        root.tombstones = itemsBuilder.count - live
        let attributesBuilder = TreeBuilder(store: store, tree: .attributes)
        for k in sortedByKey(attributeKeys, key: { $0 }) { try attributesBuilder.append(LeafEntry(key: k)) }
        root.attributes = try attributesBuilder.finish()
        let historyBuilder = TreeBuilder(store: store, tree: .history)
        try history(historyBuilder)
        root.history = try historyBuilder.finish()
        root.historyEntries = historyBuilder.count
        let tail = try PagedVault.writeFold(
            root: root, store: store, commitStart: commitStart, generation: generation,
            previous: previous, itemCount: live)
        return (root, tail)
    }
}

extension Vault {
    /// Rewrites this version 1 vault in the current format, version 2 (SPEC.md Part 4, V1): the same vault id,
    /// vault key and slots, so every secret that opened it still does; the live records copied as compaction
    /// copies them; each live item given one version, by writer `writerID` (nil: one drawn at random), keyed by
    /// `schema` and kept by `retention`; no tombstones, no history. One atomic rename: a crash leaves the
    /// version 1 file or the version 2 file. Needs `.write`; throws ``VaultError/Code/invalidArgument`` for a
    /// vault that is not version 1. This instance is version 2 when it returns (``Vault/formatVersion``,
    /// ``Vault/versioning``); any other open on the file follows at its next commit or ``Vault/refresh()``.
    public func upgrade(
        schema: IndexSchema = .primaryKeys, retention: Retention = .init(), writerID: UInt64? = nil,
        random: RandomSource = SystemRandom.shared, options: WriteOptions = .init()
    ) throws {
        try naming {
            try upgrade(
                schema: schema, retention: retention, writerID: writerID ?? UInt64(bigEndianBytes: random.bytes(8)),
                random: random, options: options, now: PagedRebuild.clockNow())
        }
    }

    /// ``upgrade(schema:retention:writerID:random:options:)`` with every live item's version at `now` (an hlc).
    package func upgrade(
        schema: IndexSchema, retention: Retention = .init(), writerID: UInt64,
        random: RandomSource = SystemRandom.shared, options: WriteOptions = .init(), now: UInt64
    ) throws {
        // The one conversion between formats: it reads what only version 1's engine holds.
        guard header.formatVersion == 1, let log = engine as? LogEngine else {
            throw VaultError(.invalidArgument, path: path, "\(path) is not a version 1 vault")
        }
        try options.check()
        try exclusively(log) {
            let generation = Vault.rewriteGeneration(after: log.tail.trailer.generation)
            let newHeader = header.with(formatVersion: 2)
            let bytes = newHeader.encode(macKey: keys.header)
            let tmp = try AtomicReplace(path: path, random: random)
            do {
                try tmp.file.write(bytes, at: 0)
                let writer = CommitWriter(
                    file: tmp.file, headerLength: UInt64(bytes.count), vaultID: header.vaultID,
                    keys: keys, random: random, level: options.level, solidMembers: options.solidMembers, at: 0)
                try copyLiveRecords(to: writer, newKeys: keys, reseal: false, random: random)
                try writer.flush()
                let store = FilePageStore(
                    source: RecordSource(
                        file: tmp.file, headerLength: UInt64(bytes.count), vaultID: header.vaultID, keys: keys),
                    limit: writer.position)
                store.random = random
                store.level = options.level
                let version = Version(hlc: now, writer: writerID)
                var entries: [LeafEntry] = []
                var attributeKeys: [[UInt8]] = []
                entries.reserveCapacity(writer.written.count)
                for w in writer.written {
                    let e = ItemEntries.entry(w.item, version: version, schema: schema)
                    attributeKeys += ItemEntries.attributeKeys(w.item, itemKey: e.key, schema: schema)
                    entries.append(e)
                }
                _ = try PagedRebuild.writeFold(
                    store: store, items: entries, attributeKeys: attributeKeys, history: [],
                    base: IndexRoot(schema: schema, retention: retention), clock: version.hlc,
                    commitStart: 0, generation: generation, previous: nil)
                try tmp.commit(overwrite: true, replacing: file) { try ensureStillAtPath("an upgrade") }
            } catch {
                tmp.abandon()
                throw error
            }
        }
        // This instance reads the file it wrote: version 2 from here on, as after its own commit.
        try refresh()
    }
}
