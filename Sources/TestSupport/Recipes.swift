import Crafting
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The golden vaults and malformed vaults of `Fixtures/vault/`, each made from fixed inputs and a seeded
/// random stream. `kcar-fixtures` writes them; the tests rebuild them and compare byte for byte.
package enum Recipes {
    package static let keyFile: [UInt8] = Array(0x20...0x3F)
    package static let x25519Secret: [UInt8] = Array(0x40...0x5F)
    package static let otherKeyFile: [UInt8] = Array(0x60...0x7F)
    package static let passphrase = "correct horse battery staple"
    /// 2026-01-01T00:00:00Z
    package static let epoch: Int64 = 1_767_225_600 * 1_000_000_000

    package static func seed(_ n: UInt8) -> [UInt8] { (0..<32).map { UInt8($0) &+ n &* 32 } }

    /// A golden vault: how to build it and what it holds.
    package struct Golden {
        package let name: String
        package let summary: String
        /// The secret the tests open it with.
        package let secret: UnlockSecret
        package let build: (String) throws -> Void
        /// Expected items: (service, account, value).
        package let contents: [(String, String, [UInt8])]
    }

    package static var keySecret: UnlockSecret { .keyFile(SecureBytes(copying: keyFile)) }

    static func attributes(_ service: String, _ account: String, _ t: Int64) -> Attributes {
        var a = Attributes()
        a[AttributeName.service] = .string(service)
        a[AttributeName.account] = .string(account)
        a[AttributeName.modificationDate] = .date(nanoseconds: t)
        return a
    }

    static func create(
        _ path: String, seed s: UInt8, group: String, slots: [SlotSecret],
        items: [(String, String, [UInt8])]
    ) throws {
        try Vault.create(
            path: path, group: group, slots: slots, format: .version1, options: WriteOptions(level: 6), overwrite: true,
            random: DeterministicRandom(seed: seed(s))
        ) { tx in
            for (i, it) in items.enumerated() {
                try tx.add(attributes: attributes(it.0, it.1, epoch + Int64(i) * 1_000_000_000), value: .bytes(it.2))
            }
        }
    }

    /// Deterministic filler: compressible text, or incompressible bytes, from a seed.
    package static func text(_ n: Int, seed s: UInt64) -> [UInt8] {
        let words = [
            "alpha", "token", "secret", "service", "account", "vault", "key", "value", "json", "{", "}", "\n", ":", "0x"
        ]
        var out: [UInt8] = []
        out.reserveCapacity(n + 16)
        var x = s &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        while out.count < n {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            out += Array(words[Int(x >> 59) % words.count].utf8)
            out.append(x >> 40 & 1 == 0 ? 32 : UInt8(48 + (x >> 33) % 10))
        }
        return Array(out.prefix(n))
    }

    package static func noise(_ n: Int, seed s: UInt8) -> [UInt8] {
        let r = DeterministicRandom(seed: seed(s))
        var b = [UInt8](repeating: 0, count: n)
        b.withUnsafeMutableBytes { r.fill($0) }
        return b
    }

    static let oneItem: [(String, String, [UInt8])] = [("example.com", "alice", Array("hunter2".utf8))]

    static var manyItems: [(String, String, [UInt8])] {
        var out: [(String, String, [UInt8])] = []
        for i in 0..<300 {
            let size = i % 50 == 49 ? 150_000 + i : (i * 37) % 2048
            out.append(("svc.\(i % 10)", "user\(i)/token", text(size, seed: UInt64(i))))
        }
        out.append(("svc.x", "empty", []))
        out.append(("svc.x", "ünïcødé/名前", Array("non-ASCII names".utf8)))
        return out
    }

    static var multiChunk: [(String, String, [UInt8])] {
        let c = Limits.chunkSize
        return [("big", "file.bin", text(c - 100, seed: 7) + noise(c, seed: 9) + text(1100, seed: 8))]
    }

    package static var goldens: [Golden] {
        let key = SlotSecret.keyFile(SecureBytes(copying: keyFile))
        let pass = SlotSecret.passphrase(SecureBytes(copying: Array(passphrase.utf8)), .minimum)
        let recipient = SlotSecret.recipient(X25519.publicKey(secretKey: SecureBytes(copying: x25519Secret)))
        return [
            Golden(
                name: "one-item", summary: "the SPEC.md §12 test vector: one item, key-file slot", secret: keySecret,
                build: { try create($0, seed: 0, group: "com.example.shared", slots: [key], items: oneItem) },
                contents: oneItem),
            Golden(
                name: "empty", summary: "no items, key-file slot", secret: keySecret,
                build: { try create($0, seed: 1, group: "empty", slots: [key], items: []) }, contents: []),
            Golden(
                name: "many-items",
                summary:
                    "302 items in 11 services, solid records and records of their own, an empty value, non-ASCII names",
                secret: keySecret, build: { try create($0, seed: 2, group: "many", slots: [key], items: manyItems) },
                contents: manyItems),
            Golden(
                name: "multi-chunk", summary: "one item of 3 chunks: compressed, stored (incompressible), compressed",
                secret: keySecret, build: { try create($0, seed: 3, group: "big", slots: [key], items: multiChunk) },
                contents: multiChunk),
            Golden(
                name: "passphrase", summary: "passphrase slot (Argon2id at the minimum: 8 MiB, 1 pass)",
                secret: .passphrase(SecureBytes(copying: Array(passphrase.utf8))),
                build: { try create($0, seed: 4, group: "pass", slots: [pass], items: oneItem) }, contents: oneItem),
            Golden(
                name: "x25519", summary: "X25519 recipient slot; open with keys/x25519.key",
                secret: .keyFile(SecureBytes(copying: x25519Secret)),
                build: { try create($0, seed: 5, group: "x", slots: [recipient], items: oneItem) }, contents: oneItem),
            Golden(
                name: "slots", summary: "three slots: passphrase, key file, X25519 (each opens it)", secret: keySecret,
                build: { try create($0, seed: 6, group: "slots", slots: [pass, key, recipient], items: oneItem) },
                contents: oneItem),
            Golden(
                name: "commits", summary: "5 commits: 5 items; +2; delete a2; new value for a1; new label for a3",
                secret: keySecret, build: buildCommits, contents: commitsContents),
            Golden(
                name: "unknown-field", summary: "an unknown non-critical header field (tag 0x0100), which readers skip",
                secret: keySecret,
                build: { try write($0, try crafted(seed: 8, extra: [(0x0100, Array("future".utf8))])) },
                contents: oneItem)
        ]
    }

    static let commitsContents: [(String, String, [UInt8])] = [
        ("app", "a0", Array("zero".utf8)), ("app", "a1", Array("one, changed".utf8)),
        ("app", "a3", Array("three".utf8)),
        ("app", "a4", Array("four".utf8)), ("app", "a5", Array("five".utf8)), ("app", "a6", Array("six".utf8))
    ]

    static func buildCommits(_ path: String) throws {
        let random = DeterministicRandom(seed: seed(7))
        let first = (0..<5).map { ("app", "a\($0)", Array(["zero", "one", "two", "three", "four"][$0].utf8)) }
        try Vault.create(
            path: path, group: "commits", slots: [.keyFile(SecureBytes(copying: keyFile))], format: .version1,
            overwrite: true,
            random: random
        ) { tx in
            for (i, it) in first.enumerated() {
                try tx.add(attributes: attributes(it.0, it.1, epoch + Int64(i)), value: .bytes(it.2))
            }
        }
        let vault = try Vault.open(path: path, secret: keySecret, mode: .write)
        let options = WriteOptions(autoCompact: false)
        func find(_ account: String) -> ItemID { vault.items.first { $0.account == account }!.id }
        try vault.commit(options: options, random: random) { tx in
            try tx.add(attributes: attributes("app", "a5", epoch + 5), value: .bytes(Array("five".utf8)))
            try tx.add(attributes: attributes("app", "a6", epoch + 6), value: .bytes(Array("six".utf8)))
        }
        try vault.commit(options: options, random: random) { tx in try tx.delete(find("a2")) }
        try vault.commit(options: options, random: random) { tx in
            try tx.update(find("a1"), value: .bytes(Array("one, changed".utf8)))
        }
        try vault.commit(options: options, random: random) { tx in
            var a = vault.item(find("a3"))!.attributes
            a[AttributeName.label] = .string("third")
            try tx.update(find("a3"), attributes: a)
        }
    }

    /// A one-item vault built field by field (for malformed variants).
    static func crafted(
        seed s: UInt8, extra: [(UInt16, [UInt8])] = [], keyFile k: [UInt8] = keyFile,
        editFields: ([(UInt16, [UInt8])]) -> [(UInt16, [UInt8])] = { $0 },
        slot: [UInt8]? = nil
    ) throws -> [UInt8] {
        var v = try CraftedVault(
            keyFile: k, group: "crafted", random: DeterministicRandom(seed: seed(s)), extraFields: extra,
            slotOverride: slot, editFields: editFields)
        let value = Array("hunter2".utf8)
        let itemID = Array(repeating: UInt8(0xA1), count: 16)
        let recordID = Array(repeating: UInt8(0xB1), count: 16)
        let plain = CraftedVault.recordPlaintext([(itemID, value)])
        let rec = v.appendRecord(id: recordID, blocks: [.stored(plain, index: 0, last: true)])
        let entry = CraftedVault.entry(
            strings: [("acct", "alice"), ("svce", "example.com")], size: UInt64(value.count),
            recordID: recordID, offset: rec.0, length: rec.1)
        let idx = v.appendIndex(CraftedVault.indexPlaintext([(1, itemID, entry)]), generation: 1)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: idx, previous: nil, itemCount: 1, checkpoint: true, chain: 0)
        return v.bytes
    }

    static func write(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw VaultError(.io, "cannot create \(path)") }
        defer { close(fd) }
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress!, $0.count) }) == bytes.count else {
            throw VaultError(.io, "cannot write \(path)")
        }
    }

    package static func read(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw VaultError(.io, "cannot open \(path)") }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = Glibc.read(fd, &buf, buf.count)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    /// Builds a golden vault in a temporary file and returns its bytes.
    package static func bytes(of g: Golden) throws -> [UInt8] {
        let path = "/tmp/kcar-fixture-\(getpid())-\(g.name).kcv"
        defer { unlink(path) }
        try g.build(path)
        return try read(path)
    }
}
