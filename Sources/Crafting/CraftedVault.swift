import VaultFormat

/// Builds vault bytes piece by piece, with full control over every field: for test vectors and malformed
/// fixtures only (`kcar-fixtures`, tests). Writers of real vaults use ``Vault``.
package struct CraftedVault {
    package let vaultID: [UInt8]
    package let vaultKey: SecureBytes
    let keys: Subkeys
    package var header: [UInt8]
    package var body: [UInt8] = []
    let random: RandomSource

    /// A header with one key-file slot for `keyFile`, group `group`, and `extraFields` (tag, value), all in
    /// tag order; `editFields` may then break any rule.
    package init(
        keyFile: [UInt8], group: String, random: RandomSource, extraFields: [(UInt16, [UInt8])] = [],
        slotOverride: [UInt8]? = nil, editFields: ([(UInt16, [UInt8])]) -> [(UInt16, [UInt8])] = { $0 }
    ) throws {
        self.random = random
        vaultID = random.bytes(16)
        vaultKey = random.secureBytes(32)
        keys = Subkeys(vaultKey: vaultKey)
        let slot = try KeySlot.make(
            for: .keyFile(SecureBytes(copying: keyFile)), vaultKey: vaultKey, vaultID: vaultID, random: random)
        var fields: [(UInt16, [UInt8])] = [
            (Header.tagVaultID, vaultID), (Header.tagGroup, Array(group.utf8)),
            (Header.tagSlot, slotOverride ?? slot.encode())
        ]
        fields = (fields + extraFields).enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }
            .map(\.element)
        header = CraftedVault.header(fields: editFields(fields), macKey: keys.header)
    }

    /// Header bytes for arbitrary fields, with a correct checksum and MAC.
    package static func header(fields: [(UInt16, [UInt8])], macKey: SecureBytes, version: UInt16 = 1) -> [UInt8] {
        var w = ByteWriter()
        w.append(contentsOf: Header.magic)
        w.appendLE(version)
        w.appendLE(UInt16(0))
        w.appendLE(UInt32(0))
        for (tag, value) in fields {
            w.appendLE(tag)
            w.appendLE(UInt16(value.count))
            w.append(contentsOf: value)
        }
        var b = w.bytes
        let length = b.count + 64
        for i in 0..<4 { b[12 + i] = UInt8(truncatingIfNeeded: length >> (8 * i)) }
        return resealed(header: b + [UInt8](repeating: 0, count: 64), macKey: macKey)
    }

    /// Recomputes checksum and MAC of header bytes whose fixed part and fields were edited.
    package static func resealed(header b: [UInt8], macKey: SecureBytes?) -> [UInt8] {
        var b = b
        let n = b.count
        b.replaceSubrange(n - 64..<n - 32, with: Sodium.hash(Array(b[0..<n - 64])))
        if let k = macKey { b.replaceSubrange(n - 32..<n, with: Sodium.mac(key: k, Array(b[0..<n - 32]))) }
        return b
    }

    package func resealed(header b: [UInt8], mac: Bool = true) -> [UInt8] {
        CraftedVault.resealed(header: b, macKey: mac ? keys.header : nil)
    }

    /// One block as raw parts: the plaintext P = codec || u32 length || payload is given whole.
    package struct Block {
        package var p: [UInt8]
        package var index: UInt32
        package var last: Bool
        package init(p: [UInt8], index: UInt32, last: Bool) {
            self.p = p
            self.index = index
            self.last = last
        }
        /// A stored chunk.
        package static func stored(_ chunk: [UInt8], index: UInt32, last: Bool) -> Block {
            var w = ByteWriter()
            w.append(0)
            w.appendLE(UInt32(chunk.count))
            w.append(contentsOf: chunk)
            return Block(p: w.bytes, index: index, last: last)
        }
    }

    /// Appends record blocks sealed for `recordID`; returns (body offset, length).
    @discardableResult
    package mutating func appendRecord(id recordID: [UInt8], blocks: [Block]) -> (UInt64, UInt64) {
        append(blocks, key: StreamKey.record(keys, vaultID: vaultID, recordID: ID128(recordID)))
    }

    /// Appends an index segment for `generation`; returns (body offset, length).
    @discardableResult
    package mutating func appendIndex(_ plaintext: [UInt8], generation: UInt64) -> (UInt64, UInt64) {
        let key = StreamKey.index(keys, vaultID: vaultID, generation: generation)
        let jobs = Blocks.jobs(for: plaintext, key: key, random: random)
        let start = UInt64(body.count)
        for j in jobs { body += Blocks.seal(j, level: 6) }
        return (start, UInt64(body.count) - start)
    }

    /// Appends an index segment for `generation` of `length` plaintext bytes that `bytes(from, count)` hands
    /// over one chunk at a time (a segment of hundreds of MiB crafted in a few MiB of memory).
    @discardableResult
    package mutating func appendIndex(length: Int, generation: UInt64, bytes: (_ from: Int, _ count: Int) -> [UInt8])
        -> (UInt64, UInt64)
    {
        let key = StreamKey.index(keys, vaultID: vaultID, generation: generation)
        let start = UInt64(body.count)
        var from = 0
        var index: UInt32 = 0
        while from < length {
            let n = min(Limits.chunkSize, length - from)
            let job = ChunkJob(
                plaintext: bytes(from, n)[...], index: index, last: from + n == length,
                nonce: random.bytes(Sodium.aeadNonceBytes), key: key)
            body += Blocks.seal(job, level: 6)
            from += n
            index += 1
        }
        return (start, UInt64(body.count) - start)
    }

    private mutating func append(_ blocks: [Block], key: StreamKey) -> (UInt64, UInt64) {
        let start = UInt64(body.count)
        for b in blocks {
            let nonce = random.bytes(24)
            let sealed = b.p.withUnsafeBytes {
                Sodium.seal(key: key.key, nonce: nonce, plaintext: $0, ad: key.ad(chunk: b.index, last: b.last))
            }
            var w = ByteWriter()
            w.appendLE(UInt32(sealed.count))
            w.append(contentsOf: nonce)
            w.append(contentsOf: sealed)
            body += w.bytes
        }
        return (start, UInt64(body.count) - start)
    }

    /// Appends a trailer with the given fields (MAC computed over them as they are).
    package mutating func appendTrailer(
        generation: UInt64, commitStart: UInt64, index: (UInt64, UInt64), previous: UInt64?,
        itemCount: UInt32, checkpoint: Bool, chain: UInt16
    ) {
        let t = Trailer(
            generation: generation, commitStart: commitStart, indexOffset: index.0, indexLength: index.1,
            previous: previous ?? Trailer.noPrevious, itemCount: itemCount, checkpoint: checkpoint, chain: chain)
        body += t.encode(vaultID: vaultID, key: keys.trailer)
    }

    /// The plaintext of an index segment with the given operations, each put given by raw fields.
    package static func indexPlaintext(_ ops: [(op: UInt8, id: [UInt8], entry: [UInt8])], count: Int? = nil) -> [UInt8]
    {
        var w = ByteWriter()
        w.appendVarint(count ?? ops.count)
        for o in ops {
            w.append(o.op)
            w.append(contentsOf: o.id)
            w.append(contentsOf: o.entry)
        }
        return w.bytes
    }

    /// An item entry (SPEC.md §7) with string attributes and a raw location.
    package static func entry(
        class c: String = "genp", strings: [(String, String)], size: UInt64, recordID: [UInt8],
        offset: UInt64, length: UInt64, member: Int = 0, dataOffset: UInt64 = 0
    ) -> [UInt8] {
        var a = Attributes()
        for (k, v) in strings { a[k] = .string(v) }
        let item = Item(
            id: ItemID([UInt8](repeating: 0, count: 16)), itemClass: ItemClass(rawValue: c), attributes: a, size: size,
            location: RecordLocation(
                recordID: ID128(recordID), offset: offset, length: length, member: member, dataOffset: dataOffset))
        var w = ByteWriter()
        IndexCodec.encodeEntry(item, into: &w)
        return w.bytes
    }

    /// A member table followed by data: a record's plaintext.
    package static func recordPlaintext(_ members: [([UInt8], [UInt8])], declaredSizes: [UInt64]? = nil) -> [UInt8] {
        var out = MemberTable.encode(
            members.enumerated().map { i, m in (ItemID(m.0), declaredSizes?[i] ?? UInt64(m.1.count)) })
        for m in members { out += m.1 }
        return out
    }

    package var bytes: [UInt8] { header + body }

    /// zlib stream of `data` (for crafted compressed chunks).
    package static func zlib(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { Deflate.compressAlways($0, level: 9) }
    }
}
