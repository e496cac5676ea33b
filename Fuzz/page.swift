// Target `page`: version 2's index structures below the encryption (SPEC.md Part 4, draft): the first byte
// picks what the rest is read as: 0 a page, 1 an index root, 2 a delta segment, 3 a trailer at offset 1 MiB,
// 4 an item key, 5 a whole tree (pages length-prefixed, the first the top, references naming pages by their
// position in the input). What decodes must encode to the same bytes (canonical); a tree walk must end,
// whatever its references say, with the same entries from `verify`, from `scan` and from the merge's walk
// against an empty tree.
@testable import VaultFormat

let schema = IndexSchema(
    classes: [
        "genp": ClassSchema(keyAttributes: [("sync", .bool(false)), ("svce", .string("")), ("acct", .string(""))])
    ],
    indexed: ["@*"])

/// Pages named by the position of their bytes in the input (id = position, offset = position).
final class InputPages: PageStore {
    let pages: [[UInt8]]
    init(_ pages: [[UInt8]]) { self.pages = pages }
    func read(_ ref: PageRef) throws -> Page {
        guard ref.id.hi == 0, ref.id.lo < UInt64(pages.count), ref.offset == ref.id.lo,
            ref.length == UInt64(pages[Int(ref.id.lo)].count)
        else {
            throw VaultError(.damagedIndex, "no such page")
        }
        return try PageCodec.decode(pages[Int(ref.id.lo)])
    }
    func write(_ page: Page) throws -> PageRef { throw VaultError(.invalidArgument, "read-only") }
}

func fuzzOne(_ input: [UInt8]) {
    guard let kind = input.first else { return }
    let body = Array(input.dropFirst())
    switch kind % 6 {
    case 0:
        if let p = try? PageCodec.decode(body) { precondition(PageCodec.encode(p) == body, "a page is not canonical") }
    case 1:
        if let r = try? IndexRoot.decode(body) { precondition(r.encode() == body, "a root is not canonical") }
    case 2:
        if let d = try? DeltaCodec.decode(body) {
            precondition(DeltaCodec.encode(d) == body, "a delta segment is not canonical")
            for (tree, c) in d where tree == .items {
                if case .put(let e) = c, let s = try? ItemEntries.decode(e, schema: schema), let item = s.item {
                    precondition(
                        ItemEntries.entry(item, version: s.version, schema: schema) == e,
                        "an item entry is not canonical")
                }
            }
        }
    case 3:
        if body.count >= 128, let t = TrailerV2.candidate(body[0..<128], at: 1 << 20) {
            precondition(t.generation >= 1 && (t.wroteRoot || t.deltaLength > 0))
        }
    case 4:
        if let k = try? ItemKey.parse(body, schemaFor: { schema.classes[$0] }) {
            let s = schema.classes[k.itemClass]
            var a = Attributes()
            for (i, v) in k.values.enumerated() { a[s!.keyAttributes[i].name] = v }
            precondition(
                ItemKey.make(class: k.itemClass, attributes: a, schema: s, id: k.id).key == body,
                "an item key is not canonical")
        }
    default:
        var pages: [[UInt8]] = []
        var r = body[...]
        while r.count >= 2, pages.count < 64 {
            let n = Int(r[r.startIndex]) | Int(r[r.startIndex + 1]) << 8
            r = r.dropFirst(2)
            pages.append(Array(r.prefix(n)))
            r = r.dropFirst(n)
        }
        guard !pages.isEmpty, let top = try? PageCodec.decode(pages[0]) else { return }
        let store = InputPages(pages)
        let ref = PageRef(id: ID128(hi: 0, lo: 0), offset: 0, length: UInt64(pages[0].count), count: top.count)
        for tree in [TreeID.items, .attributes, .history] {
            let reader = TreeReader(store: store, tree: tree, top: ref)
            var verified: [LeafEntry] = []
            let ok = (try? reader.verify { verified.append($0) }) != nil
            var scanned: [LeafEntry] = []
            let scanOK =
                (try? reader.scan {
                    scanned.append($0)
                    return true
                }) != nil
            if ok { precondition(scanOK && scanned == verified, "verify and scan disagree on a valid tree") }
            for i in verified.indices.dropFirst() {
                precondition(verified[i - 1].key.lexicographicallyPrecedes(verified[i].key))
            }
            // The merge's walk (V9): against an empty tree it finds every entry, against the tree itself none;
            // on a forged tree it ends (with an error, or not).
            var differences: [LeafEntry] = []
            let diffOK =
                (try? TreeDiff.walk(TreeReader(store: store, tree: tree, top: nil), reader) {
                    differences.append($0.b!)
                }) != nil
            if ok { precondition(diffOK && differences == verified, "the walk against an empty tree misses entries") }
            var none = 0
            _ = try? TreeDiff.walk(reader, reader) { _ in none += 1 }
            precondition(none == 0, "a tree differs from itself")
        }
    }
}

func seeds(repo: String) -> [[UInt8]] {
    var out: [[UInt8]] = []
    let store = MemoryPageStore()
    var entries: [LeafEntry] = []
    for i in 0..<300 {
        var a = Attributes()
        a["svce"] = .string("svc\(i % 7)")
        a["acct"] = .string("u\(i)")
        a["@team"] = .string("t\(i % 3)")
        let id = ItemID([UInt8](repeating: UInt8(i % 256), count: 15) + [UInt8(i / 256)])
        let item = Item(
            id: id, itemClass: .genericPassword, attributes: a, size: UInt64(i),
            location: RecordLocation(
                recordID: ID128(hi: UInt64(i / 50), lo: 1), offset: UInt64(i / 50) * 100, length: 100, member: i % 50,
                dataOffset: 0))
        entries.append(ItemEntries.entry(item, version: Version(hlc: UInt64(i) << 16, writer: 7), schema: schema))
    }
    entries.sort { $0.key.lexicographicallyPrecedes($1.key) }
    let top = try! TreeWriter(store: store, tree: .items).apply(entries.map { .put($0) }, to: nil)!
    // Every page alone, and the whole tree re-framed with positions for ids.
    var order: [ID128] = [top.id]
    order += store.pages.keys.filter { $0 != top.id }.sorted()
    func reframe(_ p: Page) -> Page {
        guard case .branch(let c) = p.content else { return p }
        return Page(
            tree: p.tree, level: p.level,
            content: .branch(
                c.map { e in
                    let i = UInt64(order.firstIndex(of: e.child.id)!)
                    let bytes = PageCodec.encode(reframe(try! store.read(e.child)))
                    return (
                        e.key,
                        PageRef(id: ID128(hi: 0, lo: i), offset: i, length: UInt64(bytes.count), count: e.child.count)
                    )
                }))
    }
    var tree: [UInt8] = [5]
    for id in order {
        let bytes = PageCodec.encode(reframe(try! PageCodec.decode(store.pages[id]!.bytes)))
        out.append([0] + bytes)
        tree += [UInt8(bytes.count & 0xFF), UInt8(bytes.count >> 8)] + bytes
    }
    out.append(tree)
    out.append([1] + IndexRoot(items: top, liveItems: 300, schema: schema, clock: 99).encode())
    out.append(
        [2]
            + DeltaCodec.encode([
                (.items, .put(entries[0])), (.items, .remove(entries[1].key)),
                (.attributes, .put(LeafEntry(key: [1, 2])))
            ]))
    out.append([4] + entries[5].key)
    return out
}
