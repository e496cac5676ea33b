/// What the items of a version 2 vault are keyed and indexed by (SPEC.md Part 4, V4): each class's key
/// attributes with their defaults, and the indexed attribute names (a trailing `*` is a prefix). A vault's
/// schema is fixed when it is created (``NewVaultFormat/current(schema:retention:writerID:)``); a lookup by
/// key or by indexed attribute (``Vault/itemIndex``) reads a few pages of the vault, not every item.
public struct IndexSchema: Hashable, Sendable {
    /// The key attributes of each class, by class (`genp`, ...). A class not named has no key attributes: its
    /// items sort by item id.
    public var classes: [String: ClassSchema]
    /// The attribute names with an entry per value in the attributes tree (`name`, or `prefix*` for every
    /// name that starts with `prefix`), so that ``ItemIndex/items(attribute:equals:)`` finds them.
    public var indexed: [String]

    /// A schema keying `classes` as given and indexing the attribute names `indexed`.
    public init(classes: [String: ClassSchema] = [:], indexed: [String] = []) {
        self.classes = classes
        self.indexed = indexed
    }

    /// Apple's five classes, each keyed by its primary key (SPEC.md §K4), nothing indexed: what `kcar pack`
    /// writes and what ``Vault/create(path:group:slots:format:options:overwrite:random:_:)`` writes unless
    /// told. A generic password is keyed by `sync`, `svce` and `acct`, so that one lookup by service and
    /// account (``ItemIndex/items(class:keyValues:)``) finds it.
    public static let primaryKeys: IndexSchema = {
        let no = AttributeValue.bool(false)
        let text = AttributeValue.string("")
        let number = AttributeValue.integer(0)
        let bytes = AttributeValue.data([])
        let certificates = ClassSchema(keyAttributes: [
            ("sync", no), ("ctyp", number), ("issr", bytes), ("slnr", bytes)
        ])
        return IndexSchema(classes: [
            "genp": ClassSchema(keyAttributes: [("sync", no), ("svce", text), ("acct", text)]),
            "inet": ClassSchema(keyAttributes: [
                ("sync", no), ("srvr", text), ("ptcl", text), ("port", number), ("path", text), ("sdmn", text),
                ("atyp", text), ("acct", text)
            ]),
            "cert": certificates,
            "idnt": certificates,
            "keys": ClassSchema(keyAttributes: [
                ("sync", no), ("kcls", text), ("klbl", bytes), ("atag", bytes), ("type", text), ("bsiz", number),
                ("esiz", number)
            ])
        ])
    }()

    /// Generic passwords keyed by service and account, nothing indexed: the smallest schema, which the
    /// fixture recipes, hostile cases and tests write.
    public static let servicesAndAccounts = IndexSchema(classes: [
        "genp": ClassSchema(keyAttributes: [("svce", .string("")), ("acct", .string(""))])
    ])

    /// Whether attribute `name` has entries in the attributes tree.
    public func isIndexed(_ name: String) -> Bool {
        // On UTF-8 bytes: String.hasSuffix compares by grapheme, which cost a scan of every item its time.
        indexed.contains { $0.utf8.last == UInt8(ascii: "*") ? name.utf8.starts(with: $0.utf8.dropLast()) : $0 == name }
    }
}

/// How long a version 2 vault keeps what it no longer shows (SPEC.md Part 4, V8): the past versions of an
/// item (for history and restore) and the tombstones of deleted items (so that a merge with
/// an older copy does not bring them back).
public struct Retention: Hashable, Sendable {
    /// The most past versions kept per item, 0 to ``keepMax``.
    public var keep: Int
    /// Past versions older than this many days go at the next compaction.
    public var days: Int
    /// Tombstones older than this many days go at the next compaction: a copy last merged longer ago than
    /// this may bring a deleted item back.
    public var tombstoneDays: Int

    /// The most versions of an item a vault keeps in history (SPEC.md Part 4, V2: `HISTORY_KEEP_MAX`).
    public static let keepMax = PagedLimits.historyKeepMax

    /// Keeps up to `keep` past versions per item for `days` days, and tombstones for `tombstoneDays` days.
    public init(keep: Int = 10, days: Int = 90, tombstoneDays: Int = 90) {
        self.keep = keep
        self.days = days
        self.tombstoneDays = tombstoneDays
    }

    /// One day in hlc units (V5: milliseconds in the upper 48 bits).
    static let day: UInt64 = 86_400_000 << 16

    /// The hlc `days` days before `now` (0 if that is before 1970): versions below it are past retention.
    static func cutoff(days: Int, before now: UInt64) -> UInt64 {
        let (span, overflow) = UInt64(days).multipliedReportingOverflow(by: day)
        return overflow || span > now ? 0 : now - span
    }
}

