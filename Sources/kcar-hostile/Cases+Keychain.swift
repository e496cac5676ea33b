import Crafting
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile inputs for the keychain area. Each case is a keychain folder `kc` in the case folder
/// (`KCAR_KEYCHAIN=kc`) whose files someone else planted or replaced, and the command handed it: kcar must
/// refuse what it does not trust (exit 15), what was rolled back or replaced (14), what is damaged (4),
/// without blocking on a FIFO or reading more of a file than its format allows.
func keychainCases() -> [HostileCase] {
    let env = ["KCAR_KEYCHAIN": "kc"]
    func c(
        _ name: String, _ attack: String, _ args: [String], _ exits: Set<Int32>,
        make: @escaping (_ kc: String) throws -> Void
    ) -> HostileCase {
        HostileCase(
            name: "keychain/" + name, attack: attack,
            make: { dir in
                let kc = dir + "/kc"
                guard mkdir(kc, 0o700) == 0 else { throw HarnessError.io("mkdir \(kc)") }
                try make(kc)
            }, args: args, env: env, exits: exits)
    }
    let get = ["get", "--service", "api"]
    let getG = ["get", "--group", "g", "--service", "api"]
    let add = ["add", "--service", "api", "--value-file", "/dev/null"]
    return [
        c("world-writable-folder", "the keychain folder is mode 1777 and holds a group another user planted", get, [15])
        { kc in
            try group(kc, "g", owner: "planted")
            chmod(kc, 0o1777)
        },
        c("group-writable-folder", "the keychain folder is group-writable without being shared on purpose", get, [15]) {
            kc in
            try group(kc, "g")
            chmod(kc, 0o770)
        },
        c("forged-share-marker", "a .kcar-shared marker its group can write, in a group-writable folder", get, [15]) {
            kc in
            try group(kc, "g")
            try writeFile(kc + "/.kcar-shared", Array("root\n".utf8), mode: 0o664)
            chmod(kc, 0o2770)
        },
        c(
            "planted-group", "another user's group (key 0644, their vault, their uid) first in the implicit list", get,
            [15]
        ) { kc in
            try group(kc, "mine")
            try group(kc, "aaa", owner: "planted", keyMode: 0o644, as: 65534)
        },
        c(
            "planted-groups-many", "2,000 planted groups with keys readable by everyone, each refused in turn",
            ["groups"], [15]
        ) { kc in
            try group(kc, "mine")
            let key = [UInt8](repeating: 1, count: 32)
            for i in 0..<2000 {
                try writeFile(kc + "/p\(i).key", key, mode: 0o644)
                try writeFile(kc + "/p\(i).kcv", [0])
            }
        },
        c("fifo-key", "the group's key file is a FIFO (no writer: an open without O_NONBLOCK blocks)", getG, [15]) {
            kc in
            try group(kc, "g")
            try fifo(kc + "/g.key")
        },
        c("fifo-vault", "the group's vault is a FIFO", ["list", "--group", "g"], [15]) { kc in
            try group(kc, "g")
            try fifo(kc + "/g.kcv")
        },
        c("fifo-vault-implicit", "a FIFO vault in the implicit list of groups", ["groups"], [15]) { kc in
            try group(kc, "g")
            try group(kc, "h")
            try fifo(kc + "/h.kcv")
        },
        c("fifo-seen", "the group's generation record is a FIFO", getG, [15]) { kc in
            try group(kc, "g")
            try fifo(kc + "/g.seen")
        },
        c("symlink-key", "the group's key file is a symbolic link to a key elsewhere", getG, [15]) { kc in
            try group(kc, "g")
            rename(kc + "/g.key", kc + "/../elsewhere.key")
            symlink("../elsewhere.key", kc + "/g.key")
        },
        c("symlink-vault", "the group's vault is a symbolic link to another vault", ["rekey", "--group", "g"], [15]) {
            kc in
            try group(kc, "g")
            rename(kc + "/g.kcv", kc + "/../elsewhere.kcv")
            symlink("../elsewhere.kcv", kc + "/g.kcv")
        },
        c("huge-key", "a 20 MB key file", getG, [4]) { kc in
            try group(kc, "g")
            try writeFile(kc + "/g.key", [UInt8](repeating: 7, count: 19_999_000))
        },
        c("short-key", "a key file of 31 bytes", getG, [4]) { kc in
            try group(kc, "g")
            try writeFile(kc + "/g.key", [UInt8](repeating: 7, count: 31))
        },
        c("fifo-share-marker", "a FIFO where .kcar-shared is looked for", get, [15]) { kc in
            try group(kc, "g")
            try fifo(kc + "/.kcar-shared")
        },
        // The default group's marker (SPEC.md §K2.1): someone who can write the folder must not
        // send the owner's adds to a group of their choosing, nor make an add block or read megabytes.
        c("fifo-default-group", "a FIFO where .kcar-default-group is looked for", add, [15]) { kc in
            try group(kc, "g")
            try fifo(kc + "/.kcar-default-group")
        },
        c("symlink-default-group", "a .kcar-default-group that is a symbolic link to a file naming a group", add, [15])
        { kc in
            try group(kc, "g")
            try writeFile(kc + "/../elsewhere", Array("planted\n".utf8), mode: 0o644)
            symlink("../elsewhere", kc + "/.kcar-default-group")
        },
        c("writable-default-group", "a .kcar-default-group everyone can write", add, [15]) { kc in
            try group(kc, "g")
            try writeFile(kc + "/.kcar-default-group", Array("planted\n".utf8), mode: 0o666)
            chmod(kc + "/.kcar-default-group", 0o666)
        },
        c("huge-default-group", "a 20 MB .kcar-default-group", add, [15]) { kc in
            try group(kc, "g")
            try writeFile(kc + "/.kcar-default-group", [UInt8](repeating: 0x61, count: 19_999_000), mode: 0o644)
        },
        c("huge-seen", "a 20 MB generation record", getG, [14]) { kc in
            try group(kc, "g")
            try writeFile(kc + "/g.seen", [UInt8](repeating: 7, count: 19_999_000))
        },
        c("forged-seen", "a generation record of the right size and magic whose MAC does not verify", getG, [14]) {
            kc in
            try group(kc, "g")
            try writeFile(kc + "/g.seen", Array("kcar-seen-v1".utf8) + [UInt8](repeating: 0xEE, count: 56))
        },
        c("seen-from-the-future", "a valid record at generation 2^64-1: the vault looks rolled back", getG, [14]) {
            kc in
            let (key, id) = try group(kc, "g")
            try writeFile(kc + "/g.seen", seenRecord(key: key, vaultID: id, generation: .max))
        },
        c("seen-of-another-vault", "a valid record naming another vault id (the vault was swapped)", getG, [14]) { kc in
            let (key, _) = try group(kc, "g")
            try writeFile(
                kc + "/g.seen", seenRecord(key: key, vaultID: [UInt8](repeating: 3, count: 16), generation: 1))
        },
        c("seen-deleted", "the record deleted from a group past its first commit", getG, [14]) { kc in
            try group(kc, "g", commits: 3, record: false)
        },
        c(
            "snapshot-replay", "an old vault restored with its own old record; the user's own copy saw generation 5",
            getG, [14]
        ) { kc in
            let (key, id) = try group(kc, "g")
            guard let real = realpath(kc, nil) else { throw HarnessError.io("realpath \(kc)") }
            let name = Hex.encode(
                Digest.blake2b(Array(String(cString: real).utf8) + [0] + Array("g".utf8), outputBytes: 16))
            free(real)
            var state = ""
            for part in ["/.local", "/state", "/kcar", "/seen"] {  // HOME is the case folder, kc's parent
                state += part
                mkdir(kc + "/.." + state, 0o700)
            }
            try writeFile(kc + "/.." + state + "/" + name + ".seen", seenRecord(key: key, vaultID: id, generation: 5))
        },
        c(
            "rekey-rolled-back", "rekey --group on a vault older than its record (it must not re-seal it)",
            ["rekey", "--group", "g"], [14]
        ) { kc in
            let (key, id) = try group(kc, "g")
            try writeFile(kc + "/g.seen", seenRecord(key: key, vaultID: id, generation: 9))
        },
        c(
            "damaged-group-implicit", "one group's vault is zeros: the others still answer, the damaged one is named",
            get, [4]
        ) { kc in
            try group(kc, "g")
            try group(kc, "h")
            try writeFile(kc + "/h.kcv", [UInt8](repeating: 0, count: 1_000_000))
        },
        // Each vault is within CHAIN_INDEX_MAX (15 items of 256 data attributes of 64 KiB: 250 MiB of index from
        // 304 KB), so only a bound over the whole scan keeps a search of four of them under the limit (a bound per
        // vault let three groups cost 751 MiB).
        c(
            "large-groups-find", "four groups, each an index of 250 MiB in 304 KB: find across the implicit list",
            ["find", "--service", "x"], [6]
        ) { kc in
            try largeGroups(kc)
        },
        c("large-groups-counts", "the same four groups: groups counts their items", ["groups"], [0]) { kc in
            try largeGroups(kc)
        }
    ]
}

