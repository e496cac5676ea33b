/// Where a page lies, and what it must be (SPEC.md Part 4, V3.2): the id its blocks are sealed under, its
/// extent in the body, and the entries in the leaves below it.
package struct PageRef: Hashable, Sendable {
    package var id: ID128
    package var offset: UInt64
    package var length: UInt64
    package var count: UInt64

    package init(id: ID128, offset: UInt64, length: UInt64, count: UInt64) {
        self.id = id
        self.offset = offset
        self.length = length
        self.count = count
    }
}

/// A record as a leaf's record table names it.
package struct RecordRef: Hashable, Comparable, Sendable {
    package var id: ID128
    package var offset: UInt64
    package var length: UInt64

    package init(id: ID128, offset: UInt64, length: UInt64) {
        self.id = id
        self.offset = offset
        self.length = length
    }

    package static func < (a: RecordRef, b: RecordRef) -> Bool { a.id < b.id }
}

/// One leaf entry: its key, the record and writer its body names (trees 1 and 3, through the page's
/// tables), and the rest of its body, opaque at this level.
package struct LeafEntry: Hashable, Sendable {
    package var key: [UInt8]
    package var record: RecordRef?
    package var writer: UInt64?
    package var rest: [UInt8]

    package init(key: [UInt8], record: RecordRef? = nil, writer: UInt64? = nil, rest: [UInt8] = []) {
        self.key = key
        self.record = record
        self.writer = writer
        self.rest = rest
    }

    /// Bytes it takes in a page, about (keys are counted whole, before prefix coding): what writers fill
    /// pages by.
    package var weight: Int { key.count + rest.count + 8 + (record == nil ? 0 : 2) + (writer == nil ? 0 : 2) }
}

/// The trees of a version 2 index (V3.4).
package enum TreeID: UInt8, Sendable {
    case items = 1
    case attributes = 2
    case history = 3

    /// Whether leaf bodies name a record and a writer through the page's tables.
    package var hasTables: Bool { self != .attributes }
}

/// A decoded page: a leaf's entries, or a branch's separators and children.
package struct Page: Hashable, Sendable {
    package enum Content: Hashable, Sendable {
        case leaf([LeafEntry])
        case branch([(key: [UInt8], child: PageRef)])

        package static func == (a: Content, b: Content) -> Bool {
            switch (a, b) {
            case (.leaf(let x), .leaf(let y)): return x == y
            case (.branch(let x), .branch(let y)):
                return x.elementsEqual(y) { $0.key == $1.key && $0.child == $1.child }
            default: return false
            }
        }

        package func hash(into h: inout Hasher) {
            switch self {
            case .leaf(let e): h.combine(e)
            case .branch(let e):
                for x in e {
                    h.combine(x.key)
                    h.combine(x.child)
                }
            }
        }
    }

    package var tree: TreeID
    package var level: Int
    package var content: Content

    package init(tree: TreeID, level: Int, content: Content) {
        self.tree = tree
        self.level = level
        self.content = content
    }

    package var entryCount: Int {
        switch content {
        case .leaf(let e): return e.count
        case .branch(let e): return e.count
        }
    }

    package var firstKey: [UInt8] {
        switch content {
        case .leaf(let e): return e[0].key
        case .branch(let e): return e[0].key
        }
    }

    package var lastKey: [UInt8] {
        switch content {
        case .leaf(let e): return e[e.count - 1].key
        case .branch(let e): return e[e.count - 1].key
        }
    }

    /// Entries in the leaves below: a leaf's own, or the sum of its children's counts.
    package var count: UInt64 {
        switch content {
        case .leaf(let e): return UInt64(e.count)
        case .branch(let e): return e.reduce(0) { $0 &+ $1.child.count }
        }
    }
}

