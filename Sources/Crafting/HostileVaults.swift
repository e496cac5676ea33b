import VaultFormat

/// Hostile vaults for the acceptance harness (kcar-hostile) and the hostile-input tests: each a valid header, one
/// key-file slot for ``key`` and valid trailers around the hostile structure, so the attack reaches past the MACs.
package enum HostileVaults {
    package static let key = [UInt8](repeating: 7, count: 32)

    package static func vault(group: String = "g") throws -> CraftedVault {
        try CraftedVault(
            keyFile: key, group: group, random: DeterministicRandom(seed: [UInt8](repeating: 3, count: 32)))
    }

    package static func u32(_ v: Int) -> [UInt8] {
        var w = ByteWriter()
        w.appendLE(UInt32(truncatingIfNeeded: v))
        return w.bytes
    }

    package static func varint(_ value: UInt64) -> [UInt8] {
        var w = ByteWriter()
        w.appendVarint(value)
        return w.bytes
    }

    /// The n-th id of a series: ascending in n, and compressible (what an attacker would write).
    package static func id(_ n: Int, _ tag: UInt8 = 0) -> [UInt8] {
        [tag] + [UInt8](repeating: 0, count: 11) + u32(n).reversed()
    }

    /// The n-th id of a series, ascending in n, 12 of its 16 bytes random-looking as a writer's ids are (an
    /// index stores at least 16 bytes per operation, SPEC.md §7: crafted vaults that must open use these).
    package static func randomID(_ n: Int, _ tag: UInt8 = 0) -> [UInt8] {
        [tag] + Array(u32(n).reversed().dropFirst()) + Array(Sodium.hash([tag] + u32(n), outputBytes: 16).prefix(12))
    }

    /// An index entry by raw fields: class `genp`, the given data attributes (names a000..), string svce/acct.
    package static func entry(
        service: String? = nil, account: String? = nil, dataAttributes: Int = 0, attributeBytes: Int = 0,
        salt: [UInt8]? = nil, size: UInt64, recordID: [UInt8], offset: UInt64, length: UInt64, member: Int = 0,
        dataOffset: UInt64 = 0
    ) -> [UInt8] {
        var w: [UInt8] = varint(4) + Array("genp".utf8)
        var attrs: [([UInt8], [UInt8])] = []
        for i in 0..<dataAttributes {
            let name = Array("a\(String(1000 + i).dropFirst())".utf8)
            attrs.append((name, [5] + varint(UInt64(attributeBytes)) + [UInt8](repeating: 0, count: attributeBytes)))
        }
        if let account {
            attrs.append((Array("acct".utf8), [1] + varint(UInt64(account.utf8.count)) + Array(account.utf8)))
        }
        if let salt { attrs.append((Array("salt".utf8), [5] + varint(UInt64(salt.count)) + salt)) }
        if let service {
            attrs.append((Array("svce".utf8), [1] + varint(UInt64(service.utf8.count)) + Array(service.utf8)))
        }
        w += varint(UInt64(attrs.count))
        for (n, v) in attrs { w += varint(UInt64(n.count)) + n + v }
        w += varint(size) + recordID + varint(offset) + varint(length) + varint(UInt64(member)) + varint(dataOffset)
        return w
    }

    /// A stored record of one member holding `value`.
    package static func smallRecord(_ v: inout CraftedVault, id recordID: [UInt8], member: [UInt8], value: [UInt8]) -> (
        UInt64, UInt64
    ) {
        v.appendRecord(
            id: recordID, blocks: [.stored(CraftedVault.recordPlaintext([(member, value)]), index: 0, last: true)])
    }

    /// `records` records of `chunksPerRecord` chunks of 1 MiB of zeros (zlib), each member table declaring one
    /// member of 10 bytes, and the index naming that member in each (10 bytes, as declared).
    package static func bombVault(records: Int, chunksPerRecord: Int) throws -> CraftedVault {
        var v = try vault()
        let mib = 1 << 20
        let zeros = CraftedVault.zlib([UInt8](repeating: 0, count: mib))
        var ops: [(op: UInt8, id: [UInt8], entry: [UInt8])] = []
        for r in 0..<records {
            let itemID = randomID(r, 1)
            let recordID = randomID(r, 2)
            var first = CraftedVault.recordPlaintext([(itemID, [UInt8](repeating: 0, count: 10))])
            first += [UInt8](repeating: 0, count: mib - first.count)
            var blocks = [
                CraftedVault.Block(p: [1] + u32(mib) + CraftedVault.zlib(first), index: 0, last: chunksPerRecord == 1)
            ]
            for c in 1..<max(chunksPerRecord, 1) {
                blocks.append(
                    CraftedVault.Block(p: [1] + u32(mib) + zeros, index: UInt32(c), last: c == chunksPerRecord - 1))
            }
            let (offset, length) = v.appendRecord(id: recordID, blocks: blocks)
            ops.append(
                (
                    1, itemID,
                    entry(service: "s", account: "a\(r)", size: 10, recordID: recordID, offset: offset, length: length)
                ))
        }
        let index = v.appendIndex(CraftedVault.indexPlaintext(ops), generation: 1)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: index, previous: nil, itemCount: UInt32(records), checkpoint: true,
            chain: 0)
        return v
    }

    /// A checkpoint and `segments - 1` deltas, each putting `itemsPerSegment` new items of 256 data
    /// attributes of 64 KiB (16 MiB each), all naming one small record. Segments are sealed a chunk at a
    /// time: the harness's own memory stays small (a child's peak RSS starts from its parent's).
    /// With `checkpoints`, every commit is a checkpoint of the same items instead (a long history of
    /// superseded segments, which only verify reads).
    package static func chainVault(segments: Int, itemsPerSegment: Int, checkpoints: Bool = false, group: String = "g")
        throws -> CraftedVault
    {
        var v = try vault(group: group)
        let recordID = id(0, 9)
        let (offset, length) = smallRecord(&v, id: recordID, member: id(0, 8), value: [1])
        let e = entry(
            dataAttributes: 256, attributeBytes: 65_536, size: 1, recordID: recordID, offset: offset, length: length)
        var previous: UInt64? = nil
        for s in 0..<segments {
            let start = UInt64(v.body.count)
            let generation = UInt64(s + 1)
            let first = checkpoints ? 0 : s * itemsPerSegment
            let (total, bytes) = series(itemsPerSegment, opLength: 17 + e.count) { k in [[1] + id(first + k, 1), e] }
            let index = v.appendIndex(length: total, generation: generation, bytes: bytes)
            v.appendTrailer(
                generation: generation, commitStart: previous == nil ? 0 : start, index: index, previous: previous,
                itemCount: UInt32((checkpoints ? 1 : s + 1) * itemsPerSegment), checkpoint: checkpoints || s == 0,
                chain: checkpoints ? 0 : UInt16(s))
            previous = UInt64(v.body.count) - 96
        }
        return v
    }

    /// One item in a valid vault.
    package static func oneItem(generation: UInt64 = 1) throws -> CraftedVault {
        var v = try vault()
        let recordID = id(0, 9)
        let itemID = id(0, 1)
        let (offset, length) = smallRecord(&v, id: recordID, member: itemID, value: Array("secret".utf8))
        let index = v.appendIndex(
            CraftedVault.indexPlaintext([
                (
                    1, itemID,
                    entry(
                        service: "s", account: "a", size: 6, recordID: recordID,
                        offset: offset, length: length)
                )
            ]),
            generation: generation)
        v.appendTrailer(
            generation: generation, commitStart: 0, index: index, previous: nil, itemCount: 1, checkpoint: true,
            chain: 0)
        return v
    }

    package static func lastGeneration() throws -> CraftedVault { try oneItem(generation: .max) }

    /// A valid vault followed by `bytes` of junk: 96-byte trailer candidates, each consistent with its own
    /// position but with a wrong MAC (`structured`), or the trailer magic repeated.
    package static func trailerJunk(bytes: Int, structured: Bool) throws -> CraftedVault {
        var v = try oneItem()
        let magic = Array("KCARTRL1".utf8)
        if !structured {
            var junk: [UInt8] = []
            junk.reserveCapacity(bytes)
            while junk.count < bytes { junk += magic }
            v.body += junk
            return v
        }
        var p = UInt64(v.body.count)
        let end = p + UInt64(bytes)
        func le(_ x: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: x >> (8 * UInt64($0))) } }
        while p + 96 <= end {
            // A first commit ending here: commit start 0, index [0, p), checkpoint, chain 0.
            var t = magic + le(1) + le(0) + le(0) + le(p) + le(.max)
            t += u32(1) + [1, 0, 0, 0] + le(0)
            t += [UInt8](repeating: 0xAA, count: 32)
            v.body += t
            p += 96
        }
        return v
    }

    /// `items` items of 2^48 bytes each, all naming one small record (its member table names only the first).
    package static func hugeSizes(items: Int) throws -> CraftedVault {
        var v = try vault()
        let recordID = id(0, 9)
        let (offset, length) = smallRecord(&v, id: recordID, member: id(0, 1), value: [1])
        var ops: [(op: UInt8, id: [UInt8], entry: [UInt8])] = []
        for i in 0..<items {
            let itemID = randomID(i, 1)
            ops.append(
                (
                    1, itemID,
                    entry(
                        service: "s", account: "a\(i)", salt: Array(itemID.suffix(8)), size: 1 << 48,
                        recordID: recordID,
                        offset: offset, length: length, member: i % 65_536)
                ))
        }
        let index = v.appendIndex(CraftedVault.indexPlaintext(ops), generation: 1)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: index, previous: nil, itemCount: UInt32(items), checkpoint: true,
            chain: 0)
        return v
    }

    /// One item, then a second first commit (commit start 0, no previous trailer) naming the same record:
    /// its records region holds the whole first commit, trailer included (SPEC.md §8).
    package static func hiddenCommit() throws -> CraftedVault {
        var v = try oneItem()
        let recordID = id(0, 9)
        let itemID = id(0, 1)
        // oneItem's record is its first bytes: the stored block of a 6-byte value.
        let length = UInt64(28 + 16 + 5 + CraftedVault.recordPlaintext([(itemID, Array("secret".utf8))]).count)
        let index = v.appendIndex(
            CraftedVault.indexPlaintext([
                (
                    1, itemID,
                    entry(
                        service: "s", account: "a", size: 6, recordID: recordID,
                        offset: 0, length: length)
                )
            ]),
            generation: 2)
        v.appendTrailer(
            generation: 2, commitStart: 0, index: index, previous: nil, itemCount: 1, checkpoint: true, chain: 0)
        return v
    }

    /// One checkpoint of `items` minimal items (class "genp", no attributes), all naming one small record,
    /// streamed a chunk at a time.
    /// `salted`: ids and an 8-byte attribute random-looking, so that the segment passes the 16 bytes per
    /// operation rule (as many items as a file of that size can hold).
    package static func manyItems(_ items: Int, salted: Bool = false) throws -> CraftedVault {
        var v = try vault()
        let recordID = id(0, 9)
        let (offset, length) = smallRecord(&v, id: recordID, member: id(0, 8), value: [1])
        let marker = [UInt8](repeating: 0xEE, count: 8)
        let e = entry(salt: salted ? marker : nil, size: 0, recordID: recordID, offset: offset, length: length)
        let saltAt = 17 + ((0...(e.count - 8)).first { Array(e[$0..<$0 + 8]) == marker } ?? 0)
        let (total, bytes) = series(items, opLength: 17 + e.count) { k in
            guard salted else { return [[1] + id(k, 1), e] }
            let cut = saltAt - 17
            return [
                [1] + randomID(k, 1), Array(e[..<cut]), Sodium.hash([7] + u32(k), outputBytes: 8),
                Array(e[(cut + 8)...])
            ]
        }
        let index = v.appendIndex(length: total, generation: 1, bytes: bytes)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: index, previous: nil, itemCount: UInt32(items), checkpoint: true,
            chain: 0)
        return v
    }

    /// The plaintext of a segment of `n` operations, each `opLength` bytes that `op(k)` gives as parts (large
    /// parts are shared arrays, not copied per call): its length, and its bytes [from, from + count) on demand.
    static func series(_ n: Int, opLength: Int, op: @escaping (Int) -> [[UInt8]]) -> (Int, (Int, Int) -> [UInt8]) {
        let head = varint(UInt64(n))
        return (
            head.count + n * opLength,
            { from, count in
                var out: [UInt8] = []
                out.reserveCapacity(count)
                var p = from
                while out.count < count {
                    if p < head.count {
                        out.append(head[p])
                        p += 1
                        continue
                    }
                    var o = (p - head.count) % opLength
                    for part in op((p - head.count) / opLength) {
                        guard out.count < count else { break }
                        if o >= part.count {
                            o -= part.count
                            continue
                        }
                        let m = min(count - out.count, part.count - o)
                        out += part[o..<o + m]
                        p += m
                        o = 0
                    }
                }
                return out
            }
        )
    }
}