/// Four groups whose vaults each decode to an index near CHAIN_INDEX_MAX.
private func largeGroups(_ kc: String) throws {
    for name in ["a", "b", "c", "d"] {
        try writeFile(
            kc + "/\(name).kcv", try HostileVaults.chainVault(segments: 1, itemsPerSegment: 15, group: name).bytes)
        try writeFile(kc + "/\(name).key", HostileVaults.key)
    }
}

/// Writes a real group into `kc`: key file, vault (one generic password for service `api`, then
/// `commits - 1` more commits) and, if `record`, its generation record. Returns the key and vault id.
@discardableResult
func group(
    _ kc: String, _ name: String, owner: String = "me", keyMode: mode_t = 0o600, as uid: uid_t? = nil,
    commits: Int = 1, record: Bool = true
) throws -> ([UInt8], [UInt8]) {
    let key = SystemRandom.shared.bytes(32)
    let secret = SecureBytes(copying: key)
    let vault = kc + "/" + name + ".kcv"
    try Vault.create(path: vault, group: name, slots: [.keyFile(secret)], format: .version1) { tx in
        try tx.add(
            class: .genericPassword, attributes: Attributes(["svce": .string("api")]), value: .bytes(Array(owner.utf8)))
    }
    let v = try Vault.open(path: vault, secret: .keyFile(secret), mode: .write)
    for i in 1..<max(commits, 1) {
        try v.commit { tx in
            _ = try tx.add(
                class: .genericPassword, attributes: Attributes(["svce": .string("c\(i)")]), value: .bytes([1]))
        }
    }
    try writeFile(kc + "/" + name + ".key", key, mode: keyMode)
    if record {
        try writeFile(
            kc + "/" + name + ".seen", seenRecord(key: key, vaultID: v.header.vaultID, generation: v.generation))
    }
    // Another user's files, where the harness may give them away (it runs as root in CI).
    if let uid, geteuid() == 0 {
        for ext in [".kcv", ".key", ".seen"] { chown(kc + "/" + name + ext, uid, gid_t.max) }
    }
    return (key, v.header.vaultID)
}

/// A generation record (SPEC.md §K6): magic, vault id, generation (u64 LE), keyed BLAKE2b-256 over them.
func seenRecord(key: [UInt8], vaultID: [UInt8], generation: UInt64) -> [UInt8] {
    var body = Array("kcar-seen-v1".utf8) + vaultID
    for i in 0..<8 { body.append(UInt8(truncatingIfNeeded: generation >> (8 * UInt64(i)))) }
    return body + Digest.mac(key: SecureBytes(copying: key), body)
}

private func fifo(_ path: String) throws {
    unlink(path)
    guard mkfifo(path, 0o600) == 0 else { throw HarnessError.io("mkfifo \(path)") }
}
