#if canImport(Glibc)
    import Glibc
#endif

extension StreamKey {
    /// A page's blocks (SPEC.md Part 4, V3.2): `"kcar-pg-v2" || vault_id || page_id`.
    package static func page(_ keys: Subkeys, vaultID: [UInt8], pageID: ID128) -> StreamKey {
        StreamKey(key: keys.index, label: "kcar-pg-v2", vaultID: vaultID, naming: pageID.bytes)
    }

    /// A delta segment's blocks (V6): `"kcar-dlt-v2" || vault_id || u64 generation`.
    package static func delta(_ keys: Subkeys, vaultID: [UInt8], generation: UInt64) -> StreamKey {
        StreamKey(
            key: keys.index, label: "kcar-dlt-v2", vaultID: vaultID,
            naming: withUnsafeBytes(of: generation.littleEndian, Array.init))
    }
}

/// Sealing and opening the index structures of version 2: pages, roots and delta segments.
package enum PagedSealing {
    /// The most plaintext a structure of `stored` sealed bytes may open to (`PAGE_EXPANSION_MAX`).
    static func expansionBound(_ stored: UInt64) -> UInt64 {
        let (m, o) = stored.multipliedReportingOverflow(by: UInt64(PagedLimits.pageExpansionMax))
        return o ? .max : m &+ 4096
    }

    /// Seals `plain` into blocks, compressed where that helps, unless compressing would break the expansion
    /// bound: then every chunk is stored as it is (fresh nonces: a sealed attempt is never reused).
    package static func seal(_ plain: [UInt8], key: StreamKey, random: RandomSource, level: Int32) -> [UInt8] {
        var sealed = Blocks.jobs(for: plain, key: key, random: random).flatMap { Blocks.seal($0, level: level) }
        if UInt64(plain.count) > expansionBound(UInt64(sealed.count)) {
            sealed = Blocks.jobs(for: plain, key: key, random: random).flatMap { Blocks.seal($0, level: 0) }
        }
        return sealed
    }

    /// Opens the blocks at body extent [offset, offset + length): at most `max` plaintext bytes and the
    /// expansion bound, each checked before the chunk that would pass it is inflated.
    package static func open(
        _ source: RecordSource, key: StreamKey, offset: UInt64, length: UInt64, max: Int,
        fail: @escaping (String) -> VaultError
    ) throws -> [UInt8] {
        let bound = min(UInt64(max), expansionBound(length))
        var reader = BlockReader(
            file: source.file, key: key, start: source.headerLength + offset,
            end: source.headerLength + offset + length, fail: fail)
        var out: [UInt8] = []
        while let c = try reader.next(room: Int(min(UInt64(Limits.chunkSize), bound - UInt64(out.count)))) {
            // Most structures are one chunk: taken as it is, not copied.
            if out.isEmpty { out = c } else { out.append(contentsOf: c) }
        }
        return out
    }
}

