/// The record extents a version 2 index names (SPEC.md Part 4, V3.4), checked against the pages and delta
/// segments that name them and against each other: a record ends at or before the body offset of every page
/// or segment that names it; one record id always names the same extent; the extents of different records do
/// not overlap. Verification feeds it every record-table entry of every page of the three trees and of every
/// delta segment of the chain, the entries that a later change hides included (they are in the file a reader
/// reads). It keeps one 32-byte ``RecordRef`` per record a leaf or segment names, told apart per leaf, so its
/// memory is bounded by the tables the file holds, not by its items: a million items each in its own record
/// cost 32 MB (and the sort's scratch), a million items in solid records far less.
struct RecordExtents {
    private var named: [RecordRef] = []
    /// The records already noted for the page or segment being read (its tables hold each once).
    private var namer: UInt64?
    private var inNamer: Set<ID128> = []

    /// Notes that the page or delta segment at body offset `offset` names `r`; throws if `r` does not end
    /// before it.
    mutating func add(_ r: RecordRef, namedAt offset: UInt64, by what: @autoclosure () -> String) throws {
        if namer != offset {
            namer = offset
            inNamer.removeAll(keepingCapacity: true)
        }
        guard inNamer.insert(r.id).inserted else { return }
        try PageCodec.checkRecordEnd(r, before: offset, what())
        named.append(r)
    }

    /// Checks the extents noted, once all are: one extent per record id, no two records overlapping. Sorts
    /// in place: O(n log n) for the n noted, in the memory they take (and the sort's scratch).
    mutating func check() throws {
        named.sort { ($0.id, $0.offset, $0.length) < ($1.id, $1.offset, $1.length) }
        // One per record id, in place.
        var kept = 0
        for i in named.indices {
            let r = named[i]
            if kept > 0, named[kept - 1].id == r.id {
                let first = named[kept - 1]
                guard first == r else {
                    throw VaultError(
                        .damagedIndex,
                        "record \(Hex.encode(r.id.bytes)) is named at two extents (body offset \(first.offset) + "
                            + "\(first.length), and \(r.offset) + \(r.length))")
                }
                continue
            }
            named[kept] = r
            kept += 1
        }
        named.removeLast(named.count - kept)
        // Sorted by offset, a record that overlaps any later one overlaps the next.
        named.sort { ($0.offset, $0.length) < ($1.offset, $1.length) }
        for i in named.indices.dropFirst() {
            let (a, b) = (named[i - 1], named[i])
            if a.offset + a.length > b.offset {  // within 64 bits: the page codec checks every extent's end
                throw VaultError(
                    .damagedIndex,
                    "records \(Hex.encode(a.id.bytes)) (body offset \(a.offset) + \(a.length)) and "
                        + "\(Hex.encode(b.id.bytes)) (body offset \(b.offset)) overlap")
            }
        }
        named = []
    }
}
