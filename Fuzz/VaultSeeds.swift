// Compiled into the `index` and `record` targets: decrypts the fixture vaults into the plaintexts those
// targets take (index segments, block plaintexts of records), for their seed corpora.
@testable import VaultFormat

/// What a fixture vault holds below its encryption.
struct DecryptedVault {
    /// Index segment plaintexts, newest first, with whether each is a checkpoint.
    var segments: [(plaintext: [UInt8], checkpoint: Bool)] = []
    /// For each record the index names: the block plaintexts P (codec || u32 length || payload), in order.
    var records: [[[UInt8]]] = []
}

/// The secrets of Fixtures/keys/: key file, X25519 secret key, passphrase.
let fixtureSecrets: [UnlockSecret] = [
    .keyFile(SecureBytes(copying: (0x20...0x3F).map { UInt8($0) })),
    .keyFile(SecureBytes(copying: (0x40...0x5F).map { UInt8($0) })),
    .passphrase(SecureBytes(copying: Array("correct horse battery staple".utf8)))
]

/// Opens as much of the vault at `path` as opens (malformed fixtures too) and decrypts it.
func decryptFixture(_ path: String) -> DecryptedVault {
    var out = DecryptedVault()
    guard let file = try? File.openRead(path), let size = try? file.size(),
        let (header, _) = try? Vault.readHeader(file, size: size)
    else { return out }
    var vaultKey: SecureBytes?
    search: for slot in header.slots {
        for secret in fixtureSecrets {
            if let k = slot.unwrap(with: secret, vaultID: header.vaultID) {
                vaultKey = k
                break search
            }
        }
    }
    guard let vaultKey else { return out }
    let keys = Subkeys(vaultKey: vaultKey)
    let headerLength = UInt64(header.length)
    let reader = TailReader(
        file: file, headerLength: headerLength, bodySize: size - headerLength, vaultID: header.vaultID, keys: keys)
    guard var (t, _) = try? reader.lastCommit(Trailer.self) else { return out }
    var extents: [ID128: (offset: UInt64, length: UInt64)] = [:]
    for _ in 0..<Limits.chainMax * 4 {
        if let plain = try? reader.segmentPlaintext(t) {
            out.segments.append((plain, t.checkpoint))
            try? IndexCodec.forEach(plain, checkpoint: false) { op in
                if case .put(let item) = op {
                    extents[item.location.recordID] = (item.location.offset, item.location.length)
                }
            }
        }
        guard t.previous != Trailer.noPrevious, let p = try? reader.trailer(at: t.previous) else { break }
        t = p
    }
    for (id, e) in extents.sorted(by: { $0.value.offset < $1.value.offset }) {
        guard let end = e.offset.adding(e.length), end <= size - headerLength,
            let raw = try? file.read(Int(e.length), at: headerLength + e.offset)
        else { continue }
        let key = StreamKey.record(keys, vaultID: header.vaultID, recordID: id)
        var blocks: [[UInt8]] = []
        var p = 0
        var index: UInt32 = 0
        while raw.count - p >= Blocks.frameBytes {
            let n = Int(raw.readLE(UInt32.self, at: p))
            guard n >= Sodium.aeadTagBytes, p + Blocks.frameBytes + n <= raw.count else { break }
            let end = p + Blocks.frameBytes + n
            guard
                let plain = Sodium.open(
                    key: key.key, nonce: Array(raw[p + 4..<p + 28]), ciphertext: Array(raw[p + 28..<end]),
                    ad: key.ad(chunk: index, last: end == raw.count))
            else { break }
            blocks.append(plain)
            p = end
            index += 1
        }
        if !blocks.isEmpty { out.records.append(blocks) }
    }
    return out
}

/// Every fixture vault of the repository at `repo`, decrypted.
func decryptedFixtures(repo: String) -> [DecryptedVault] {
    var out: [DecryptedVault] = []
    for dir in ["\(repo)/Fixtures/vault", "\(repo)/Fixtures/vault/malformed"] {
        for name in listDirectory(dir, suffix: ".kcv") { out.append(decryptFixture("\(dir)/\(name)")) }
    }
    return out
}
