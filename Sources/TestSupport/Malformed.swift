import Crafting
import VaultFormat

/// Malformed vaults, one scenario each, with the stage at which a reader must fail and the error it must give.
package struct Malformed {
    package enum Stage: String, Sendable {
        /// `Vault.open` with `keys/keyfile.key` throws the error.
        case open
        /// `Vault.open` succeeds (the last complete commit) and `verify` reports the error.
        case verify
    }
    package let name: String
    package let stage: Stage
    package let expect: VaultError.Code
    package let summary: String
    package let build: () throws -> [UInt8]

    init(
        _ name: String, _ stage: Stage, _ expect: VaultError.Code, _ summary: String,
        _ build: @escaping () throws -> [UInt8]
    ) {
        self.name = name
        self.stage = stage
        self.expect = expect
        self.summary = summary
        self.build = build
    }
}

extension Recipes {
    static func base() throws -> [UInt8] { try crafted(seed: 10) }

    /// Header fields: vault id at 16, group at 36, key-file slot at 47; checksum at 124, MAC at 156; body at 188.
    static let headerLength = 188

    static func edit(_ b: [UInt8], _ f: (inout [UInt8]) -> Void) -> [UInt8] {
        var c = b
        f(&c)
        return c
    }

    static func flip(_ b: [UInt8], at i: Int) -> [UInt8] { edit(b) { $0[i] ^= 0x01 } }

    /// Edits header bytes, then recomputes the checksum only (so the MAC no longer matches).
    static func reChecksum(_ b: [UInt8], _ f: (inout [UInt8]) -> Void) -> [UInt8] {
        var h = Array(b[0..<headerLength])
        f(&h)
        return CraftedVault.resealed(header: h, macKey: nil) + b[headerLength...]
    }

    static func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

    static func passphraseSlot(ops: UInt32, memKiB: UInt32) -> [UInt8] {
        [1] + u32(ops) + u32(memKiB) + [UInt8](repeating: 7, count: 16 + 24 + 48)
    }

