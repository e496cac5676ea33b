import Dispatch

extension Vault {
    /// Reads the values of many items, decoding each record once and several records at a time on every
    /// core: what `extract` uses (reading items one by one would decode a shared record once per member).
    /// Items are visited in file order: `begin(item)`, then the value's bytes in one or more `bytes` calls
    /// (each authenticated before it is passed on), then `end(item)`. An error stops the walk; `end` is not
    /// called for the item that failed.
    public func readValues(
        of items: [Item], begin: (Item, _ whole: Bool) throws -> Void,
        bytes: (UnsafeRawBufferPointer) throws -> Void, end: (Item) throws -> Void
    ) throws {
        try naming { try readValuesOfFile(of: items, begin: begin, bytes: bytes, end: end) }
    }

    /// As ``readValues(of:begin:bytes:end:)`` for `items` that this instance gave, unchanged, while its
    /// ``indexStamp`` was `stamp` (one scan of it, say): while the stamp is unchanged they are current as they
    /// are, and are not looked up again one by one (a third of `extract`'s time before its first file was
    /// written). The caller vouches for where the items come from: an item edited or taken from elsewhere
    /// would be read where it says (a debug build checks each).
    package func readValues(
        of items: [Item], givenAt stamp: UInt64?, begin: (Item, _ whole: Bool) throws -> Void,
        bytes: (UnsafeRawBufferPointer) throws -> Void, end: (Item) throws -> Void
    ) throws {
        let vouched = stamp != nil && stamp == indexStamp
        assert(!vouched || items.allSatisfy { (try? current($0)) == $0 }, "items not given at this stamp")
        try naming {
            try readValuesOfFile(of: items, current: !vouched, begin: begin, bytes: bytes, end: end)
        }
    }

    /// A value that changes whenever anything an item lookup reads changes, never taken twice (nil for a version 1
    /// vault, whose items are in memory): items this instance gave while it stood still are current.
    package var indexStamp: UInt64? { version2?.indexChanges }

    /// ``readValues(of:begin:bytes:end:)``, its errors not yet naming the file.
    private func readValuesOfFile(
        of items: [Item], current checks: Bool = true, begin: (Item, _ whole: Bool) throws -> Void,
        bytes: (UnsafeRawBufferPointer) throws -> Void, end: (Item) throws -> Void
    ) throws {
        let batches = Vault.recordBatches(checks ? try items.map(current) : items)

        // Decode batch n+1 on other threads while the caller consumes batch n.
        final class Decoded: @unchecked Sendable {
            var result: Result<[[UInt8]?], Error> = .success([])
            let done = DispatchSemaphore(value: 0)
        }
        func start(_ batch: [[Item]]) -> Decoded? {
            guard !Vault.isStreamed(batch) else { return nil }
            let d = Decoded()
            let read = Result { try readRecords(batch) }
            guard case .success(let raws) = read else {
                d.result = read.map { $0.map { Optional($0) } }
                d.done.signal()
                return d
            }
            let job = UnsafeSendable((batch, raws, keys, header.vaultID))
            DispatchQueue.global().async {
                d.result = Result {
                    try Vault.decodeRecords(job.value.0, raws: job.value.1, keys: job.value.2, vaultID: job.value.3)
                }
                d.done.signal()
            }
            return d
        }
        var next = batches.first.flatMap(start)
        for (n, batch) in batches.enumerated() {
            let decoded = next
            next = n + 1 < batches.count ? start(batches[n + 1]) : nil
            guard let decoded else {
                try streamRecord(batch[0], begin: begin, bytes: bytes, end: end)
                continue
            }
            decoded.done.wait()
            for (members, whole) in zip(batch, try decoded.result.get()) {
                // Over its budget whole (dead members, or a record that inflates past what it declares):
                // streamed instead, chunk by chunk.
                guard let plain = whole else {
                    try streamRecord(members, begin: begin, bytes: bytes, end: end)
                    continue
                }
                let table = try checkedTable(plain, members)
                for item in members {
                    try begin(item, true)
                    let start = table.length + Int(item.location.dataOffset)
                    try plain.withUnsafeBytes {
                        try bytes(UnsafeRawBufferPointer(rebasing: $0[start..<start + Int(item.size)]))
                    }
                    try end(item)
                }
            }
        }
        next?.done.wait()
    }

    /// Streams a large record once, chunk by chunk (``RecordSource/readMembers(_:begin:bytes:end:)``).
    private func streamRecord(
        _ members: [Item], begin: (Item, Bool) throws -> Void, bytes: (UnsafeRawBufferPointer) throws -> Void,
        end: (Item) throws -> Void
    ) throws {
        try records.readMembers(members, begin: { try begin($0, false) }, bytes: bytes, end: end)
    }

