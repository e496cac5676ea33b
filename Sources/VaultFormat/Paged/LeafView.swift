/// A leaf's plaintext (SPEC.md Part 4, V3.2), checked once as ``PageCodec/decode(_:)`` checks it, then
/// searched and read in place: a lookup finds its key by walking the prefix-coded keys without building
/// them, and builds only the entries it hands on.
///
/// Lookups over a large tree miss on leaves (a million items make 46,000 of them, a cache holds a few
/// thousand): decoding each leaf they open whole, a hundred keys and bodies as arrays, and giving it up again
/// was half of a lookup's time. A view is the plaintext and the offsets of its record table.
package struct LeafView: Sendable {
    /// The page's plaintext, as checked.
    let bytes: [UInt8]
    package let tree: TreeID
    /// Entries in the leaf (≥ 1).
    package let count: Int
    /// Offset of the first entry's key.
    let entriesStart: Int
    /// Offset of each record-table entry (its id); empty for tree 2.
    let records: [Int]
    /// Offset of the writer table's first id (8 bytes each).
    let writersStart: Int
    package let firstKey: [UInt8]
    package let lastKey: [UInt8]

    /// Bytes it holds, about: what a cache weighs it by.
    var weight: Int { bytes.count + 8 * records.count + firstKey.count + lastKey.count + 64 }

    /// Where a walk over the entries stands: the next entry's offset and position, and the key before it.
    package struct Cursor {
        var position: Int
        var index: Int
        var key: [UInt8]
    }

    /// A cursor on the first entry.
    package var start: Cursor { Cursor(position: entriesStart, index: 0, key: []) }

    /// Checks `bytes` as a leaf page: everything ``PageCodec/decode(_:)`` checks (kind, tree, level, tables,
    /// the canonical prefix coding and strict order of keys, bodies and the table positions they name, every
    /// table entry named, nothing after the last entry) and, with `recordsBefore`, that every record named
    /// ends at or before that body offset (``PageCodec/checkRecordsEnd(_:before:_:)``). Nil when any check
    /// fails: the caller decodes the page to learn the error (``FilePageStore``), so that a leaf read either way
    /// is refused with the same words.
    package static func checked(_ bytes: [UInt8], recordsBefore: UInt64? = nil) -> LeafView? {
        bytes.withUnsafeBufferPointer { b -> LeafView? in
            let end = b.count
            guard end >= 3, b[0] == 1, let tree = TreeID(rawValue: b[1]), b[2] == 0 else { return nil }
            var p = 3
            var records: [Int] = []
            var writersStart = 0
            var writerCount = 0
            if tree.hasTables {
                guard let n = count(b, &p, max: PagedLimits.tableMax) else { return nil }
                records.reserveCapacity(n)
                var lastID: Int? = nil
                for _ in 0..<n {
                    guard end - p >= 16 else { return nil }
                    let idAt = p
                    p += 16
                    guard let offset = varint(b, &p), let length = varint(b, &p), length >= 1,
                        !offset.addingReportingOverflow(length).overflow
                    else { return nil }
                    if let recordsBefore, offset + length > recordsBefore { return nil }
                    if let l = lastID, !precedes(b, l, idAt, 16) { return nil }
                    lastID = idAt
                    records.append(idAt)
                }
                guard let m = count(b, &p, max: PagedLimits.tableMax), end - p >= 8 * m else { return nil }
                writersStart = p
                writerCount = m
                for i in 1..<max(m, 1) where !precedes(b, p + 8 * (i - 1), p + 8 * i, 8) { return nil }
                p += 8 * m
            }
            var usedRecords = [Bool](repeating: false, count: records.count)
            var usedWriters = [Bool](repeating: false, count: writerCount)
            guard let n = count(b, &p, max: PagedLimits.pageEntriesMax), n >= 1 else { return nil }
            let entriesStart = p
            var key: [UInt8] = []
            var firstKey: [UInt8] = []
            for i in 0..<n {
                guard let shared = count(b, &p, max: key.count),
                    let rest = count(b, &p, max: PagedLimits.keyMax - shared),
                    rest >= 1, end - p >= rest
                else { return nil }
                // Canonical (the whole common prefix shared) and strictly greater than the key before.
                if shared < key.count, b[p] <= key[shared] { return nil }
                key.removeSubrange(shared...)
                key.append(contentsOf: UnsafeBufferPointer(rebasing: b[p..<p + rest]))
                p += rest
                if i == 0 { firstKey = key }
                guard let bodyLength = count(b, &p, max: PagedLimits.entryMax - key.count), end - p >= bodyLength
                else { return nil }
                let bodyEnd = p + bodyLength
                if tree.hasTables {
                    guard let rec = count(b, &p, max: records.count, end: bodyEnd),
                        let wri = count(b, &p, max: writerCount, end: bodyEnd)
                    else { return nil }
                    if rec > 0 { usedRecords[rec - 1] = true }
                    if wri > 0 { usedWriters[wri - 1] = true }
                } else if bodyLength != 0 {
                    return nil
                }
                p = bodyEnd
            }
            guard p == end, !usedRecords.contains(false), !usedWriters.contains(false) else { return nil }
            return LeafView(
                bytes: bytes, tree: tree, count: n, entriesStart: entriesStart, records: records,
                writersStart: writersStart, firstKey: firstKey, lastKey: key)
        }
    }

    /// A cursor on the first entry whose key is ≥ `target` (at ``count`` when there is none). The walk compares
    /// each key's new bytes with the target where they start, never building a key: with `m` the bytes the
    /// key before shares with the target, a key sharing more than `m` with it sorts as it did (below), one
    /// sharing fewer sorts above (the coding is canonical), and only one sharing exactly `m` is compared.
    package func seek(_ target: [UInt8]) -> Cursor {
        bytes.withUnsafeBufferPointer { b in
            target.withUnsafeBufferPointer { t in
                var p = entriesStart
                var m = 0
                for i in 0..<count {
                    let at = p
                    let shared = Int(LeafView.unchecked(b, &p))
                    let rest = Int(LeafView.unchecked(b, &p))
                    var above = false
                    if shared < m {
                        above = true
                    } else if shared == m {
                        var j = 0
                        while j < rest, m + j < t.count, b[p + j] == t[m + j] { j += 1 }
                        if j == rest {
                            // The key is the target's first m + rest bytes: equal, or a proper prefix (below).
                            above = m + rest == t.count
                            m += rest
                        } else {
                            above = m + j == t.count || b[p + j] > t[m + j]
                            m += j
                        }
                    }
                    if above { return Cursor(position: at, index: i, key: Array(t[0..<shared])) }
                    p += rest
                    p += Int(LeafView.unchecked(b, &p))
                }
                return Cursor(position: p, index: count, key: [])
            }
        }
    }

    /// The entry at `cursor`, which then moves to the next; nil past the last.
    package func next(_ cursor: inout Cursor) -> LeafEntry? {
        guard cursor.index < count else { return nil }
        return bytes.withUnsafeBufferPointer { b in
            var p = cursor.position
            let shared = Int(LeafView.unchecked(b, &p))
            let rest = Int(LeafView.unchecked(b, &p))
            cursor.key.removeSubrange(shared...)
            cursor.key.append(contentsOf: UnsafeBufferPointer(rebasing: b[p..<p + rest]))
            p += rest
            let bodyEnd = Int(LeafView.unchecked(b, &p)) + p
            var entry = LeafEntry(key: cursor.key)
            if tree.hasTables {
                let rec = Int(LeafView.unchecked(b, &p))
                let wri = Int(LeafView.unchecked(b, &p))
                if rec > 0 {
                    var q = records[rec - 1]
                    let id = ID128(hi: LeafView.be64(b, q), lo: LeafView.be64(b, q + 8))
                    q += 16
                    let offset = LeafView.unchecked(b, &q)
                    entry.record = RecordRef(id: id, offset: offset, length: LeafView.unchecked(b, &q))
                }
                if wri > 0 { entry.writer = LeafView.be64(b, writersStart + 8 * (wri - 1)) }
            }
            entry.rest = Array(b[p..<bodyEnd])
            cursor.position = bodyEnd
            cursor.index += 1
            return entry
        }
    }

    /// Every entry, as ``PageCodec/decode(_:)`` gives them.
    package var entries: [LeafEntry] {
        var out: [LeafEntry] = []
        out.reserveCapacity(count)
        var c = start
        while let e = next(&c) { out.append(e) }
        return out
    }

    /// A minimal LEB128 varint of at most 64 bits (as ``ByteReader/readVarint()``), before `end`; nil if not.
    @inline(__always)
    private static func varint(_ b: UnsafeBufferPointer<UInt8>, _ p: inout Int, end: Int? = nil) -> UInt64? {
        let end = end ?? b.count
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var q = p
        while true {
            guard q < end else { return nil }
            let byte = b[q]
            q += 1
            if shift == 63, byte > 1 { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0, shift > 0 { return nil }
                break
            }
            shift += 7
        }
        p = q
        return value
    }

    /// A varint that is at most `max` (as ``ByteReader/readCount(max:_:)``).
    @inline(__always)
    private static func count(_ b: UnsafeBufferPointer<UInt8>, _ p: inout Int, max: Int, end: Int? = nil) -> Int? {
        guard let v = varint(b, &p, end: end), v <= UInt64(max) else { return nil }
        return Int(v)
    }

    /// A varint of a checked view.
    @inline(__always)
    private static func unchecked(_ b: UnsafeBufferPointer<UInt8>, _ p: inout Int) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = b[p]
            p += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    @inline(__always)
    private static func be64(_ b: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(b[at + i]) }
        return v
    }

    /// Whether the `n` bytes at `a` sort strictly before the `n` bytes at `c`.
    @inline(__always)
    private static func precedes(_ b: UnsafeBufferPointer<UInt8>, _ a: Int, _ c: Int, _ n: Int) -> Bool {
        for i in 0..<n where b[a + i] != b[c + i] { return b[a + i] < b[c + i] }
        return false
    }
}