/// Page plaintext <-> ``Page`` (V3.2), canonical both ways: decoding what was encoded gives the same page,
/// and a reader refuses anything a writer would not have written.
package enum PageCodec {
    package static func encode(_ page: Page) -> [UInt8] {
        var w = ByteWriter(capacity: 4096 + 64)
        switch page.content {
        case .leaf(let entries):
            w.append(1)
            w.append(page.tree.rawValue)
            w.append(0)
            encodeLeafEntries(entries, hasTables: page.tree.hasTables, into: &w)
        case .branch(let entries):
            w.append(2)
            w.append(page.tree.rawValue)
            w.append(UInt8(page.level))
            w.appendVarint(entries.count)
            var previous: [UInt8] = []
            for e in entries {
                appendKey(e.key, after: previous, into: &w)
                previous = e.key
                w.append(contentsOf: e.child.id.bytes)
                w.appendVarint(e.child.offset)
                w.appendVarint(e.child.length)
                w.appendVarint(e.child.count)
            }
        }
        return w.bytes
    }

    /// Tables, entry count and entries: shared by leaves and delta segments (V6). With `op`, each entry's
    /// `rest` starts with its operation byte, written before the table positions (as ``decodeLeafEntries``
    /// reads it).
    package static func encodeLeafEntries(
        _ entries: [LeafEntry], hasTables: Bool, op: Bool = false, into w: inout ByteWriter
    ) {
        var records: [ID128: Int] = [:]
        var writers: [UInt64: Int] = [:]
        if hasTables {
            let r = Set(entries.compactMap(\.record)).sorted()
            let ws = Set(entries.compactMap(\.writer)).sorted()
            w.appendVarint(r.count)
            for (i, x) in r.enumerated() {
                records[x.id] = i
                w.append(contentsOf: x.id.bytes)
                w.appendVarint(x.offset)
                w.appendVarint(x.length)
            }
            w.appendVarint(ws.count)
            for (i, x) in ws.enumerated() {
                writers[x] = i
                w.appendBE(x)
            }
        }
        w.appendVarint(entries.count)
        var previous: [UInt8] = []
        for e in entries {
            appendKey(e.key, after: previous, into: &w)
            previous = e.key
            var body = ByteWriter(capacity: e.rest.count + 4)
            var rest = e.rest[...]
            if op, let o = rest.popFirst() { body.append(o) }
            let tables =
                hasTables
                && (!op || (body.bytes.first == 1 && e.key.first.flatMap(TreeID.init(rawValue:))?.hasTables == true))
            if tables {
                body.appendVarint(e.record.map { records[$0.id]! + 1 } ?? 0)
                body.appendVarint(e.writer.map { writers[$0]! + 1 } ?? 0)
            }
            body.append(contentsOf: rest)
            w.appendVarint(body.bytes.count)
            w.append(contentsOf: body.bytes)
        }
    }

    /// Throws unless `entries` name each record at one extent (V3.4): a record table holds an id once, and a
    /// writer that met one record at two places would write a page no reader opens.
    static func checkOneExtentPerRecord(_ entries: some Sequence<LeafEntry>) throws {
        var seen: [ID128: RecordRef] = [:]
        for case let r? in entries.lazy.map(\.record) {
            if let s = seen.updateValue(r, forKey: r.id), s != r {
                throw VaultError(
                    .damagedIndex,
                    "record \(Hex.encode(r.id.bytes)) named at two extents (body offsets \(s.offset) and \(r.offset))")
            }
        }
    }

    /// Throws unless every record `entries` name ends at or before `offset`, the body offset of the page or
    /// delta segment that names them (V3.4: a record is written before the first page that names it). A
    /// record past the end of the file is named past its page too: *damaged index*, never *truncated*.
    static func checkRecordsEnd(
        _ entries: some Sequence<LeafEntry>, before offset: UInt64, _ what: @autoclosure () -> String
    ) throws {
        for case let r? in entries.lazy.map(\.record) { try checkRecordEnd(r, before: offset, what()) }
    }

    static func checkRecordEnd(_ r: RecordRef, before offset: UInt64, _ what: @autoclosure () -> String) throws {
        guard let end = r.offset.adding(r.length), end <= offset else {
            throw VaultError(
                .damagedIndex,
                "\(what()): record \(Hex.encode(r.id.bytes)) at body offset \(r.offset) + \(r.length) does not end "
                    + "before body offset \(offset), where it is named")
        }
    }

    /// Whether a writer may write `e` into a page or a delta segment (V2): KEY_MAX and ENTRY_MAX count the
    /// entry as it is encoded where it is written, so a delta segment's tree byte (key) and operation byte
    /// (body) count too; the body's record and writer positions take at most 3 bytes each. A writer checks it
    /// before it writes: an entry a reader would refuse is never written.
    static func fits(_ e: LeafEntry, inDelta: Bool) -> Bool {
        let extra = inDelta ? 1 : 0
        return !e.key.isEmpty && e.key.count + extra <= PagedLimits.keyMax
            && e.key.count + e.rest.count + 6 + 2 * extra <= PagedLimits.entryMax
    }

    static func appendKey(_ key: [UInt8], after previous: [UInt8], into w: inout ByteWriter) {
        var shared = 0
        let n = min(key.count, previous.count)
        while shared < n, key[shared] == previous[shared] { shared += 1 }
        w.appendVarint(shared)
        w.appendVarint(key.count - shared)
        w.append(contentsOf: key[shared...])
    }

    /// Decodes and checks a page's plaintext: everything a page alone can be checked for (V3.2). Where it
    /// sits in its tree is the tree reader's to check (V3.3).
    package static func decode(_ bytes: [UInt8]) throws -> Page {
        var r = ByteReader(bytes, failure: .damagedIndex, what: "page")
        let kind = try r.readU8()
        guard let tree = TreeID(rawValue: try r.readU8()) else { throw r.fail("unknown tree") }
        let level = Int(try r.readU8())
        let page: Page
        switch kind {
        case 1:
            guard level == 0 else { throw r.fail("a leaf at level \(level)") }
            page = Page(
                tree: tree, level: 0, content: .leaf(try decodeLeafEntries(&r, hasTables: tree.hasTables, op: false)))
        case 2:
            guard level >= 1, level < PagedLimits.heightMax else { throw r.fail("a branch at level \(level)") }
            let count = try r.readCount(max: PagedLimits.pageEntriesMax, "entry count")
            guard count >= 1 else { throw r.fail("a page without entries") }
            var entries: [(key: [UInt8], child: PageRef)] = []
            entries.reserveCapacity(count)
            var previous: [UInt8]?
            for _ in 0..<count {
                let key = try readKey(&r, after: previous)
                previous = key
                let id = try r.readID()
                let offset = try r.readVarint()
                let length = try r.readVarint()
                guard length >= 1 else { throw r.fail("a child page of length 0") }
                entries.append((key, PageRef(id: id, offset: offset, length: length, count: try r.readVarint())))
            }
            page = Page(tree: tree, level: level, content: .branch(entries))
        default:
            throw r.fail("unknown page kind \(kind)")
        }
        guard r.isAtEnd else { throw r.fail("\(r.remaining) bytes after the last entry") }
        return page
    }

    /// Reads tables, entry count and entries. With `op`, each body starts with an operation byte (a delta
    /// segment, V6): 1 = put (a body follows), 2 = remove (nothing follows); returned in `rest` as is.
    static func decodeLeafEntries(_ r: inout ByteReader, hasTables: Bool, op: Bool) throws -> [LeafEntry] {
        var records: [RecordRef] = []
        var writers: [UInt64] = []
        if hasTables {
            let n = try r.readCount(max: PagedLimits.tableMax, "record table")
            records.reserveCapacity(n)
            for _ in 0..<n {
                let rec = RecordRef(id: try r.readID(), offset: try r.readVarint(), length: try r.readVarint())
                guard rec.length >= 1 else { throw r.fail("a record of length 0 in a record table") }
                guard rec.offset.addingReportingOverflow(rec.length).overflow == false else {
                    throw r.fail("a record extent overflows")
                }
                if let last = records.last, !(last.id < rec.id) { throw r.fail("record table not strictly ascending") }
                records.append(rec)
            }
            let m = try r.readCount(max: PagedLimits.tableMax, "writer table")
            writers.reserveCapacity(m)
            for _ in 0..<m {
                let wid = try r.readBE()
                if let last = writers.last, !(last < wid) { throw r.fail("writer table not strictly ascending") }
                writers.append(wid)
            }
        }
        var usedRecords = [Bool](repeating: false, count: records.count)
        var usedWriters = [Bool](repeating: false, count: writers.count)
        let count = try r.readCount(max: PagedLimits.pageEntriesMax, "entry count")
        guard count >= 1 else { throw r.fail("a page without entries") }
        var entries: [LeafEntry] = []
        entries.reserveCapacity(count)
        var previous: [UInt8]?
        for _ in 0..<count {
            let key = try readKey(&r, after: previous)
            previous = key
            let bodyLength = try r.readCount(max: PagedLimits.entryMax - key.count, "entry body length")
            // Tree 2's bodies are empty (V3.2): the key is the whole entry.
            guard hasTables || op || bodyLength == 0 else {
                throw r.fail("an attributes-tree entry with a body of \(bodyLength) bytes")
            }
            var body = ByteReader(
                r.bytes, from: r.position, to: r.position + min(bodyLength, r.remaining), failure: .damagedIndex,
                what: "page entry")
            try r.skip(bodyLength)
            var entry = LeafEntry(key: key)
            var opByte: UInt8 = 1
            if op {
                opByte = try body.readU8()
                guard opByte == 1 || opByte == 2 else { throw body.fail("unknown operation \(opByte)") }
            }
            // A remove carries nothing after its operation; tables are named by puts only.
            let tables =
                hasTables && (!op || (opByte == 1 && key.first.flatMap(TreeID.init(rawValue:))?.hasTables == true))
            if tables {
                let rec = try body.readCount(max: records.count, "record position")
                let wri = try body.readCount(max: writers.count, "writer position")
                if rec > 0 {
                    entry.record = records[rec - 1]
                    usedRecords[rec - 1] = true
                }
                if wri > 0 {
                    entry.writer = writers[wri - 1]
                    usedWriters[wri - 1] = true
                }
            }
            entry.rest = try body.readBytes(body.remaining)
            if op {
                guard opByte == 1 || entry.rest.isEmpty else { throw body.fail("a remove with a body") }
                entry.rest.insert(opByte, at: 0)
            }
            entries.append(entry)
        }
        guard usedRecords.allSatisfy({ $0 }), usedWriters.allSatisfy({ $0 }) else {
            throw r.fail("a table entry no entry names")
        }
        return entries
    }

    /// A prefix-coded key (V3.2): canonical (the whole common prefix is shared) and strictly greater than
    /// the previous key.
    static func readKey(_ r: inout ByteReader, after previous: [UInt8]?) throws -> [UInt8] {
        let shared = try r.readCount(max: previous?.count ?? 0, "shared key bytes")
        let rest = try r.readCount(max: PagedLimits.keyMax - shared, "key length")
        guard rest >= 1 else { throw r.fail("a key that adds no byte") }
        // One allocation per key (a leaf holds about a hundred): the shared prefix and the new bytes, in place.
        let start = r.position
        try r.skip(rest)
        var key: [UInt8] = []
        key.reserveCapacity(shared + rest)
        if let previous { key.append(contentsOf: previous[0..<shared]) }
        key.append(contentsOf: r.bytes[start..<start + rest])
        if let p = previous {
            // Canonical: the byte after the shared prefix differs (or the previous key ended there), and
            // then it is greater.
            if shared < p.count {
                guard key[shared] != p[shared] else {
                    throw r.fail("a key that does not share its whole common prefix")
                }
                guard key[shared] > p[shared] else { throw r.fail("keys not in strictly ascending order") }
            }
        }
        return key
    }
}

