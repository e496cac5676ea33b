/// What a merge did (SPEC.md Part 4, V9).
package struct MergeReport: Hashable, Sendable {
    /// Items whose entry (live or tombstone) was taken from THEIRS.
    package var taken = 0
    /// Items both sides changed differently (the newer version won).
    package var conflicts = 0
    /// Live versions that lost (a conflict or a shared primary key) and went to history.
    package var keptInHistory = 0
    /// Items that shared a primary key with an item of the other side and gave way to the newer one.
    package var sharedKeys = 0
    /// History entries copied from THEIRS.
    package var historyCopied = 0
    /// Records copied from THEIRS (records both copies hold are not copied).
    package var recordsCopied = 0

    package init() {}
}

/// The side of a merge an input is: named in errors, so that a user (or git) knows which file failed.
package enum MergeSide: String, Sendable {
    case base = "BASE"
    case ours = "OURS"
    case theirs = "THEIRS"
}

extension PagedVault {
    /// Every item's state (V9): its items-tree entry, live or tombstone, by item id.
    func itemStates(side: MergeSide) throws -> [ItemID: ItemState] {
        var out: [ItemID: ItemState] = [:]
        var names = NameCache()
        do {
            try scan(.items) { e in
                let s = try ItemEntries.decode(e, schema: root.schema, names: &names)
                guard out.updateValue(s, forKey: s.id) == nil else { throw VaultError(.damagedIndex, "item \(s.id) has two entries") }
                return true
            }
        } catch let e as VaultError {
            throw VaultError(e.code, "\(side.rawValue) (\(path)): \(e.context)")
        }
        return out
    }

    /// Merges THEIRS into this vault (OURS), given their common ancestor BASE (nil: none, `merge --into`), by
    /// the rules of SPEC.md Part 4, V9, in one commit appended under OURS's lock (nothing is written if
    /// anything fails). THEIRS and BASE are only read. Copies of one vault share their vault key; a side
    /// that was rekeyed apart is refused (merging it would need a rewrite, which is not built).
    package func merge(base: PagedVault?, theirs: PagedVault, random: RandomSource = SystemRandom.shared, level: Int32 = 6) throws -> MergeReport {
        for (side, v) in [(MergeSide.theirs, Optional(theirs)), (.base, base)] {
            guard let v else { continue }
            guard v.header.vaultID == header.vaultID else {
                throw VaultError(.invalidArgument, "\(side.rawValue) (\(v.path)) is another vault (vault id \(Hex.encode(v.header.vaultID)), OURS is \(Hex.encode(header.vaultID)))")
            }
            guard v.vaultKey.constantTimeEquals(vaultKey) else {
                throw VaultError(.invalidArgument, "\(side.rawValue) (\(v.path)) is under another vault key (rekeyed apart from OURS); merge needs copies under one key")
            }
        }
        guard theirs.root.schema == root.schema else {
            throw VaultError(.invalidArgument, "THEIRS (\(theirs.path)) keys its items by another schema than OURS")
        }
        var report = MergeReport()
        try exclusively {
            let b = try base?.itemStates(side: .base) ?? [:]
            let o = try itemStates(side: .ours)
            let t = try theirs.itemStates(side: .theirs)
            try appendCommit(level: level, random: random, solidMembers: Limits.membersMax) { writer in
                try mergeChanges(base: b, ours: o, theirs: t, from: theirs, writer: writer, report: &report)
            }
        }
        return report
    }

