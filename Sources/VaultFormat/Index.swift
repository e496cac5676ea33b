#if canImport(Glibc)
    import Glibc
#endif

/// One operation of an index segment (SPEC.md §7).
enum IndexOperation {
    case put(Item)
    case delete(ItemID)

    var id: ItemID {
        switch self {
        case .put(let item): return item.id
        case .delete(let id): return id
        }
    }
}

package enum IndexCodec {
    static func encode(_ ops: [IndexOperation]) -> [UInt8] {
        var w = ByteWriter(capacity: ops.count * 128 + 8)
        w.appendVarint(ops.count)
        for op in ops {
            switch op {
            case .put(let item):
                w.append(1)
                w.append(contentsOf: item.id.bytes)
                encodeEntry(item, into: &w)
            case .delete(let id):
                w.append(2)
                w.append(contentsOf: id.bytes)
            }
        }
        return w.bytes
    }

    package static func encodeEntry(_ item: Item, into w: inout ByteWriter) {
        w.appendString(item.itemClass.rawValue)
        w.appendVarint(item.attributes.count)
        encodeAttributes(item.attributes, into: &w)
        w.appendVarint(item.size)
        let l = item.location
        w.append(contentsOf: l.recordID.bytes)
        w.appendVarint(l.offset)
        w.appendVarint(l.length)
        w.appendVarint(l.member)
        w.appendVarint(l.dataOffset)
    }

    /// Attributes as §7 lays them out (name, type, value), in the order given (the caller's is canonical).
    static func encodeAttributes<S: Sequence>(_ attributes: S, into w: inout ByteWriter)
    where S.Element == (name: String, value: AttributeValue) {
        for (name, value) in attributes {
            w.appendString(name)
            switch value {
            case .string(let s):
                w.append(1)
                w.appendString(s)
            case .integer(let i):
                w.append(2)
                w.appendI64(i)
            case .bool(let b):
                w.append(3)
                w.append(b ? 1 : 0)
            case .date(let ns):
                w.append(4)
                w.appendI64(ns)
            case .data(let d):
                w.append(5)
                w.appendVarint(d.count)
                w.append(contentsOf: d)
            }
        }
    }

    /// Parses a segment and hands each operation to `body` as it is read (no array of operations).
    static func forEach(_ bytes: [UInt8], checkpoint: Bool, _ body: (IndexOperation) throws -> Void) throws {
        var ops = 0
        try forEach(bytes, checkpoint: checkpoint, budget: &ops, body)
    }

    /// As ``forEach(_:checkpoint:_:)``, adding the segment's operations to `budget`, the count of a whole
    /// chain: more than ``Limits/chainOpsMax`` in all is refused before any of this segment's is decoded.
    static func forEach(_ bytes: [UInt8], checkpoint: Bool, budget: inout Int, _ body: (IndexOperation) throws -> Void)
        throws
    {
        var given = false
        // Each operation takes at least 17 bytes: a count larger than that is refused before any work.
        try forEach(
            chunks: {
                defer { given = true }
                return given ? nil : bytes
            }, countMax: bytes.count / 17, checkpoint: checkpoint, budget: &budget, body)
    }

    /// Stored bytes a segment needs at least per operation: its random item id.
    static let idBytesMin = 16

    /// The most bytes one operation takes: op, id, and an entry of the largest class, attributes and fields.
    static let operationMax =
        17 + (2 + Limits.attrNameMax) + 2 + Limits.attrsMax * (2 + Limits.attrNameMax + 1 + 3 + Limits.attrValueMax)
        + 10 + 16 + 4 * 10

    /// Parses a segment whose plaintext `chunks` hands over piece by piece (nil at the end), holding at most
    /// about two operations' worth of it (``operationMax``), not the whole segment: the memory of opening a
    /// vault is then its items, not its items and their index.
    ///
    /// `storedBytes`, the segment's sealed length when known, bounds the count before any operation is
    /// decoded: each operation names a distinct random item id (16 bytes no compression shrinks, and every
    /// chunk is deflated on its own), so a segment holds at most storedBytes / 16 of them (SPEC.md §7).
    static func forEach(
        chunks next: () throws -> [UInt8]?, countMax: Int = Limits.itemsMax, storedBytes: UInt64? = nil,
        checkpoint: Bool, budget: inout Int, _ body: (IndexOperation) throws -> Void
    ) throws {
        var buffer: [UInt8] = []
        var ended = false
        // Appends chunks until `buffer` holds `need` bytes or the segment ends.
        func fill(_ need: Int) throws {
            while !ended, buffer.count < need {
                if let c = try next() { buffer.append(contentsOf: c) } else { ended = true }
            }
        }
        try fill(operationMax)
        var r = ByteReader(buffer, failure: .damagedIndex, what: "index")
        let count = try r.readCount(max: min(Limits.itemsMax, countMax), "operation count")
        if let stored = storedBytes, UInt64(count) > stored / UInt64(idBytesMin) {
            throw r.fail(
                "\(count) operations in \(stored) stored bytes: fewer than \(idBytesMin) per item id (ids are random)")
        }
        guard count <= Limits.chainOpsMax - budget else {
            throw r.fail("the chain holds more than \(Limits.chainOpsMax) operations (CHAIN_OPS_MAX)")
        }
        budget += count
        var previous: ItemID?
        var names = NameCache()
        for _ in 0..<count {
            if r.remaining < operationMax, !ended {
                // Drop what was parsed and read on; the reader lets go of the buffer first (no copy).
                let consumed = r.position
                r = ByteReader([], failure: .damagedIndex, what: "index")
                buffer.removeSubrange(0..<consumed)
                try fill(operationMax)
                r = ByteReader(buffer, failure: .damagedIndex, what: "index")
            }
            let op = try r.readU8()
            let id = ItemID(raw: try r.readID())
            if let p = previous, !(p < id) { throw r.fail("item ids not in strictly ascending order at \(id)") }
            previous = id
            switch op {
            case 1: try body(.put(try decodeEntry(&r, id: id, names: &names)))
            case 2:
                guard !checkpoint else { throw r.fail("delete in a checkpoint") }
                try body(.delete(id))
            default: throw r.fail("unknown operation \(op)")
            }
        }
        guard r.isAtEnd else { throw r.fail("\(r.remaining) bytes after the last operation") }
        if !ended, try next() != nil { throw r.fail("bytes after the last operation") }
    }

    /// `names` carries class and attribute names from one entry to the next: they repeat across the items of
    /// an index, so most are matched against bytes already decoded instead of being decoded again.
    static func decodeEntry(_ r: inout ByteReader, id: ItemID, names: inout NameCache) throws -> Item {
        let cls = try names.read(&r, count: try r.readCount(max: Limits.attrNameMax, "class length"), "class")
        guard !cls.isEmpty else { throw r.fail("empty class") }
        let pairs = try decodeAttributes(
            &r, count: try r.readCount(max: Limits.attrsMax, "attribute count"), names: &names)
        let size = try r.readVarint()
        guard size <= Limits.valueMax else { throw r.fail("value size \(size) exceeds \(Limits.valueMax)") }
        let recordID = try r.readID()
        let offset = try r.readVarint()
        let length = try r.readVarint()
        let member = try r.readCount(max: Limits.membersMax - 1, "member index")
        let dataOffset = try r.readVarint()
        guard offset.adding(length) != nil, dataOffset.adding(size) != nil else {
            throw r.fail("record extent overflows")
        }
        return Item(
            id: id, itemClass: ItemClass(rawValue: cls), attributes: Attributes(sortedPairs: pairs), size: size,
            location: RecordLocation(
                recordID: recordID, offset: offset, length: length, member: member,
                dataOffset: dataOffset))
    }

    /// `count` attributes as §7 lays them out, names strictly ascending, in an array with room for `room` more.
    static func decodeAttributes(_ r: inout ByteReader, count n: Int, names: inout NameCache, room: Int = 0) throws
        -> [(name: String, value: AttributeValue)]
    {
        var pairs: [(name: String, value: AttributeValue)] = []
        pairs.reserveCapacity(n + room)
        var last = 0..<0
        for i in 0..<n {
            let count = try r.readCount(max: Limits.attrNameMax, "attribute name length")
            let start = r.position
            let name = try names.read(&r, count: count, "attribute name")
            guard count > 0 else { throw r.fail("empty attribute name") }
            if i > 0, !r.precedes(last, start..<start + count) { throw r.fail("attribute \(name) out of order") }
            last = start..<start + count
            let value: AttributeValue
            switch try r.readU8() {
            case 1: value = .string(try r.readString(max: Limits.attrValueMax, "attribute \(name)"))
            case 2: value = .integer(try r.readI64())
            case 3:
                let b = try r.readU8()
                guard b <= 1 else { throw r.fail("bool attribute \(name) is \(b)") }
                value = .bool(b == 1)
            case 4: value = .date(nanoseconds: try r.readI64())
            case 5:
                value = .data(try r.readBytes(try r.readCount(max: Limits.attrValueMax, "attribute \(name) length")))
            case let t: throw r.fail("attribute \(name) has unknown type \(t)")
            }
            pairs.append((name, value))
        }
        return pairs
    }
}