    /// The records that hold `items`, each as its items in member order, in file order, cut into batches:
    /// records up to ``batchRecordMax`` together up to about ``batchBytes``, larger ones alone.
    static func recordBatches<S: Sequence<Item>>(_ items: S) -> [[[Item]]] {
        let groups = Dictionary(grouping: items, by: { $0.location.recordID }).values
            .map { $0.sorted { $0.location.member < $1.location.member } }
            .sorted { $0[0].location.offset < $1[0].location.offset }
        var batches: [[[Item]]] = []
        var current: [[Item]] = []
        var currentBytes: UInt64 = 0
        for members in groups {
            let length = weight(members)
            if length > batchRecordMax {
                if !current.isEmpty { batches.append(current) }
                batches.append([members])
                current = []
                currentBytes = 0
                continue
            }
            current.append(members)
            currentBytes += length
            if currentBytes >= batchBytes {
                batches.append(current)
                current = []
                currentBytes = 0
            }
        }
        if !current.isEmpty { batches.append(current) }
        return batches
    }

    /// The bytes of each record of a batch, as stored.
    func readRecords(_ batch: [[Item]]) throws -> [[UInt8]] {
        try batch.map { g in try file.read(Int(g[0].location.length), at: fileOffset(g[0].location.offset)) }
    }

    /// Whether a batch is one large record, to be streamed rather than decoded whole.
    static func isStreamed(_ batch: [[Item]]) -> Bool { weight(batch[0]) > batchRecordMax }

    /// What decoding a record whole may cost in memory: its stored bytes, or the largest member table of
    /// its items' number plus the end of the furthest value they name, whichever is more (a gigabyte of
    /// zeros is stored in a few kilobytes). Decoding a record whole stops at this many plaintext bytes
    /// (``decodeRecords``), so a batch's weight bounds its memory, however its chunks inflate.
    static func weight(_ members: [Item]) -> UInt64 {
        // Index decoding checked that every dataOffset + size fits 64 bits, and both are at most 2^48.
        let furthest = members.reduce(UInt64(0)) { max($0, $1.location.dataOffset + $1.size) }
        // (Version 2 bounds dataOffset + size by 2^64 only: saturating.)
        return max(members[0].location.length, UInt64(MemberTable.maxLength(members.count)).saturatingAdding(furthest))
    }

    static let batchRecordMax: UInt64 = 4 << 20
    static let batchBytes: UInt64 = 2 << 20

    /// The whole plaintext of each record, decoded in parallel; nil for a record whose plaintext would pass
    /// its ``weight`` (decoding stops there, before the chunk that passes it is inflated): the caller streams
    /// that one instead. The memory of a batch is therefore at most the sum of its weights.
    static func decodeRecords(_ groups: [[Item]], raws: [[UInt8]], keys: Subkeys, vaultID: [UInt8]) throws -> [[UInt8]?]
    {
        var results = [Result<[UInt8]?, VaultError>](repeating: .success(nil), count: groups.count)
        results.withUnsafeMutableBufferPointer { out in
            let o = UnsafeSendable(out)
            let g = UnsafeSendable(groups)
            DispatchQueue.concurrentPerform(iterations: groups.count) { i in
                let first = g.value[i][0]
                let key = StreamKey.record(keys, vaultID: vaultID, recordID: first.location.recordID)
                let limit = Int(min(weight(g.value[i]), UInt64(Int.max)))
                do {
                    o.value[i] = .success(
                        try Blocks.openAll(raws[i], key: key, limit: limit) {
                            VaultError(.damagedRecord, item: first.id, "\(first.displayName): \($0)")
                        })
                } catch let e as VaultError {
                    o.value[i] = .failure(e)
                } catch {
                    o.value[i] = .failure(VaultError(.damagedRecord, item: first.id, "\(first.displayName): \(error)"))
                }
            }
        }
        return try results.map { try $0.get() }
    }

    /// The member table of a decoded record, checked against the items that name it.
    func checkedTable(_ plain: [UInt8], _ members: [Item]) throws -> MemberTable {
        let first = members[0]
        let fail = { (m: String) in VaultError(.damagedRecord, item: first.id, "\(first.displayName): \(m)") }
        guard let t = try MemberTable.parse(plain, fail: fail) else {
            throw fail("record ends inside its member table")
        }
        try t.checkLength(UInt64(plain.count), fail: fail)
        try t.check(members)
        return t
    }
}