/// The index root a commit's trailer names (V4).
package struct IndexRoot: Hashable, Sendable {
    package var items: PageRef?
    package var attributes: PageRef?
    package var history: PageRef?
    package var liveItems: UInt64 = 0
    package var tombstones: UInt64 = 0
    package var historyEntries: UInt64 = 0
    var schema: IndexSchema
    package var clock: UInt64 = 0
    var retention = Retention()
    /// Body bytes the index no longer needs, as the folds counted them (V8.1): a hint for the compaction
    /// policy only, which a hostile file may set to anything.
    var garbage: UInt64 = 0

    /// Adds `bytes` to ``garbage``, saturating: a forged count near 2^64 must not trap.
    mutating func addGarbage(_ bytes: UInt64) { garbage = garbage.saturatingAdding(bytes) }

    func top(_ tree: TreeID) -> PageRef? {
        switch tree {
        case .items: return items
        case .attributes: return attributes
        case .history: return history
        }
    }

    mutating func setTop(_ tree: TreeID, _ ref: PageRef?) {
        switch tree {
        case .items: items = ref
        case .attributes: attributes = ref
        case .history: history = ref
        }
    }

    package func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 256)
        w.append(3)
        w.append(0)
        w.append(0)
        for ref in [items, attributes, history] {
            guard let ref else {
                w.append(0)
                continue
            }
            w.append(1)
            w.append(contentsOf: ref.id.bytes)
            w.appendVarint(ref.offset)
            w.appendVarint(ref.length)
            w.appendVarint(ref.count)
        }
        w.appendVarint(liveItems)
        w.appendVarint(tombstones)
        w.appendVarint(historyEntries)
        let classes = schema.classes.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        w.appendVarint(classes.count)
        for c in classes {
            w.appendString(c)
            let keys = schema.classes[c]!.keyAttributes
            w.appendVarint(keys.count)
            IndexCodec.encodeAttributes(keys.map { (name: $0.name, value: $0.defaultValue) }, into: &w)
        }
        let indexed = schema.indexed.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        w.appendVarint(indexed.count)
        for n in indexed { w.appendString(n) }
        w.appendLE(clock)
        w.appendVarint(retention.keep)
        w.appendVarint(retention.days)
        w.appendVarint(retention.tombstoneDays)
        w.appendVarint(garbage)
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> IndexRoot {
        var r = ByteReader(bytes, failure: .damagedIndex, what: "index root")
        guard try r.readU8() == 3, try r.readU8() == 0, try r.readU8() == 0 else { throw r.fail("not an index root") }
        var refs: [PageRef?] = []
        for _ in 0..<3 {
            switch try r.readU8() {
            case 0: refs.append(nil)
            case 1:
                let ref = PageRef(
                    id: try r.readID(), offset: try r.readVarint(), length: try r.readVarint(),
                    count: try r.readVarint())
                guard ref.length >= 1, ref.count >= 1 else { throw r.fail("a tree of no bytes or no entries") }
                refs.append(ref)
            default: throw r.fail("a tree presence byte that is not 0 or 1")
            }
        }
        let live = try r.readVarint()
        let tombs = try r.readVarint()
        let hist = try r.readVarint()
        guard live <= UInt64(Limits.itemsMax) else { throw r.fail("\(live) live items (ITEMS_MAX)") }
        guard (refs[0]?.count ?? 0) == live &+ tombs, (refs[0]?.count ?? 0) >= live, (refs[2]?.count ?? 0) == hist
        else {
            throw r.fail("its counts do not match its trees")
        }
        var names = NameCache()
        var classes: [String: ClassSchema] = [:]
        var previous: String?
        for _ in 0..<(try r.readCount(max: PagedLimits.schemaClassesMax, "schema classes")) {
            let c = try r.readString(max: Limits.attrNameMax, "class")
            guard !c.isEmpty, previous.map({ $0.utf8.lexicographicallyPrecedes(c.utf8) }) ?? true else {
                throw r.fail("schema classes not strictly ascending")
            }
            previous = c
            let k = try r.readCount(max: PagedLimits.keyAttrsMax, "key attributes")
            // Key attributes are in schema order, not sorted: each is read as a one-attribute list.
            var keys: [(name: String, defaultValue: AttributeValue)] = []
            for _ in 0..<k {
                let a = try IndexCodec.decodeAttributes(&r, count: 1, names: &names)[0]
                guard !keys.contains(where: { $0.name == a.name }) else {
                    throw r.fail("key attribute \(a.name) named twice")
                }
                keys.append((a.name, a.value))
            }
            classes[c] = ClassSchema(keyAttributes: keys)
        }
        var indexed: [String] = []
        for _ in 0..<(try r.readCount(max: PagedLimits.indexedMax, "indexed attributes")) {
            let n = try r.readString(max: Limits.attrNameMax, "indexed attribute")
            guard !n.isEmpty, indexed.last.map({ $0.utf8.lexicographicallyPrecedes(n.utf8) }) ?? true else {
                throw r.fail("indexed names not strictly ascending")
            }
            indexed.append(n)
        }
        let clock = try r.readLE(UInt64.self)
        let keep = try r.readCount(max: PagedLimits.historyKeepMax, "history kept")
        let days = try r.readCount(max: 1 << 20, "history days")
        let tdays = try r.readCount(max: 1 << 20, "tombstone days")
        // Any value is accepted: it only steers the compaction policy (V8.1).
        let garbage = try r.readVarint()
        guard r.isAtEnd else { throw r.fail("\(r.remaining) bytes after its last field") }
        return IndexRoot(
            items: refs[0], attributes: refs[1], history: refs[2], liveItems: live, tombstones: tombs,
            historyEntries: hist,
            schema: IndexSchema(classes: classes, indexed: indexed), clock: clock,
            retention: Retention(keep: keep, days: days, tombstoneDays: tdays), garbage: garbage)
    }
}