/// Strings already decoded from an index, by their bytes (class and attribute names; at most 64 kept). Names
/// come in the same order in entry after entry, so the entry after the last one matched is tried first.
struct NameCache {
    private var bytes: [UInt8] = []
    private var spans: [(start: Int, count: Int)] = []
    private var strings: [String] = []
    private var next = 0

    /// The `count`-byte string at the reader's position: the cached one when the bytes match, else decoded
    /// (and validated) as ``ByteReader/readUTF8(_:_:)`` does.
    mutating func read(_ r: inout ByteReader, count: Int, _ name: @autoclosure () -> String) throws -> String {
        guard count > 0, count <= r.remaining else { return try r.readUTF8(count, name()) }
        let start = r.position
        let n = spans.count
        let hit: Int? = r.bytes.withUnsafeBufferPointer { all in
            bytes.withUnsafeBufferPointer { cached in
                let p = all.baseAddress! + start
                var i = next < n ? next : 0
                for _ in 0..<n {
                    let e = spans[i]
                    if e.count == count, memcmp(cached.baseAddress! + e.start, p, count) == 0 { return i }
                    i = i + 1 < n ? i + 1 : 0
                }
                return nil
            }
        }
        if let hit {
            try r.skip(count)
            next = hit + 1
            return strings[hit]
        }
        let s = try r.readUTF8(count, name())
        if n < 64 {
            spans.append((bytes.count, count))
            bytes.append(contentsOf: r.bytes[start..<start + count])
            strings.append(s)
            next = n + 1
        }
        return s
    }
}

