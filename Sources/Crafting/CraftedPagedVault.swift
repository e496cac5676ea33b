import VaultFormat

/// Surgery on a version 2 vault (SPEC.md Part 4), for malformed fixtures only: reads the last commit of a
/// file whose secret is known, and appends crafted pages, roots, delta segments and trailers sealed under
/// the vault's keys, so that each malformed file breaks exactly one rule. Writers of real vaults use
/// ``PagedVault``.
package final class CraftedPagedVault {
    /// The root fields a malformed fixture may change.
    package struct Root {
        package var items: PageRef?
        package var attributes: PageRef?
        package var history: PageRef?
        package var liveItems: UInt64
        package var tombstones: UInt64
        package var historyEntries: UInt64
        /// The greatest hlc in the trees (V4).
        package var clock: UInt64
    }

    /// The trailer fields (V7), as they will be written (the MAC is computed over them as they are).
    package typealias Trailer = TrailerV2

    let file: File
    let source: RecordSource
    let store: FilePageStore
    var indexRoot: IndexRoot
    /// The last commit's trailer and its body offset.
    package private(set) var last: Trailer
    package private(set) var lastOffset: UInt64
    /// Where the commit being crafted starts (the end of the last trailer).
    package private(set) var commitStart: UInt64

    /// Opens the vault at `path` (a scratch copy: it is appended to) with `secret`.
    package init(path: String, secret: UnlockSecret, random: RandomSource) throws {
        let file = try File.openReadWrite(path)
        let size = try file.size()
        let (header, headerBytes) = try Header.parse(
            prefix: try file.read(Int(min(size, 4096)), at: 0), fileSize: size,
            versions: 2...2
        ) { try file.read($0, at: 0) }
        guard let vk = header.slots.lazy.compactMap({ $0.unwrap(with: secret, vaultID: header.vaultID) }).first else {
            throw VaultError(.wrongKey)
        }
        let keys = Subkeys(vaultKey: vk)
        guard Header.verifyMAC(headerBytes, key: keys.header) else { throw VaultError(.tamperedHeader) }
        source = RecordSource(file: file, headerLength: UInt64(header.length), vaultID: header.vaultID, keys: keys)
        let (root, _, _, tail) = try PagedVault.load(source, bodySize: size - UInt64(header.length))
        self.file = file
        indexRoot = root
        last = tail.0
        lastOffset = tail.1
        commitStart = tail.1 + UInt64(TrailerV2.size)
        store = FilePageStore(source: source, limit: commitStart)
        store.random = random
    }

    package var root: Root {
        Root(
            items: indexRoot.items, attributes: indexRoot.attributes, history: indexRoot.history,
            liveItems: indexRoot.liveItems,
            tombstones: indexRoot.tombstones, historyEntries: indexRoot.historyEntries, clock: indexRoot.clock)
    }

    package func page(_ ref: PageRef) throws -> Page { try store.read(ref) }

    /// Seals and appends a page, encoded as a writer would (whatever rule its content breaks).
    package func write(_ page: Page) throws -> PageRef { try store.write(page) }

    /// Seals and appends `plain` as a page under a fresh id; `compress` forces zlib whatever the expansion
    /// bound says (a decompression bomb).
    package func writeRaw(_ plain: [UInt8], count: UInt64, compress: Bool) throws -> PageRef {
        let id = ID128(store.random.bytes(16))
        let key = StreamKey.page(source.keys, vaultID: source.vaultID, pageID: id)
        let sealed =
            compress
            ? Blocks.jobs(for: plain, key: key, random: store.random).flatMap { Blocks.seal($0, level: 9) }
            : PagedSealing.seal(plain, key: key, random: store.random, level: 6)
        try file.write(sealed, at: source.headerLength + store.position)
        let ref = PageRef(id: id, offset: store.position, length: UInt64(sealed.count), count: count)
        store.position += UInt64(sealed.count)
        store.limit = store.position
        return ref
    }

    /// The plaintext of the last commit's delta segment (none for a fold).
    package func lastDelta() throws -> [UInt8]? {
        guard !last.wroteRoot else { return nil }
        return try PagedSealing.open(
            source, key: .delta(source.keys, vaultID: source.vaultID, generation: last.generation),
            offset: last.deltaOffset, length: last.deltaLength, max: PagedLimits.deltaMax
        ) { VaultError(.damagedIndex, $0) }
    }

    /// Appends a fold commit: `edit` changes the root, `trailer` the trailer fields before the MAC.
    package func fold(_ edit: (inout Root) -> Void, trailer: (inout Trailer) -> Void = { _ in }) throws {
        var r = root
        edit(&r)
        var newRoot = indexRoot
        newRoot.items = r.items
        newRoot.attributes = r.attributes
        newRoot.history = r.history
        newRoot.liveItems = r.liveItems
        newRoot.tombstones = r.tombstones
        newRoot.historyEntries = r.historyEntries
        newRoot.clock = r.clock
        let rootID = ID128(store.random.bytes(16))
        let (offset, length) = try store.append(
            newRoot.encode(), key: .page(source.keys, vaultID: source.vaultID, pageID: rootID))
        var t = last
        (t.generation, t.commitStart, t.previous) = (last.generation + 1, commitStart, lastOffset)
        (t.rootOffset, t.rootLength, t.rootID, t.deltaOffset, t.deltaLength) = (
            offset, length, rootID, TrailerV2.none, 0
        )
        (t.itemCount, t.wroteRoot, t.chain) = (r.liveItems, true, 0)
        trailer(&t)
        try appendTrailer(t)
        indexRoot = newRoot
    }

    /// Appends a delta commit whose segment is `plain` (sealed as a writer would, or compressed whatever the
    /// expansion bound says).
    package func delta(_ plain: [UInt8], compress: Bool = false, trailer: (inout Trailer) -> Void = { _ in }) throws {
        let generation = last.generation + 1
        let key = StreamKey.delta(source.keys, vaultID: source.vaultID, generation: generation)
        let sealed =
            compress
            ? Blocks.jobs(for: plain, key: key, random: store.random).flatMap { Blocks.seal($0, level: 9) }
            : PagedSealing.seal(plain, key: key, random: store.random, level: 6)
        let offset = store.position
        try file.write(sealed, at: source.headerLength + offset)
        store.position += UInt64(sealed.count)
        var t = last
        (t.generation, t.commitStart, t.previous) = (generation, commitStart, lastOffset)
        (t.deltaOffset, t.deltaLength, t.wroteRoot, t.chain) = (offset, UInt64(sealed.count), false, last.chain + 1)
        trailer(&t)
        try appendTrailer(t)
    }

    /// Rewrites the last trailer in place with `edit`'s fields (MAC recomputed).
    package func rewriteLastTrailer(_ edit: (inout Trailer) -> Void) throws {
        var t = last
        edit(&t)
        try file.write(
            t.encode(vaultID: source.vaultID, key: source.keys.trailer), at: source.headerLength + lastOffset)
        last = t
    }

    func appendTrailer(_ t: Trailer) throws {
        let at = store.position
        try file.write(t.encode(vaultID: source.vaultID, key: source.keys.trailer), at: source.headerLength + at)
        store.position += UInt64(TrailerV2.size)
        store.limit = store.position
        last = t
        lastOffset = at
        commitStart = store.position
    }

    /// `H` of SPEC.md §2 (BLAKE2b-256): how fixture manifests name values too long to quote.
    package static func digest(_ data: [UInt8]) -> [UInt8] { Sodium.hash(data) }

    /// A delta segment's plaintext (V6) from raw entries: key `u8 tree || key`, body `u8 op || ...`; `records`
    /// and `writers` are the tables, in order.
    package static func deltaPlaintext(_ entries: [LeafEntry]) -> [UInt8] {
        var w = ByteWriter()
        w.append(4)
        w.append(0)
        w.append(0)
        PageCodec.encodeLeafEntries(entries, hasTables: true, op: true, into: &w)
        return w.bytes
    }
}
