import TestSupport
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile version 2 vaults made with the key: a collaborator who holds the key writes
/// files that are legal structure by structure (TestSupport/HostileV2.swift makes them) and hostile in
/// what they cost or in how their parts point at each other. Each input is handed to every command that reads
/// or writes a version 2 vault; `o.kcv` (BASE) and `p.kcv` (OURS) are clean copies of the same vault from
/// before the attack, for merges, and `src/s/new` a file for `add`.
func version2Cases() -> [HostileCase] {
    let key = ["--key-file", "k.key"]
    /// One command on `v.kcv` by short name; `item` for history, restore and delete.
    func command(_ name: String, item: String) -> [String] {
        switch name {
        case "list": return ["list", "v.kcv"] + key
        case "list-json": return ["list", "v.kcv", "--json"] + key
        case "verify": return ["verify", "v.kcv"] + key
        case "extract": return ["extract", "v.kcv", "-C", "out"] + key
        // One item by name: the ranges of its service in the items tree, not every item.
        case "extract-name": return ["extract", "v.kcv", "-C", "out", item] + key
        case "info": return ["info", "v.kcv"]
        case "history": return ["history", "v.kcv", item] + key
        case "history-json": return ["history", "v.kcv", item, "--json"] + key
        case "restore": return ["restore", "v.kcv", item, "--version", "2"] + key
        case "merge": return ["merge", "o.kcv", "p.kcv", "v.kcv"] + key
        case "merge-into": return ["merge", "--into", "p.kcv", "v.kcv"] + key
        case "compact": return ["compact", "v.kcv"] + key
        case "upgrade": return ["upgrade", "v.kcv"] + key
        case "textconv": return ["git", "textconv", "v.kcv"] + key
        case "textconv-values": return ["git", "textconv", "v.kcv", "--values"] + key
        case "add": return ["add", "v.kcv", "-C", "src", "s/new"] + key
        case "delete": return ["delete", "v.kcv", item] + key
        case "delete-purge": return ["delete", "v.kcv", item, "--purge"] + key
        default: fatalError("kcar-hostile: no command \(name)")
        }
    }
    /// The cases of one input: `commands` by name, each accepting `exits[name]` (else any documented code).
    func cases(
        _ input: String, _ attack: String, item: String = "s/a1", _ commands: [String],
        exits: [String: Set<Int32>] = [:],
        _ build: @escaping (String) throws -> Void
    ) -> [HostileCase] {
        commands.map { name in
            let args = command(name, item: item)
            return HostileCase(
                name: "v2/\(input)-\(name)", attack: attack + ": kcar " + args.prefix(3).joined(separator: " "),
                make: { dir in try cachedInput(dir, input, build) }, args: args, exits: exits[name])
        }
    }
    let readers = ["list", "list-json", "verify", "extract", "info", "textconv"]
    let writers = ["compact", "merge-into", "add", "delete"]
    var all: [HostileCase] = []

    // Deep and wide: HEIGHT_MAX levels (single-child branches over one branch of 4 leaves), each leaf
    // PAGE_ENTRIES_MAX entries: 262,144 items that all name one small value.
    all += cases(
        "wide-deep", "an items tree of HEIGHT_MAX levels over 4 leaves of PAGE_ENTRIES_MAX items each", item: "s/a",
        ["list", "verify", "extract", "extract-name", "info", "textconv", "upgrade", "history"] + writers
    ) { try HostileV2.wideDeep($0, leaves: 4) }
    // KEY_MAX and ENTRY_MAX: 40 items of 1 MB entries (40 MB of index in a file of about 6 MB).
    all += cases(
        "big-entries", "40 items whose keys are near KEY_MAX and entries near ENTRY_MAX (250 data attributes of 4 KB)",
        item: "s/a", readers + writers + ["merge", "textconv-values"]
    ) { try HostileV2.bigEntries($0) }
    // Forged references: each must be refused as a damaged index by whatever reads the page.
    for f in HostileV2.Forgery.allCases {
        all += cases(
            f.rawValue, "3,000 items whose items tree is forged (\(f.rawValue))",
            ["list", "verify", "extract", "extract-name", "textconv"] + writers,
            exits: ["verify": [4]]
        ) { try HostileV2.forged($0, f) }
    }
    // Long delta chains: DELTA_CHAIN_MAX - 1 segments of about DELTA_TOTAL_MAX bytes in all.
    all += cases(
        "delta-chain-max",
        "15 delta segments (4 MiB in all), each re-putting one item and putting 7,000 attribute keys",
        readers + writers + ["history", "extract-name"]
    ) { try HostileV2.deltaChain($0, removes: false) }
    // (Every command applies the chain: 750,000 removes cost each one about 470 MiB and 6 s; four of them say so.)
    all += cases(
        "delta-removes-absent", "15 delta segments (4 MiB in all) of 50,000 removes each of items nothing holds",
        ["list", "verify", "merge-into", "add"], exits: ["verify": [4]]
    ) { try HostileV2.deltaChain($0, removes: true) }
    // History and tombstones.
    all += cases(
        "history-bomb",
        "1,000 items with HISTORY_KEEP_MAX kept versions each, all naming one 128 KiB value in a solid record",
        ["list", "verify", "history-json", "restore", "textconv-values", "merge", "compact", "add", "delete"]
    ) {
        try HostileV2.historyBomb($0)
    }
    all += cases(
        "tombstones", "100 items and 1,000,000 tombstones in the items tree",
        ["list", "verify", "compact", "merge-into", "add"]
    ) { try HostileV2.tombstoneBomb($0) }
    // Solid records copied value by value (being fixed: merge and compaction copying a record per value
    // re-inflate it once per member; expected fix: one pass over each record).
    all += cases(
        "solid-record", "one solid record of 8,192 values of 64 KiB of zeros (512 MiB in 600 KB), one of them deleted",
        item: "s/a1", ["list", "verify", "extract", "textconv-values", "compact", "merge", "merge-into", "delete-purge"]
    ) {
        try HostileV2.solidRecord($0)
    }
    // Commits of another copy, trailers of another generation.
    for s in HostileV2.Splice.allCases {
        all += cases(
            s.rawValue, "100 items, then \(s.rawValue)", ["list", "verify", "info", "merge-into", "add", "compact"]
        ) {
            try HostileV2.spliced($0, s)
        }
    }
    // Far-future clocks (being fixed: a merge must refuse the far-future side, naming it, with a documented
    // non-zero exit, and OURS must stay writable): the merge exits non-zero, or the add after it succeeds.
    let add = ["add", "p.kcv", "-C", "src", "s/new"] + key
    for (name, ms) in [
        ("clock-max", UInt64(1 << 48) - 1),
        ("clock-years", HybridClock.nowMilliseconds() + 100 * 365 * 86_400_000)
    ] {
        let attack =
            "a commit whose clock is \(name == "clock-max" ? "2^48 - 1 ms (hlc 2^64 - 65,536)" : "100 years ahead")"
        all.append(
            HostileCase(
                name: "v2/\(name)-merge-then-add", attack: attack + ": merge BASE OURS THEIRS, then add to OURS",
                make: { try cachedInput($0, name) { try HostileV2.farFuture($0, ms: ms) } },
                args: command("merge", item: ""), then: (add, [0])))
        all.append(
            HostileCase(
                name: "v2/\(name)-merge-into-then-add", attack: attack + ": merge --into OURS THEIRS, then add to OURS",
                make: { try cachedInput($0, name) { try HostileV2.farFuture($0, ms: ms) } },
                args: command("merge-into", item: ""), then: (add, [0])))
    }
    all += swapCases()
    // At the edge of the limits (within them on an idle machine, over them on a loaded one): reading a million
    // tombstones costs about 3 us each (list 3.4 s, verify 5.2 s, a compaction's two passes 6.3-7.0 s; a loaded
    // machine took an earlier compaction to 10.4 s); a delta chain of 780,000 removes holds about 300 bytes and
    // 6 us per entry (about 275 MiB and 4.4 s for every reader, 390 MiB for a commit on it; 475 MiB for every
    // reader before the overlay boxed its puts); a commit deleting
    // 262,144 items at once holds each about three times (the vault's items, the transaction's, the tree
    // changes: 490 MiB). Marked, so that a loaded CI machine does not fail on them; the runner shows their figures.
    let edge =
        "at the edge of the CPU or memory bound on a loaded machine: about 3 us to decode each of a million entries, "
        + "6 us per delta remove, 1.9 KiB per item of a commit that deletes a quarter of a million"
    for i in all.indices
    where [
        "v2/tombstones-compact", "v2/tombstones-verify", "v2/delta-removes-absent-list",
        "v2/delta-removes-absent-verify", "v2/delta-removes-absent-merge-into", "v2/delta-removes-absent-add",
        "v2/wide-deep-delete"
    ].contains(all[i].name) {
        all[i].knownBreach = edge
    }
    return all
}

