import Crafting
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The malformed vaults of format version 2 (`Fixtures/vault-v2/malformed/`): each is a golden v2 vault
/// with one crafted commit appended or one part changed, every MAC valid where the scenario is about
/// something else. Stages as for version 1: `open` (``PagedVault/open`` fails with the error) and `verify`
/// (it opens, and ``PagedVault/verify`` reports the error first).
extension RecipesV2 {
    /// A golden rebuilt in a scratch file, crafted on by `f`, and its bytes.
    static func crafted(_ golden: String, _ seed: UInt8, _ f: (CraftedPagedVault) throws -> Void) throws -> [UInt8] {
        let g = goldens.first { $0.name == golden }!
        let path = "/tmp/kcar-fixture-v2-\(getpid())-malformed-\(golden).kcv"
        defer { unlink(path) }
        _ = try g.build(path)
        try f(
            try CraftedPagedVault(
                path: path, secret: Recipes.keySecret, random: DeterministicRandom(seed: RecipesV2.seed(seed))))
        return try Recipes.read(path)
    }

    static func golden(_ name: String) throws -> [UInt8] { try build(goldens.first { $0.name == name }!).bytes }

    /// The items tree's top page of a golden, which must be a branch.
    static func topBranch(_ v: CraftedPagedVault) throws -> (PageRef, Int, [(key: [UInt8], child: PageRef)]) {
        let ref = v.root.items!
        let p = try v.page(ref)
        guard case .branch(let children) = p.content else {
            throw VaultError(.invalidArgument, "recipe: the items top is a leaf")
        }
        return (ref, p.level, children)
    }

    /// Rewrites the last entry of the items tree's last leaf (it stays the last key of the tree), then the
    /// leaf and the top branch above it, and folds onto them.
    static func editLastItem(_ v: CraftedPagedVault, _ edit: (inout LeafEntry) -> Void) throws {
        var (_, level, children) = try topBranch(v)
        guard level == 1, case .leaf(var entries) = try v.page(children[children.count - 1].child).content,
            entries.count > 1
        else {
            throw VaultError(.invalidArgument, "recipe: the items tree is not a branch over leaves")
        }
        edit(&entries[entries.count - 1])
        children[children.count - 1].child = try v.write(Page(tree: .items, level: 0, content: .leaf(entries)))
        let top = try v.write(Page(tree: .items, level: level, content: .branch(children)))
        try v.fold { r in r.items = top }
    }

    /// A delta segment's plaintext of exactly `size` bytes: attributes-tree puts (the op byte alone) of keys of
    /// about 4,000 bytes, each 300 bytes of seeded noise then 3,700 `a`s, which deflate about 12:1 (within the
    /// expansion bound, so that a reader stops at the size rule, not at that bound).
    static func bulkDelta(size: Int, tag: UInt8) -> [UInt8] {
        var rng = SplitMix64(state: UInt64(tag) << 32 | 0x5EED)
        var entries: [LeafEntry] = []
        var estimate = 0
        while estimate <= size {
            let n = entries.count
            var key: [UInt8] = [2, tag, UInt8(n >> 8), UInt8(n & 0xFF)]
            key += (0..<300).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            key += [UInt8](repeating: 0x61, count: 3_700)
            entries.append(LeafEntry(key: key, rest: [1]))
            estimate += key.count + 2
        }
        var plain = CraftedPagedVault.deltaPlaintext(entries)
        while plain.count != size {
            entries[entries.count - 1].key.removeLast(plain.count - size)
            plain = CraftedPagedVault.deltaPlaintext(entries)
        }
        return plain
    }

