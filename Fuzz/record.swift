@testable import VaultFormat

// Target `record`: a record's chunk stream and member table, below the encryption (SPEC.md §6): block
// plaintexts P (codec || u32 chunk length || payload) go through inflation (Deflate.swift), the block
// readers (Blocks.swift: BlockReader, Blocks.openAll) and the member table (Vault+Reading.swift), by way of
// Vault.read, Vault.verify and Vault.readValues (Vault+Batch.swift), over a file that holds the record.
//
// Input framing: byte 0 = flags (bit 0: inflate with zlib instead of libdeflate; bit 1: an extra item that
// may disagree with the member table follows, 5 bytes: u16 member index, u8 mode, u16 size); then the
// blocks, each as u16 length (little-endian) + that many bytes of P (a short last one takes what is left).
// The harness seals each P itself (XChaCha20-Poly1305 under a fixed key), so every block authenticates.
//
// Oracle: an independent reading (each block opened alone, the table parsed from their concatenation)
// says which items are intact and what their bytes are; the three reading paths must agree with it.
#if canImport(Glibc)
    import Glibc
#endif

let vaultID = [UInt8](repeating: 3, count: 16)
let recordID = ID128(hi: 0x0011_2233_4455_6677, lo: 0x8899_AABB_CCDD_EEFF)
let nonce = [UInt8](repeating: 0x4E, count: Sodium.aeadNonceBytes)
let maxBlocks = 8
/// Items read one by one (each read walks the record again).
let maxSingleReads = 4
let maxItems = 1024

let vault: Vault = {
    let header = Header(vaultID: vaultID, group: "fuzz", slots: [])
    let trailer = Trailer(
        generation: 1, commitStart: 0, indexOffset: 1 << 40, indexLength: 1, previous: Trailer.noPrevious,
        itemCount: 0, checkpoint: true, chain: 0)
    let tail = Tail(trailer: trailer, offset: trailer.indexOffset + 1, checkpointBytes: 1, deltaBytes: 0)
    let path = emptyScratchFile("record")
    let file = try! File.openRead(path)
    unlink(path)
    return Vault(
        path: "record", header: header, headerBytes: [], file: file,
        vaultKey: SecureBytes(copying: [UInt8](repeating: 9, count: 32)), state: [:], engine: LogEngine(tail: tail),
        incompleteBytes: 0,
        mode: .read)
}()
let key = StreamKey.record(vault.keys, vaultID: vaultID, recordID: recordID)