extension ByteWriter {
    mutating func appendBE(_ v: UInt64) {
        for i in (0..<8).reversed() { append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }
}

extension ByteReader {
    mutating func readBE() throws -> UInt64 {
        let b = try readBytes(8)
        return b.reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// The limits of version 2's index (SPEC.md Part 4, V2).
package enum PagedLimits {
    package static let pageTarget = 4096
    package static let pageMax = 2 << 20
    package static let pageExpansionMax = 16
    package static let entryMax = 1 << 20
    package static let keyMax = 4096
    package static let pageEntriesMax = 65_536
    package static let heightMax = 8
    package static let tableMax = 65_536
    package static let deltaChainMax = 16
    package static let deltaMax = 1 << 20
    package static let deltaTotalMax = 4 << 20
    package static let rootMax = 65_536
    package static let keyAttrsMax = 16
    package static let schemaClassesMax = 64
    package static let indexedMax = 64
    package static let historyKeepMax = 1000
}

extension PagedLimits {
    /// Writers fold once the pending deltas would pass this many plaintext bytes (V6).
    static let foldAfterBytes = 65_536
    /// Writers fold a commit that changes more keys than this (V6).
    static let foldAfterChanges = 256
}

extension UInt64 {
    init(bigEndianBytes b: [UInt8]) { self = b.prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }
}
