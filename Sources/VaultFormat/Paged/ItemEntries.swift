/// A version (SPEC.md Part 4, V5): a hybrid logical clock and the writer that made it, ordered by clock,
/// then writer.
public struct Version: Hashable, Comparable, Sendable {
    /// The hybrid logical clock: milliseconds since 1970 in the upper 48 bits, a counter in the lower 16.
    public var hlc: UInt64
    /// The writer that made the version (a random id per user or program).
    public var writer: UInt64

    /// Milliseconds since 1970 of the version's clock.
    public var milliseconds: UInt64 { hlc >> 16 }

    /// The version of clock `hlc` by writer `writer`.
    public init(hlc: UInt64, writer: UInt64) {
        self.hlc = hlc
        self.writer = writer
    }

    /// Versions order by clock, then by writer (SPEC.md Part 4, V5): the later of two is the newer.
    public static func < (a: Version, b: Version) -> Bool { (a.hlc, a.writer) < (b.hlc, b.writer) }
}

/// An items-tree entry, decoded: a live item or a tombstone, with its version.
public struct ItemState: Hashable, Sendable {
    /// The entry's key in the items tree (SPEC.md Part 4, V3.4).
    package var key: [UInt8]
    /// The item's id.
    public var id: ItemID
    /// The version the item has now (for a tombstone: the version of its deletion).
    public var version: Version
    /// The item, boxed: a state is 48 bytes wherever it is held (a merge keeps several maps of them, a tombstone
    /// bomb a million), and copies of one state share one item.
    private var boxed: ItemBox?

    /// The item; nil for a tombstone (a deleted item).
    public var item: Item? {
        get { boxed?.item }
        set { boxed = newValue.map(ItemBox.init) }
    }

    package init(key: [UInt8], id: ItemID, version: Version, item: Item?) {
        self.key = key
        self.id = id
        self.version = version
        self.boxed = item.map(ItemBox.init)
    }

    /// Whether both are the same item (key and id) at the same version, with equal contents.
    public static func == (a: ItemState, b: ItemState) -> Bool {
        a.key == b.key && a.id == b.id && a.version == b.version && a.item == b.item
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into h: inout Hasher) {
        h.combine(key)
        h.combine(id)
        h.combine(version)
        h.combine(item)
    }
}

/// An immutable item on the heap (``ItemState``).
private final class ItemBox: Sendable {
    let item: Item

    init(_ item: Item) { self.item = item }
}

/// A kept earlier version of an item (a history entry, V3.4): the version it had, why it was kept (1 replaced
/// by an update, 2 lost a merge, 3 deleted) and the item as it was, its value where the entry's record says.
public struct KeptVersion: Hashable, Sendable {
    /// The version the item had.
    public var version: Version
    /// Why it was kept: 1 replaced by an update, 2 lost a merge, 3 deleted (``reason``).
    package var why: UInt8
    /// The item as it was; ``Versioning/read(_:)`` reads its value.
    public var item: Item

    /// Why a version was kept.
    public enum Reason: Sendable, Hashable {
        /// A later version replaced it (an update, or a restore of another version).
        case replaced
        /// It lost a merge to the other copy's newer version.
        case lostMerge
        /// The item was deleted.
        case deleted
        /// A reason a later version of the format added.
        case other(UInt8)
    }

    /// Why this version was kept.
    public var reason: Reason {
        switch why {
        case 1: return .replaced
        case 2: return .lostMerge
        case 3: return .deleted
        default: return .other(why)
        }
    }
}

/// Items <-> entries of the three trees (V3.4).
enum ItemEntries {
    static func entry(_ item: Item, version: Version, schema: IndexSchema) -> LeafEntry {
        let cs = schema.classes[item.itemClass.rawValue]
        let (key, absent) = ItemKey.make(
            class: item.itemClass.rawValue, attributes: item.attributes, schema: cs, id: item.id)
        let keyNames = Set((cs?.keyAttributes ?? []).map(\.name))
        var w = ByteWriter(capacity: 64)
        w.append(0)
        w.appendVarint(version.hlc)
        w.appendVarint(absent)
        let rest = item.attributes.pairs.filter { !keyNames.contains($0.name) }
        w.appendVarint(rest.count)
        IndexCodec.encodeAttributes(rest, into: &w)
        w.appendVarint(item.size)
        w.appendVarint(item.location.member)
        w.appendVarint(item.location.dataOffset)
        let l = item.location
        return LeafEntry(
            key: key, record: RecordRef(id: l.recordID, offset: l.offset, length: l.length), writer: version.writer,
            rest: w.bytes)
    }