    /// The tree changes that bring THEIRS's changes into OURS (V9), with the records they need copied.
    private func mergeChanges(base b: [ItemID: ItemState], ours o: [ItemID: ItemState], theirs t: [ItemID: ItemState], from theirs: PagedVault,
                              writer: CommitWriter, report: inout MergeReport) throws -> CommitChanges {
        let schema = root.schema
        func same(_ x: ItemState?, _ y: ItemState?) -> Bool { x?.version == y?.version && (x?.item == nil) == (y?.item == nil) }
        /// The newer of two states; an absent one is older than any.
        func newer(_ x: ItemState?, _ y: ItemState?) -> Bool {
            guard let x else { return false }
            guard let y else { return true }
            return y.version < x.version
        }
        var clock = max(self.clock, theirs.clock)
        func nextVersion() -> Version {
            clock += 1
            return Version(hlc: clock, writer: writerID)
        }
        // 1-3: per item id, the state that wins, and the live versions that lose.
        var final = o
        var fromTheirs = Set<ItemID>()
        var losers: [ItemState] = []
        for id in Set(o.keys).union(t.keys).sorted() {
            let (bo, oo, tt) = (b[id], o[id], t[id])
            let oursChanged = !same(oo, bo), theirsChanged = !same(tt, bo)
            guard theirsChanged, !same(oo, tt) else { continue }
            if oursChanged {
                report.conflicts += 1
                if !newer(tt, oo) {
                    if let tt, tt.item != nil { losers.append(tt) }
                    continue
                }
                if let oo, oo.item != nil { losers.append(oo) }
            }
            final[id] = tt
            fromTheirs.insert(id)
        }
        // After the rules, two live items changed on different sides that share a primary key are one: the
        // newer stays, the other becomes a tombstone and its version goes to history.
        var byKey: [[UInt8]: [ItemID]] = [:]
        for (id, s) in final where s.item != nil && (fromTheirs.contains(id) || !same(o[id], b[id])) {
            byKey[Array(s.key.dropLast(16)), default: []].append(id)
        }
        var tombstoned: [ItemID: ItemState] = [:]
        for ids in byKey.values where ids.count > 1 && ids.contains(where: fromTheirs.contains) && ids.contains(where: { !fromTheirs.contains($0) }) {
            let keep = ids.max { a, c in newer(final[c], final[a]) || (final[c]!.version == final[a]!.version && c < a) }!
            for id in ids where id != keep {
                let s = final[id]!
                losers.append(s)
                report.sharedKeys += 1
                tombstoned[id] = s
            }
        }
        // Records: a winner's or a kept version's record that OURS lacks is copied from THEIRS, byte for byte.
        var oursRecords: [ID128: RecordRef] = [:]
        for s in o.values { if let l = s.item?.location { oursRecords[l.recordID] = RecordRef(id: l.recordID, offset: l.offset, length: l.length) } }
        try scan(.history) { e in
            if let r = e.record { oursRecords[r.id] = r }
            return true
        }
        var theirsHistory: [LeafEntry] = []
        try theirs.scan(.history) { e in
            if try entry(.history, e.key) == nil { theirsHistory.append(e) }
            return true
        }
        var moved: [ID128: RecordRef] = [:]
        func place(_ item: Item, from source: PagedVault) throws -> Item {
            var item = item
            let l = item.location
            if let r = oursRecords[l.recordID] ?? moved[l.recordID] {
                item.location.offset = r.offset
                item.location.length = r.length
                return item
            }
            guard source !== self else { throw VaultError(.damagedIndex, "OURS names record \(Hex.encode(l.recordID.bytes)) it does not hold") }
            let fail = { (m: String) in VaultError(.damagedRecord, "THEIRS (\(source.path)), \(item.displayName): \(m)") }
            let key = StreamKey.record(keys, vaultID: header.vaultID, recordID: l.recordID)
            var raw = source.source.recordReader(l, fail: fail)
            try writer.appendSealed([item]) { emit in
                while let blk = try raw.nextRaw() {
                    // Authenticated before it is copied: a merge never carries damage into OURS.
                    _ = try Blocks.open(nonce: Array(blk.frame[4..<28]), sealed: blk.sealed, key: key, index: blk.index, last: blk.last, fail: fail)
                    try emit(blk.frame + blk.sealed)
                }
            }
            let copied = writer.written[writer.written.count - 1].item.location
            moved[l.recordID] = RecordRef(id: l.recordID, offset: copied.offset, length: copied.length)
            report.recordsCopied += 1
            item.location = copied
            return item
        }
        // The changes.
        var items: [TreeWriter.Change] = [], attributes: [TreeWriter.Change] = [], history: [TreeWriter.Change] = []
        var liveChange = 0
        func attributeKeys(_ s: ItemState?) -> [[UInt8]] {
            guard let s, let item = s.item else { return [] }
            return ItemEntries.attributeKeys(item, itemKey: s.key, schema: schema)
        }
        for id in (fromTheirs.union(tombstoned.keys)).sorted() {
            let was = o[id]
            var now: LeafEntry
            if let s = tombstoned[id] {
                now = ItemEntries.tombstone(key: s.key, version: nextVersion())
            } else if let s = final[id], let item = s.item {
                now = ItemEntries.entry(try place(item, from: fromTheirs.contains(id) ? theirs : self), version: s.version, schema: schema)
                report.taken += 1
            } else if let s = final[id] {
                now = ItemEntries.tombstone(key: s.key, version: s.version)
                report.taken += 1
            } else {
                continue  // THEIRS lacks an item OURS and BASE hold unchanged (dropped by its compaction): kept
            }
            if let was, was.key != now.key { items.append(.remove(was.key)) }
            items.append(.put(now))
            let old = attributeKeys(was)
            let new = now.record == nil ? [] : ItemEntries.attributeKeys(try ItemEntries.decode(now, schema: schema).item!, itemKey: now.key, schema: schema)
            for k in old where !new.contains(k) { attributes.append(.remove(k)) }
            for k in new where !old.contains(k) { attributes.append(.put(LeafEntry(key: k))) }
            liveChange += (now.record == nil ? 0 : 1) - (was?.item == nil ? 0 : 1)
        }
        // History: THEIRS's kept versions, and the losing live versions.
        var historyKeys = Set<[UInt8]>()
        for e in theirsHistory {
            let h = try ItemEntries.decodeHistory(e)
            let kept = ItemEntries.history(try place(h.item, from: theirs), version: h.version, why: h.why)
            if historyKeys.insert(kept.key).inserted { history.append(.put(kept)) }
            report.historyCopied += 1
        }
        for s in losers {
            let source: PagedVault = o[s.id]?.version == s.version ? self : theirs
            let lost = ItemEntries.history(try place(s.item!, from: source), version: s.version, why: 2)
            guard try entry(.history, lost.key) == nil, historyKeys.insert(lost.key).inserted else { continue }
            history.append(.put(lost))
            report.keptInHistory += 1
        }
        return ([(.items, PagedRebuild.sortedByKey(items, key: \.key)), (.attributes, PagedRebuild.sortedByKey(attributes, key: \.key)),
                 (.history, PagedRebuild.sortedByKey(history, key: \.key))], clock, liveChange)
    }
}
