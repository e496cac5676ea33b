import TestSupport
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile inputs for the cli area. Each case is one crafted file and the command handed it.
func cliCases() -> [HostileCase] {
    let key = "--key-file"
    /// The fixtures' key file as k.key, and a vault `v.kcv` of `items` (service, account, value) in group `group`.
    func vault(_ dir: String, group: String = "g", items: [(ItemClass, String, String, [UInt8])]) throws {
        try writeFile(dir + "/k.key", Recipes.keyFile)
        try Vault.create(
            path: dir + "/v.kcv", group: group, slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            format: .version1, overwrite: true
        ) { tx in
            for (c, s, a, v) in items {
                var attributes = Attributes()
                attributes[AttributeName.service] = .string(s)
                attributes[AttributeName.account] = .string(a)
                try tx.add(class: c, attributes: attributes, value: .bytes(v))
            }
        }
    }
    func fifo(_ path: String) throws {
        guard mkfifo(path, 0o600) == 0 else { throw HarnessError.io("mkfifo \(path)") }
    }
    /// An item file of `count` generic passwords of service `s`, item i's account `account(i)`, value `value`.
    func accountsFile(_ path: String, _ count: Int, value: String = "", account: (Int) -> String) throws {
        try itemFile(
            path,
            (0..<count).map {
                "{\"class\":\"genp\",\"attributes\":{\"svce\":\"s\",\"acct\":\"\(account($0))\"},\"value\":\"\(value)\"}"
            })
    }

    func itemFile(_ path: String, _ items: [String]) throws {
        try writeFile(
            path,
            Array(
                ("{\"format\": \"kcar-items\", \"version\": 1, \"items\": [" + items.joined(separator: ",") + "]}").utf8
            ))
    }
    let one: [(ItemClass, String, String, [UInt8])] = [(.genericPassword, "s", "a", [1, 2, 3])]
    /// A vault `v.kcv` of generic passwords (service, account, the `@kcar.*` attributes of SPEC.md §7.1, value).
    func packed(_ dir: String, _ items: [(String, String, [String: AttributeValue], [UInt8])]) throws {
        try writeFile(dir + "/k.key", Recipes.keyFile)
        try keyFileVault(dir + "/v.kcv", items)
    }
    let link = "@kcar.link"
    return [
        HostileCase(
            name: "cli/not-a-vault", attack: "1 MB of zeros handed to list as a vault, with a key file",
            make: {
                try writeFile($0 + "/v.kcv", [UInt8](repeating: 0, count: 1_000_000))
                try writeFile($0 + "/k.key", [UInt8](repeating: 7, count: 32))
            },
            args: ["list", "v.kcv", key, "k.key"], exits: [4]),
        // Item 7: a FIFO blocks open() until a writer comes, and no lock timeout applies: each must be refused at once.
        HostileCase(
            name: "cli/fifo-vault-list", attack: "a FIFO at the vault's path, for list (blocked forever before)",
            make: {
                try fifo($0 + "/v.kcv")
                try writeFile($0 + "/k.key", Recipes.keyFile)
            },
            args: ["list", "v.kcv", key, "k.key"], exits: [15]),
        HostileCase(
            name: "cli/fifo-vault-info", attack: "a FIFO at the vault's path, for info (no key needed)",
            make: { try fifo($0 + "/v.kcv") }, args: ["info", "v.kcv"], exits: [15]),
        HostileCase(
            name: "cli/fifo-vault-verify", attack: "a FIFO at the vault's path, for verify --no-key",
            make: { try fifo($0 + "/v.kcv") }, args: ["verify", "v.kcv", "--no-key"], exits: [15]),
        HostileCase(
            name: "cli/fifo-vault-passwd", attack: "a FIFO at the vault's path, for a writer (passwd)",
            make: {
                try fifo($0 + "/v.kcv")
                try writeFile($0 + "/k.key", Recipes.keyFile)
            },
            args: ["passwd", "v.kcv", key, "k.key", "--add-key-file", "k.key"], exits: [15]),
        HostileCase(
            name: "cli/fifo-key-file", attack: "a FIFO as the key file",
            make: {
                try vault($0, items: one)
                try fifo($0 + "/f.key")
            },
            args: ["list", "v.kcv", key, "f.key"], exits: [15]),
        HostileCase(
            name: "cli/fifo-passphrase-file", attack: "a named FIFO as the passphrase file (no writer ever comes)",
            make: {
                try vault($0, items: one)
                try fifo($0 + "/pass")
            },
            args: ["list", "v.kcv", "--passphrase-file", "pass"], exits: [15]),
        HostileCase(
            name: "cli/fifo-new-passphrase-file", attack: "a named FIFO as pack's passphrase file",
            make: {
                try fifo($0 + "/pass")
                mkdir($0 + "/src", 0o700)
                mkdir($0 + "/src/svc", 0o700)
                try writeFile($0 + "/src/svc/x", [])
            },
            args: ["pack", "out.kcv", "src", "--passphrase-file", "pass"], exits: [15]),
        HostileCase(
            name: "cli/fifo-item-file", attack: "a FIFO as pack's --items file",
            make: {
                try fifo($0 + "/items.json")
                try writeFile($0 + "/k.key", Recipes.keyFile)
            },
            args: ["pack", "out.kcv", "--items", "items.json", key, "k.key"], exits: [15]),
        HostileCase(
            name: "cli/device-key-file", attack: "/dev/zero as the key file (a device: never read)",
            make: { try vault($0, items: one) }, args: ["list", "v.kcv", key, "/dev/zero"], exits: [15]),
        // Item 6: pack opens what it lists without blocking; a FIFO among the inputs is reported and skipped.
        HostileCase(
            name: "cli/pack-fifo-input", attack: "a FIFO among pack's input files (no writer ever comes)",
            make: {
                try writeFile($0 + "/k.key", Recipes.keyFile)
                mkdir($0 + "/src", 0o700)
                mkdir($0 + "/src/svc", 0o700)
                try writeFile($0 + "/src/svc/a", [1])
                try fifo($0 + "/src/svc/b")
            },
            args: ["pack", "out.kcv", "src", key, "k.key"], exits: [9]),
        // Item 9: the group is printed by info without a key; the escape makes it harmless (checked by the CLI tests).
        HostileCase(
            name: "cli/control-characters-in-group",
            attack: "a header whose group holds terminal escapes (info, no key)",
            make: {
                try vault(
                    $0, group: "\u{1B}]0;owned\u{07}\u{1B}[2J\u{9B}31m",
                    items: [(ItemClass(rawValue: "\u{1B}[5m"), "s", "a", [1])])
            },
            args: ["info", "v.kcv"], exits: [0]),
        // Item 14: extract --items read the vault item by item, decoding a shared record once per member.
        HostileCase(
            name: "cli/extract-items-many-members",
            attack: "70,000 small items sharing solid records, for extract --items (592 s before)",
            make: { dir in
                try writeFile(dir + "/k.key", Recipes.keyFile)
                try Vault.create(
                    path: dir + "/v.kcv", group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
                    format: .version1, overwrite: true
                ) { tx in
                    for i in 0..<70_000 {
                        var a = Attributes()
                        a[AttributeName.service] = .string("s")
                        a[AttributeName.account] = .string(String(i))
                        try tx.add(attributes: a, value: .bytes([UInt8(i & 0xFF)]))
                    }
                }
            },
            args: ["extract", "v.kcv", "--items", "out.json", key, "k.key"], exits: [0]),
        // Item 2 (item files): memory and item count bounded by named limits; 3: Stream-Safe strings only.
        HostileCase(
            name: "cli/items-many-pack",
            attack: "a 20 MB item file of 700,000 minimal items, for pack --items (735 MB before)",
            make: {
                try writeFile($0 + "/k.key", Recipes.keyFile)
                try itemFile(
                    $0 + "/items.json", Array(repeating: "{\"class\":\"genp\",\"value\":\"\"}", count: 700_000))
            },
            args: ["pack", "out.kcv", "--items", "items.json", key, "k.key"], exits: [4]),
        // An import takes its items in bulk, out of memory as it reads (issue 24): of 700,000 items of one primary
        // key the second is refused as it is read (exit 11, nothing imported); 250,000 distinct ones import.
        HostileCase(
            name: "cli/items-many-import", attack: "a 20 MB item file of 700,000 minimal items, for import --items",
            make: {
                try itemFile(
                    $0 + "/items.json", Array(repeating: "{\"class\":\"genp\",\"value\":\"\"}", count: 700_000))
            },
            args: ["import", "--keychain", "kc", "--group", "g", "--items", "items.json"], exits: [11]),
        HostileCase(
            name: "cli/items-import-far-duplicate",
            attack:
                "280,000 items, the first and the last with one primary key (found when the commit merges its runs)",
            make: { try accountsFile($0 + "/items.json", 280_000) { "\($0 % 279_999)" } },
            args: ["import", "--keychain", "kc", "--group", "g", "--items", "items.json"], exits: [11]),
        HostileCase(
            name: "cli/items-import-many-distinct",
            attack:
                "an 18 MB item file of 250,000 distinct items (two and a half times the old limit), for import --items",
            make: { try accountsFile($0 + "/items.json", 250_000, value: "AA==") { "\($0)" } },
            args: ["import", "--keychain", "kc", "--group", "g", "--items", "items.json"], exits: [0]),
        HostileCase(
            name: "cli/items-combining-name",
            attack: "attribute names of 6 MB of alternating combining marks (quadratic to hash and compare)",
            make: {
                try writeFile($0 + "/k.key", Recipes.keyFile)
                let marks = String(repeating: "\u{301}\u{316}", count: 1_500_000)  // two classes: reordered
                try itemFile(
                    $0 + "/items.json",
                    [
                        "{\"class\":\"genp\",\"attributes\":{\"a\(marks)\":\"x\",\"a\(marks)\u{300}\":\"y\"},\"value\":\"\"}"
                    ])
            },
            args: ["pack", "out.kcv", "--items", "items.json", key, "k.key"], exits: [4]),
        HostileCase(
            name: "cli/items-combining-accounts",
            attack:
                "300 items whose accounts are 32,000 alternating combining marks (64 KB, within ATTR_VALUE_MAX), for import --items",
            make: {
                let marks = String(repeating: "\u{301}\u{316}", count: 16_000)
                try accountsFile($0 + "/items.json", 300) { "\($0)\(marks)" }
            },
            args: ["import", "--keychain", "kc", "--group", "g", "--items", "items.json"], exits: [4]),
        HostileCase(
            name: "cli/items-combining-values",
            attack:
                "100,000 items whose accounts end in 30 combining marks (the Stream-Safe bound), for import --items",
            make: {
                let marks = String(repeating: "\u{301}\u{302}", count: 15)
                try itemFile(
                    $0 + "/items.json",
                    (0..<100_000).map {
                        "{\"class\":\"genp\",\"attributes\":{\"svce\":\"s\",\"acct\":\"\($0)\(marks)\"},\"value\":\"\"}"
                    })
            },
            args: ["import", "--keychain", "kc", "--group", "g", "--items", "items.json"], exits: [0]),
        HostileCase(
            name: "cli/items-combining-values-over",
            attack: "100,000 items whose accounts end in 31 combining marks, one over the Stream-Safe bound",
            make: {
                let marks = String(repeating: "\u{301}", count: 31)
                try itemFile(
                    $0 + "/items.json",
                    (0..<100_000).map {
                        "{\"class\":\"genp\",\"attributes\":{\"svce\":\"s\",\"acct\":\"\($0)\(marks)\"},\"value\":\"\"}"
                    })
            },
            args: ["import", "--keychain", "kc", "--group", "g", "--items", "items.json"], exits: [4]),
        HostileCase(
            name: "cli/items-deep-nesting",
            attack: "an unknown member nested 9,000,000 deep (skipped members are not recursed into)",
            make: {
                try writeFile($0 + "/k.key", Recipes.keyFile)
                let deep = String(repeating: "[", count: 9_000_000) + String(repeating: "]", count: 9_000_000)
                try writeFile(
                    $0 + "/items.json",
                    Array("{\"format\": \"kcar-items\", \"version\": 1, \"x\": \(deep), \"items\": []}".utf8))
            },
            args: ["pack", "out.kcv", "--items", "items.json", key, "k.key"], exits: [4]),
        HostileCase(
            name: "cli/items-large-value", attack: "one item whose base64 value is 19 MB, for pack --items",
            make: {
                try writeFile($0 + "/k.key", Recipes.keyFile)
                try itemFile(
                    $0 + "/items.json",
                    ["{\"class\":\"genp\",\"value\":\"" + String(repeating: "QUJD", count: 4_750_000) + "\"}"])
            },
            args: ["pack", "out.kcv", "--items", "items.json", key, "k.key"], exits: [0]),
        // Links, folders and modes in a packed vault (the CLI tests check that nothing is
        // written outside; here each stays within the bounds and its documented exit code).
        HostileCase(
            name: "cli/extract-link-then-files",
            attack: "a link s/a -> / and 5,000 files below s/a (tar's a -> /etc, a/passwd), with --unsafe-links",
            make: {
                try packed($0, [("s", "a", [link: .string("/")], [])] + (0..<5_000).map { ("s", "a/\($0)", [:], [1]) })
            },
            args: ["extract", "v.kcv", "-C", "out", "--unsafe-links", key, "k.key"], exits: [7]),
        HostileCase(
            name: "cli/extract-escaping-links",
            attack: "30,000 links climbing out: absolute, .. past the folder, .. through a link of the vault",
            make: {
                let targets = ["/etc/passwd", "../../../x", "up/../../x", String(repeating: "../", count: 1_300)]
                try packed(
                    $0,
                    [("s", "up", [link: .string("..")], [])]
                        + (0..<30_000).map { ("s", "l\($0)", [link: .string(targets[$0 % targets.count])], []) })
            },
            args: ["extract", "v.kcv", "-C", "out", key, "k.key"], exits: [9]),
        HostileCase(
            name: "cli/extract-many-folders",
            attack: "10,000 folder items 40 deep and 1,000 folders up to 500 deep, their modes restored (-p) last",
            make: { dir in
                let deep = (0..<40).map { "d\($0)" }.joined(separator: "/")
                let deeper = (0..<1_000).map { _ in "x" }
                try packed(
                    dir,
                    (0..<10_000).map {
                        ("s", deep + "/\($0)", ["@kcar.folder": .bool(true), "@kcar.mode": .integer(0o700)], [])
                    }
                        + (1...1_000).map {
                            (
                                "t", deeper.prefix($0 / 2 + 1).joined(separator: "/") + "/\($0)",
                                ["@kcar.folder": .bool(true)], []
                            )
                        })
            },
            args: ["extract", "v.kcv", "-C", "out", "-p", key, "k.key"], exits: [0]),
        HostileCase(
            name: "cli/pack-dereference-fan",
            attack: "30 folders each with two links to the next, packed with -h (2^30 paths if each were followed)",
            make: { dir in
                try writeFile(dir + "/k.key", Recipes.keyFile)
                mkdir(dir + "/src", 0o700)
                for i in 0..<30 {
                    mkdir(dir + "/d\(i)", 0o700)
                    try writeFile(dir + "/d\(i)/file", [UInt8(i)])
                    symlink(dir + "/d\(i + 1)", dir + "/d\(i)/a")
                    symlink(dir + "/d\(i + 1)", dir + "/d\(i)/b")
                }
                mkdir(dir + "/d30", 0o700)
                symlink(dir + "/d0", dir + "/src/svc")
            },
            args: ["pack", "out.kcv", "src", "-h", key, "k.key"], exits: [9]),
        HostileCase(
            name: "cli/delete-every-item",
            attack: "delete VAULT s: one commit deleting 70,000 items sharing solid records",
            make: { try packed($0, (0..<70_000).map { ("s", String($0), [:], [UInt8($0 & 0xFF)]) }) },
            args: ["delete", "v.kcv", "s", key, "k.key"], exits: [0]),
        HostileCase(
            name: "cli/items-many-attributes",
            attack: "items of 256 attributes each (the vault's limit), 20 MB, for pack --items",
            make: {
                try writeFile($0 + "/k.key", Recipes.keyFile)
                let attrs = (0..<256).map { "\"@\($0)\":\($0)" }.joined(separator: ",")
                try itemFile(
                    $0 + "/items.json",
                    Array(repeating: "{\"class\":\"genp\",\"attributes\":{\(attrs)},\"value\":\"\"}", count: 7_000))
            },
            args: ["pack", "out.kcv", "--items", "items.json", key, "k.key"])
    ]
}
