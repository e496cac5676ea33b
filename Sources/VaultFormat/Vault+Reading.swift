extension Vault {
    /// Reads an item's whole value into memory.
    public func read(_ item: Item) throws -> [UInt8] {
        var out: [UInt8] = []
        // What the index declares, up to a few chunks: the record proves the rest as it is read.
        out.reserveCapacity(Int(min(item.size, UInt64(4 * Limits.chunkSize))))
        try read(item) { out.append(contentsOf: $0) }
        return out
    }

    /// Streams an item's value to `sink` chunk by chunk; every byte passed on has authenticated. Throws
    /// ``VaultError/Code/damagedRecord`` naming the item if anything fails, possibly after some chunks, and
    /// ``VaultError/Code/staleItem`` if `item` was taken before its item was deleted or its value replaced.
    public func read(_ item: Item, into sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        try naming { try records.read(try current(item), into: sink) }
    }

    /// Where this vault's records are read from.
    var records: RecordSource {
        RecordSource(file: file, headerLength: UInt64(header.length), vaultID: header.vaultID, keys: keys)
    }
}

/// Reads item values from the records of one vault file (either format version: records are §6's in both).
package struct RecordSource {
    let file: File
    package let headerLength: UInt64
    package let vaultID: [UInt8]
    package let keys: Subkeys

    package init(file: File, headerLength: UInt64, vaultID: [UInt8], keys: Subkeys) {
        (self.file, self.headerLength, self.vaultID, self.keys) = (file, headerLength, vaultID, keys)
    }

    /// A reader over the blocks of the record at `l`.
    func recordReader(_ l: RecordLocation, fail: @escaping (String) -> VaultError) -> BlockReader {
        BlockReader(
            file: file, key: StreamKey.record(keys, vaultID: vaultID, recordID: l.recordID),
            start: headerLength.saturatingAdding(l.offset),
            end: headerLength.saturatingAdding(l.offset).saturatingAdding(l.length), fail: fail)
    }

    /// Streams `item`'s value to `sink`, every byte authenticated before it is passed on.
    func read(_ item: Item, into sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        let l = item.location
        let fail = { (m: String) in VaultError(.damagedRecord, item: item.id, "\(item.displayName): \(m)") }
        var reader = recordReader(l, fail: fail)
        // The table is checked whole, but only this item's member is kept (a solid record names hundreds).
        var (t, chunk) = try reader.memberTable(locating: l.member)
        guard let m = t.member, m.id == item.id, m.size == item.size, m.dataOffset == l.dataOffset else {
            throw MemberTable.notNaming(item)
        }
        // Stream [dataOffset, dataOffset + size) of the data area.
        var skip = l.dataOffset
        var left = item.size
        var dataSeen = UInt64(chunk.count)
        while true {
            let n = UInt64(chunk.count)
            if skip < n, left > 0 {
                let take = min(n - skip, left)
                try chunk.withUnsafeBytes {
                    try sink(UnsafeRawBufferPointer(rebasing: $0[Int(skip)..<Int(skip + take)]))
                }
                left -= take
            }
            skip = skip > n ? skip - n : 0
            wipe(&chunk)
            if left == 0 {
                if reader.isAtEnd { break }
                guard dataSeen < t.totalData else { throw fail("record holds more data than its member table") }
                break  // the rest belongs to other members
            }
            guard let next = try reader.next() else { break }
            chunk = next
            dataSeen += UInt64(chunk.count)
        }
        guard left == 0 else { throw fail("record ends \(left) bytes before the value does") }
        if reader.isAtEnd, dataSeen != t.totalData {
            throw fail("record holds \(dataSeen) data bytes, its member table \(t.totalData)")
        }
    }
}

extension Vault {
    /// The vault's item for the handle `item`, which the caller may have kept across commits: the same item
    /// with the same value (record, member and size; a rewrite may have moved the record), or
    /// ``VaultError/Code/staleItem``. An attribute change keeps the value, so it leaves a handle current.
    func current(_ item: Item) throws -> Item {
        let found = try liveItem(like: item)
        guard let now = found else {
            throw VaultError(
                .staleItem, "\(item.displayName): the item was deleted after this handle was taken; look it up again")
        }
        let a = now.location
        let b = item.location
        guard now.size == item.size, a.recordID == b.recordID, a.member == b.member, a.dataOffset == b.dataOffset else {
            throw VaultError(
                .staleItem,
                "\(item.displayName): the item's value was replaced after this handle was taken; look it up again")
        }
        return now
    }

    /// A reader over the blocks of the record at `l`.
    func recordReader(_ l: RecordLocation, fail: @escaping (String) -> VaultError) -> BlockReader {
        records.recordReader(l, fail: fail)
    }
}

extension BlockReader {
    /// Reads chunks until the record's member table is complete; returns it and the data bytes read after it.
    mutating func memberTable() throws -> (MemberTable, [UInt8]) {
        let fail = fail
        return try readTable { try MemberTable.parse($0, fail: fail) }
    }

    /// As ``memberTable()``, keeping of the members only the one at `index` (nil if the table is shorter).
    mutating func memberTable(locating index: Int) throws -> (MemberTable.Located, [UInt8]) {
        let fail = fail
        return try readTable { try MemberTable.locate(index, in: $0, fail: fail) }
    }

    private mutating func readTable<T: MemberTableLength>(_ parse: ([UInt8]) throws -> T?) throws -> (T, [UInt8]) {
        var pending: [UInt8] = []
        defer { wipe(&pending) }
        while true {
            guard let c = try next() else { throw fail("record ends inside its member table") }
            if pending.isEmpty { pending = c } else { pending.append(contentsOf: c) }
            if let t = try parse(pending) { return (t, Array(pending[t.length...])) }
        }
    }
}

