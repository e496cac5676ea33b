extension PagedVault {
    /// Checks the whole vault (SPEC.md Part 4): every trailer back to the first commit (V7); the index the last
    /// commit reads, its root, trees and chain of delta segments, with the state they make (``verifyIndex(page:live:)``);
    /// and every record a live item or a kept version names, read in full. Superseded roots and delta segments
    /// (before the last fold) are dead bytes that no reader reads: counted, not opened. Does not stop at the
    /// first problem.
    package func verify() -> VerifyReport {
        streaming(verifyAll)
    }

    private func verifyAll() -> VerifyReport {
        var report = VerifyReport()
        // A damaged page may fail more than one step (the trees, then the scan for records): named once. (By
        // code and context, in a set: `VaultError`'s == compares codes only, and kept one damaged record of
        // many; a search of the list would be quadratic in the damaged records.)
        var noted = Set<String>()
        func note(_ error: Error) {
            let e = error as? VaultError ?? VaultError(.io, "\(error)")
            if noted.insert("\(e.code)\u{0}\(e.context)").inserted { report.problems.append(e) }
        }
        report.incompleteBytes = incompleteBytes
        if report.incompleteBytes > 0 {
            report.problems.append(
                VaultError(
                    .incompleteCommit,
                    "\(report.incompleteBytes) bytes after the last complete commit (generation \(generation)); the next commit cuts them off"
                ))
        }
        if let e = Vault.generationProblem(tail.trailer.generation) { report.problems.append(e) }
        let end = tail.offset + UInt64(TrailerV2.size)
        var live = UInt64(TrailerV2.size) + tail.trailer.rootLength
        // Trailers, newest first; the delta commits back to the last fold are kept for the chain check.
        let tails = TailReader(
            file: file, headerLength: UInt64(header.length), bodySize: end, vaultID: header.vaultID, keys: keys)
        var (t, at) = tail
        var inChain = true
        var probes = TailReader.Probes()
        var scanning = true
        while true {
            report.commits += 1
            if inChain {
                if t.wroteRoot { inChain = false } else { live += t.deltaLength + UInt64(TrailerV2.size) }
            }
            // A commit's own bytes hold no valid trailer (V7, §8): one there is an earlier commit that the
            // chain of trailers does not reach.
            if scanning {
                do {
                    if let (hidden, p) = try tails.validTrailer(
                        TrailerV2.self, from: t.commitStart, end: at, probes: &probes)
                    {
                        report.problems.append(
                            VaultError(
                                .damagedIndex,
                                "a valid trailer of generation \(hidden.generation) lies at body offset \(p), inside the commit of generation \(t.generation)"
                            ))
                    }
                } catch {
                    note(error)
                    scanning = false
                }
            }
            if t.previous == TrailerV2.none {
                if t.commitStart != 0 || !t.wroteRoot {
                    report.problems.append(
                        VaultError(
                            .damagedIndex,
                            "the first commit (generation \(t.generation)) does not start the body with a fold"))
                }
                break
            }
            let b = try? file.read(TrailerV2.size, at: UInt64(header.length) + t.previous)
            guard let b, let p = TrailerV2.decode(b, at: t.previous, vaultID: header.vaultID, key: keys.trailer),
                p.generation == t.generation - 1,
                t.wroteRoot || (p.chain + 1 == t.chain && p.rootOffset == t.rootOffset && p.rootID == t.rootID)
            else {
                report.problems.append(
                    VaultError(
                        .damagedIndex,
                        "the trailer before generation \(t.generation) (body offset \(t.previous)) does not verify"))
                break
            }
            (t, at) = (p, t.previous)
        }
        // The index the last commit reads: its trees, its chain of delta segments, the record extents they
        // name, and the state they make (V3.3, V3.4, V4, V6).
        // Every record that a live item or a kept version names, in full, in file order (RecordClaims). The
        // live items are those the index check decodes for the state (each entry decoded once); if that check
        // fails part way, they are read in a scan of their own.
        var claims = RecordClaims()
        var liveItems = 0
        var indexChecked = false
        do {
            _ = try verifyIndex(page: { live += $0.length }) { item in
                claims.add(item)
                liveItems += 1
            }
            indexChecked = true
        } catch { note(error) }
        do {
            if !indexChecked {
                (claims, liveItems) = (RecordClaims(), 0)
                try forEachItem { item in
                    claims.add(item)
                    liveItems += 1
                    return true
                }
            }
            try scan(.history) { e in
                claims.add(try ItemEntries.decodeHistory(e).item)
                return true
            }
        } catch { note(error) }
        var failed: [ID128] = []
        claims.check(source) { recordID, outcome in
            switch outcome {
            case .intact(let valueBytes, let length):
                report.records += 1
                report.valueBytes += valueBytes
                live += length
            case .failed: failed.append(recordID)
            }
        }
        // A record that failed is read again with its items, found by one more scan, so that the problem
        // names them as it always did (the claims keep no names).
        if !failed.isEmpty {
            var members: [ID128: [Item]] = Dictionary(uniqueKeysWithValues: failed.map { ($0, []) })
            do {
                try forEachItem { item in
                    members[item.location.recordID]?.append(item)
                    return true
                }
                try scan(.history) { e in
                    let item = try ItemEntries.decodeHistory(e).item
                    members[item.location.recordID]?.append(item)
                    return true
                }
            } catch { note(error) }
            for id in failed {
                guard let m = members[id], !m.isEmpty else { continue }
                do {
                    try source.verifyRecord(m)
                    note(
                        VaultError(
                            .damagedRecord, "\(m[0].displayName): the record's member table does not name its items"))
                } catch { note(error) }
            }
        }
        report.items = liveItems
        report.deadBytes = end > live ? end - live : 0
        report.countedGarbage = root.garbage
        return report
    }

    /// Checks the index the last commit reads (SPEC.md Part 4) and returns its live items: every page of the
    /// three trees (V3.3) with its counts against the root's, every entry's encoding, every hlc of the trees
    /// at most the root's clock (V4); every entry of the chain's delta segments, and each remove naming a key
    /// that the trees or an earlier segment hold (V6); every record extent that a page or segment names,
    /// against that page or segment and against the others (V3.4). Then the rules of a state, on the trees
    /// with the deltas applied ("the deltas are part of the state"): one items-tree entry per item id, an
    /// attributes tree of exactly the indexed attributes of the live items, and the trailer's item count.
    /// Reads each page of the three trees once (the items tree twice if a delta segment changes it: its pages,
    /// then the state), plus a lookup per key the chain changes in the attributes tree, one page at a time; holds 8 bytes per
    /// items-tree entry (the ids' hashes) and 32 per record a leaf names (``RecordExtents``): about 40 MB, and
    /// a sort's scratch, for a million items each in its own record.
    /// `onLive` is handed each live item of the state, once, as it is decoded (what ``verify()`` checks the
    /// records against, without decoding the items again).
    package func verifyIndex(page onPage: (PageRef) -> Void = { _ in }, live onLive: (Item) -> Void = { _ in })
        throws -> Int
    {
        try streaming {
            var extents = RecordExtents()
            // With no delta of the items tree, its pages are the state: the state's rules are gathered in the
            // same pass as the pages' (each leaf read and each entry decoded once), else in a scan of their own.
            var state: StateTally? =
                (overlay[.items] ?? [:]).isEmpty ? StateTally(capacity: root.liveItems &+ root.tombstones) : nil
            let attributes = try verifyTrees(&extents, state: &state, page: onPage, live: onLive)
            try verifyChain(&extents)
            try extents.check()
            return try verifyState(attributesInPages: attributes, tally: state, live: onLive)
        }
    }

    /// What the rules of a state are checked on (``verifyState(attributesInPages:tally:live:)``), gathered from the
    /// items tree's entries, the deltas applied: the hashes of their ids, the live items, and the count and hash
    /// sum of the attributes-tree keys the live items make.
    private struct StateTally {
        var ids: [UInt64] = []
        var live = 0
        var expected = (count: 0, sum: 0 as UInt64)

        init(capacity: UInt64) {
            ids.reserveCapacity(Int(min(capacity, 1 << 22)))
        }

        mutating func add(id: ItemID, item: Item?, itemKey: [UInt8], schema: IndexSchema) {
            ids.append(PagedVault.hash(id))
            guard let item else { return }
            live += 1
            ItemEntries.forEachAttributeKey(item, itemKey: itemKey, schema: schema) { k in
                expected.count += 1
                expected.sum &+= PagedVault.attributeHash(k)
            }
        }
    }

    /// The pages of the three trees, their counts against the root, their entries, the clock and the record
    /// extents they name; the items tree's entries also go into `state`, if given. Returns the count and hash
    /// sum of the attributes tree's pages (``attributeHash(_:)``).
    private func verifyTrees(
        _ extents: inout RecordExtents, state: inout StateTally?, page onPage: (PageRef) -> Void,
        live onLive: (Item) -> Void
    ) throws -> (count: Int, sum: UInt64) {
        let schema = root.schema
        let clock = root.clock
        func clocked(_ hlc: UInt64, _ what: @autoclosure () -> String) throws {
            guard hlc <= clock else {
                throw VaultError(
                    .damagedIndex, "\(what()) has a version of hlc \(hlc), above the clock of the index root (\(clock))"
                )
            }
        }
        var live: UInt64 = 0
        var tombstones: UInt64 = 0
        var names = NameCache()
        let entries = try reader(.items).verifyLeaves(
            { e, leaf in
                let s = try ItemEntries.decodeParts(e, schema: schema, names: &names)
                try clocked(s.version.hlc, "item \(s.id) of the items tree")
                if s.item == nil { tombstones += 1 } else { live += 1 }
                if state != nil {
                    state?.add(id: s.id, item: s.item, itemKey: e.key, schema: schema)
                    s.item.map(onLive)
                }
                if let r = e.record {
                    try extents.add(r, namedAt: leaf.offset, by: "items tree, page \(Hex.encode(leaf.id.bytes))")
                }
            }, page: onPage)
        guard entries == root.liveItems &+ root.tombstones, live == root.liveItems else {
            throw VaultError(
                .damagedIndex,
                "the items tree holds \(live) live items and \(tombstones) tombstones, the root says \(root.liveItems) and \(root.tombstones)"
            )
        }
        // Its entries are compared with what the live items make once the deltas apply (verifyState).
        var attributes = (count: 0, sum: 0 as UInt64)
        _ = try reader(.attributes).verify(
            { e in
                attributes.count += 1
                attributes.sum &+= PagedVault.attributeHash(e.key)
            }, page: onPage)
        let kept = try reader(.history).verifyLeaves(
            { e, leaf in
                let h = try ItemEntries.decodeHistory(e)
                try clocked(h.version.hlc, "a kept version of item \(h.item.id)")
                if let r = e.record {
                    try extents.add(r, namedAt: leaf.offset, by: "history tree, page \(Hex.encode(leaf.id.bytes))")
                }
            }, page: onPage)
        guard kept == root.historyEntries else {
            throw VaultError(
                .damagedIndex, "the history tree holds \(kept) entries, the root says \(root.historyEntries)")
        }
        return attributes
    }

    /// The delta segments of the chain, oldest first (V6): each entry decoded as its tree's, each remove of a
    /// key that the trees or an earlier segment hold, each record extent against the segment.
    private func verifyChain(_ extents: inout RecordExtents) throws {
        var chain: [TrailerV2] = []
        var t = tail.trailer
        while !t.wroteRoot {
            chain.append(t)
            let b = try file.read(TrailerV2.size, at: UInt64(header.length) + t.previous)
            guard let p = TrailerV2.decode(b, at: t.previous, vaultID: header.vaultID, key: keys.trailer) else {
                throw VaultError(.damagedIndex, "the trailer before generation \(t.generation) does not verify")
            }
            t = p
        }
        var put: [TreeID: Set<[UInt8]>] = [:]
        for d in chain.reversed() {
            let fail = { (m: String) in VaultError(.damagedIndex, "delta segment of generation \(d.generation): \(m)") }
            let plain = try PagedSealing.open(
                source, key: .delta(keys, vaultID: header.vaultID, generation: d.generation),
                offset: d.deltaOffset, length: d.deltaLength, max: PagedLimits.deltaMax, fail: fail)
            for (tree, change) in try DeltaCodec.decode(plain) {
                switch change {
                case .put(let e):
                    switch tree {
                    case .items: _ = try ItemEntries.decode(e, schema: root.schema)
                    case .history: _ = try ItemEntries.decodeHistory(e)
                    case .attributes: break  // a key alone
                    }
                    if let r = e.record {
                        try extents.add(r, namedAt: d.deltaOffset, by: "delta segment of generation \(d.generation)")
                    }
                    put[tree, default: []].insert(e.key)
                case .remove(let k):
                    guard try put[tree]?.contains(k) == true || reader(tree).lookup(k) != nil else {
                        throw fail(
                            "removes a key of the \(tree) tree that neither the tree nor an earlier segment holds")
                    }
                }
            }
        }
    }

    /// The rules of the state the last commit reads, the deltas applied: one items-tree entry per item id, the
    /// attributes tree exactly the indexed attributes of the live items, the trailer's item count. Returns the
    /// live items. `tally` is the items tree's, if gathered with its pages (no delta changes that tree);
    /// else the tree is scanned with the deltas applied.
    private func verifyState(
        attributesInPages: (count: Int, sum: UInt64), tally: StateTally?, live onLive: (Item) -> Void
    ) throws -> Int {
        let schema = root.schema
        // The attributes tree is compared as a count and a sum of hashes (seeded per process, so not
        // forgeable), in bounded memory: what the items make, against the tree's entries and the chain's
        // changes to them.
        var found = attributesInPages
        let hash = PagedVault.attributeHash
        // One entry per item (V3.4): an item id at two keys (a key change that kept the old entry, in the
        // trees or by a delta) is damage. Checked on 8-byte hashes of the ids, exactly if any repeat.
        var state: StateTally
        if let tally {
            state = tally
        } else {
            state = StateTally(capacity: root.liveItems &+ root.tombstones)
            var names = NameCache()
            try scan(.items) { e in
                let s = try ItemEntries.decodeParts(e, schema: schema, names: &names)
                state.add(id: s.id, item: s.item, itemKey: e.key, schema: schema)
                s.item.map(onLive)
                return true
            }
        }
        state.ids.sort()
        if let twice = try repeatedItemID(sorted: state.ids) {
            throw VaultError(
                .damagedIndex, "item \(twice) has two entries in the items tree (the delta segments applied)")
        }
        state.ids = []
        let (expected, live) = (state.expected, state.live)
        // The chain's last change of each key: a put of a key the tree lacks adds an entry, a remove of one it
        // holds takes one away.
        let attributes = reader(.attributes)
        for (k, c) in overlay[.attributes] ?? [:] {
            let held = try attributes.lookup(k) != nil
            switch c {
            case .put where !held:
                found.count += 1
                found.sum &+= hash(k)
            case .remove where held:
                found.count -= 1
                found.sum &-= hash(k)
            default: break
            }
        }
        guard found == expected else {
            throw VaultError(
                .damagedIndex,
                "the attributes tree holds \(found.count) entries (the delta segments applied) that are not the \(expected.count) "
                    + "its live items make")
        }
        guard live == count else { throw VaultError(.damagedIndex, "\(live) live items, the trailer says \(count)") }
        return live
    }

    /// The first item id, in key order, that a second entry of the items tree has (the deltas applied), given
    /// the hashes of every entry's id, sorted: none if no hash repeats; else the entries whose hash repeats are
    /// read again, exactly.
    private func repeatedItemID(sorted: [UInt64]) throws -> ItemID? {
        var repeated = Set<UInt64>()
        for i in sorted.indices.dropFirst() where sorted[i] == sorted[i - 1] { repeated.insert(sorted[i]) }
        guard !repeated.isEmpty else { return nil }
        var seen = Set<ItemID>()
        var twice: ItemID?
        try scan(.items) { e in
            let id = try ItemEntries.decode(e, schema: root.schema).id
            if repeated.contains(PagedVault.hash(id)), !seen.insert(id).inserted { twice = id }
            return twice == nil
        }
        return twice
    }

    /// An attributes-tree key's hash, seeded per process.
    private static func attributeHash(_ k: [UInt8]) -> UInt64 {
        var h = Hasher()
        k.withUnsafeBytes { h.combine(bytes: $0) }
        return UInt64(bitPattern: Int64(h.finalize()))
    }

    private static func hash(_ id: ItemID) -> UInt64 {
        var h = Hasher()
        h.combine(id)
        return UInt64(bitPattern: Int64(h.finalize()))
    }
}