    static func tombstone(key: [UInt8], version: Version) -> LeafEntry {
        var w = ByteWriter(capacity: 12)
        w.append(1)
        w.appendVarint(version.hlc)
        w.appendVarint(0)
        return LeafEntry(key: key, writer: version.writer, rest: w.bytes)
    }

    static func decode(_ e: LeafEntry, schema: IndexSchema) throws -> ItemState {
        var names = NameCache()
        return try decode(e, schema: schema, names: &names)
    }

    /// As ``decode(_:schema:)``, with class and attribute names carried from entry to entry (a scan decodes
    /// each name once, not once per item).
    static func decode(_ e: LeafEntry, schema: IndexSchema, names: inout NameCache) throws -> ItemState {
        let (id, version, item) = try decodeParts(e, schema: schema, names: &names)
        return ItemState(key: e.key, id: id, version: version, item: item)
    }

    /// ``decode(_:schema:names:)``'s id, version and item (nil for a tombstone), without the state around them:
    /// a scan that wants the items alone makes no box and keeps no key per item.
    static func decodeParts(_ e: LeafEntry, schema: IndexSchema, names: inout NameCache) throws -> (
        id: ItemID, version: Version, item: Item?
    ) {
        // The class's schema, looked up once (by the key's parse).
        var classSchema: ClassSchema?
        let (cls, values, id) = try ItemKey.parse(e.key, names: &names) {
            classSchema = schema.classes[$0]
            return classSchema
        }
        var r = ByteReader(e.rest, failure: .damagedIndex, item: id)
        let flags = try r.readU8()
        guard flags <= 1 else { throw r.fail("flags \(flags)") }
        guard let writer = e.writer else { throw r.fail("no writer") }
        let version = Version(hlc: try r.readVarint(), writer: writer)
        let absent = try r.readVarint()
        let keyAttributes = classSchema?.keyAttributes ?? []
        guard absent >> UInt64(keyAttributes.count) == 0 else { throw r.fail("absent bits past its key attributes") }
        if flags == 1 {
            guard e.record == nil, absent == 0, r.isAtEnd else { throw r.fail("a tombstone with a value") }
            return (id, version, nil)
        }
        guard let rec = e.record else { throw r.fail("a live item without a record") }
        // At most ATTRS_MAX attributes in all: the body holds those besides the key attributes the item has.
        let present = keyAttributes.count - absent.nonzeroBitCount
        var pairs = try IndexCodec.decodeAttributes(
            &r, count: try r.readCount(max: Limits.attrsMax - present, "attribute count"), names: &names,
            room: present)
        var attributes = Attributes(sortedPairs: pairs)
        pairs = []
        for (i, k) in keyAttributes.enumerated() {
            if absent & (1 << UInt64(i)) == 0 {
                guard attributes.insertNew(k.name, values[i]) else {
                    throw r.fail("key attribute \(k.name) in its body")
                }
            } else {
                guard !attributes.contains(k.name) else { throw r.fail("key attribute \(k.name) in its body") }
                guard values[i] == k.defaultValue else {
                    throw r.fail("an absent key attribute whose key is not the default")
                }
            }
        }
        return (id, version, try valueAtEnd(&r, id: id, class: cls, attributes: attributes, record: rec))
    }

    /// The version of a tombstone entry that ``decode(_:schema:names:)`` accepted before (nil: a live item's entry),
    /// read without parsing its key again: for a second pass over entries a first pass checked.
    static func acceptedTombstoneVersion(_ e: LeafEntry) throws -> Version? {
        guard e.rest.first == 1, let writer = e.writer else { return nil }
        var r = ByteReader(e.rest, from: 1, failure: .damagedIndex, what: "tombstone")
        return Version(hlc: try r.readVarint(), writer: writer)
    }

    /// The end of a live or history body: value size, member index and data offset, in the record `rec`.
    static func valueAtEnd(
        _ r: inout ByteReader, id: ItemID, class cls: String, attributes: Attributes, record rec: RecordRef
    ) throws -> Item {
        let size = try r.readVarint()
        guard size <= Limits.valueMax else { throw r.fail("value size \(size)") }
        let member = try r.readCount(max: Limits.membersMax - 1, "member index")
        let dataOffset = try r.readVarint()
        guard dataOffset.adding(size) != nil else { throw r.fail("value extent overflows") }
        guard r.isAtEnd else { throw r.fail("\(r.remaining) bytes after its body") }
        return Item(
            id: id, itemClass: ItemClass(rawValue: cls), attributes: attributes, size: size,
            location: RecordLocation(
                recordID: rec.id, offset: rec.offset, length: rec.length, member: member, dataOffset: dataOffset))
    }

