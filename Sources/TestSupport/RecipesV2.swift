import Crafting
import VaultFormat

/// The golden vaults of format version 2 (SPEC.md Part 4) for `Fixtures/vault-v2/`, written through
/// ``PagedVault`` from a seeded random stream, fixed writer ids and a fixed clock. Their bytes may change until
/// Part 4 is released; the tests rebuild them and compare byte for byte, as for version 1.
package enum RecipesV2 {
    /// The writer ids of the commits (V5): most commits are A's, a few B's.
    package static let writerA: UInt64 = 0x0A0A_0A0A_0000_0001
    package static let writerB: UInt64 = 0x0B0B_0B0B_0000_0002
    /// 2026-01-01T00:00:00Z in milliseconds: commit n of a recipe runs its clock at this + n seconds.
    package static let epochMS: UInt64 = 1_767_225_600_000

    /// The seed of recipe `n`'s random stream: `F2 n 02 03 .. 1F`. Apart from every seed of version 1's recipes
    /// (`Recipes.seed`, whose second byte follows its first), so no v2 fixture repeats a v1 fixture's vault id or key.
    package static func seed(_ n: UInt8) -> [UInt8] { [0xF2, n] + (2..<32).map { UInt8($0) } }

    /// The keychain-like schema (SPEC.md Part 3 §K4 primary keys, shortened for inet) with `@*` and `labl`
    /// indexed.
    package static let keychainSchema = IndexSchema(
        classes: [
            "genp": ClassSchema(keyAttributes: [("sync", .bool(false)), ("svce", .string("")), ("acct", .string(""))]),
            "inet": ClassSchema(keyAttributes: [
                ("sync", .bool(false)), ("srvr", .string("")), ("port", .integer(0)),
                ("acct", .string(""))
            ])
        ],
        indexed: ["@*", "labl"])

    /// What a golden vault holds, as its recipe meant it (not as a reader reads it back).
    package struct Expected {
        package var items: [ItemID: (itemClass: ItemClass, attributes: Attributes, value: [UInt8])] = [:]
        package var tombstones = 0
        package var history = 0
    }

    package struct Golden {
        package let name: String
        package let summary: String
        package let build: (String) throws -> Expected
    }

    /// One vault being built, with the model of what it holds.
    final class Session {
        let path: String
        let random: DeterministicRandom
        var vault: PagedVault
        var expected = Expected()
        var commits: UInt64 = 0
        let schema: IndexSchema

        init(path: String, seed: UInt8, group: String, schema: IndexSchema) throws {
            self.path = path
            self.schema = schema
            random = DeterministicRandom(seed: RecipesV2.seed(seed))
            try PagedVault.create(
                path: path, group: group, slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema,
                overwrite: true, random: random)
            vault = try PagedVault.open(path: path, secret: Recipes.keySecret, mode: .write, writerID: writerA)
        }

        /// One commit at the next second of the fixed clock, by `writer`.
        func commit(writer: UInt64 = writerA, _ body: (PagedTransaction) throws -> Void) throws {
            commits += 1
            if vault.writerID != writer {
                vault = try PagedVault.open(path: path, secret: Recipes.keySecret, mode: .write, writerID: writer)
            }
            let now = epochMS + commits * 1000
            try vault.commit(random: random, now: { now }, body)
        }

        func add(_ tx: PagedTransaction, _ a: Attributes, _ value: [UInt8], class c: ItemClass = .genericPassword)
            throws
        {
            let id = try tx.add(class: c, attributes: a, value: value)
            expected.items[id] = (c, a, value)
        }

        /// The item of class `c` with these key values (schema order), as the vault holds it now.
        func item(_ keys: [AttributeValue], class c: ItemClass = .genericPassword) throws -> Item {
            guard let i = try vault.items(class: c, keyValues: keys).first else {
                throw VaultError(.itemNotFound, "recipe: no \(c) item with key \(keys)")
            }
            return i
        }

        /// Updates an item that existed before this commit (one history entry, V6).
        func update(_ tx: PagedTransaction, _ item: Item, attributes: Attributes? = nil, value: [UInt8]? = nil) throws {
            try tx.update(item, attributes: attributes, value: value)
            var e = expected.items[item.id]!
            if let attributes { e.attributes = attributes }
            if let value { e.value = value }
            expected.items[item.id] = e
            expected.history += 1
        }

        /// Deletes an item that existed before this commit (a tombstone and a history entry, V6).
        func delete(_ tx: PagedTransaction, _ item: Item) throws {
            try tx.delete(item)
            expected.items[item.id] = nil
            expected.tombstones += 1
            expected.history += 1
        }
    }

    static func attributes(_ service: String, _ account: String, _ seconds: Int) -> Attributes {
        Recipes.attributes(service, account, Recipes.epoch + Int64(seconds) * 1_000_000_000)
    }

    static func s(_ text: String) -> AttributeValue { .string(text) }

    package static var goldens: [Golden] {
        [
            Golden(
                name: "one-item",
                summary:
                    "one item (genp example.com/alice = hunter2), packed schema, one delta commit after the empty fold",
                build: buildOneItem),
            Golden(
                name: "many-items",
                summary:
                    "2,000 items of 20 services in 5 commits (4 folds of 500/500/500/490 items, then a delta of 10): items tree of height 2",
                build: buildManyItems),
            Golden(
                name: "history",
                summary:
                    "updates, deletes (tombstones), a key change and two writers; history in the trees and 3 delta segments pending",
                build: buildHistory),
            Golden(
                name: "compacted",
                summary:
                    "history.kcv compacted (PagedVault.compact, 100 s after its first commit): one fold built bottom-up, with the same items, tombstones and history (all younger than the retention's 90 days)",
                build: buildCompacted),
            Golden(
                name: "keychain",
                summary:
                    "keychain-like schema (genp, inet with sync/port key attributes), @* and labl indexed: 300 items (a fold) with absent key attributes and a class without schema, then an attribute update and a delete (by writer B) pending",
                build: buildKeychain)
        ]
    }

    static func buildOneItem(_ path: String) throws -> Expected {
        let v = try Session(path: path, seed: 20, group: "com.example.shared", schema: .servicesAndAccounts)
        try v.commit { tx in
            try v.add(tx, Recipes.attributes("example.com", "alice", Recipes.epoch), Array("hunter2".utf8))
        }
        return v.expected
    }

    static func buildManyItems(_ path: String) throws -> Expected {
        let v = try Session(path: path, seed: 21, group: "many", schema: .servicesAndAccounts)
        var n = 0
        for size in [500, 500, 500, 490, 10] {
            try v.commit { tx in
                for _ in 0..<size {
                    try v.add(tx, attributes("svc.\(n % 20)", "user\(n)", n), Recipes.text(n % 300, seed: UInt64(n)))
                    n += 1
                }
            }
        }
        return v.expected
    }

    static func buildHistory(_ path: String) throws -> Expected {
        let v = try Session(path: path, seed: 22, group: "history", schema: .servicesAndAccounts)
        func key(_ i: Int) -> [AttributeValue] { [s("app"), s("a\(i)")] }
        // 1: 300 items, a fold (more than 256 changes).
        try v.commit { tx in for i in 0..<300 { try v.add(tx, attributes("app", "a\(i)", i), Array("value \(i)".utf8)) }
        }
        // 2-4: delta commits.
        try v.commit { tx in try v.update(tx, try v.item(key(1)), value: Array("one, changed".utf8)) }
        try v.commit { tx in try v.delete(tx, try v.item(key(2))) }
        try v.commit { tx in
            let i = try v.item(key(3))
            var a = i.attributes
            a[AttributeName.label] = .string("third")
            try v.update(tx, i, attributes: a)
        }
        // 5: 260 new values: a fold, which takes the pending deltas and their history into the trees.
        try v.commit { tx in
            for i in 10..<270 { try v.update(tx, try v.item(key(i)), value: Array("value \(i), second version".utf8)) }
        }
        // 6-8: pending deltas: a key change, a delete and an add, another writer's update.
        try v.commit { tx in
            let i = try v.item(key(4))
            var a = i.attributes
            a[AttributeName.account] = .string("a4-renamed")
            try v.update(tx, i, attributes: a)
        }
        try v.commit { tx in
            try v.delete(tx, try v.item(key(5)))
            try v.add(tx, attributes("app", "new", 1000), Array("added last".utf8))
        }
        try v.commit(writer: writerB) { tx in
            try v.update(tx, try v.item(key(6)), value: Array("six, by writer B".utf8))
        }
        return v.expected
    }

    static func buildCompacted(_ path: String) throws -> Expected {
        let expected = try buildHistory(path)
        let v = try PagedVault.open(path: path, secret: Recipes.keySecret, mode: .write, writerID: writerA)
        try v.compact(random: DeterministicRandom(seed: RecipesV2.seed(24)), now: (epochMS + 100_000) << 16)
        return expected
    }

    static func buildKeychain(_ path: String) throws -> Expected {
        let v = try Session(path: path, seed: 23, group: "com.example.keychain", schema: keychainSchema)
        let genp = ItemClass.genericPassword
        let inet = ItemClass(rawValue: "inet")
        let keys = ItemClass(rawValue: "keys")
        try v.commit { tx in
            var a = attributes("github.com", "ci", 1)
            a["@team"] = s("ops")
            a[AttributeName.label] = s("GitHub CI")
            try v.add(tx, a, Array("ghp_example".utf8), class: genp)
            // No account: keyed by the default "" with its absent bit set.
            a = Attributes(["svce": s("github.com"), "@team": s("dev")])
            try v.add(tx, a, Array("no account".utf8), class: genp)
            // Both key strings present with the default value: absent bits clear.
            a = Attributes(["svce": s(""), "acct": s(""), "@team": s("ops"), "@n": .integer(-5)])
            try v.add(tx, a, Array("empty key values".utf8), class: genp)
            a = Attributes([
                "sync": .bool(true), "svce": s("icloud"), "acct": s("me"), "@when": .date(nanoseconds: Recipes.epoch)
            ])
            try v.add(tx, a, Array("synchronizable".utf8), class: genp)
            a = Attributes([
                "svce": s("nul\u{0}byte"), "acct": s("ünïcødé"), "@blob": .data([0, 1, 0xFF]), "@team": s("ops")
            ])
            try v.add(tx, a, [], class: genp)
            a = Attributes([
                "srvr": s("example.org"), "port": .integer(443), "acct": s("alice"), "ptcl": s("htps"),
                "@team": s("ops")
            ])
            try v.add(tx, a, Array("inet alice".utf8), class: inet)
            a = Attributes([
                "srvr": s("example.org"), "port": .integer(-1), "acct": s("bob"), "labl": s("bob at example.org")
            ])
            try v.add(tx, a, Array("inet bob".utf8), class: inet)
            a = Attributes(["labl": s("signing key"), "@team": s("sec"), "kcls": .integer(1)])
            try v.add(tx, a, Recipes.noise(64, seed: 23), class: keys)
            // 292 more (300 changes in all: a fold, so the attributes tree has pages).
            for i in 0..<292 {
                a = Attributes([
                    "svce": s("filler.\(i % 13)"), "acct": s("user\(i)"), "@team": s("t\(i % 7)"),
                    "labl": s("filler \(i)")
                ])
                try v.add(tx, a, Array("filler value \(i)".utf8), class: genp)
            }
        }
        try v.commit { tx in
            let i = try v.item([.bool(false), s("github.com"), s("ci")], class: genp)
            var a = i.attributes
            a["@team"] = s("dev")
            try v.update(tx, i, attributes: a)
        }
        try v.commit(writer: writerB) { tx in
            try v.delete(tx, try v.item([.bool(false), s("example.org"), .integer(-1), s("bob")], class: inet))
        }
        return v.expected
    }

    /// Builds a golden in a temporary file: its bytes and what it holds.
    package static func build(_ g: Golden) throws -> (bytes: [UInt8], expected: Expected) {
        let path = "/tmp/kcar-fixture-v2-\(getpid())-\(g.name).kcv"
        defer { unlink(path) }
        let e = try g.build(path)
        return (try Recipes.read(path), e)
    }

    // MARK: EXPECTED.json

    static func json(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where u.value < 0x20:
                let h = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    static func json(_ v: AttributeValue) -> String {
        switch v {
        case .string(let s): return "[\"string\", \(json(s))]"
        case .integer(let i): return "[\"integer\", \(i)]"
        case .bool(let b): return "[\"bool\", \(b)]"
        case .date(let ns): return "[\"date\", \(ns)]"
        case .data(let d): return "[\"data\", \"\(Hex.encode(d))\"]"
        }
    }

    /// The expected contents of every golden, as JSON (`Fixtures/vault-v2/EXPECTED.json`): items sorted by
    /// class, then attributes; each attribute as [type, value] (data in hex); each value in hex, or its size
    /// and BLAKE2b-256 (`H`, SPEC.md §2) when longer than 32 bytes.
    package static func expectedJSON(_ all: [(String, Expected)]) -> String {
        var out = "{\n"
        for (n, (name, e)) in all.enumerated() {
            let items = e.items.values.map { it -> String in
                let attrs = it.attributes.map { "\(json($0.name)): \(json($0.value))" }.joined(separator: ", ")
                let value =
                    it.value.count <= 32
                    ? "\"value_hex\": \"\(Hex.encode(it.value))\""
                    : "\"size\": \(it.value.count), \"blake2b\": \"\(Hex.encode(CraftedPagedVault.digest(it.value)))\""
                return "{\"class\": \(json(it.itemClass.rawValue)), \"attributes\": {\(attrs)}, \(value)}"
            }.sorted()
            out += "  \(json(name + ".kcv")): {\n    \"open_with\": \"keyfile.key\",\n"
            out += "    \"tombstones\": \(e.tombstones),\n    \"history\": \(e.history),\n    \"items\": [\n      "
            out += items.joined(separator: ",\n      ")
            out += "\n    ]\n  }" + (n + 1 < all.count ? "," : "") + "\n"
        }
        return out + "}\n"
    }
}

#if canImport(Glibc)
    import Glibc
#endif
