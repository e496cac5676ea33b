import Crafting
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile inputs for the vault area. Each case is one crafted file and the command handed it.
/// The vaults are made with VaultFormat's crafting helpers under a key file the case also writes, so the
/// attack reaches past the header and the MACs (a shared group: whoever gives you the vault gives you its key).
func vaultCases() -> [HostileCase] {
    var cases: [HostileCase] = []
    let key = "--key-file"
    // Item 2c: one record whose chunks inflate to 3,600 MiB while its member table and the index declare
    // 10 bytes (decoded whole, as a batch of small records is).
    for (command, extra) in [("extract", ["-C", "out"]), ("verify", [])] {
        cases.append(
            HostileCase(
                name: "vault/record-bomb-\(command)",
                attack: "a 4.0 MB record of 3,600 zlib chunks of 1 MiB of zeros, declaring 10 bytes: \(command)",
                make: { try writeVault($0, try HostileVaults.bombVault(records: 1, chunksPerRecord: 3_600)) },
                args: [command, "v.kcv", key, "k.key"] + extra, exits: [4]))
    }
    // The same, streamed (a record above the batch size), and 1,500 small bombs decoded in parallel.
    cases.append(
        HostileCase(
            name: "vault/record-bomb-streamed",
            attack: "an 8 MB record of 7,600 chunks of 1 MiB of zeros declaring 10 bytes: extract",
            make: { try writeVault($0, try HostileVaults.bombVault(records: 1, chunksPerRecord: 7_600)) },
            args: ["extract", "v.kcv", key, "k.key", "-C", "out"], exits: [4]))
    for command in ["extract", "verify"] {
        cases.append(
            HostileCase(
                name: "vault/record-bombs-batch-\(command)",
                attack: "1,500 records of 4 chunks of 1 MiB of zeros, each declaring 10 bytes: \(command)",
                make: { try writeVault($0, try HostileVaults.bombVault(records: 1_500, chunksPerRecord: 4)) },
                args: [command, "v.kcv", key, "k.key"] + (command == "extract" ? ["-C", "out"] : []), exits: [4]))
    }
    // Item 2d: a chain of 64 segments, each putting new items with 32 MiB of attributes (2 GiB in all).
    for command in ["list", "verify", "info"] {
        cases.append(
            HostileCase(
                name: "vault/index-chain-\(command)",
                attack: "a checkpoint and 63 deltas of 32 MiB of data attributes each: \(command)",
                make: {
                    try writeVault(
                        $0, try cached("chain") { try HostileVaults.chainVault(segments: 64, itemsPerSegment: 2) })
                },
                args: [command, "v.kcv", key, "k.key"], exits: [4]))
    }
    // 300 checkpoints of 32 MiB each (9.6 GiB of index in a 12 MB file): what verify reads of superseded ones
    // (its record is damaged on purpose, so verify ends with exit 4 once it has walked them).
    cases.append(
        HostileCase(
            name: "vault/superseded-checkpoints-verify",
            attack: "300 commits, each a checkpoint of 32 MiB of data attributes: verify",
            make: {
                try writeVault($0, try HostileVaults.chainVault(segments: 300, itemsPerSegment: 2, checkpoints: true))
            },
            args: ["verify", "v.kcv", key, "k.key"], exits: [4]))
    // ITEMS_MAX minimal items in one checkpoint (a 2-3 MB file): what the items themselves cost in memory.
    cases.append(
        HostileCase(
            name: "vault/index-items-max", attack: "one checkpoint of 4,000,000 minimal items naming one record: list",
            make: { try writeVault($0, try HostileVaults.manyItems(VaultFormat.Limits.itemsMax)) },
            args: ["list", "v.kcv", key, "k.key"]))
    // As many items as 20 MB can hold under the 16 bytes per operation rule (random-looking ids and salt).
    cases.append(
        HostileCase(
            name: "vault/index-items-dense", attack: "one checkpoint of 800,000 items with random-looking ids: list",
            make: { try writeVault($0, try HostileVaults.manyItems(800_000, salted: true)) },
            args: ["list", "v.kcv", key, "k.key"]))
    // One checkpoint near INDEX_MAX: 15 items of 16 MiB of attributes (240 MiB), within every limit.
    cases.append(
        HostileCase(
            name: "vault/index-one-big-checkpoint",
            attack: "one checkpoint of 240 MiB of data attributes (under INDEX_MAX): list",
            make: { try writeVault($0, try HostileVaults.chainVault(segments: 1, itemsPerSegment: 15)) },
            args: ["list", "v.kcv", key, "k.key"]))
    // The same as JSON: 335 MB of it, once built whole in memory (1.36 GiB, 13.7 s); it streams now.
    cases.append(
        HostileCase(
            name: "vault/index-one-big-checkpoint-json",
            attack: "one checkpoint of 240 MiB of data attributes: list --json",
            make: { try writeVault($0, try HostileVaults.chainVault(segments: 1, itemsPerSegment: 15)) },
            args: ["list", "v.kcv", "--json", key, "k.key"], exits: [0]))
    // Item 3b: 19 MB of trailer candidates (magic, fields consistent with their position, wrong MAC)
    // appended to a valid vault.
    for (command, keyed) in [("list", true), ("verify", true), ("info", false)] {
        cases.append(
            HostileCase(
                name: "vault/trailer-junk-\(command)\(keyed ? "" : "-no-key")",
                attack: "a valid vault followed by 19 MB of trailer candidates: \(command)",
                make: { try writeVault($0, try HostileVaults.trailerJunk(bytes: 19_000_000, structured: true)) },
                args: [command, "v.kcv"] + (keyed ? [key, "k.key"] : []), exits: keyed ? [4] : [0]))
    }
    // Its last 96 bytes start with the magic: a whole trailer whose MAC fails, damage (SPEC.md §8).
    cases.append(
        HostileCase(
            name: "vault/trailer-magic-junk",
            attack: "a valid vault followed by 19 MB of the trailer magic repeated: list",
            make: { try writeVault($0, try HostileVaults.trailerJunk(bytes: 19_000_000, structured: false)) },
            args: ["list", "v.kcv", key, "k.key"], exits: [4]))
    // One byte of the last commit's trailer changed is damage, not an interrupted write read
    // past (the commit before it, where the item that commit deleted is back).
    for version in [1, 2] {
        for command in ["list", "verify"] {
            cases.append(
                HostileCase(
                    name: "vault/last-trailer-flipped-v\(version)-\(command)",
                    attack:
                        "a format \(version) vault whose last commit (a delete) has one byte of its trailer changed: \(command)",
                    make: { dir in
                        try writeVault(dir, [])
                        try writeFile(dir + "/v.kcv", try lastTrailerFlipped(dir + "/v.kcv", version: version))
                    },
                    args: [command, "v.kcv", key, "k.key"], exits: [4]))
        }
    }
    // Item 8: 65,537 items of 2^48 bytes each (their sizes sum past 2^64), extracted.
    cases.append(
        HostileCase(
            name: "vault/extract-size-sum", attack: "65,537 items of 2^48 bytes each in one record: extract",
            make: { try writeVault($0, try HostileVaults.hugeSizes(items: 65_537)) },
            args: ["extract", "v.kcv", key, "k.key", "-C", "out"], exits: [4]))
    // A vault at the last generation takes no commit (exit 2, nothing written); a
    // compaction writes it again from generation 1 (SPEC.md §8, GENERATION_MAX), after which it takes commits.
    cases.append(
        HostileCase(
            name: "vault/generation-max-compact", attack: "a vault at generation 2^64-1: compact, then add",
            make: { dir in
                try writeVault(dir, try HostileVaults.lastGeneration())
                mkdir(dir + "/src", 0o700)
                mkdir(dir + "/src/s", 0o700)
                try writeFile(dir + "/src/s/new", Array("x".utf8))
            },
            args: ["compact", "v.kcv", key, "k.key"], exits: [0],
            then: (["add", "v.kcv", "-C", "src", "s/new", key, "k.key"], [0])))
    cases.append(
        HostileCase(
            name: "vault/generation-max-add", attack: "a keychain group whose vault is at generation 2^64-1: add",
            make: { dir in
                let v = try HostileVaults.lastGeneration()
                mkdir(dir + "/kc", 0o700)
                try writeFile(dir + "/kc/g.kcv", v.bytes)
                try writeFile(dir + "/kc/g.key", HostileVaults.key)
                // Its generation record (SPEC.md §K6), or the keychain refuses the group as rolled back (exit 14)
                // before the writer is reached.
                var record = Array("kcar-seen-v1".utf8) + v.vaultID + [UInt8](repeating: 0xFF, count: 8)
                record += Digest.mac(key: SecureBytes(copying: HostileVaults.key), record)
                try writeFile(dir + "/kc/g.seen", record)
            },
            // A version 1 group is upgraded before its first change, a rewrite, which starts its generations again at 1
            // (§8): the record that saw 2^64-1 then calls it a rollback (exit 14), as SPEC §8 says it will.
            args: ["add", "--keychain", "kc", "--group", "g", "--service", "s", "--account", "b"],
            stdin: Array("value".utf8), exits: [2, 14]))
    // SPEC §8: a later first commit whose records region hides a whole earlier commit.
    cases.append(
        HostileCase(
            name: "vault/hidden-first-commit",
            attack: "a second first commit (commit start 0) whose records hold an earlier commit: verify",
            make: { try writeVault($0, try HostileVaults.hiddenCommit()) },
            args: ["verify", "v.kcv", key, "k.key"], exits: [4]))
    return cases
}