/// A scratch file (unlinked at once) that holds the header's room and the record.
let scratch: Int32 = {
    var template = Array("/tmp/kcar-fuzz-record-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    precondition(fd >= 0, "mkstemp failed")
    unlink(String(cString: template))
    return fd
}()

struct Input {
    var zlib = false
    var lie: (member: Int, mode: UInt8, size: Int)?
    var blocks: [[UInt8]] = []

    init(_ bytes: [UInt8]) {
        var c = InputCursor(bytes)
        let flags = c.u8()
        zlib = flags & 1 != 0
        if flags & 2 != 0 { lie = (c.u16(), c.u8(), c.u16()) }
        while c.remaining > 0, blocks.count < maxBlocks { blocks.append(c.take(c.u16())) }
    }

    init(zlib: Bool = false, blocks: [[UInt8]]) {
        self.zlib = zlib
        self.blocks = blocks
    }

    var bytes: [UInt8] {
        var out: [UInt8] = [(zlib ? 1 : 0) | (lie == nil ? 0 : 2)]
        if let lie {
            out.appendLE16(lie.member)
            out.append(lie.mode)
            out.appendLE16(lie.size)
        }
        for b in blocks {
            out.appendLE16(b.count)
            out += b
        }
        return out
    }
}

func fail(_ m: String) -> VaultError { VaultError(.damagedRecord, m) }

func fuzzOne(_ bytes: [UInt8]) {
    let input = Input(bytes)
    Deflate.inflater = input.zlib ? .zlib : .libdeflate
    // The stream as stored: each P sealed into a block.
    var raw: [UInt8] = []
    var sealedBlocks: [[UInt8]] = []
    for (i, p) in input.blocks.enumerated() {
        let sealed = p.withUnsafeBytes {
            Sodium.seal(
                key: key.key, nonce: nonce, plaintext: $0,
                ad: key.ad(chunk: UInt32(i), last: i == input.blocks.count - 1))
        }
        for k in 0..<4 { raw.append(UInt8(truncatingIfNeeded: sealed.count >> (8 * k))) }
        raw += nonce + sealed
        sealedBlocks.append(sealed)
    }

    // The oracle: blocks opened one at a time, as far as they open.
    var plain: [UInt8] = []
    var allOpen = !input.blocks.isEmpty
    for (i, sealed) in sealedBlocks.enumerated() {
        guard sealed.count >= Blocks.sealedMin, sealed.count <= Blocks.sealedMax,
            let chunk = try? Blocks.open(
                nonce: nonce, sealed: sealed, key: key, index: UInt32(i), last: i == sealedBlocks.count - 1,
                fail: fail)
        else {
            allOpen = false
            break
        }
        plain += chunk
    }
    let table = try? MemberTable.parse(plain, fail: fail)
    let wholeRecord = allOpen && table.map { UInt64(plain.count) == UInt64($0.length) + $0.totalData } == true

    // The items the index would name: every member of the table, and perhaps one that lies.
    var items: [Item] = []
    func item(_ id: ItemID, member: Int, size: UInt64, dataOffset: UInt64) -> Item {
        Item(
            id: id, itemClass: .genericPassword, attributes: Attributes(), size: size,
            location: RecordLocation(
                recordID: recordID, offset: 0, length: UInt64(raw.count), member: member, dataOffset: dataOffset))
    }
    if let table {
        var seen = Set<ItemID>()  // the table may name an id twice; the index names each item once
        for (i, m) in table.members.prefix(maxItems).enumerated() where seen.insert(m.id).inserted {
            items.append(item(m.id, member: i, size: m.size, dataOffset: table.offsets[i]))
        }
    }
    if let lie = input.lie {
        let real = table.flatMap {
            lie.member < $0.members.count ? ($0.members[lie.member], $0.offsets[lie.member]) : nil
        }
        let id =
            lie.mode & 1 != 0
            ? real?.0.id ?? ItemID(raw: ID128(hi: 0, lo: 0)) : ItemID(raw: ID128(hi: 1, lo: UInt64(lie.size)))
        let size = lie.mode & 2 != 0 ? real?.0.size ?? 0 : UInt64(lie.size)
        let dataOffset = lie.mode & 4 != 0 ? real?.1 ?? 0 : UInt64(lie.mode >> 3)
        items.removeAll { $0.id == id }
        items.append(item(id, member: lie.member, size: size, dataOffset: dataOffset))
    }
    if items.isEmpty { items.append(item(ItemID(raw: ID128(hi: 0, lo: 0)), member: 0, size: 0, dataOffset: 0)) }
    /// An item's bytes as the oracle reads them, if its member-table entry and data are there.
    func expected(_ item: Item) -> [UInt8]? {
        guard let table, (try? table.check([item])) != nil else { return nil }
        let start = UInt64(table.length) + item.location.dataOffset
        guard start + item.size <= UInt64(plain.count) else { return nil }
        return Array(plain[Int(start)..<Int(start + item.size)])
    }

    // The file: the header's room, then the record at body offset 0.
    let headerLength = vault.header.length
    precondition(ftruncate(scratch, 0) == 0 && ftruncate(scratch, off_t(headerLength + raw.count)) == 0)
    let written = raw.withUnsafeBytes { pwrite(scratch, $0.baseAddress, $0.count, off_t(headerLength)) }
    precondition(written == raw.count, "pwrite failed")
    vault.file = File.adopt(fd: dup(scratch), path: "record")
    vault.state = Dictionary(uniqueKeysWithValues: items.map { ($0.id, $0) })
    defer { vault.state = [:] }
    // The commit's index follows the record, so verify's search of its records region for a hidden trailer
    // (SPEC.md §8) covers the record's own bytes, as in a real file.
    let t = Trailer(
        generation: 1, commitStart: 0, indexOffset: UInt64(raw.count), indexLength: 1, previous: Trailer.noPrevious,
        itemCount: UInt32(items.count), checkpoint: true, chain: 0)
    (vault.engine as! LogEngine).tail = Tail(
        trailer: t, offset: UInt64(raw.count) + 1, checkpointBytes: 1, deltaBytes: 0)

    // One item at a time (BlockReader, the member table read incrementally, the streaming loop).
    for item in items.prefix(maxSingleReads - 1) + items.suffix(1) {
        let want = expected(item)
        do {
            let got = try vault.read(item)
            guard let want, got == want else {
                fatalError("Vault.read returned bytes the oracle does not: \(item.location)")
            }
        } catch let e as VaultError {
            precondition(e.code == .damagedRecord, "\(e)")
            // Reading stops after the item's data: only a damaged record up to there may fail.
            precondition(!wholeRecord || want == nil, "Vault.read failed on an intact record: \(e)")
        } catch {
            fatalError("not a VaultError: \(error)")
        }
    }

    // verify: the whole record (Blocks.openAll in parallel, then per record with BlockReader on failure).
    let intact = wholeRecord && items.allSatisfy { expected($0) != nil }
    let report = vault.verify()
    precondition(
        report.isIntact == intact, "verify says intact \(report.isIntact), the oracle \(intact): \(report.problems)")
    precondition(report.problems.allSatisfy { $0.code == .damagedRecord })

    // readValues (extract): each item's bytes in member order.
    var values: [ItemID: [UInt8]] = [:]
    var current: ItemID?
    do {
        try vault.readValues(
            of: items,
            begin: { item, _ in
                precondition(current == nil)
                current = item.id
                values[item.id] = []
            }, bytes: { values[current!]! += $0 },
            end: { item in
                precondition(current == item.id)
                current = nil
            })
        precondition(intact, "readValues succeeded on a record the oracle finds damaged")
        for item in items { precondition(values[item.id] == expected(item), "readValues returned other bytes") }
    } catch let e as VaultError {
        precondition(!intact, "readValues failed on an intact record: \(e)")
    } catch {
        fatalError("not a VaultError: \(error)")
    }
}

func seeds(repo: String) -> [[UInt8]] {
    var out: [[UInt8]] = []
    for v in decryptedFixtures(repo: repo) {
        for blocks in v.records where blocks.allSatisfy({ $0.count <= 0xFFFF }) && blocks.count <= maxBlocks {
            out.append(Input(blocks: blocks).bytes)
            out.append(Input(zlib: true, blocks: blocks).bytes)
        }
    }
    // Synthetic records: stored and compressed, one and several members, several chunks, a bomb.
    func id(_ b: UInt8) -> ItemID { ItemID([UInt8](repeating: b, count: 16)) }
    func p(_ chunk: [UInt8], compressed: Bool) -> [UInt8] {
        var out: [UInt8] = [compressed ? 1 : 0]
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: chunk.count >> (8 * i))) }
        return out + (compressed ? chunk.withUnsafeBytes { Deflate.compressAlways($0, level: 6) } : chunk)
    }
    let values: [[UInt8]] = [Array("hunter2".utf8), [], Array(repeating: 0x41, count: 300)]
    let plain =
        MemberTable.encode(values.enumerated().map { (id(UInt8($0.offset + 1)), UInt64($0.element.count)) })
        + values.joined()
    out.append(Input(blocks: [p(plain, compressed: false)]).bytes)
    out.append(Input(blocks: [p(plain, compressed: true)]).bytes)
    // Two full chunks and a short one: 2 MiB + 10 bytes of zeros in one member.
    let big = MemberTable.encode([(id(7), UInt64(2 * Limits.chunkSize + 10) - 18)])
    let whole = big + [UInt8](repeating: 0, count: 2 * Limits.chunkSize + 10 - big.count)
    out.append(
        Input(blocks: [
            p(Array(whole[0..<Limits.chunkSize]), compressed: true),
            p(Array(whole[Limits.chunkSize..<2 * Limits.chunkSize]), compressed: true),
            p(Array(whole[(2 * Limits.chunkSize)...]), compressed: false)
        ]).bytes)
    // A zlib stream of 2 MiB declared as 1 KiB (a bomb that must stop at the declared length).
    var bomb = p([UInt8](repeating: 0, count: 2 * Limits.chunkSize), compressed: true)
    bomb.replaceSubrange(1..<5, with: [0, 4, 0, 0])
    out.append(Input(blocks: [bomb]).bytes)
    var liar = Input(blocks: [p(plain, compressed: true)])
    liar.lie = (1, 7, 0)
    out.append(liar.bytes)
    return out
}