/// The 128-byte commit trailer of version 2 (V7).
package struct TrailerV2: Equatable, TrailerLayout {
    package static let size = 128
    static let magic = Array("KCARTRL2".utf8)
    package static let none = UInt64.max

    package var generation: UInt64
    package var commitStart: UInt64
    package var previous: UInt64
    package var rootOffset: UInt64
    package var rootLength: UInt64
    package var rootID: ID128
    package var deltaOffset: UInt64
    package var deltaLength: UInt64
    package var itemCount: UInt64
    package var wroteRoot: Bool
    package var chain: UInt16

    static let macLabel = "kcar-trl-v2"

    package func encode(vaultID: [UInt8], key: SecureBytes) -> [UInt8] {
        var w = ByteWriter(capacity: TrailerV2.size)
        w.append(contentsOf: TrailerV2.magic)
        for v in [generation, commitStart, previous, rootOffset, rootLength] { w.appendLE(v) }
        w.append(contentsOf: rootID.bytes)
        for v in [deltaOffset, deltaLength, itemCount] { w.appendLE(v) }
        w.appendLE(UInt16(wroteRoot ? 1 : 0))
        w.appendLE(chain)
        w.appendLE(UInt32(0))
        w.append(contentsOf: Sodium.mac(key: key, TrailerV2.macInput(vaultID: vaultID, w.bytes[0..<96])))
        return w.bytes
    }

    static func decode(_ b: [UInt8], at: UInt64, vaultID: [UInt8], key: SecureBytes) -> TrailerV2? {
        guard let t = candidate(b[...], at: at),
            Sodium.constantTimeEqual(Sodium.mac(key: key, macInput(vaultID: vaultID, b[0..<96])), Array(b[96..<128]))
        else { return nil }
        return t
    }

    /// The fields, if they obey every rule of V7 for a trailer at body offset `at` (no key needed).
    static func candidate(_ b: ArraySlice<UInt8>, at: UInt64) -> TrailerV2? {
        guard b.count == size else { return nil }
        let o = b.startIndex
        for i in 0..<8 where b[o + i] != magic[i] { return nil }
        func u64(_ i: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[o + i + $1]) << (8 * UInt64($1)) } }
        let flags = UInt16(b[o + 88]) | UInt16(b[o + 89]) << 8
        let chain = UInt16(b[o + 90]) | UInt16(b[o + 91]) << 8
        guard flags & ~1 == 0, (92..<96).allSatisfy({ b[o + $0] == 0 }) else { return nil }
        let t = TrailerV2(
            generation: u64(8), commitStart: u64(16), previous: u64(24), rootOffset: u64(32), rootLength: u64(40),
            rootID: ID128(b[(o + 48)..<(o + 64)]), deltaOffset: u64(64), deltaLength: u64(72), itemCount: u64(80),
            wroteRoot: flags & 1 == 1, chain: chain)
        guard t.generation >= 1, t.commitStart <= at, t.itemCount <= UInt64(Limits.itemsMax), t.rootLength >= 1,
            let rootEnd = t.rootOffset.adding(t.rootLength), rootEnd <= at,
            (t.previous == none) == (t.commitStart == 0),
            t.previous == none || t.previous.adding(UInt64(size)) == t.commitStart,
            t.previous != none || t.wroteRoot, Int(t.chain) < PagedLimits.deltaChainMax, t.wroteRoot == (t.chain == 0)
        else { return nil }
        if t.wroteRoot {
            guard t.deltaOffset == none, t.deltaLength == 0, t.rootOffset >= t.commitStart, rootEnd == at else {
                return nil
            }
        } else {
            guard t.deltaLength >= 1, t.deltaOffset >= t.commitStart, t.deltaOffset.adding(t.deltaLength) == at,
                rootEnd <= t.commitStart
            else { return nil }
        }
        return t
    }
}