/// Pages in a vault file's body. Reading checks extents against `limit` (the end of what the commit being
/// read may name) and keeps decoded pages in a small cache; writing seals and appends at `position`.
package final class FilePageStore: PageStore {
    let source: RecordSource
    /// Pages must end at or before this body offset.
    package var limit: UInt64
    /// Where the next page is written (body offset), when writing.
    package var position: UInt64
    package var random: RandomSource = SystemRandom.shared
    var level: Int32 = 6
    /// Pages read: leaves as lookups read them (``LeafView/node``: checked plaintext, or decoded when they hold
    /// more than ``LeafView/searchMax`` entries), branches decoded and apart from leaves, so that
    /// a run of lookups over a large tree, which misses on leaves, keeps the paths above them (a tree has about
    /// one branch per hundred leaves).
    private var leaves = PageCache<PageNode>(capacity: FilePageStore.cacheMax, maxBytes: FilePageStore.cacheBytesMax)
    private var branches = PageCache<Page>(
        capacity: FilePageStore.branchCacheMax, maxBytes: FilePageStore.cacheBytesMax)
    static let cacheMax = 4096
    static let branchCacheMax = 16_384
    /// Bytes of pages (as encoded) each cache holds at most: a page may be `PAGE_MAX` (2 MiB), so a count
    /// alone bounded a cache of large entries' leaves at gigabytes (an import of items of 200 attributes of
    /// 2 KB peaked at 756 MB).
    static let cacheBytesMax = 32 << 20
    /// Pages opened from the file (not from the cache), for the benchmarks and tests.
    private(set) var opened = 0
    /// Whether leaves read are kept. A walk of a whole tree reads each leaf once: kept, 4,096 of them (tens
    /// of MiB decoded) would only push out the pages lookups use (``PagedVault/streaming(_:)``).
    var keepsLeaves = true

    package init(source: RecordSource, limit: UInt64) {
        self.source = source
        self.limit = limit
        position = limit
    }

    package func read(_ ref: PageRef) throws -> Page {
        let key = FilePageStore.cacheKey(ref)
        if let p = branches[key] { return p }
        switch leaves[key] {
        case .page(let p): return p
        // A leaf kept as a view was checked as the decoder checks it: its entries are the decoded leaf's.
        case .leaf(let v): return Page(tree: v.tree, level: 0, content: .leaf(v.entries))
        case nil: break
        }
        let plain = try openPlaintext(ref)
        let page = try PageCodec.decode(plain)
        if case .leaf(let entries) = page.content {
            try PageCodec.checkRecordsEnd(entries, before: ref.offset, "page \(Hex.encode(ref.id.bytes))")
            if keepsLeaves { keepLeaf(page, plain, key) }
        } else {
            branches.insert(page, bytes: plain.count, at: key)
        }
        return page
    }

    /// Keeps a leaf as lookups read it (``LeafView/node``): as a view, or decoded if it holds many entries.
    private func keepLeaf(_ page: Page, _ plain: [UInt8], _ key: PageRef) {
        if page.entryCount > LeafView.searchMax {
            leaves.insert(.page(page), bytes: plain.count, at: key)
        } else if let v = LeafView.checked(plain) {
            leaves.insert(.leaf(v), bytes: v.weight, at: key)
        }
    }

    package func node(_ ref: PageRef) throws -> PageNode {
        let key = FilePageStore.cacheKey(ref)
        if let p = branches[key] { return .page(p) }
        if let n = leaves[key] { return n }
        let plain = try openPlaintext(ref)
        guard plain.first == 1 else {
            let page = try PageCodec.decode(plain)
            if case .leaf = page.content { preconditionFailure("a page of kind \(plain[0]) decoded as a leaf") }
            branches.insert(page, bytes: plain.count, at: key)
            return .page(page)
        }
        let view = try LeafView.open(plain, recordsBefore: ref.offset, page: ref.id)
        // A walk that keeps no leaves reads each once, in order: as a view, its entries built only as they are
        // handed on (decoded whole first, every entry was built twice: into the page, then handed on).
        guard keepsLeaves else { return .leaf(view) }
        let node = view.node
        if case .leaf = node {
            leaves.insert(node, bytes: view.weight, at: key)
        } else {
            leaves.insert(node, bytes: plain.count, at: key)
        }
        return node
    }

    /// The key a page is cached by: its reference without the count (which the reader checks, V3.3).
    private static func cacheKey(_ ref: PageRef) -> PageRef {
        var key = ref
        key.count = 0
        return key
    }

    /// A page's plaintext, opened from the file: its extent checked against ``limit``, at most `PAGE_MAX`.
    private func openPlaintext(_ ref: PageRef) throws -> [UInt8] {
        let fail = { (m: String) in VaultError(.damagedIndex, "page \(Hex.encode(ref.id.bytes)): \(m)") }
        guard let end = ref.offset.adding(ref.length), end <= limit, ref.length > 0 else {
            throw fail("its extent lies outside the body before its commit")
        }
        let plain = try PagedSealing.open(
            source, key: .page(source.keys, vaultID: source.vaultID, pageID: ref.id),
            offset: ref.offset, length: ref.length, max: PagedLimits.pageMax, fail: fail)
        opened += 1
        return plain
    }

    package func write(_ page: Page) throws -> PageRef {
        if case .leaf(let entries) = page.content { try PageCodec.checkOneExtentPerRecord(entries) }
        let plain = PageCodec.encode(page)
        guard plain.count <= PagedLimits.pageMax else {
            throw VaultError(.invalidArgument, "a page of \(plain.count) bytes (PAGE_MAX)")
        }
        let id = ID128(random.bytes(16))
        let sealed = PagedSealing.seal(
            plain, key: .page(source.keys, vaultID: source.vaultID, pageID: id), random: random, level: level)
        try source.file.write(sealed, at: source.headerLength + position)
        let ref = PageRef(id: id, offset: position, length: UInt64(sealed.count), count: page.count)
        position += UInt64(sealed.count)
        limit = max(limit, position)
        let key = FilePageStore.cacheKey(ref)
        if case .branch = page.content {
            branches.insert(page, bytes: plain.count, at: key)
        } else if keepsLeaves {
            keepLeaf(page, plain, key)
        }
        return ref
    }

    /// Seals and appends a structure that is not a tree page (root, delta segment) at `position`.
    package func append(_ plain: [UInt8], key: StreamKey) throws -> (offset: UInt64, length: UInt64) {
        let sealed = PagedSealing.seal(plain, key: key, random: random, level: level)
        let offset = position
        try source.file.write(sealed, at: source.headerLength + position)
        position += UInt64(sealed.count)
        limit = max(limit, position)
        return (offset, UInt64(sealed.count))
    }
}

/// Pages (branches decoded, leaves as views) by where they lie, at most `capacity`: a full cache gives up its oldest page for each page it
/// takes (first in, first out), so it stays full and a run of lookups keeps its hits. (Emptying it whole
/// when full freed thousands of pages at once: at 1M items that churn was a fifth of a lookup's time.)
struct PageCache<Value> {
    private var pages: [PageRef: (page: Value, bytes: Int)] = [:]
    /// Keys in the order they came; `head` is the oldest still held.
    private var order: [PageRef] = []
    private var head = 0
    private var bytes = 0
    let capacity: Int
    let maxBytes: Int

    init(capacity: Int, maxBytes: Int) {
        self.capacity = capacity
        self.maxBytes = maxBytes
    }

    subscript(key: PageRef) -> Value? { pages[key]?.page }

    /// Keeps `page` (of `n` bytes encoded), giving up the oldest pages while more than `capacity` or `maxBytes`
    /// are held.
    mutating func insert(_ page: Value, bytes n: Int, at key: PageRef) {
        // A page larger than the whole budget is not kept (keeping it would give up every other page).
        guard pages[key] == nil, n <= maxBytes else { return }
        pages[key] = (page, n)
        order.append(key)
        bytes += n
        while pages.count > capacity || bytes > maxBytes, head < order.count {
            if let old = pages.removeValue(forKey: order[head]) { bytes -= old.bytes }
            head += 1
        }
        // The keys given up are dropped from the front now and then, not one at a time.
        if head >= 1024, head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
