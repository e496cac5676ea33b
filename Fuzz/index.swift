// Target `index`: the index segment decoder (Sources/VaultFormat/Index.swift), below the encryption: the
// input is the authenticated plaintext of a segment (SPEC.md §7), which nothing but the key can forge.
// The input is decoded as a checkpoint, then as a delta over the checkpoint's state; what decodes must
// encode back to the same bytes (the encoding is canonical); the state is then applied and validated as
// TailReader does, and the items go through what `list`, `list --json` and `extract` do with them.
@testable import KcarCLI
@testable import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The trailer the segment hangs from: records must end before its index offset.
let trailer = Trailer(
    generation: 2, commitStart: 0, indexOffset: 1 << 40, indexLength: 1 << 20, previous: Trailer.noPrevious,
    itemCount: 0, checkpoint: true, chain: 0)

/// A vault around the state, for the item views (`items`, `deadBytes`).
let vault: Vault = {
    let header = Header(vaultID: [UInt8](repeating: 1, count: 16), group: "fuzz", slots: [])
    let path = emptyScratchFile("index")
    let file = try! File.openRead(path)
    unlink(path)
    let tail = Tail(
        trailer: trailer, offset: trailer.indexOffset + trailer.indexLength, checkpointBytes: trailer.indexLength,
        deltaBytes: 0)
    return Vault(
        path: "index", header: header, headerBytes: [], file: file,
        vaultKey: SecureBytes(copying: [UInt8](repeating: 9, count: 32)), state: [:],
        engine: LogEngine(tail: tail), incompleteBytes: 0, mode: .read)
}()

/// The operations of a segment, or nil if it does not decode; what decodes must encode to the same bytes.
func decode(_ input: [UInt8], checkpoint: Bool) -> [IndexOperation]? {
    var ops: [IndexOperation] = []
    var whole = true
    do {
        try IndexCodec.forEach(input, checkpoint: checkpoint) { ops.append($0) }
    } catch is VaultError {
        whole = false
    } catch {
        fatalError("not a VaultError: \(error)")
    }
    // The same bytes handed over in small pieces, as opening streams a segment chunk by chunk (holding about
    // two operations of it), decode alike. Pieces of 1 to 13 bytes, but at most about 64 of them: a boundary
    // falls anywhere in an operation either way, and a large input in thousands of pieces cost most of an
    // execution (one array each).
    var streamed: [IndexOperation] = []
    var offset = 0
    let step = max(1 + Int(input.first ?? 0) % 13, input.count / 64)
    var budget = 0
    let piecewise =
        (try? IndexCodec.forEach(
            chunks: {
                guard offset < input.count else { return nil }
                defer { offset += step }
                return Array(input[offset..<min(offset + step, input.count)])
            }, countMax: input.count / 17, checkpoint: checkpoint, budget: &budget
        ) { streamed.append($0) }) != nil
    precondition(piecewise == whole, "a segment decodes whole but not in pieces, or the other way")
    guard whole else { return nil }
    precondition(IndexCodec.encode(streamed) == input && budget == ops.count, "a segment decoded in pieces differs")
    precondition(IndexCodec.encode(ops) == input, "a decoded segment does not encode to the same bytes")
    return ops
}

func apply(_ ops: [IndexOperation], to state: inout [ItemID: Item]) -> Bool {
    do {
        for op in ops { try TailReader.apply(op, to: &state, trailer: trailer) }
        try TailReader.validateLocations(state)
        return true
    } catch {
        return false
    }
}

func fuzzOne(_ input: [UInt8]) {
    var state: [ItemID: Item] = [:]
    if let ops = decode(input, checkpoint: true), !apply(ops, to: &state) { state = [:] }
    if let ops = decode(input, checkpoint: false) {
        // Deletes need items to remove: the ones the checkpoint did not make are stood in for.
        var delta = state
        for case .delete(let id) in ops where delta[id] == nil {
            delta[id] = Item(
                id: id, itemClass: .genericPassword, attributes: Attributes(), size: 0,
                location: RecordLocation(
                    recordID: id.raw, offset: (1 << 39) + UInt64(delta.count) * 16, length: 1,
                    member: 0, dataOffset: 0))
        }
        if apply(ops, to: &delta) { state = delta }
    }
    guard !state.isEmpty else { return }
    vault.state = state
    defer { vault.state = [:] }
    let items = vault.items
    precondition(items.count == state.count)
    _ = vault.deadBytes
    _ = Vault.recordBatches(items)
    for item in items {
        _ = item.displayName
        _ = ExtractCommand.json(item)
        let name = ItemPath.name(item)
        if let s = item.service, let a = item.account {
            // The name selects the item as `extract NAME` reads it: SERVICE/ACCOUNT parses back to both; a
            // top-level item (the empty service, SPEC.md §7.1) is named by its account alone, which parses as a
            // service and is also taken as the top-level item of that name.
            let parsed = ItemPath.parse(name)
            let selects =
                ItemPath.isTopLevel(service: s, account: a) && !name.contains("/")
                ? parsed?.service == a && parsed?.account == nil
                : parsed?.service == s && parsed?.account == a
            guard selects else { fatalError("item name \(name) does not select its service and account") }
        }
    }
}

func seeds(repo: String) -> [[UInt8]] {
    var out = decryptedFixtures(repo: repo).flatMap { $0.segments.map(\.plaintext) }
    // Synthetic: every attribute type, a delete, and records shared by several items.
    func id(_ b: UInt8) -> ItemID { ItemID([UInt8](repeating: b, count: 16)) }
    func item(
        _ b: UInt8, record: UInt8, offset: UInt64, member: Int, dataOffset: UInt64, size: UInt64,
        _ attrs: [String: AttributeValue]
    ) -> Item {
        Item(
            id: id(b), itemClass: .genericPassword, attributes: Attributes(attrs), size: size,
            location: RecordLocation(
                recordID: ID128([UInt8](repeating: record, count: 16)), offset: offset, length: 100,
                member: member, dataOffset: dataOffset))
    }
    let all: [String: AttributeValue] = [
        "svce": .string("example.com"), "acct": .string("a/b//c"), "mdat": .date(nanoseconds: -1),
        "cdat": .date(nanoseconds: .max), "port": .integer(.min), "sync": .bool(true), "gena": .data([0, 1, 2])
    ]
    let puts: [IndexOperation] = [
        .put(item(1, record: 9, offset: 0, member: 0, dataOffset: 0, size: 5, all)),
        .put(
            item(
                2, record: 9, offset: 0, member: 1, dataOffset: 5, size: 0, ["svce": .string("%"), "acct": .string("")])
        ),
        .put(item(3, record: 8, offset: 100, member: 0, dataOffset: 0, size: 1 << 40, ["svce": .string("..")])),
        .put(item(4, record: 7, offset: 200, member: 0, dataOffset: 0, size: 0, [:]))
    ]
    out.append(IndexCodec.encode(puts))
    out.append(IndexCodec.encode([puts[0], .delete(id(2)), puts[2]]))
    out.append(IndexCodec.encode([]))
    return out
}