private func writeVault(_ dir: String, _ v: CraftedVault) throws { try writeVault(dir, v.bytes) }

private func writeVault(_ dir: String, _ bytes: [UInt8]) throws {
    try writeFile(dir + "/v.kcv", bytes)
    try writeFile(dir + "/k.key", HostileVaults.key)
}

/// Vault bytes made once for the cases that share them (the harness is single-threaded).
nonisolated(unsafe) private var made: [String: [UInt8]] = [:]
private func cached(_ name: String, _ make: () throws -> CraftedVault) throws -> [UInt8] {
    if let b = made[name] { return b }
    let b = try make().bytes
    made[name] = b
    return b
}

/// A vault of two items made at `path` (format `version`), then a commit deleting one; its bytes with one byte
/// of that commit's trailer changed.
private func lastTrailerFlipped(_ path: String, version: Int) throws -> [UInt8] {
    let slots: [SlotSecret] = [.keyFile(SecureBytes(copying: HostileVaults.key))]
    var deleted: ItemID?
    let add = { (tx: Transaction) in
        for account in ["kept", "deleted"] {
            var a = Attributes()
            a[AttributeName.service] = .string("s")
            a[AttributeName.account] = .string(account)
            deleted = try tx.add(attributes: a, value: .bytes(Array(account.utf8)))
        }
    }
    if version == 1 {
        try Vault.create(path: path, group: "g", slots: slots, format: .version1, overwrite: true, add)
    } else {
        try Vault.create(path: path, group: "g", slots: slots, schema: .servicesAndAccounts, overwrite: true, add)
    }
    let v = try Vault.open(path: path, secret: .keyFile(SecureBytes(copying: HostileVaults.key)), mode: .write)
    try v.commit { tx in try tx.delete(deleted!) }
    var b = try readFile(path)
    b[b.count - 50] ^= 0x20
    return b
}