/// A vault renamed over a group's vault, and back, every 5 ms while `get` and `add` run 40 times each: each run
/// fails cleanly or answers from one consistent file, and the vault swapped in is never written.
private func swapCases() -> [HostileCase] {
    let env = ["KCAR_KEYCHAIN": "kc"]
    var out: [HostileCase] = []
    for (decoy, what) in [
        ("other-group", "group h's vault (its own key)"), ("same-key", "another vault under group g's key")
    ] {
        for (name, args) in [
            ("get", ["get", "--group", "g", "--service", "api"]),
            ("add", ["add", "--group", "g", "--service", "race", "--account", "x", "--value-file", "/dev/null"])
        ] {
            out.append(
                HostileCase(
                    name: "v2/swap-\(decoy)-\(name)",
                    attack: "\(what) renamed over kc/g.kcv and back every 5 ms: \(name), 40 runs",
                    make: { dir in
                        let kc = dir + "/kc"
                        let stash = dir + "/stash"
                        guard mkdir(kc, 0o700) == 0, mkdir(stash, 0o700) == 0 else { throw HarnessError.io("mkdir") }
                        let (gKey, _) = try group(kc, "g")
                        try group(kc, "h")
                        if decoy == "other-group" {
                            try writeFile(stash + "/decoy", try readFile(kc + "/h.kcv"))
                        } else {
                            try Vault.create(
                                path: stash + "/decoy", group: "g", slots: [.keyFile(SecureBytes(copying: gKey))],
                                format: .version1
                            ) { tx in
                                try tx.add(
                                    class: .genericPassword, attributes: Attributes(["svce": .string("api")]),
                                    value: .bytes(Array("decoy".utf8)))
                            }
                        }
                        try writeFile(stash + "/decoy.orig", try readFile(stash + "/decoy"))
                    },
                    args: args, env: env, runs: 40, during: { swap($0, back: false) },
                    check: { dir in
                        swap(dir, back: true)
                        let stash = dir + "/stash"
                        guard let a = try? readFile(stash + "/decoy"), let b = try? readFile(stash + "/decoy.orig")
                        else { return "the decoy vault is gone" }
                        return a == b ? nil : "the vault swapped in (not group g's) was written"
                    }))
        }
    }
    return out
}

