import Crafting
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile version 2 vaults made with the key, for kcar-hostile: each starts as a vault
/// that ``PagedVault`` writes (so its header, slots, records and MACs are real), then ``CraftedPagedVault``
/// appends sealed pages, roots, delta segments and trailers that are legal one by one and hostile together.
/// Every builder writes `v.kcv` (the attack) and `o.kcv` (a clean copy of the same vault before the attack,
/// for merges) into a folder, with the key file of ``HostileVaults/key``.
package enum HostileV2 {
    package static let key = HostileVaults.key
    package static var secret: UnlockSecret { .keyFile(SecureBytes(copying: key)) }
    /// The writer id of every commit the builders make.
    package static let writer: UInt64 = 0x4859_5354_0000_0001

    static func random(_ n: UInt8) -> DeterministicRandom {
        DeterministicRandom(seed: [0x48, n] + [UInt8](repeating: 0x56, count: 30))
    }

    static func attributes(_ service: String, _ account: String) -> Attributes {
        Attributes(["svce": .string(service), "acct": .string(account)])
    }

    static func copy(_ from: String, _ to: String) throws {
        try write(to, try Recipes.read(from))
    }

    package static func write(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw VaultError(.io, "open \(path)") }
        defer { close(fd) }
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + off, $0.count - off) }
            guard n > 0 else { throw VaultError(.io, "write \(path)") }
            off += n
        }
    }

    /// A packed-schema vault at `path` whose commits are `commits` (each one transaction at real time, by
    /// ``writer``), then compacted so that its items sit in the trees (one fold, no pending delta).
    @discardableResult
    static func base(
        _ path: String, seed: UInt8, retention: Retention = .init(), compacted: Bool = true,
        _ commits: [(PagedVault, PagedTransaction) throws -> Void]
    ) throws -> PagedVault {
        let r = random(seed)
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: key))], schema: .servicesAndAccounts,
            retention: retention,
            overwrite: true, random: r)
        var v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: writer)
        for c in commits { try v.commit(random: r, autoCompact: false) { tx in try c(v, tx) } }
        if compacted {
            try v.compact(random: r)
            v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: writer)
        }
        return v
    }

    /// The entries of a tree read whole from its top reference (small trees of the base vaults only).
    static func entries(_ v: CraftedPagedVault, _ ref: PageRef?) throws -> [LeafEntry] {
        guard let ref else { return [] }
        var out: [LeafEntry] = []
        var stack = [ref]
        while let r = stack.popLast() {
            switch try v.page(r).content {
            case .leaf(let e): out += e
            case .branch(let children): stack += children.reversed().map(\.child)
            }
        }
        return out
    }

    /// Writes a tree of `count` entries (`entry(i)` ascending in i), `perLeaf` to a leaf and `fanout` children
    /// to a branch; returns its top reference. With `height`, single-child branches are stacked on the top
    /// until the tree has that many levels (V3.2: a reader accepts them).
    static func tree(
        _ v: CraftedPagedVault, _ tree: TreeID, count: Int, perLeaf: Int, fanout: Int = 4096, height: Int? = nil,
        _ entry: (Int) -> LeafEntry
    ) throws -> PageRef {
        var level: [(key: [UInt8], child: PageRef)] = []
        var i = 0
        while i < count {
            let n = min(perLeaf, count - i)
            let leaf = (i..<i + n).map(entry)
            level.append((leaf[0].key, try v.write(Page(tree: tree, level: 0, content: .leaf(leaf)))))
            i += n
        }
        var depth = 0
        while level.count > 1 || (height.map { depth + 1 < $0 } ?? false) {
            depth += 1
            var up: [(key: [UInt8], child: PageRef)] = []
            var k = 0
            while k < level.count {
                let children = Array(level[k..<min(k + fanout, level.count)])
                up.append((children[0].key, try v.write(Page(tree: tree, level: depth, content: .branch(children)))))
                k += fanout
            }
            level = up
        }
        return level[0].child
    }

    /// `key` with its last 16 bytes (an item id) replaced by the n-th id of series `tag`.
    static func withID(_ key: [UInt8], _ n: Int, tag: UInt8 = 0x10) -> [UInt8] {
        Array(key.dropLast(16)) + HostileVaults.id(n, tag)
    }

    static func crafted(_ path: String, seed: UInt8) throws -> CraftedPagedVault {
        try CraftedPagedVault(path: path, secret: secret, random: random(seed))
    }

    // MARK: Deep and wide trees

    /// One item, then an items tree of `leaves` leaves of `perLeaf` clones of it (distinct ids, one record),
    /// under single-child branches up to `HEIGHT_MAX` levels.
    package static func wideDeep(_ dir: String, leaves: Int = 8, perLeaf: Int = PagedLimits.pageEntriesMax) throws {
        let v = dir + "/v.kcv"
        try base(v, seed: 1, [{ _, tx in try tx.add(attributes: attributes("s", "a"), value: Array("value".utf8)) }])
        try copy(v, dir + "/o.kcv")
        let c = try crafted(v, seed: 2)
        guard let e = try entries(c, c.root.items).first else { throw VaultError(.invalidArgument, "recipe: no item") }
        let n = leaves * perLeaf
        let top = try tree(c, .items, count: n, perLeaf: perLeaf, height: PagedLimits.heightMax) { i in
            LeafEntry(key: withID(e.key, i), record: e.record, writer: e.writer, rest: e.rest)
        }
        try c.fold { r in
            r.items = top
            r.liveItems = UInt64(n)
            r.tombstones = 0
        }
    }

    /// `items` items whose keys are near `KEY_MAX` (a 4,000-byte account) and whose entries are near
    /// `ENTRY_MAX` (250 data attributes of 4,000 bytes, an eighth of them noise so they deflate about 8:1).
    package static func bigEntries(_ dir: String, items: Int = 40) throws {
        let v = dir + "/v.kcv"
        try base(v, seed: 3, [{ _, tx in try tx.add(attributes: attributes("s", "a"), value: [1]) }])
        try copy(v, dir + "/o.kcv")
        var rng = SplitMix64(state: 0xB16)
        let p = try PagedVault.open(path: v, secret: secret, mode: .write, writerID: writer)
        for batch in stride(from: 0, to: items, by: 10) {
            try p.commit(random: random(4), autoCompact: false) { tx in
                for i in batch..<min(batch + 10, items) {
                    var a = attributes("s", String(repeating: "k", count: 4_000) + String(i))
                    for d in 0..<250 {
                        a["d" + String(1000 + d).dropFirst()] = .data(
                            (0..<500).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                                + [UInt8](repeating: 0, count: 3_500))
                    }
                    try tx.add(attributes: a, value: [UInt8(i & 0xFF)])
                }
            }
        }
    }

    // MARK: Forged references

    /// How ``forged(_:_:)`` breaks the items tree of a vault of 3,000 items (a top branch over leaves).
    package enum Forgery: String, CaseIterable, Sendable {
        /// The second child reference names the first child's page (a page reached twice).
        case pageTwice = "page-twice"
        /// The history tree's top reference names the items tree's top page (one page, two trees).
        case otherTree = "other-tree"
        /// The first two children's counts carry 2^63 each (their sum wraps to the right total).
        case countOverflow = "count-overflow"
        /// The top reference and the root claim ITEMS_MAX items.
        case countHuge = "count-huge"
        /// The top branch rewritten at level 7 over its leaves.
        case levelHigh = "level-high"
        /// The first child's extent is the last trailer's 128 bytes.
        case onTrailer = "extent-on-trailer"
        /// The first child's reference names the index root (its id, offset and length).
        case onRoot = "extent-on-root"
        /// The first two children's page ids swapped.
        case idsSwapped = "ids-swapped"
        /// A top branch of 65,536 children that all name the first leaf.
        case fanToOne = "fan-to-one"
    }

    package static func forged(_ dir: String, _ f: Forgery) throws {
        let v = dir + "/v.kcv"
        try base(
            v, seed: 5,
            [
                { _, tx in
                    for i in 0..<3_000 {
                        try tx.add(attributes: attributes("s", "a\(i)"), value: Array("value \(i)".utf8))
                    }
                }
            ])
        try copy(v, dir + "/o.kcv")
        let c = try crafted(v, seed: 6)
        let topRef = c.root.items!
        let top = try c.page(topRef)
        guard case .branch(var children) = top.content, children.count > 2 else {
            throw VaultError(.invalidArgument, "recipe: the items top is a leaf")
        }
        func fold(_ kids: [(key: [UInt8], child: PageRef)], level: Int? = nil, count: UInt64? = nil) throws {
            let ref = try c.write(Page(tree: .items, level: level ?? top.level, content: .branch(kids)))
            try c.fold { r in
                r.items = ref
                if let count {
                    r.items!.count = count
                    r.liveItems = count
                }
            }
        }
        switch f {
        case .pageTwice:
            children[1].child = children[0].child
            try fold(children)
        case .otherTree:
            try c.fold { r in
                r.history = r.items
                r.historyEntries = r.items!.count
            }
        case .countOverflow:
            children[0].child.count &+= 1 << 63
            children[1].child.count &+= 1 << 63
            try fold(children)
        case .countHuge:
            try c.fold { r in
                r.items!.count = UInt64(Limits.itemsMax)
                r.liveItems = UInt64(Limits.itemsMax)
            }
        case .levelHigh:
            try fold(children, level: PagedLimits.heightMax - 1)
        case .onTrailer:
            children[0].child.offset = c.lastOffset
            children[0].child.length = 128
            try fold(children)
        case .onRoot:
            let t = c.last
            children[0].child = PageRef(
                id: t.rootID, offset: t.rootOffset, length: t.rootLength, count: children[0].child.count)
            try fold(children)
        case .idsSwapped:
            (children[0].child.id, children[1].child.id) = (children[1].child.id, children[0].child.id)
            try fold(children)
        case .fanToOne:
            // Separators must ascend: each child after the first gets a key above the first leaf's last one.
            let first = children[0]
            var kids = [first]
            let last = try c.page(first.child).lastKey
            for i in 1..<PagedLimits.pageEntriesMax {
                kids.append((last + HostileVaults.u32(i).reversed(), first.child))
            }
            try fold(
                kids,
                count: first.child.count * UInt64(kids.count) > UInt64(Limits.itemsMax)
                    ? UInt64(Limits.itemsMax) : first.child.count * UInt64(kids.count))
        }
    }

    // MARK: Delta chains

    /// `DELTA_CHAIN_MAX` − 1 delta segments after the fold, of about `DELTA_TOTAL_MAX` plaintext bytes in all:
    /// each re-puts the vault's one item (same key, same body) and puts thousands of attributes-tree keys
    /// (`removes`: removes thousands of items-tree keys that nothing holds instead).
    package static func deltaChain(_ dir: String, removes: Bool) throws {
        let v = dir + "/v.kcv"
        try base(v, seed: 7, [{ _, tx in try tx.add(attributes: attributes("s", "a1"), value: Array("value".utf8)) }])
        try copy(v, dir + "/o.kcv")
        let c = try crafted(v, seed: 8)
        guard let e = try entries(c, c.root.items).first else { throw VaultError(.invalidArgument, "recipe: no item") }
        let segments = PagedLimits.deltaChainMax - 1
        let budget = (PagedLimits.deltaTotalMax - 4_096) / segments
        for s in 0..<segments {
            var list: [LeafEntry] = []
            if removes {
                list = (0..<PagedLimits.pageEntriesMax).map {
                    LeafEntry(key: [1] + withID(e.key, s * 100_000 + $0, tag: 0xEE), rest: [2])
                }
            } else {
                list.append(LeafEntry(key: [1] + e.key, record: e.record, writer: e.writer, rest: [1] + e.rest))
                var n = 0
                while true {
                    // ordered-string("x") || typed data (n, 3 bytes, escaped) || the item's key
                    var k: [UInt8] = [2, 0x78, 0, 1, 5]
                    KeyCoding.appendEscaped(
                        [
                            UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8),
                            UInt8(truncatingIfNeeded: n)
                        ], to: &k)
                    k += [0, 1] + e.key
                    list.append(LeafEntry(key: k, rest: [1]))
                    n += 1
                    if n % 500 == 0, CraftedPagedVault.deltaPlaintext(list).count > budget - 25_000 { break }
                }
            }
            try c.delta(fit(list, budget))
        }
    }

    /// The plaintext of a delta segment of the longest prefix of `list` (its first entry kept) within `budget` bytes.
    static func fit(_ list: [LeafEntry], _ budget: Int) -> [UInt8] {
        var n = list.count
        var plain = CraftedPagedVault.deltaPlaintext(list)
        if plain.count > budget { n = max(1, list.count * budget / plain.count + 100) }
        while true {
            plain = CraftedPagedVault.deltaPlaintext(Array(list[..<n]))
            if plain.count <= budget || n == 1 { return plain }
            n = max(1, n - max(1, (plain.count - budget) / 4))
        }
    }

    // MARK: History and tombstones

    /// `items` items, each with `HISTORY_KEEP_MAX` kept versions (retention keeps them all), every version
    /// naming the one earlier value of the first item: 128 KiB inside a solid record.
    package static func historyBomb(_ dir: String, items: Int = 1_000, versions: Int = PagedLimits.historyKeepMax)
        throws
    {
        let v = dir + "/v.kcv"
        var rng = SplitMix64(state: 0x415)
        let big = (0..<131_072).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        try base(
            v, seed: 9, retention: Retention(keep: PagedLimits.historyKeepMax, days: 3_650, tombstoneDays: 3_650),
            [
                { _, tx in
                    for i in 0..<items {
                        try tx.add(attributes: attributes("s", "a\(i)"), value: i == 0 ? big : Array("v\(i)".utf8))
                    }
                },
                { v, tx in
                    try tx.update(
                        try v.items(class: .genericPassword, keyValues: [.string("s"), .string("a0")])[0], value: [0])
                }
            ])
        try copy(v, dir + "/o.kcv")
        let c = try crafted(v, seed: 10)
        let live = try entries(c, c.root.items)
        guard let h = try entries(c, c.root.history).first else {
            throw VaultError(.invalidArgument, "recipe: no history")
        }
        let ids = live.map { Array($0.key.suffix(16)) }.sorted { $0.lexicographicallyPrecedes($1) }
        let hlc = h.key[16..<24].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let total = ids.count * versions
        let top = try tree(c, .history, count: total, perLeaf: 30_000) { i in
            let t = hlc - UInt64(versions) + UInt64(i % versions)
            // Writer ids that vary (4 bytes of noise) keep the leaves under PAGE_EXPANSION_MAX's ratio, so that
            // they are stored deflated (a page that deflates better is stored as it is: 45 MB here).
            var noise = SplitMix64(state: UInt64(i))
            let w = HostileVaults.u32(Int(truncatingIfNeeded: noise.next() & 0xFFFF_FFFF))
            let key =
                ids[i / versions] + (0..<8).map { UInt8(truncatingIfNeeded: t >> (56 - 8 * UInt64($0))) } + w
                + Array(h.key.suffix(4))
            return LeafEntry(key: key, record: h.record, writer: h.writer, rest: h.rest)
        }
        try c.fold { r in
            r.history = top
            r.historyEntries = UInt64(total)
        }
    }

    /// `live` items, then an items tree that also holds `tombstones` tombstones (retention keeps them).
    package static func tombstoneBomb(_ dir: String, live: Int = 100, tombstones: Int = 1_000_000) throws {
        let v = dir + "/v.kcv"
        try base(
            v, seed: 11, retention: Retention(keep: 10, days: 3_650, tombstoneDays: 3_650),
            [
                { _, tx in
                    for i in 0..<live { try tx.add(attributes: attributes("s", "a\(i)"), value: Array("v\(i)".utf8)) }
                },
                { _, tx in try tx.add(attributes: attributes("t", "x"), value: [1]) },
                { v, tx in
                    try tx.delete(try v.items(class: .genericPassword, keyValues: [.string("t"), .string("x")])[0])
                }
            ])
        try copy(v, dir + "/o.kcv")
        let c = try crafted(v, seed: 12)
        let all = try entries(c, c.root.items)
        guard let t = all.last, t.record == nil else { throw VaultError(.invalidArgument, "recipe: no tombstone last") }
        let kept = Array(all.dropLast())
        let top = try tree(c, .items, count: kept.count + tombstones, perLeaf: 50_000) { i in
            i < kept.count
                ? kept[i] : LeafEntry(key: withID(t.key, i - kept.count), record: nil, writer: t.writer, rest: t.rest)
        }
        try c.fold { r in
            r.items = top
            r.liveItems = UInt64(kept.count)
            r.tombstones = UInt64(tombstones)
        }
    }

    // MARK: Solid records copied value by value

    /// A version 1 vault upgraded to version 2 (history 0) whose one solid record holds `members` values of
    /// `valueBytes` zeros (512 MiB in a file of about 600 KB), all live; then `v.kcv` deletes the first, so
    /// the record is no longer copied whole by a compaction or a merge. `o.kcv` is the same vault (same id,
    /// key and schema) holding one other item only, for merges.
    package static func solidRecord(_ dir: String, members: Int = 8_192, valueBytes: Int = 65_536) throws {
        for (name, bomb) in [("o.kcv", false), ("v.kcv", true)] {
            let path = dir + "/" + name
            try write(path, try solidV1(members: bomb ? members : 0, valueBytes: valueBytes))
            try Vault.open(path: path, secret: secret, mode: .write).upgrade(
                schema: .servicesAndAccounts, retention: Retention(keep: 0),
                writerID: writer, random: random(13))
        }
        let v = try PagedVault.open(path: dir + "/v.kcv", secret: secret, mode: .write, writerID: writer)
        try v.commit(random: random(14), autoCompact: false) { tx in
            try tx.delete(try v.items(class: .genericPassword, keyValues: [.string("s"), .string("a0")])[0])
        }
    }

    static func solidV1(members: Int, valueBytes: Int) throws -> [UInt8] {
        var v = try CraftedVault(
            keyFile: key, group: "g",
            random: DeterministicRandom(seed: [0x48, 0x51] + [UInt8](repeating: 0x56, count: 30)))
        var ops: [(op: UInt8, id: [UInt8], entry: [UInt8])] = []
        if members > 0 {
            let recordID = HostileVaults.id(1, 9)
            let ids = (0..<members).map { HostileVaults.randomID($0, 1) }
            let table = CraftedVault.recordPlaintext(
                ids.map { ($0, []) }, declaredSizes: Array(repeating: UInt64(valueBytes), count: members))
            let total = table.count + members * valueBytes
            let mib = Limits.chunkSize
            let zeros = CraftedVault.zlib([UInt8](repeating: 0, count: mib))
            var blocks: [CraftedVault.Block] = []
            var at = 0
            while at < total {
                let n = min(mib, total - at)
                var chunk: [UInt8]
                if at == 0 {
                    chunk = CraftedVault.zlib(table + [UInt8](repeating: 0, count: n - table.count))
                } else if n == mib {
                    chunk = zeros
                } else {
                    chunk = CraftedVault.zlib([UInt8](repeating: 0, count: n))
                }
                blocks.append(
                    CraftedVault.Block(
                        p: [1] + HostileVaults.u32(n) + chunk, index: UInt32(blocks.count), last: at + n == total))
                at += n
            }
            let (offset, length) = v.appendRecord(id: recordID, blocks: blocks)
            for (i, id) in ids.enumerated() {
                ops.append(
                    (
                        1, id,
                        HostileVaults.entry(
                            service: "s", account: "a\(i)", size: UInt64(valueBytes), recordID: recordID,
                            offset: offset,
                            length: length, member: i, dataOffset: UInt64(i * valueBytes))
                    ))
            }
        }
        let keepID = HostileVaults.randomID(0, 3)
        let keepRecord = HostileVaults.id(2, 9)
        let (o, l) = HostileVaults.smallRecord(&v, id: keepRecord, member: keepID, value: [1, 2, 3])
        ops.append(
            (
                1, keepID,
                HostileVaults.entry(service: "s", account: "keep", size: 3, recordID: keepRecord, offset: o, length: l)
            ))
        let index = v.appendIndex(CraftedVault.indexPlaintext(ops), generation: 1)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: index, previous: nil, itemCount: UInt32(ops.count), checkpoint: true,
            chain: 0)
        return v.bytes
    }

    // MARK: Commits of other copies and other generations

    package enum Splice: String, CaseIterable, Sendable {
        /// Copy B of a vault, then the last commit of copy A appended (both grew from one file).
        case otherCopyCommit = "other-copy-commit"
        /// A fold whose trailer jumps 2^40 generations.
        case generationJump = "generation-jump"
        /// A fold at generation 2^64 − 1.
        case generationMax = "generation-max"
    }

    package static func spliced(_ dir: String, _ s: Splice) throws {
        let v = dir + "/v.kcv"
        try base(
            v, seed: 15,
            [
                { _, tx in
                    for i in 0..<100 { try tx.add(attributes: attributes("s", "a\(i)"), value: Array("v\(i)".utf8)) }
                }
            ])
        try copy(v, dir + "/o.kcv")
        switch s {
        case .otherCopyCommit:
            let a = dir + "/.a.kcv"
            try copy(v, a)
            defer { unlink(a) }
            let forkAt = try Recipes.read(v).count
            for (path, account) in [(a, "from-a"), (v, "from-b")] {
                let p = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: writer)
                try p.commit(random: random(16), autoCompact: false) { tx in
                    try tx.add(attributes: attributes("s", account), value: [7])
                }
            }
            try write(v, try Recipes.read(v) + Recipes.read(a)[forkAt...])
        case .generationJump:
            try crafted(v, seed: 17).fold({ _ in }, trailer: { $0.generation += 1 << 40 })
        case .generationMax:
            try crafted(v, seed: 18).fold({ _ in }, trailer: { $0.generation = .max })
        }
    }

    // MARK: Clocks

    /// `o.kcv` a vault of one item, `v.kcv` that copy plus a commit whose clock is `ms` milliseconds (2^48 − 1:
    /// an hlc 65,536 below 2^64).
    package static func farFuture(_ dir: String, ms: UInt64) throws {
        let v = dir + "/v.kcv"
        try base(v, seed: 19, [{ _, tx in try tx.add(attributes: attributes("s", "a1"), value: [1]) }])
        try copy(v, dir + "/o.kcv")
        let p = try PagedVault.open(path: v, secret: secret, mode: .write, writerID: writer)
        try p.commit(random: random(20), autoCompact: false, now: { ms }) { tx in
            try tx.add(attributes: attributes("s", "future"), value: [2])
            try tx.update(try p.items(class: .genericPassword, keyValues: [.string("s"), .string("a1")])[0], value: [3])
        }
    }
}