    /// The attributes-tree keys of a live item (indexed attributes only).
    static func attributeKeys(_ item: Item, itemKey: [UInt8], schema: IndexSchema) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        forEachAttributeKey(item, itemKey: itemKey, schema: schema) { keys.append($0) }
        return keys
    }

    /// Hands each of ``attributeKeys(_:itemKey:schema:)`` to `body` in turn, built in one buffer (valid during
    /// the call only).
    static func forEachAttributeKey(
        _ item: Item, itemKey: [UInt8], schema: IndexSchema, _ body: ([UInt8]) -> Void
    ) {
        var k: [UInt8] = []
        for a in item.attributes.pairs where schema.isIndexed(a.name) {
            k.removeAll(keepingCapacity: true)
            KeyCoding.appendEscaped(a.name.utf8, to: &k)
            KeyCoding.appendTyped(a.value, to: &k)
            k.append(contentsOf: itemKey)
            body(k)
        }
    }

    /// The attributes-tree prefix of every item whose `name` is `value`.
    static func attributePrefix(_ name: String, _ value: AttributeValue) -> [UInt8] {
        var k: [UInt8] = []
        KeyCoding.appendEscaped(name.utf8, to: &k)
        KeyCoding.appendTyped(value, to: &k)
        return k
    }

    /// A history entry: the version `item` had (V3.4).
    static func history(_ item: Item, version: Version, why: UInt8) -> LeafEntry {
        var key = item.id.bytes
        key.append(contentsOf: withUnsafeBytes(of: version.hlc.bigEndian, Array.init))
        key.append(contentsOf: withUnsafeBytes(of: version.writer.bigEndian, Array.init))
        var w = ByteWriter(capacity: 64)
        w.append(why)
        w.appendString(item.itemClass.rawValue)
        w.appendVarint(item.attributes.count)
        IndexCodec.encodeAttributes(item.attributes.pairs, into: &w)
        w.appendVarint(item.size)
        w.appendVarint(item.location.member)
        w.appendVarint(item.location.dataOffset)
        let l = item.location
        return LeafEntry(key: key, record: RecordRef(id: l.recordID, offset: l.offset, length: l.length), rest: w.bytes)
    }
}

/// Delta segments (V6): changes to the three trees, laid out as a leaf of kind 4.
enum DeltaCodec {
    static func encode(_ changes: [(tree: TreeID, change: TreeWriter.Change)]) -> [UInt8] {
        var w = ByteWriter(capacity: 4096)
        w.append(4)
        w.append(0)
        w.append(0)
        let entries: [LeafEntry] = changes.map { c in
            switch c.change {
            case .put(let e):
                return LeafEntry(key: [c.tree.rawValue] + e.key, record: e.record, writer: e.writer, rest: [1] + e.rest)
            case .remove(let k): return LeafEntry(key: [c.tree.rawValue] + k, rest: [2])
            }
        }
        PageCodec.encodeLeafEntries(entries, hasTables: true, op: true, into: &w)
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> [(tree: TreeID, change: TreeWriter.Change)] {
        var r = ByteReader(bytes, failure: .damagedIndex, what: "delta segment")
        guard try r.readU8() == 4, try r.readU8() == 0, try r.readU8() == 0 else { throw r.fail("not a delta segment") }
        let entries = try PageCodec.decodeLeafEntries(&r, hasTables: true, op: true)
        guard r.isAtEnd else { throw r.fail("\(r.remaining) bytes after the last entry") }
        return try entries.map { e in
            guard let tree = TreeID(rawValue: e.key[0]), e.key.count >= 2 else { throw r.fail("an entry of no tree") }
            let key = Array(e.key.dropFirst())
            if e.rest[0] == 2 { return (tree, .remove(key)) }
            guard tree.hasTables || (e.record == nil && e.writer == nil) else {
                throw r.fail("tables named for tree 2")
            }
            // the op byte alone
            guard tree.hasTables || e.rest.count == 1 else { throw r.fail("a put to the attributes tree with a body") }
            return (
                tree, .put(LeafEntry(key: key, record: e.record, writer: e.writer, rest: Array(e.rest.dropFirst())))
            )
        }
    }
}
