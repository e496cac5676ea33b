import Dispatch

/// What the items and kept versions of a version 2 vault say of the records that hold their values, small
/// enough to verify a vault of millions of items without holding its items: per record its extent (as the
/// first item naming it gives it) and the value bytes its items name; per item a member index and a hash of
/// its id, size and data offset (16 bytes). ``check(_:_:)`` then reads each record once, in file order, and
/// checks its member table against them. The hashes are seeded per process (as the attributes tree's check
/// in ``PagedVault/verifyIndex(page:live:)``), so a vault cannot be made to collide with them.
struct RecordClaims {
    /// What a record's check found.
    enum Outcome {
        /// Every chunk authenticated, the record is its table and data, and the table names every item
        /// that names the record, as it says.
        case intact(valueBytes: UInt64, length: UInt64)
        /// Anything else: ``RecordSource/verifyRecord(_:)`` with the record's items says what.
        case failed
    }

    private var ordinals: [ID128: Int] = [:]
    private var records: [(id: ID128, offset: UInt64, length: UInt64, valueBytes: UInt64)] = []
    /// Per claim: the record's ordinal above ``memberBits`` bits of member index, and the hash.
    private var claims: [(key: UInt64, hash: UInt64)] = []
    /// Member indexes are below ``Limits/membersMax`` (2^16) in a valid index; a larger one is kept as the
    /// largest these bits hold, which no member table has.
    private static let memberBits: UInt64 = 24
    private static let memberMask: UInt64 = 1 << memberBits - 1

    /// Notes that `item` names its record.
    mutating func add(_ item: Item) {
        let l = item.location
        let n: Int
        if let o = ordinals[l.recordID] {
            n = o
        } else {
            n = records.count
            ordinals[l.recordID] = n
            records.append((l.recordID, l.offset, l.length, 0))
        }
        records[n].valueBytes = records[n].valueBytes.saturatingAdding(item.size)
        let member = l.member < 0 ? RecordClaims.memberMask : min(UInt64(l.member), RecordClaims.memberMask)
        claims.append(
            (UInt64(n) << RecordClaims.memberBits | member, RecordClaims.hash(item.id, item.size, l.dataOffset)))
    }

    private static func hash(_ id: ItemID, _ size: UInt64, _ dataOffset: UInt64) -> UInt64 {
        var h = Hasher()
        h.combine(id)
        h.combine(size)
        h.combine(dataOffset)
        return UInt64(bitPattern: Int64(h.finalize()))
    }

    /// Reads every record noted once and hands `outcome` what its check found, in file order. Records are
    /// checked on every core (Dispatch runs one per core at a time, each holding one record's table and one
    /// chunk), a few small ones on this thread.
    mutating func check(_ source: RecordSource, _ outcome: (ID128, Outcome) -> Void) {
        ordinals = [:]
        claims.sort { $0.key < $1.key }
        let order = records.indices.sorted { records[$0].offset < records[$1].offset }
        var outcomes = [Outcome](repeating: .failed, count: order.count)
        let this = self
        var stored: UInt64 = 0
        for r in records { stored = stored.saturatingAdding(r.length) }
        if order.count < 2 || stored <= RecordClaims.inlineBytesMax {
            for (i, n) in order.enumerated() { outcomes[i] = this.check(record: n, source) }
        } else {
            outcomes.withUnsafeMutableBufferPointer { out in
                let shared = UnsafeSendable((out, this, source, order))
                DispatchQueue.concurrentPerform(iterations: order.count) { i in
                    let (out, this, source, order) = shared.value
                    out[i] = this.check(record: order[i], source)
                }
            }
        }
        for (i, n) in order.enumerated() { outcome(records[n].id, outcomes[i]) }
    }

    /// Stored bytes of records that ``check(_:_:)`` reads on the calling thread (starting Dispatch's workers
    /// costs more than checking a few small records).
    static let inlineBytesMax: UInt64 = 256 << 10

    /// The check of record `n` against its claims (sorted).
    private func check(record n: Int, _ source: RecordSource) -> Outcome {
        let r = records[n]
        let key = UInt64(n) << RecordClaims.memberBits
        // The first claim of record n.
        var lo = 0
        var hi = claims.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if claims[mid].key < key { lo = mid + 1 } else { hi = mid }
        }
        let location = RecordLocation(recordID: r.id, offset: r.offset, length: r.length, member: 0, dataOffset: 0)
        guard let table = try? source.verifiedTable(location, fail: { VaultError(.damagedRecord, $0) }) else {
            return .failed
        }
        while lo < claims.count, claims[lo].key >> RecordClaims.memberBits == UInt64(n) {
            let m = Int(claims[lo].key & RecordClaims.memberMask)
            guard
                m < table.members.count
                    && claims[lo].hash
                        == RecordClaims.hash(table.members[m].id, table.members[m].size, table.offsets[m])
            else { return .failed }
            lo += 1
        }
        return .intact(valueBytes: r.valueBytes, length: r.length)
    }
}