/// Exchanges kc/g.kcv and stash/decoy with a link and an atomic rename (kc/g.kcv always exists), or with
/// `back` only puts group g's own vault back.
private func swap(_ dir: String, back: Bool) {
    let g = dir + "/kc/g.kcv"
    let decoy = dir + "/stash/decoy"
    let real = dir + "/stash/real"
    var st = stat()
    if stat(decoy, &st) == 0 {
        if back { return }
        guard link(g, real) == 0 else { return }
        rename(decoy, g)
    } else if stat(real, &st) == 0 {
        guard link(g, decoy) == 0 else { return }
        rename(real, g)
    }
}

/// Builds input `name` once per harness run (beside the case folders) and copies its files into `dir`, with
/// the key file, `p.kcv` (a copy of `o.kcv`, OURS for merges) and `src/s/new` (a file for add).
private func cachedInput(_ dir: String, _ name: String, _ build: (String) throws -> Void) throws {
    let cache = dir + "/../.v2-" + name
    var st = stat()
    if stat(cache, &st) != 0 {
        let tmp = cache + ".tmp"
        removeTreeIfPresent(tmp)
        guard mkdir(tmp, 0o700) == 0 else { throw HarnessError.io("mkdir \(tmp)") }
        try build(tmp)
        guard rename(tmp, cache) == 0 else { throw HarnessError.io("rename \(tmp)") }
    }
    guard let d = opendir(cache) else { throw HarnessError.io("opendir \(cache)") }
    defer { closedir(d) }
    while let e = readdir(d) {
        let file = withUnsafeBytes(of: e.pointee.d_name) {
            String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        guard !file.hasPrefix(".") else { continue }
        try writeFile(dir + "/" + file, try readFile(cache + "/" + file))
    }
    try writeFile(dir + "/k.key", HostileV2.key)
    if stat(dir + "/o.kcv", &st) == 0 { try writeFile(dir + "/p.kcv", try readFile(dir + "/o.kcv")) }
    for d in ["/src", "/src/s"] { mkdir(dir + d, 0o700) }
    try writeFile(dir + "/src/s/new", Array("new value".utf8))
}

private func removeTreeIfPresent(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    guard let d = opendir(path) else {
        unlink(path)
        return
    }
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) {
            String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if name != "." && name != ".." { unlink(path + "/" + name) }
    }
    closedir(d)
    rmdir(path)
}
