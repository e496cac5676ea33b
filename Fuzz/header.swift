// Target `header`: the plaintext vault header and its key slots (Sources/VaultFormat/Header.swift).
// Input: the first bytes of a vault file (the fixture .kcv files are the seeds).
// Each input is parsed twice: as given, and with its length field and BLAKE2b checksum made consistent,
// so that mutations reach the field and slot parsers behind the checksum.
import Crafting

@testable import VaultFormat

/// Fixtures/keys/keyfile.key (0x20...0x3F): it opens the key-file slots of the fixtures.
let keyFile = SecureBytes(copying: (0x20...0x3F).map { UInt8($0) })
let macKey = SecureBytes(copying: [UInt8](repeating: 7, count: 32))

func fuzzOne(_ input: [UInt8]) {
    check(input)
    guard input.count >= Limits.headerMin else { return }
    var b = input
    var length = Int(b.readLE(UInt32.self, at: 12))
    if length < Limits.headerMin || length > min(b.count, Limits.headerMax) {
        length = min(b.count, Limits.headerMax)
        for i in 0..<4 { b[12 + i] = UInt8(truncatingIfNeeded: length >> (8 * i)) }
    }
    b.replaceSubrange(length - 64..<length - 32, with: Sodium.hash(Array(b[0..<length - 64])))
    check(b)
}

func check(_ file: [UInt8]) {
    let prefix = Array(file.prefix(4096))
    let parsed = try? Header.parse(prefix: prefix, fileSize: UInt64(file.count)) { n in
        precondition(n <= file.count, "readRest asked for \(n) bytes of a \(file.count)-byte file")
        return Array(file[0..<n])
    }
    guard let (h, bytes) = parsed else { return }
    precondition(bytes.count == h.length && h.length <= file.count && Array(file[0..<h.length]) == bytes)
    precondition(!h.slots.isEmpty && h.slots.count <= Limits.slotsMax && h.vaultID.count == 16)
    _ = Header.verifyMAC(bytes, key: macKey)
    for s in h.slots {
        guard let again = try? KeySlot.decode(s.encode()), again == s else {
            fatalError("slot does not round-trip: \(s)")
        }
        _ = s.kindName
        if case .passphrase = s { continue }  // Argon2id: too slow per input, and not a parser
        _ = s.unwrap(with: .keyFile(keyFile), vaultID: h.vaultID)
    }
    // A header made of the parsed fields writes bytes that parse back to the same fields.
    let written = Header(vaultID: h.vaultID, group: h.group, slots: h.slots).encode(macKey: macKey)
    guard let (h2, b2) = try? Header.parse(prefix: written, fileSize: UInt64(written.count), readRest: { _ in written })
    else {
        fatalError("a parsed header, written again, does not parse")
    }
    precondition(h2.vaultID == h.vaultID && h2.group == h.group && h2.slots == h.slots && h2.unknownFields.isEmpty)
    precondition(Header.verifyMAC(b2, key: macKey))
    // Every rewrite keeps the unknown non-critical fields (SPEC.md §4): written again with them, a header
    // gives back its own bytes up to the MAC (parsing is canonical).
    let kept = h.with(slots: h.slots).encode(macKey: macKey)
    precondition(
        kept.count == bytes.count && kept[0..<kept.count - 32] == bytes[0..<bytes.count - 32],
        "a parsed header, written again with its unknown fields, gives other bytes")
}

func seeds(repo: String) -> [[UInt8]] {
    // Headers of every slot kind and of the edge sizes, checksums and MACs correct.
    let id = [UInt8](repeating: 0xA5, count: 16)
    let p = KDFParameters.minimum
    let slots: [KeySlot] = [
        .passphrase(
            p, salt: [UInt8](repeating: 1, count: 16), nonce: [UInt8](repeating: 2, count: 24),
            wrapped: [UInt8](repeating: 3, count: 48)),
        .keyFile(nonce: [UInt8](repeating: 4, count: 24), wrapped: [UInt8](repeating: 5, count: 48)),
        .recipient(sealed: [UInt8](repeating: 6, count: 96))
    ]
    var out: [[UInt8]] = []
    for s in slots { out.append(Header(vaultID: id, group: "g", slots: [s]).encode(macKey: macKey)) }
    out.append(
        Header(vaultID: id, group: String(repeating: "x", count: Limits.groupMax), slots: slots).encode(macKey: macKey))
    out.append(
        Header(vaultID: id, group: "many", slots: Array(repeating: slots[1], count: Limits.slotsMax)).encode(
            macKey: macKey))
    // An unknown non-critical field (tags ascend: it comes first).
    out.append(
        CraftedVault.header(
            fields: [
                (0x0100, [1, 2, 3]), (Header.tagVaultID, id), (Header.tagGroup, Array("g".utf8)),
                (Header.tagSlot, slots[1].encode())
            ], macKey: macKey))
    return out
}