    package static var malformed: [Malformed] {
        [
            Malformed(
                "forged-page-id", .verify, .damagedIndex,
                "a fold whose root names the items tree's top page under another page id (the page does not authenticate)"
            ) {
                try crafted("keychain", 40) { v in
                    try v.fold { r in r.items!.id = ID128(hi: 0x0123_4567_89AB_CDEF, lo: 0x0011_2233_4455_6677) }
                }
            },
            Malformed(
                "page-ref-other-extent", .verify, .damagedIndex,
                "the items tree's top reference keeps its page id but points at the history tree's top page"
            ) {
                try crafted("history", 41) { v in
                    try v.fold { r in
                        r.items!.offset = r.history!.offset
                        r.items!.length = r.history!.length
                    }
                }
            },
            Malformed(
                "page-of-other-tree", .verify, .damagedIndex,
                "the attributes tree's top reference names the items tree's top page (tree byte 1 read as tree 2)"
            ) {
                try crafted("keychain", 42) { v in try v.fold { r in r.attributes = r.items } }
            },
            Malformed(
                "child-wrong-level", .verify, .damagedIndex,
                "the items tree's top branch rewritten at level 2 over its leaves (level 0)"
            ) {
                try crafted("keychain", 43) { v in
                    let (_, level, children) = try topBranch(v)
                    let top = try v.write(Page(tree: .items, level: level + 1, content: .branch(children)))
                    try v.fold { r in r.items = top }
                }
            },
            Malformed(
                "separator-mismatch", .verify, .damagedIndex,
                "the second separator of the items tree's top branch is one byte longer than its child's first key"
            ) {
                try crafted("keychain", 44) { v in
                    var (_, level, children) = try topBranch(v)
                    children[1].key.append(0)
                    let top = try v.write(Page(tree: .items, level: level, content: .branch(children)))
                    try v.fold { r in r.items = top }
                }
            },
            Malformed(
                "child-count-wrong", .verify, .damagedIndex,
                "the first child of the items tree's top branch claims one entry more than its leaf holds (root and trailer counts agree with the claim)"
            ) {
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
            Malformed(
                "root-count-mismatch", .open, .damagedIndex,
                "the root counts one live item more than its items tree's top reference"
            ) {
                try crafted("one-item", 46) { v in try v.fold { r in r.liveItems += 1 } }
            },
            Malformed(
                "trailer-count-mismatch", .verify, .damagedIndex, "a fold trailer counts one item more than its root"
            ) {
                try crafted("one-item", 47) { v in try v.fold({ _ in }, trailer: { $0.itemCount += 1 }) }
            },
            Malformed(
                "page-bomb", .verify, .damagedIndex,
                "the items tree's top page is 1 MiB of zeros deflated to about 1 KiB (past PAGE_EXPANSION_MAX)"
            ) {
                try crafted("keychain", 48) { v in
                    let bomb = try v.writeRaw(
                        [UInt8](repeating: 0, count: 1 << 20), count: v.root.items!.count, compress: true)
                    try v.fold { r in r.items = bomb }
                }
            },
            Malformed(
                "delta-other-root", .open, .damagedIndex,
                "the last trailer (a delta commit) names its predecessor's root extent under another root id (MAC valid)"
            ) {
                try crafted("history", 49) { v in
                    try v.rewriteLastTrailer { t in
                        t.rootID = ID128(hi: 0x5555_5555_5555_5555, lo: 0x5555_5555_5555_5555)
                    }
                }
            },
            Malformed(
                "fold-root-short", .verify, .incompleteCommit,
                "the last trailer (a fold) gives its root one byte less, so it is no trailer: the file opens at the commit before, with an incomplete commit after it"
            ) {
                try crafted("one-item", 50) { v in try v.fold({ _ in }, trailer: { $0.rootLength -= 1 }) }
            },
            Malformed(
                "delta-chain-16", .verify, .incompleteCommit,
                "13 more copies of the last delta segment take the chain from 3 to 16; a trailer with chain 16 is no trailer, so the file opens at chain 15 with an incomplete commit"
            ) {
                try crafted("history", 51) { v in
                    let plain = try v.lastDelta()!
                    for _ in 0..<13 { try v.delta(plain) }
                }
            },
            Malformed(
                "delta-too-large", .open, .damagedIndex,
                "a delta segment of 1,048,577 plaintext bytes (DELTA_MAX + 1), deflated about 12:1 (within the expansion bound)"
            ) {
                try crafted("one-item", 52) { v in
                    try v.delta(bulkDelta(size: PagedLimits.deltaMax + 1, tag: 0), compress: true)
                }
            },
            Malformed(
                "delta-total-over", .open, .damagedIndex,
                "after the golden's delta segment (113 bytes), 4 more of DELTA_MAX plaintext bytes each: the last passes DELTA_TOTAL_MAX (4 MiB) by 113 bytes"
            ) {
                try crafted("one-item", 53) { v in
                    for tag in 1...4 {
                        try v.delta(bulkDelta(size: PagedLimits.deltaMax, tag: UInt8(tag)), compress: true)
                    }
                }
            },
            Malformed(
                "page-extent-outside", .verify, .damagedIndex,
                "the items tree's top reference points past the end of the file"
            ) {
                try crafted("keychain", 54) { v in try v.fold { r in r.items!.offset = 1 << 40 } }
            },
            Malformed(
                "key-escape-bad", .verify, .damagedIndex,
                "the last item key of the items tree has 0x00 0x02 after its class (V3.1: 0x00 is followed by 0xFF or 0x01)"
            ) {
                try crafted("keychain", 55) { v in
                    try editLastItem(v) { e in
                        let end = e.key.firstIndex(of: 0)!
                        e.key[end + 1] = 2
                    }
                }
            },
            Malformed(
                "absent-past-keys", .verify, .damagedIndex,
                "the last item of the items tree (class keys, which the schema does not name: no key attributes) has absent bit 0 set"
            ) {
                try crafted("keychain", 56) { v in
                    try editLastItem(v) { e in
                        // rest: flags u8, hlc varint, absent varint, ...
                        var i = 1
                        while e.rest[i] & 0x80 != 0 { i += 1 }
                        e.rest[i + 1] = 1
                    }
                }
            },
            Malformed(
                "delta-remove-missing", .verify, .damagedIndex,
                "a delta segment removes an items-tree key that neither the trees nor an earlier segment hold (V6)"
            ) {
                try crafted("one-item", 57) { v in
                    var key: [UInt8] = [1]
                    key += Array("genp".utf8) + [0, 1]
                    key += [1] + Array("nobody".utf8) + [0, 1, 1] + Array("none".utf8) + [0, 1]
                    key += [UInt8](repeating: 0x77, count: 16)
                    try v.delta(CraftedPagedVault.deltaPlaintext([LeafEntry(key: key, rest: [2])]))
                }
            },
            Malformed(
                "hidden-trailer", .verify, .damagedIndex,
                "a last commit that claims to be the first (commit start 0, previous none): its records region holds the valid trailers of the commits before it"
            ) {
                try crafted("one-item", 58) { v in
                    try v.fold(
                        { _ in },
                        trailer: { t in
                            t.commitStart = 0
                            t.previous = UInt64.max
                        })
                }
            },
            Malformed("body-cut", .open, .truncated, "the body cut to 100 bytes: no commit is complete") {
                let b = try golden("one-item")
                let header = Int(b[12]) | Int(b[13]) << 8
                return Array(b[0..<(header + 100)])
            },
            Malformed(
                "torn-last-trailer", .verify, .incompleteCommit,
                "the last 64 bytes cut off: the file opens at the empty first commit"
            ) {
                let b = try golden("one-item")
                return Array(b.dropLast(64))
            },
            Malformed(
                "version-3", .open, .unsupportedVersion,
                "a version 2 vault whose header says version 3 (checksum recomputed)"
            ) {
                let b = try golden("one-item")
                let n = Int(b[12]) | Int(b[13]) << 8
                var h = Array(b[0..<n])
                h[8] = 3
                return CraftedVault.resealed(header: h, macKey: nil) + b[n...]
            }
        ]
    }
}