/// A parsed member table's extent: the data follows it.
protocol MemberTableLength { var length: Int { get } }

extension MemberTable: MemberTableLength {}

/// A record's member table (SPEC.md §6).
package struct MemberTable {
    var members: [(id: ItemID, size: UInt64)]
    /// Data offset of each member.
    var offsets: [UInt64]
    /// Bytes of the table itself.
    var length: Int
    var totalData: UInt64

    func dataOffset(of index: Int) -> UInt64 { offsets[index] }

    /// The table at the start of `bytes`, nil if `bytes` ends before it does.
    static func parse(_ bytes: [UInt8], fail: (String) -> VaultError) throws -> MemberTable? {
        var members: [(id: ItemID, size: UInt64)] = []
        var offsets: [UInt64] = []
        let extent = try walk(bytes, fail: fail) { _, id, size, offset in
            offsets.append(offset)
            members.append((id, size))
        }
        return extent.map { MemberTable(members: members, offsets: offsets, length: $0.length, totalData: $0.total) }
    }

    /// One member of a table, with the table's extent (``BlockReader/memberTable(locating:)``).
    struct Located: MemberTableLength {
        var member: (id: ItemID, size: UInt64, dataOffset: UInt64)?
        var length: Int
        var totalData: UInt64
    }

    /// The table at the start of `bytes`, checked as ``parse(_:fail:)`` checks it, with member `index` only;
    /// nil if `bytes` ends before the table does.
    static func locate(_ index: Int, in bytes: [UInt8], fail: (String) -> VaultError) throws -> Located? {
        var member: (id: ItemID, size: UInt64, dataOffset: UInt64)?
        let extent = try walk(bytes, fail: fail) { i, id, size, offset in
            if i == index { member = (id, size, offset) }
        }
        return extent.map { Located(member: member, length: $0.length, totalData: $0.total) }
    }

    /// Reads the table at the start of `bytes`, handing `visit` each member (position, id, size, data
    /// offset); returns its length and data total, nil if `bytes` ends before it does.
    private static func walk(
        _ bytes: [UInt8], fail: (String) -> VaultError, visit: (Int, ItemID, UInt64, UInt64) -> Void
    ) throws -> (length: Int, total: UInt64)? {
        var r = ByteReader(bytes, failure: .damagedRecord, what: "member table")
        // nil when the varint at the cursor is not complete within `bytes` yet.
        func varint() throws -> UInt64? {
            var p = r.position
            while p < bytes.count, p - r.position < 10 {
                if bytes[p] & 0x80 == 0 { return try r.readVarint() }
                p += 1
            }
            return p - r.position >= 10 ? try r.readVarint() : nil
        }
        guard let n = try varint() else { return nil }
        guard n >= 1, n <= UInt64(Limits.membersMax) else { throw fail("member count \(n)") }
        var total: UInt64 = 0
        for i in 0..<Int(n) {
            guard r.remaining >= 16 else { return nil }
            let id = ItemID(raw: try r.readID())
            guard let size = try varint() else { return nil }
            guard size <= Limits.valueMax, let t = total.adding(size) else { throw fail("member size \(size)") }
            visit(i, id, size, total)
            total = t
        }
        // The record is the table and the data: its size must fit 64 bits too (65,536 members of 2^48 almost
        // fill them), so that `length + totalData` never overflows wherever it is used.
        guard total.adding(UInt64(r.position)) != nil else { throw fail("member sizes add up past 2^64 bytes") }
        return (r.position, total)
    }

    /// Throws unless the table names each item at its member index, with its size and data offset.
    func check(_ items: [Item]) throws {
        for item in items {
            let m = item.location.member
            guard m < members.count, members[m].id == item.id, members[m].size == item.size,
                offsets[m] == item.location.dataOffset
            else { throw MemberTable.notNaming(item) }
        }
    }

    /// What a read or a check throws when the record's table does not name `item` where its index says.
    static func notNaming(_ item: Item) -> VaultError {
        VaultError(.damagedRecord, "\(item.displayName): the record's member table does not name this item")
    }

    /// Throws unless a record of `plaintext` bytes is exactly this table and its members' data.
    func checkLength(_ plaintext: UInt64, fail: (String) -> VaultError) throws {
        guard plaintext == UInt64(length) + totalData else {
            throw fail("record holds \(plaintext) bytes, its member table declares \(UInt64(length) + totalData)")
        }
    }

    /// The largest member table of `n` members: a 3-byte count, then per member an id and a size of at
    /// most 2^48 (a 7-byte varint).
    static func maxLength(_ n: Int) -> UInt64 { 3 + 23 * UInt64(n) }

    /// Bytes of `v` as a varint.
    static func varintLength(_ v: UInt64) -> Int { max(1, (64 - v.leadingZeroBitCount + 6) / 7) }

    package static func encode(_ members: [(id: ItemID, size: UInt64)]) -> [UInt8] {
        var w = ByteWriter(capacity: 2 + members.count * 20)
        w.appendVarint(members.count)
        for m in members {
            w.append(contentsOf: m.id.bytes)
            w.appendVarint(m.size)
        }
        return w.bytes
    }
}

extension Item {
    /// `service/account` as `kcar list` shows it, or the id for items without them.
    public var displayName: String {
        if let s = service, let a = account { return "\(s)/\(a)" }
        return id.description
    }
}