/// What the backward search for the last commit needs of a trailer layout (SPEC.md §8, Part 4 V7): its size
/// and magic, the candidate test (fields against position, no key) and the MAC's input; the last 32 bytes
/// are the MAC.
protocol TrailerLayout {
    static var size: Int { get }
    static var magic: [UInt8] { get }
    static func candidate(_ b: ArraySlice<UInt8>, at: UInt64) -> Self?
    /// The commit's generation (the trailer's own word until its MAC is checked).
    var generation: UInt64 { get }
    /// What the trailer's MAC is taken over starts with this label (SPEC.md §8, Part 4 V7).
    static var macLabel: String { get }
}

extension TrailerLayout {
    /// `label || vault_id || the trailer's bytes before its MAC`.
    static func macInput(vaultID: [UInt8], _ body: ArraySlice<UInt8>) -> [UInt8] {
        var w = ByteWriter(capacity: macLabel.utf8.count + vaultID.count + body.count)
        w.append(contentsOf: Array(macLabel.utf8))
        w.append(contentsOf: vaultID)
        w.append(contentsOf: body)
        return w.bytes
    }
}

/// The fixed-size commit trailer (SPEC.md §8).
package struct Trailer: Equatable, TrailerLayout {
    static let size = 96
    static let magic = Array("KCARTRL1".utf8)
    package static let noPrevious = UInt64.max

    var generation: UInt64
    var commitStart: UInt64
    var indexOffset: UInt64
    var indexLength: UInt64
    var previous: UInt64
    var itemCount: UInt32
    var checkpoint: Bool
    var chain: UInt16

    package init(
        generation: UInt64, commitStart: UInt64, indexOffset: UInt64, indexLength: UInt64, previous: UInt64,
        itemCount: UInt32, checkpoint: Bool, chain: UInt16
    ) {
        (self.generation, self.commitStart, self.indexOffset, self.indexLength) = (
            generation, commitStart, indexOffset, indexLength
        )
        (self.previous, self.itemCount, self.checkpoint, self.chain) = (previous, itemCount, checkpoint, chain)
    }

    static let macLabel = "kcar-trl-v1"

    package func encode(vaultID: [UInt8], key: SecureBytes) -> [UInt8] {
        var w = ByteWriter(capacity: Trailer.size)
        w.append(contentsOf: Trailer.magic)
        w.appendLE(generation)
        w.appendLE(commitStart)
        w.appendLE(indexOffset)
        w.appendLE(indexLength)
        w.appendLE(previous)
        w.appendLE(itemCount)
        w.appendLE(UInt16(checkpoint ? 1 : 0))
        w.appendLE(chain)
        w.appendLE(UInt64(0))
        w.append(contentsOf: Sodium.mac(key: key, Trailer.macInput(vaultID: vaultID, w.bytes[0..<64])))
        return w.bytes
    }

    /// Parses a trailer that sits at body offset `at`; nil unless its magic and MAC verify and its fields are
    /// well-formed and consistent with its position.
    static func decode(_ b: [UInt8], at: UInt64, vaultID: [UInt8], key: SecureBytes) -> Trailer? {
        guard let t = candidate(b[...], at: at) else { return nil }
        guard Sodium.constantTimeEqual(Sodium.mac(key: key, macInput(vaultID: vaultID, b[0..<64])), Array(b[64..<96]))
        else {
            return nil
        }
        return t
    }

    /// The fields of the 96 bytes `b` if they could be a valid trailer at body offset `at`: magic, reserved
    /// bytes and flags, and every rule of SPEC.md §8 that ties the fields to each other and to the position.
    /// No key needed and no MAC computed: the cheap test that comes before the MAC (a *candidate*).
    static func candidate(_ b: ArraySlice<UInt8>, at: UInt64) -> Trailer? {
        guard b.count == size else { return nil }
        let o = b.startIndex
        for i in 0..<8 where b[o + i] != magic[i] { return nil }
        func u64(_ i: Int) -> UInt64 {
            var v: UInt64 = 0
            for k in 0..<8 { v |= UInt64(b[o + i + k]) << (8 * k) }
            return v
        }
        let flags = UInt16(b[o + 52]) | UInt16(b[o + 53]) << 8
        guard flags & ~1 == 0, u64(56) == 0 else { return nil }
        let t = Trailer(
            generation: u64(8), commitStart: u64(16), indexOffset: u64(24), indexLength: u64(32),
            previous: u64(40), itemCount: UInt32(truncatingIfNeeded: u64(48)),
            checkpoint: flags & 1 == 1, chain: UInt16(b[o + 54]) | UInt16(b[o + 55]) << 8)
        guard t.generation >= 1, t.commitStart <= t.indexOffset, t.indexOffset.adding(t.indexLength) == at,
            t.indexLength > 0, Int(t.chain) < Limits.chainMax, t.checkpoint == (t.chain == 0),
            (t.previous == noPrevious) == (t.commitStart == 0), t.previous != noPrevious || t.checkpoint,
            t.previous == noPrevious || t.previous.adding(UInt64(size)) == t.commitStart
        else { return nil }
        return t
    }
}
