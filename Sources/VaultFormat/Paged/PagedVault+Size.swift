#if canImport(Glibc)
    import Glibc
#endif

/// What a version 2 vault's index and records occupy (SPEC.md Part 4, V8.1): the index's bytes, the shares of
/// records, and when a commit should compact.
extension PagedVault {
    /// Bytes on disk of the index this commit reads: every page of the three trees, the root and the delta
    /// segments of the chain (reads every page).
    package func indexBytes() throws -> UInt64 {
        var bytes = tail.trailer.rootLength
        for tree in [TreeID.items, .attributes, .history] {
            _ = try reader(tree).verify({ _ in }, page: { bytes += $0.length })
        }
        return bytes + (try chainDeltaBytes())
    }

    /// Bytes of the delta segments of the chain since the last fold (their trailers read back, at most
    /// `DELTA_CHAIN_MAX` − 1 of them).
    func chainDeltaBytes() throws -> UInt64 {
        var bytes: UInt64 = 0
        var t = tail.trailer
        while !t.wroteRoot {
            bytes += t.deltaLength
            let b = try file.read(TrailerV2.size, at: UInt64(header.length) + t.previous)
            guard let p = TrailerV2.decode(b, at: t.previous, vaultID: header.vaultID, key: keys.trailer) else { break }
            t = p
        }
        return bytes
    }

    /// The record `e` of `tree` names and the bytes it counts as garbage once nothing names it (V8.1): its
    /// length, or, when its value is smaller, the value's size + 4,096 (a member of a shared solid record
    /// does not count the whole record). An entry that does not decode counts the whole record: a hint.
    func recordShare(_ tree: TreeID, _ e: LeafEntry) -> (id: ID128, bytes: UInt64)? {
        guard let rec = e.record else { return nil }
        let size: UInt64?
        switch tree {
        case .items: size = (try? ItemEntries.decode(e, schema: root.schema))?.item?.size
        case .history: size = (try? ItemEntries.decodeHistory(e))?.item.size
        case .attributes: return nil
        }
        return (rec.id, min(rec.length, size.flatMap { $0.adding(4096) } ?? rec.length))
    }

    /// ``recordShare(_:_:)`` of the chain's put at `key`, if the chain puts an entry naming a record there:
    /// a change of that key supersedes it.
    func pendingRecordShare(_ tree: TreeID, _ key: [UInt8]) -> (id: ID128, bytes: UInt64)? {
        guard case .put(let e) = overlay[tree]?[key] else { return nil }
        return recordShare(tree, e)
    }

    /// Whether the root's garbage count (V8.1) has passed the automatic-compaction threshold: more than
    /// 1 MiB and more than half the body, as version 1 judges its dead bytes (SPEC.md §9).
    package var shouldCompact: Bool {
        Vault.passesCompactionThreshold(dead: root.garbage, body: tail.offset + UInt64(TrailerV2.size))
    }

    /// The root's count of body bytes the index no longer needs (V8.1), as the last fold wrote it.
    package var garbage: UInt64 { root.garbage }

    /// Bytes on disk of each tree's pages (the benchmarks' breakdown of ``indexBytes()``).
    package func treeBytes() throws -> [(tree: String, bytes: UInt64, pages: Int)] {
        try [TreeID.items, .attributes, .history].map { tree in
            var bytes: UInt64 = 0
            var pages = 0
            _ = try reader(tree).verify(
                { _ in },
                page: {
                    bytes += $0.length
                    pages += 1
                })
            return ("\(tree)", bytes, pages)
        }
    }
}
