#if canImport(Glibc)
    import Glibc
#endif

/// A vault of format version 2 (SPEC.md Part 4): its index is three copy-on-write B+trees of sealed
/// pages plus a short chain of delta segments, so opening it reads a trailer and a root, and one lookup
/// reads a path of pages, whatever the number of items. Package-only: ``Vault`` is the public API of both
/// format versions and hands a version 2 file to this engine (Vault+Version2.swift).
package final class PagedVault {
    package let path: String
    package internal(set) var header: Header
    var file: File
    var keys: Subkeys
    var vaultKey: SecureBytes
    var store: FilePageStore
    var root: IndexRoot
    /// The changes of the delta segments since the last fold, by tree and key (later ones replace earlier).
    var overlay: [TreeID: [[UInt8]: OverlayChange]] = [:] {
        didSet {
            sortedOverlay = [:]
            overlayClock = nil
        }
    }
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
    var tail: (trailer: TrailerV2, offset: UInt64)
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
    package var schema: PagedSchema { root.schema }
    /// Pages opened from the file so far (not from the cache).
    package var pagesOpened: Int { store.opened }

    // MARK: Creating and opening

    /// Creates an empty version 2 vault (one fold commit of empty trees), written under a temporary name and
    /// linked into place.
    package static func create(
        path: String, group: String, slots: [SlotSecret], schema: PagedSchema, retention: Retention = .init(),
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
            throw VaultError(.wrongKey, "no key slot of \(path) opens with the \(secret.kindName) given")
        }
        guard Header.verifyMAC(headerBytes, key: Subkeys(vaultKey: vk).header) else {
            throw VaultError(.tamperedHeader, "\(path): the header MAC does not verify")
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

    // MARK: Reading

    func reader(_ tree: TreeID) -> TreeReader { TreeReader(store: store, tree: tree, top: root.top(tree)) }

    /// The entry at `key` of `tree`, the deltas first.
    func entry(_ tree: TreeID, _ key: [UInt8]) throws -> LeafEntry? {
        if let c = overlay[tree]?[key] {
            if case .put(let e) = c { return e }
            return nil
        }
        return try reader(tree).lookup(key)
    }

    /// Entries of `tree` with keys ≥ `lower`, in order, the deltas merged in, until `body` returns false.
    func scan(_ tree: TreeID, from lower: [UInt8] = [], _ body: (LeafEntry) throws -> Bool) throws {
        let pending = sortedChanges(tree)
        // The first change at or after `lower`.
        var lo = 0
        var hi = pending.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if pending[mid].key.lexicographicallyPrecedes(lower) { lo = mid + 1 } else { hi = mid }
        }
        var i = lo
        var going = true
        // Overlay entries before `key` are handed over first; a tree entry the overlay names is replaced.
        func drain(before key: [UInt8]?) throws {
            while going, i < pending.count, key.map({ pending[i].key.lexicographicallyPrecedes($0) }) ?? true {
                if case .put(let e) = pending[i].value { going = try body(e) }
                i += 1
            }
        }
        try reader(tree).scan(from: lower) { e in
            try drain(before: e.key)
            guard going else { return false }
            if i < pending.count, pending[i].key == e.key {
                if case .put(let o) = pending[i].value { going = try body(o) }
                i += 1
                return going
            }
            going = try body(e)
            return going
        }
        try drain(before: nil)
    }

    /// The items of `class` whose first key attributes are `values` (all of them: one item at most, as a
    /// primary-key lookup), in key order.
    package func items(class itemClass: ItemClass, keyValues values: [AttributeValue]) throws -> [Item] {
        try items(keyPrefix: ItemKey.prefix(class: itemClass.rawValue, values: values))
    }

    /// The items of `class` whose first key attribute has the type of `sample` (any value of that type), in
    /// key order: the range of the items tree that the type's byte opens (V3.1).
    package func items(class itemClass: ItemClass, keyTypeOfFirst sample: AttributeValue) throws -> [Item] {
        let classPrefix = ItemKey.prefix(class: itemClass.rawValue, values: [])
        return try items(
            keyPrefix: Array(ItemKey.prefix(class: itemClass.rawValue, values: [sample]).prefix(classPrefix.count + 1)))
    }

    /// The live items whose keys start with `prefix`, in key order.
    private func items(keyPrefix prefix: [UInt8]) throws -> [Item] {
        var out: [Item] = []
        try scan(.items, from: prefix) { e in
            guard e.key.starts(with: prefix) else { return false }
            if let item = try ItemEntries.decode(e, schema: root.schema).item { out.append(item) }
            return true
        }
        return out
    }

    /// The live items whose indexed attribute `name` is `value`: a range of the attributes tree, then one
    /// lookup per match.
    package func items(attribute name: String, equals value: AttributeValue) throws -> [Item] {
        guard root.schema.isIndexed(name) else {
            throw VaultError(.invalidArgument, "attribute \(name) is not indexed in this vault")
        }
        let prefix = ItemEntries.attributePrefix(name, value)
        var keys: [[UInt8]] = []
        try scan(.attributes, from: prefix) { e in
            guard e.key.starts(with: prefix) else { return false }
            keys.append(Array(e.key[prefix.count...]))
            return true
        }
        return try keys.compactMap { k in
            guard let e = try entry(.items, k), let item = try ItemEntries.decode(e, schema: root.schema).item else {
                throw VaultError(.damagedIndex, "an attribute entry names an item the items tree lacks")
            }
            return item
        }
    }

    /// The live item with this id, class and attributes (its key attributes name its key), if it is there.
    package func liveItem(id: ItemID, class itemClass: ItemClass, attributes: Attributes) throws -> Item? {
        let key = ItemKey.make(
            class: itemClass.rawValue, attributes: attributes, schema: root.schema.classes[itemClass.rawValue], id: id
        ).key
        guard let e = try entry(.items, key) else { return nil }
        return try ItemEntries.decode(e, schema: root.schema).item
    }

    /// Every live item in key order (class, then key attributes, then id), one page at a time.
    package func forEachItem(_ body: (Item) throws -> Bool) throws {
        try forEachLiveState { s in try s.item.map(body) ?? true }
    }

    /// Every live item with its version (its items-tree entry, decoded), in key order, one page at a time.
    package func forEachLiveState(_ body: (ItemState) throws -> Bool) throws {
        var names = NameCache()
        try streaming {
            try scan(.items) { e in
                let s = try ItemEntries.decode(e, schema: root.schema, names: &names)
                return s.item == nil ? true : try body(s)
            }
        }
    }

    /// Runs `body`, a walk over whole trees, without keeping the leaves it reads: its memory stays that of
    /// one page whatever the size of the trees.
    func streaming<T>(_ body: () throws -> T) rethrows -> T {
        let keeps = store.keepsLeaves
        store.keepsLeaves = false
        defer { store.keepsLeaves = keeps }
        return try body()
    }

    /// As ``streaming(_:)``, for a walk over the trees of this vault and `other` together (a difference).
    func streaming<T>(with other: PagedVault?, _ body: () throws -> T) rethrows -> T {
        try streaming { try other.map { try $0.streaming(body) } ?? body() }
    }

    /// Runs `body`, a run of lookups in key order, keeping the leaves it reads (inside a walk that keeps none):
    /// neighbouring keys mostly lie in one leaf, which is then opened once, not once per key.
    func keepingLeaves<T>(with other: PagedVault?, _ body: () throws -> T) rethrows -> T {
        let (mine, theirs) = (store.keepsLeaves, other?.store.keepsLeaves)
        store.keepsLeaves = true
        other?.store.keepsLeaves = true
        defer {
            store.keepsLeaves = mine
            if let theirs { other?.store.keepsLeaves = theirs }
        }
        return try body()
    }

    /// The version of the item at `item`'s key, if it is there.
    package func version(of item: Item) throws -> Version? {
        let key = ItemKey.make(
            class: item.itemClass.rawValue, attributes: item.attributes,
            schema: root.schema.classes[item.itemClass.rawValue], id: item.id
        ).key
        return try entry(.items, key).map { try ItemEntries.decode($0, schema: root.schema).version }
    }

    /// Kept earlier versions of the item with this id, oldest first.
    package func history(of id: ItemID) throws -> [(version: Version, why: UInt8, size: UInt64)] {
        try keptVersions(of: id).map { ($0.version, $0.why, $0.item.size) }
    }

    /// Kept earlier versions of the item with this id (its history entries, V3.4), oldest first, each with the
    /// item as it was: ``read(_:)`` gives its value.
    package func keptVersions(of id: ItemID) throws -> [KeptVersion] {
        var out: [KeptVersion] = []
        try forEachKeptVersion(from: id.bytes) { k in
            guard k.item.id == id else { return false }
            out.append(k)
            return true
        }
        return out
    }

    /// Every kept version of every item (the history tree in key order: by item id, then version), from the
    /// item id whose bytes are `lower`, until `body` returns false.
    package func forEachKeptVersion(from lower: [UInt8] = [], _ body: (KeptVersion) throws -> Bool) throws {
        try scan(.history, from: lower) { e in
            let h = try ItemEntries.decodeHistory(e)
            return try body(KeptVersion(version: h.version, why: h.why, item: h.item))
        }
    }

    /// The items-tree entry (live or tombstone) of the item with `item`'s id: looked up at the key `item`'s
    /// attributes make (a tombstone keeps the key of the last live version, which a deletion's kept version
    /// has), else found by a scan of the items tree.
    package func state(of item: Item) throws -> ItemState? {
        let schema = root.schema
        let key = ItemKey.make(
            class: item.itemClass.rawValue, attributes: item.attributes,
            schema: schema.classes[item.itemClass.rawValue], id: item.id
        ).key
        if let e = try entry(.items, key) { return try ItemEntries.decode(e, schema: schema) }
        var found: ItemState?
        var names = NameCache()
        try scan(.items) { e in
            guard e.key.suffix(16).elementsEqual(item.id.bytes) else { return true }
            found = try ItemEntries.decode(e, schema: schema, names: &names)
            return false
        }
        return found
    }

    /// The keys of `id`'s history entries that retention (V8) drops once `adding` newer ones join them: past
    /// the `keep` most recent, or older than `days` before `now` (an hlc). Read from the item's range of the
    /// history tree, deltas included: a commit that touches an item trims its history.
    func historyPastRetention(of id: ItemID, adding: Int, now: UInt64) throws -> [[UInt8]] {
        let r = root.retention
        let cutoff = Retention.cutoff(days: r.days, before: now)
        var keys: [[UInt8]] = []
        try scan(.history, from: id.bytes) { e in
            guard e.key.starts(with: id.bytes) else { return false }
            keys.append(e.key)
            return true
        }
        // Oldest first (the key orders an item's versions); the newest `keep - adding` stay if young enough.
        let keepOld = max(0, r.keep - adding)
        return keys.enumerated().filter { i, k in
            i < keys.count - keepOld || UInt64(bigEndianBytes: Array(k[16..<24])) < cutoff
        }.map(\.element)
    }

    /// Bytes on disk of the index this commit reads: every page of the three trees, the root and the delta
    /// segments of the chain (reads every page).
    package func indexBytes() throws -> UInt64 {
        var bytes = tail.trailer.rootLength
        for tree in [TreeID.items, .attributes, .history] {
            _ = try reader(tree).verify({ _ in }, page: { bytes += $0.length })
        }
        return bytes + (try chainDeltaBytes())
    }

    /// Bytes of the delta segments of the chain since the last fold (their trailers read back, at most
    /// `DELTA_CHAIN_MAX` − 1 of them).
    func chainDeltaBytes() throws -> UInt64 {
        var bytes: UInt64 = 0
        var t = tail.trailer
        while !t.wroteRoot {
            bytes += t.deltaLength
            let b = try file.read(TrailerV2.size, at: UInt64(header.length) + t.previous)
            guard let p = TrailerV2.decode(b, at: t.previous, vaultID: header.vaultID, key: keys.trailer) else { break }
            t = p
        }
        return bytes
    }

    /// The record `e` of `tree` names and the bytes it counts as garbage once nothing names it (V8.1): its
    /// length, or, when its value is smaller, the value's size + 4,096 (a member of a shared solid record
    /// does not count the whole record). An entry that does not decode counts the whole record: a hint.
    func recordShare(_ tree: TreeID, _ e: LeafEntry) -> (id: ID128, bytes: UInt64)? {
        guard let rec = e.record else { return nil }
        let size: UInt64?
        switch tree {
        case .items: size = (try? ItemEntries.decode(e, schema: root.schema))?.item?.size
        case .history: size = (try? ItemEntries.decodeHistory(e))?.item.size
        case .attributes: return nil
        }
        return (rec.id, min(rec.length, size.flatMap { $0.adding(4096) } ?? rec.length))
    }

    /// ``recordShare(_:_:)`` of the chain's put at `key`, if the chain puts an entry naming a record there:
    /// a change of that key supersedes it.
    func pendingRecordShare(_ tree: TreeID, _ key: [UInt8]) -> (id: ID128, bytes: UInt64)? {
        guard case .put(let e) = overlay[tree]?[key] else { return nil }
        return recordShare(tree, e)
    }

    /// Whether the root's garbage count (V8.1) has passed the automatic-compaction threshold: more than
    /// 1 MiB and more than half the body, as version 1 judges its dead bytes (SPEC.md §9).
    package var shouldCompact: Bool {
        Vault.passesCompactionThreshold(dead: root.garbage, body: tail.offset + UInt64(TrailerV2.size))
    }

    /// The root's count of body bytes the index no longer needs (V8.1), as the last fold wrote it.
    package var garbage: UInt64 { root.garbage }

    /// Bytes on disk of each tree's pages (the benchmarks' breakdown of ``indexBytes()``).
    package func treeBytes() throws -> [(tree: String, bytes: UInt64, pages: Int)] {
        try [TreeID.items, .attributes, .history].map { tree in
            var bytes: UInt64 = 0
            var pages = 0
            _ = try reader(tree).verify(
                { _ in },
                page: {
                    bytes += $0.length
                    pages += 1
                })
            return ("\(tree)", bytes, pages)
        }
    }

    package func read(_ item: Item) throws -> [UInt8] {
        var out: [UInt8] = []
        try source.read(item) { out.append(contentsOf: $0) }
        return out
    }

    // MARK: Writing

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
        autoCompact: Bool = true, now: () -> UInt64 = PagedTransaction.realTimeMilliseconds,
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
            throw VaultError(.io, "\(path) was replaced since it was opened; nothing was changed, open it again")
        }
        try catchUp()
        return try body()
    }

    func commitLocked(
        level: Int32, random: RandomSource, solidMembers: Int, now: UInt64, _ body: (PagedTransaction) throws -> Void
    ) throws {
        try appendCommit(level: level, random: random, solidMembers: solidMembers) { writer in
            let tx = try PagedTransaction(vault: self, writer: writer, random: random, now: now)
            try body(tx)
            return (try tx.finish(), tx.clock, tx.liveChange)
        }
    }

    /// The tree changes of one commit, per tree in ascending key order; the clock of its last version; the
    /// change in live items.
    typealias CommitChanges = (perTree: [(tree: TreeID, changes: [TreeWriter.Change])], clock: UInt64, liveChange: Int)

    /// Appends one commit (under the lock): `make` writes its records through the writer it is given and
    /// returns its tree changes, which become a delta segment or a fold.
    func appendCommit(
        level: Int32, random: RandomSource, solidMembers: Int, _ make: (CommitWriter) throws -> CommitChanges
    ) throws {
        let generation = uncommitted ? 1 : try Vault.nextGeneration(after: tail.trailer.generation, path)
        let end = uncommitted ? 0 : tail.offset + UInt64(TrailerV2.size)
        if try file.size() != UInt64(header.length) + end { try file.truncate(to: UInt64(header.length) + end) }
        let writer = CommitWriter(
            file: file, headerLength: UInt64(header.length), vaultID: header.vaultID, keys: keys,
            random: random, level: level, solidMembers: solidMembers, at: end)
        do {
            var (perTree, clock, liveChange) = try make(writer)
            let changeCount = perTree.reduce(0) { $0 + $1.changes.count }
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
                changeCount > PagedLimits.foldAfterChanges
                ? [] : perTree.flatMap { t in t.changes.map { (tree: t.tree, change: $0) } }
            try PageCodec.checkOneExtentPerRecord(changes.lazy.compactMap(\.change.entry))
            let delta = changes.isEmpty ? [] : DeltaCodec.encode(changes)
            // A delta segment's keys and entries count their tree and operation bytes against KEY_MAX and
            // ENTRY_MAX (V2): a change that one cannot hold folds, and the tree writers check it against a page's.
            let fitsDelta = changes.allSatisfy {
                PageCodec.fits($0.change.entry ?? LeafEntry(key: $0.change.key), inDelta: true)
            }
            if uncommitted || chain >= PagedLimits.deltaChainMax
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
                    let top = try TreeWriter(store: store, tree: tree).apply(
                        pending, to: root.top(tree),
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
