#if canImport(Glibc)
import Glibc
#endif
import VaultFormat

/// DRAFT malformed vaults of format version 2 (`Fixtures/vault-v2/malformed/`): each is a golden v2 vault
/// with one crafted commit appended or one part changed, every MAC valid where the scenario is about
/// something else. Stages as for version 1: `open` (``PagedVault/open`` fails with the error) and `verify`
/// (it opens; checking the index, ``PagedVault/verifyIndex``, or the whole file fails with the error).
extension RecipesV2 {
    /// A golden rebuilt in a scratch file, crafted on by `f`, and its bytes.
    static func crafted(_ golden: String, _ seed: UInt8, _ f: (CraftedPagedVault) throws -> Void) throws -> [UInt8] {
        let g = goldens.first { $0.name == golden }!
        let path = "/tmp/kcar-fixture-v2-\(getpid())-malformed-\(golden).kcv"
        defer { unlink(path) }
        _ = try g.build(path)
        try f(try CraftedPagedVault(path: path, secret: Recipes.keySecret, random: DeterministicRandom(seed: Recipes.seed(seed))))
        return try Recipes.read(path)
    }

    static func golden(_ name: String) throws -> [UInt8] { try build(goldens.first { $0.name == name }!).bytes }

    /// The items tree's top page of a golden, which must be a branch.
    static func topBranch(_ v: CraftedPagedVault) throws -> (PageRef, Int, [(key: [UInt8], child: PageRef)]) {
        let ref = v.root.items!
        let p = try v.page(ref)
        guard case .branch(let children) = p.content else { throw VaultError(.invalidArgument, "recipe: the items top is a leaf") }
        return (ref, p.level, children)
    }