extension RecordSource {
    /// Streams the values of `members`, items that name one record, sorted by member index (which is data
    /// order), each member at most once, in one pass over the record, chunk by chunk: `begin(item)`, its bytes
    /// in one or more `bytes` calls (each authenticated before it is passed on), `end(item)`. The record is
    /// read to its end and checked against its member table. Memory: a chunk, whatever the record holds; work:
    /// one decode of the record, whatever the number of members (SPEC.md §6). What every copy of values out of a
    /// record that is not copied whole uses (compaction, rewrites, merges), so that n members never cost n
    /// decodes of their record.
    func readMembers(
        _ members: [Item], begin: (Item) throws -> Void, bytes: (UnsafeRawBufferPointer) throws -> Void,
        end: (Item) throws -> Void
    ) throws {
        guard let first = members.first else { return }
        let fail = { (m: String) in VaultError(.damagedRecord, item: first.id, "\(first.displayName): \(m)") }
        var reader = recordReader(first.location, fail: fail)
        var (table, chunk) = try reader.memberTable()
        try table.check(members)
        // Callers name each value once; items that name one member twice come from a damaged (or forged) index.
        for (a, b) in zip(members, members.dropFirst()) where a.location.member >= b.location.member {
            throw VaultError(
                .damagedRecord, item: b.id, "\(b.displayName): another item names the same member of its record")
        }
        var position: UInt64 = 0  // data offset of chunk[0]
        var next = 0
        var open = false
        while true {
            let chunkEnd = position + UInt64(chunk.count)
            while next < members.count {
                let m = members[next]
                let start = m.location.dataOffset
                let stop = start + m.size
                if !open {
                    if m.size > 0, start >= chunkEnd { break }
                    try begin(m)
                    open = true
                }
                let lo = max(start, position)
                let hi = min(stop, chunkEnd)
                if hi > lo {
                    try chunk.withUnsafeBytes {
                        try bytes(UnsafeRawBufferPointer(rebasing: $0[Int(lo - position)..<Int(hi - position)]))
                    }
                }
                guard stop <= chunkEnd else { break }
                try end(m)
                open = false
                next += 1
            }
            wipe(&chunk)
            position = chunkEnd
            // No further than the member table declares: a record that inflates past it stops here.
            guard position <= table.totalData else {
                throw fail("record holds more data than its member table declares")
            }
            guard let c = try reader.next() else { break }
            chunk = c
        }
        guard next == members.count else { throw fail("record ends before its members' data does") }
        try table.checkLength(UInt64(table.length) + position, fail: fail)
    }

    /// The values of `items` (distinct values: no two name one member of one record), each record read once
    /// (``readMembers(_:begin:bytes:end:)``), records in file order: what a command that reads many values of
    /// one vault uses instead of reading them one by one, which decodes a solid record once per member.
    func readValues<S: Sequence<Item>>(
        of items: S, begin: (Item) throws -> Void, bytes: (UnsafeRawBufferPointer) throws -> Void,
        end: (Item) throws -> Void
    ) throws {
        for batch in Vault.recordBatches(items) {
            for members in batch { try readMembers(members, begin: begin, bytes: bytes, end: end) }
        }
    }
}

extension PagedVault {
    /// Reads the values of `items` (live items or kept versions of this vault; distinct values), each record
    /// decoded once, records in file order: `begin(item)`, its bytes (authenticated) in one or more `bytes`
    /// calls, `end(item)`. What a command that prints or copies many values uses: reading them one by one
    /// decodes a solid record once per member.
    package func readValues(
        of items: [Item], begin: (Item) throws -> Void, bytes: (UnsafeRawBufferPointer) throws -> Void,
        end: (Item) throws -> Void
    ) throws {
        try source.readValues(of: items, begin: begin, bytes: bytes, end: end)
    }
}

extension Blocks {
    /// Opens every block of a stream held in memory and returns the concatenated chunks, or nil as soon as
    /// the next chunk would take them past `limit` bytes (before it is inflated).
    static func openAll(_ raw: [UInt8], key: StreamKey, limit: Int, fail: (String) -> VaultError) throws -> [UInt8]? {
        var out: [UInt8] = []
        var p = 0
        var index: UInt32 = 0
        while p < raw.count {
            guard raw.count - p >= frameBytes else { throw fail("block \(index) is cut short") }
            let n = Int(raw.readLE(UInt32.self, at: p))
            guard n >= sealedMin, n <= sealedMax, p + frameBytes + n <= raw.count else {
                throw fail("block \(index) declares \(n) sealed bytes")
            }
            let end = p + frameBytes + n
            guard
                let chunk = try open(
                    nonce: Array(raw[p + 4..<p + 28]), sealed: Array(raw[p + frameBytes..<end]), key: key,
                    index: index, last: end == raw.count, room: limit - out.count, fail: fail)
            else {
                wipe(&out)
                return nil
            }
            out += chunk
            p = end
            index += 1
        }
        guard index > 0 else { throw fail("empty extent") }
        return out
    }
}