    /// A vault with hand-made records and an index made from their extents.
    static func custom(
        seed s: UInt8, records: [([UInt8], [CraftedVault.Block])], itemCount: UInt32 = 1, checkpoint: Bool = true,
        index: ([(UInt64, UInt64)]) -> [UInt8]
    ) throws -> [UInt8] {
        var v = try CraftedVault(keyFile: keyFile, group: "crafted", random: DeterministicRandom(seed: seed(s)))
        let extents = records.map { v.appendRecord(id: $0.0, blocks: $0.1) }
        let idx = v.appendIndex(index(extents), generation: 1)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: idx, previous: nil, itemCount: itemCount, checkpoint: checkpoint,
            chain: checkpoint ? 0 : 1)
        return v.bytes
    }

    static let idA = [UInt8](repeating: 0xA1, count: 16)
    static let idB = [UInt8](repeating: 0xA2, count: 16)
    static let recA = [UInt8](repeating: 0xB1, count: 16)
    static let recB = [UInt8](repeating: 0xB2, count: 16)
    static let secret = Array("hunter2".utf8)

    static func put(_ id: [UInt8], _ rec: [UInt8], _ e: (UInt64, UInt64), size: UInt64 = 7, member: Int = 0) -> (
        UInt8, [UInt8], [UInt8]
    ) {
        (
            1, id,
            CraftedVault.entry(
                strings: [("acct", "alice"), ("svce", "example.com")], size: size, recordID: rec,
                offset: e.0, length: e.1, member: member)
        )
    }

    static func oneRecord(_ member: [UInt8] = idA, _ value: [UInt8] = secret) -> [([UInt8], [CraftedVault.Block])] {
        [(recA, [.stored(CraftedVault.recordPlaintext([(member, value)]), index: 0, last: true)])]
    }

    /// A full first chunk of a record (1 MiB of zeros after a one-member table), zlib-compressed.
    static func fullChunk(index: UInt32, last: Bool) -> CraftedVault.Block {
        let table = CraftedVault.recordPlaintext([(idA, [])], declaredSizes: [UInt64(2 * Limits.chunkSize)])
        let plain = table + [UInt8](repeating: 0, count: Limits.chunkSize - table.count)
        return CraftedVault.Block(
            p: [1] + u32(UInt32(Limits.chunkSize)) + CraftedVault.zlib(plain), index: index, last: last)
    }

    package static var malformed: [Malformed] {
        let H = headerLength
        return [
            Malformed("not-a-vault", .open, .notAVault, "a text file") {
                Array("this is a text file, not a vault\n".utf8)
            },
            Malformed("empty-file", .open, .notAVault, "zero bytes") { [] },
            Malformed("short-file", .open, .notAVault, "the first 10 bytes of a vault") { Array(try base()[0..<10]) },
            Malformed("version-2", .open, .unsupportedVersion, "format version 2, checksum recomputed") {
                reChecksum(try base()) { $0[8] = 2 }
            },
            Malformed("reserved-set", .open, .damagedHeader, "reserved header bytes not zero, checksum recomputed") {
                reChecksum(try base()) { $0[10] = 1 }
            },
            Malformed("header-length-small", .open, .damagedHeader, "header length 10") {
                edit(try base()) {
                    $0[12] = 10
                    $0[13] = 0
                }
            },
            Malformed("header-length-large", .open, .damagedHeader, "header length 70,000 (over HEADER_MAX)") {
                edit(try base()) { $0.replaceSubrange(12..<16, with: u32(70_000)) }
            },
            Malformed("header-past-eof", .open, .truncated, "the file ends inside the header") {
                Array(try base()[0..<100])
            },
            Malformed(
                "header-checksum", .open, .damagedHeader, "one byte of the group name changed (accidental damage)"
            ) {
                flip(try base(), at: 40)
            },
            Malformed("header-checksum-field", .open, .damagedHeader, "one byte of the checksum changed") {
                flip(try base(), at: 130)
            },
            Malformed("unknown-critical-field", .open, .damagedHeader, "critical tag 0x8100, checksum and MAC valid") {
                try crafted(seed: 10, extra: [(0x8100, [1])])
            },
            Malformed("fields-out-of-order", .open, .damagedHeader, "group before vault id") {
                try crafted(seed: 10, editFields: { f in [f[1], f[0]] + f[2...] })
            },
            Malformed("duplicate-vault-id", .open, .damagedHeader, "the vault id field twice") {
                try crafted(seed: 10, editFields: { f in [f[0]] + f })
            },
            Malformed("missing-group", .open, .damagedHeader, "no access group field") {
                try crafted(seed: 10, editFields: { f in f.filter { $0.0 != 0x8002 } })
            },
            Malformed("no-slot", .open, .damagedHeader, "no key slot") {
                try crafted(seed: 10, editFields: { f in f.filter { $0.0 != 0x8010 } })
            },
            Malformed(
                "slot-wrong-length", .open, .damagedHeader, "a key-file slot of 74 bytes (wrapped key one byte long)"
            ) {
                try crafted(seed: 10, editFields: { f in f.map { $0.0 == 0x8010 ? ($0.0, $0.1 + [0]) : $0 } })
            },
            Malformed("slot-unknown-kind", .open, .damagedHeader, "slot kind 9") {
                try crafted(
                    seed: 10, editFields: { f in f.map { $0.0 == 0x8010 ? ($0.0, [9] + $0.1.dropFirst()) : $0 } })
            },
            Malformed(
                "kdf-memory-over-cap", .open, .damagedHeader, "Argon2id memory 2 GiB (over KDF_MEM_MAX); no KDF runs"
            ) {
                try crafted(seed: 10, slot: passphraseSlot(ops: 3, memKiB: 2_097_152))
            },
            Malformed("kdf-memory-overflow", .open, .damagedHeader, "Argon2id memory 0xFFFFFFFF KiB") {
                try crafted(seed: 10, slot: passphraseSlot(ops: 3, memKiB: .max))
            },
            Malformed("kdf-memory-under-floor", .open, .damagedHeader, "Argon2id memory 1 KiB (under KDF_MEM_MIN)") {
                try crafted(seed: 10, slot: passphraseSlot(ops: 3, memKiB: 1))
            },
            Malformed("kdf-passes-zero", .open, .damagedHeader, "Argon2id passes 0") {
                try crafted(seed: 10, slot: passphraseSlot(ops: 0, memKiB: 8192))
            },
            Malformed("kdf-passes-over-cap", .open, .damagedHeader, "Argon2id passes 4,000,000,000") {
                try crafted(seed: 10, slot: passphraseSlot(ops: 4_000_000_000, memKiB: 8192))
            },
            Malformed(
                "kdf-total-over-budget", .open, .damagedHeader,
                "two passphrase slots of 1 GiB x 32 passes each: twice KDF_TOTAL_MAX"
            ) {
                try crafted(
                    seed: 10,
                    editFields: { f in
                        f + [
                            (0x8010, passphraseSlot(ops: 32, memKiB: 1_048_576)),
                            (0x8010, passphraseSlot(ops: 32, memKiB: 1_048_576))
                        ]
                    })
            },
            Malformed(
                "tampered-header", .open, .tamperedHeader, "group changed and checksum recomputed; the MAC catches it"
            ) {
                reChecksum(try base()) { $0[40] ^= 0x20 }
            },
            Malformed("wrong-key", .open, .wrongKey, "a sound vault whose only slot is for another key file") {
                try crafted(seed: 10, keyFile: otherKeyFile)
            },
            Malformed("header-only", .open, .truncated, "the header and nothing after it") { Array(try base()[0..<H]) },
            Malformed("body-cut", .open, .truncated, "cut 50 bytes into the body: no commit is complete") {
                Array(try base()[0..<H + 50])
            },
            Malformed("trailer-flipped", .open, .truncated, "one byte of the only trailer changed") {
                let b = try base()
                return flip(b, at: b.count - 40)
            },
            Malformed(
                "trailer-from-other-vault", .open, .truncated,
                "the trailer of another vault (same layout) in place of this one's"
            ) {
                let b = try base()
                let other = try crafted(seed: 11)
                return Array(b[0..<b.count - 96]) + other[other.count - 96..<other.count]
            },
            Malformed("index-flipped", .open, .damagedIndex, "one byte of the index segment changed") {
                let b = try base()
                return flip(b, at: b.count - 96 - 30)
            },
            Malformed(
                "incomplete-commit", .verify, .incompleteCommit,
                "100 bytes of an interrupted write after the last commit"
            ) {
                try base() + [UInt8](repeating: 0x5A, count: 100)
            },
            Malformed(
                "torn-commit", .verify, .incompleteCommit,
                "commits.kcv with its last 50 bytes cut off: generation 4 is the last complete"
            ) {
                let b = try bytes(of: goldens.first { $0.name == "commits" }!)
                return Array(b[0..<b.count - 50])
            },
            Malformed("record-flipped", .verify, .damagedRecord, "one byte of the record changed") {
                flip(try base(), at: H + 40)
            },
            Malformed("extent-outside-body", .open, .damagedIndex, "an item whose record lies past its index") {
                try custom(seed: 12, records: oneRecord()) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, (1_000_000, e[0].1))])
                }
            },
            Malformed("overlapping-records", .open, .damagedIndex, "two records whose extents overlap") {
                try custom(
                    seed: 13,
                    records: oneRecord() + [
                        (recB, [.stored(CraftedVault.recordPlaintext([(idB, secret)]), index: 0, last: true)])
                    ],
                    itemCount: 2
                ) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0]), put(idB, recB, (e[0].0 + 10, e[1].1))])
                }
            },
            Malformed("duplicate-item-id", .open, .damagedIndex, "the same item id twice in a segment") {
                try custom(seed: 14, records: oneRecord(), itemCount: 2) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0]), put(idA, recA, e[0])])
                }
            },
            Malformed("ids-out-of-order", .open, .damagedIndex, "item ids not in ascending order") {
                try custom(
                    seed: 15,
                    records: oneRecord() + [
                        (recB, [.stored(CraftedVault.recordPlaintext([(idB, secret)]), index: 0, last: true)])
                    ],
                    itemCount: 2
                ) { e in CraftedVault.indexPlaintext([put(idB, recB, e[1]), put(idA, recA, e[0])]) }
            },
            Malformed("non-minimal-varint", .open, .damagedIndex, "the operation count as 0x81 0x00") {
                try custom(seed: 16, records: oneRecord()) { e in
                    [0x81, 0x00] + CraftedVault.indexPlaintext([put(idA, recA, e[0])]).dropFirst()
                }
            },
            Malformed("index-trailing-bytes", .open, .damagedIndex, "a byte after the last operation") {
                try custom(seed: 17, records: oneRecord()) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0])]) + [0]
                }
            },
            Malformed("item-count-mismatch", .open, .damagedIndex, "the trailer says 2 items, the index holds 1") {
                try custom(seed: 18, records: oneRecord(), itemCount: 2) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0])])
                }
            },
            Malformed("delete-in-checkpoint", .open, .damagedIndex, "a delete operation in a checkpoint segment") {
                try custom(seed: 19, records: oneRecord()) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0]), (2, idB, [])])
                }
            },
            Malformed(
                "record-names-other-item", .verify, .damagedRecord,
                "an index entry pointing at a record whose member table names another item"
            ) {
                try custom(seed: 20, records: oneRecord(idB)) { e in CraftedVault.indexPlaintext([put(idA, recA, e[0])])
                }
            },
            Malformed(
                "declared-size-mismatch", .verify, .damagedRecord,
                "member table and index say 10 bytes; the record holds 7"
            ) {
                try custom(
                    seed: 21,
                    records: [
                        (
                            recA,
                            [
                                .stored(
                                    CraftedVault.recordPlaintext([(idA, secret)], declaredSizes: [10]), index: 0,
                                    last: true)
                            ]
                        )
                    ]
                ) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0], size: 10)])
                }
            },
            Malformed(
                "decompression-bomb", .verify, .damagedRecord,
                "a chunk declaring 4,096 bytes whose zlib stream inflates to 1 MiB"
            ) {
                let bomb = CraftedVault.zlib(
                    CraftedVault.recordPlaintext([(idA, [UInt8](repeating: 0, count: Limits.chunkSize))]))
                return try custom(
                    seed: 22, records: [(recA, [CraftedVault.Block(p: [1] + u32(4096) + bomb, index: 0, last: true)])]
                ) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0], size: 4096 - 18)])
                }
            },
            Malformed("missing-last-chunk", .verify, .damagedRecord, "a record whose only chunk is not marked last") {
                try custom(seed: 23, records: [(recA, [fullChunk(index: 0, last: false)])]) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0], size: UInt64(2 * Limits.chunkSize))])
                }
            },
            Malformed("two-last-chunks", .verify, .damagedRecord, "chunk 0 and chunk 1 both marked last") {
                try custom(
                    seed: 24,
                    records: [
                        (
                            recA,
                            [
                                fullChunk(index: 0, last: true),
                                .stored([UInt8](repeating: 0, count: 19), index: 1, last: true)
                            ]
                        )
                    ]
                ) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0], size: UInt64(Limits.chunkSize + 1))])
                }
            },
            Malformed("chunks-swapped", .verify, .damagedRecord, "chunk 1 stored before chunk 0") {
                try custom(
                    seed: 25,
                    records: [
                        (
                            recA,
                            [
                                .stored([UInt8](repeating: 0, count: 19), index: 1, last: false),
                                fullChunk(index: 0, last: true)
                            ]
                        )
                    ]
                ) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0], size: UInt64(Limits.chunkSize + 1))])
                }
            },
            Malformed("unknown-codec", .verify, .damagedRecord, "chunk codec 7") {
                let plain = CraftedVault.recordPlaintext([(idA, secret)])
                return try custom(
                    seed: 26,
                    records: [
                        (recA, [CraftedVault.Block(p: [7] + u32(UInt32(plain.count)) + plain, index: 0, last: true)])
                    ]
                ) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0])])
                }
            },
            Malformed(
                "stored-length-mismatch", .verify, .damagedRecord, "a stored chunk declaring 40 bytes that holds 25"
            ) {
                let plain = CraftedVault.recordPlaintext([(idA, secret)])
                return try custom(
                    seed: 27, records: [(recA, [CraftedVault.Block(p: [0] + u32(40) + plain, index: 0, last: true)])]
                ) { e in
                    CraftedVault.indexPlaintext([put(idA, recA, e[0])])
                }
            },
            Malformed(
                "compressed-not-smaller", .verify, .damagedRecord, "codec zlib whose stream is longer than the chunk"
            ) {
                let id = noise(16, seed: 4)
                let plain = CraftedVault.recordPlaintext([(id, noise(200, seed: 3))])
                return try custom(
                    seed: 28,
                    records: [
                        (
                            recA,
                            [
                                CraftedVault.Block(
                                    p: [1] + u32(UInt32(plain.count)) + CraftedVault.zlib(plain), index: 0, last: true)
                            ]
                        )
                    ]
                ) { e in
                    CraftedVault.indexPlaintext([put(id, recA, e[0], size: 200)])
                }
            }
        ]
    }
}