    package static var malformed: [Malformed] {
        [
            Malformed("forged-page-id", .verify, .damagedIndex, "a fold whose root names the items tree's top page under another page id (the page does not authenticate)") {
                try crafted("keychain", 40) { v in
                    try v.fold { r in r.items!.id = ID128(hi: 0x0123_4567_89AB_CDEF, lo: 0x0011_2233_4455_6677) }
                }
            },
            Malformed("page-ref-other-extent", .verify, .damagedIndex, "the items tree's top reference keeps its page id but points at the history tree's top page") {
                try crafted("history", 41) { v in
                    try v.fold { r in
                        r.items!.offset = r.history!.offset
                        r.items!.length = r.history!.length
                    }
                }
            },
            Malformed("page-of-other-tree", .verify, .damagedIndex, "the attributes tree's top reference names the items tree's top page (tree byte 1 read as tree 2)") {
                try crafted("keychain", 42) { v in try v.fold { r in r.attributes = r.items } }
            },
            Malformed("child-wrong-level", .verify, .damagedIndex, "the items tree's top branch rewritten at level 2 over its leaves (level 0)") {
                try crafted("keychain", 43) { v in
                    let (_, level, children) = try topBranch(v)
                    let top = try v.write(Page(tree: .items, level: level + 1, content: .branch(children)))
                    try v.fold { r in r.items = top }
                }
            },
            Malformed("separator-mismatch", .verify, .damagedIndex, "the second separator of the items tree's top branch is one byte longer than its child's first key") {
                try crafted("keychain", 44) { v in
                    var (_, level, children) = try topBranch(v)
                    children[1].key.append(0)
                    let top = try v.write(Page(tree: .items, level: level, content: .branch(children)))
                    try v.fold { r in r.items = top }
                }
            },
            Malformed("child-count-wrong", .verify, .damagedIndex, "the first child of the items tree's top branch claims one entry more than its leaf holds (root and trailer counts agree with the claim)") {
                try crafted("keychain", 45) { v in
                    var (_, level, children) = try topBranch(v)
                    children[0].child.count += 1
                    let top = try v.write(Page(tree: .items, level: level, content: .branch(children)))
                    try v.fold { r in
                        r.items = top
                        r.liveItems += 1
                    }
                }
            },
            Malformed("root-count-mismatch", .open, .damagedIndex, "the root counts one live item more than its items tree's top reference") {
                try crafted("one-item", 46) { v in try v.fold { r in r.liveItems += 1 } }
            },
            Malformed("trailer-count-mismatch", .verify, .damagedIndex, "a fold trailer counts one item more than its root") {
                try crafted("one-item", 47) { v in try v.fold({ _ in }, trailer: { $0.itemCount += 1 }) }
            },
            Malformed("page-bomb", .verify, .damagedIndex, "the items tree's top page is 1 MiB of zeros deflated to about 1 KiB (past PAGE_EXPANSION_MAX)") {
                try crafted("keychain", 48) { v in
                    let bomb = try v.writeRaw([UInt8](repeating: 0, count: 1 << 20), count: v.root.items!.count, compress: true)
                    try v.fold { r in r.items = bomb }
                }
            },
            Malformed("delta-other-root", .open, .damagedIndex, "the last trailer (a delta commit) names its predecessor's root extent under another root id (MAC valid)") {
                try crafted("history", 49) { v in
                    try v.rewriteLastTrailer { t in
                        t.rootID = ID128(hi: 0x5555_5555_5555_5555, lo: 0x5555_5555_5555_5555)
                    }
                }
            },
            Malformed("fold-root-short", .verify, .incompleteCommit, "the last trailer (a fold) gives its root one byte less, so it is no trailer: the file opens at the commit before, with an incomplete commit after it") {
                try crafted("one-item", 50) { v in try v.fold({ _ in }, trailer: { $0.rootLength -= 1 }) }
            },
            Malformed("delta-chain-16", .verify, .incompleteCommit, "13 more copies of the last delta segment take the chain from 3 to 16; a trailer with chain 16 is no trailer, so the file opens at chain 15 with an incomplete commit") {
                try crafted("history", 51) { v in
                    let plain = try v.lastDelta()!
                    for _ in 0..<13 { try v.delta(plain) }
                }
            },
            Malformed("delta-too-large", .open, .damagedIndex, "a delta segment of 1,048,577 plaintext bytes (DELTA_MAX + 1), deflated") {
                try crafted("one-item", 52) { v in
                    // Attributes-tree puts (empty bodies) of 4,000-byte keys: 262 of them pass DELTA_MAX.
                    var entries: [LeafEntry] = []
                    var plain: [UInt8] = []
                    var n = 0
                    while true {
                        var key: [UInt8] = [2, UInt8(n >> 8), UInt8(n & 0xFF)]
                        key += Recipes.noise(300, seed: UInt8(n & 0xFF))
                        key += [UInt8](repeating: 0x61, count: 3_700)
                        entries.append(LeafEntry(key: key, rest: [1]))
                        plain = CraftedPagedVault.deltaPlaintext(entries)
                        n += 1
                        if plain.count > PagedLimits.deltaMax { break }
                    }
                    // Trim the last key so that the segment is exactly DELTA_MAX + 1 bytes.
                    let over = plain.count - PagedLimits.deltaMax - 1
                    entries[entries.count - 1].key.removeLast(over)
                    plain = CraftedPagedVault.deltaPlaintext(entries)
                    try v.delta(plain, compress: true)
                }
            },
            Malformed("body-cut", .open, .truncated, "the body cut to 100 bytes: no commit is complete") {
                let b = try golden("one-item")
                let header = Int(b[12]) | Int(b[13]) << 8
                return Array(b[0..<(header + 100)])
            },
            Malformed("torn-last-trailer", .verify, .incompleteCommit, "the last 64 bytes cut off: the file opens at the empty first commit") {
                let b = try golden("one-item")
                return Array(b.dropLast(64))
            },
            Malformed("version-3", .open, .unsupportedVersion, "a version 2 vault whose header says version 3 (checksum recomputed)") {
                let b = try golden("one-item")
                let n = Int(b[12]) | Int(b[13]) << 8
                var h = Array(b[0..<n])
                h[8] = 3
                return CraftedVault.resealed(header: h, macKey: nil) + b[n...]
            },
        ]
    }
}