extension LeafView {
    /// `bytes`, a leaf's plaintext, checked (records ending before `recordsBefore`, if given); when a check fails,
    /// the error ``PageCodec/decode(_:)`` (then ``PageCodec/checkRecordsEnd(_:before:_:)``) gives for it.
    static func open(_ bytes: [UInt8], recordsBefore: UInt64?, page id: ID128) throws -> LeafView {
        if let v = LeafView.checked(bytes, recordsBefore: recordsBefore) { return v }
        let page = try PageCodec.decode(bytes)
        if case .leaf(let entries) = page.content, let recordsBefore {
            try PageCodec.checkRecordsEnd(entries, before: recordsBefore, "page \(Hex.encode(id.bytes))")
        }
        // Both readers must refuse the same pages (LeafViewTests holds them to it).
        throw VaultError(
            .damagedIndex, "page \(Hex.encode(id.bytes)): a leaf the page decoder accepts and its search refuses")
    }

    /// Leaves of more entries are decoded whole and searched by bisection: a seek walks every entry before its
    /// key (a few nanoseconds each), so a legal leaf of `PAGE_ENTRIES_MAX` entries would cost a lookup about a
    /// third of a millisecond (a delete of 262,144 items in four such leaves: 55 s instead of 4).
    static let searchMax = 256

    /// The leaf as lookups read it: this view, or decoded if it holds more than ``searchMax`` entries.
    var node: PageNode {
        count > LeafView.searchMax ? .page(Page(tree: tree, level: 0, content: .leaf(entries))) : .leaf(self)
    }
}
