extension ItemEntries {
    /// A history entry, decoded (V3.4): the version it was, why it was kept, and the item as it was then
    /// (its value where the entry's record says).
    static func decodeHistory(_ e: LeafEntry) throws -> (version: Version, why: UInt8, item: Item) {
        var r = ByteReader(e.rest, failure: .damagedIndex, what: "history entry")
        guard e.key.count == 32 else { throw r.fail("a key of \(e.key.count) bytes") }
        let id = ItemID(e.key[0..<16])
        let version = Version(hlc: UInt64(bigEndianBytes: Array(e.key[16..<24])), writer: UInt64(bigEndianBytes: Array(e.key[24..<32])))
        guard let rec = e.record, e.writer == nil else { throw r.fail("no record, or a writer in its body") }
        let why = try r.readU8()
        guard (1...3).contains(why) else { throw r.fail("why \(why)") }
        let cls = try r.readString(max: Limits.attrNameMax, "class")
        guard !cls.isEmpty else { throw r.fail("an empty class") }  // 1..ATTR_NAME_MAX bytes (V3.4)
        var names = NameCache()
        let pairs = try IndexCodec.decodeAttributes(&r, count: try r.readCount(max: Limits.attrsMax, "attribute count"), names: &names)
        let item = try valueAtEnd(&r, id: id, class: cls, attributes: Attributes(sortedPairs: pairs), record: rec)
        return (version, why, item)
    }
}

extension PagedVault {
    /// Rewrites the vault without dead space (SPEC.md Part 4, V8): one fold commit whose trees are built
    /// bottom-up from the live entries; the records of live items and kept history copied byte for byte when
    /// all their members are kept, rebuilt from the kept members otherwise (so a dropped value leaves the
    /// file); history and tombstones past the retention rule dropped. `now` (an hlc) is when retention is
    /// judged. Atomic: a crash leaves the old or the new file. Needs `.write`.
    /// With `retention`, the vault's rule (V8) becomes that one, recorded in the new root and applied at once;
    /// the kept versions of the items in `droppingHistoryOf` are dropped, so their values leave the file.
    /// With `rewindingClock`, every version above `now` is renumbered, in order, to `now + 1`, `now + 2`, ... under
    /// this writer's id (V5.1 rule 6), so that a vault whose clock runs ahead can be merged again.
    package func compact(random: RandomSource = SystemRandom.shared, level: Int32 = 6, solidMembers: Int = Limits.membersMax,
                         now: UInt64 = PagedRebuild.clockNow(), retention: Retention? = nil, droppingHistoryOf dropped: Set<ItemID> = [],
                         rewindingClock: Bool = false) throws {
        var rule = KeepRule(retention: retention)
        if !dropped.isEmpty { rule.history = { !dropped.contains($0.id) } }
        if rewindingClock { rule.rewindAbove = now }
        try rewrite(header: header, headerBytes: nil, newKey: nil, rule: rule, random: random, level: level, solidMembers: solidMembers, now: now)
    }

    /// Compacts under a new random vault key wrapped for `slots` (which replace all the old ones), re-sealing
    /// every kept record and page. Item ids, record ids, versions and history are kept.
    package func rekey(slots: [SlotSecret], random: RandomSource = SystemRandom.shared, level: Int32 = 6,
                       solidMembers: Int = Limits.membersMax, now: UInt64 = PagedRebuild.clockNow()) throws {
        let (newHeader, bytes, vk) = try Vault.rekeyedHeader(header, slots: slots, random: random)
        try rewrite(header: newHeader, headerBytes: bytes, newKey: vk, rule: KeepRule(), random: random, level: level, solidMembers: solidMembers, now: now)
    }

    /// Changes the key slots (as ``Vault/changeSlots(remove:add:random:)``): removes the slots of ``header`` at
    /// the indexes in `remove` and adds slots for `add`; the vault key and the body are unchanged, and the
    /// file keeps its format version. Atomic.
    package func changeSlots(remove: [Int], add: [SlotSecret], random: RandomSource = SystemRandom.shared) throws {
        guard remove.allSatisfy({ header.slots.indices.contains($0) }) else { throw VaultError(.invalidArgument, "no such slot") }
        let removed = remove.map { header.slots[$0] }
        try exclusively {
            let end = tail.offset + UInt64(TrailerV2.size)
            let (newHeader, _, newFile) = try Vault.copyWithSlots(path: path, file: file, header: header, vaultKey: vaultKey, headerKey: keys.header,
                                                                  bodyEnd: end, removing: removed, add: add, random: random) {
                guard try file.isStill(path) else { throw VaultError(.io, "\(path) was replaced during the rewrite; nothing was changed") }
            }
            file = newFile
            header = newHeader
            store = FilePageStore(source: source, limit: end)
        }
    }

    /// What a rewrite keeps beyond retention, and the retention it applies.
    struct KeepRule {
        /// The live items kept (nil: all).
        var live: ((Item) -> Bool)?
        /// The kept versions kept (nil: all that retention keeps).
        var history: ((Item) -> Bool)?
        var tombstones = true
        /// The rule to apply and record (nil: the vault's).
        var retention: Retention?
        /// V5.1 rule 6: the hlc above which versions are renumbered (nil: none is).
        var rewindAbove: UInt64?
    }

    /// What a rewrite keeps (V8) under `r`: live items, tombstones younger than `tombstone days`, and for each
    /// item its `keep` most recent history entries younger than `days`. Tombstones come with their versions, decoded
    /// once here.
    func keptState(now: UInt64, retention r: Retention) throws
        -> (live: [ItemState], tombstones: [(entry: LeafEntry, version: Version)], history: [(version: Version, why: UInt8, item: Item)]) {
        func cutoff(_ days: Int) -> UInt64 { Retention.cutoff(days: days, before: now) }
        var live: [ItemState] = [], tombstones: [(entry: LeafEntry, version: Version)] = []
        var names = NameCache()
        try scan(.items) { e in
            let s = try ItemEntries.decode(e, schema: root.schema, names: &names)
            if s.item != nil { live.append(s) } else if s.version.hlc >= cutoff(r.tombstoneDays) { tombstones.append((e, s.version)) }
            return true
        }
        // History keys sort by item id, then version: each item's entries come together, oldest first.
        var history: [(version: Version, why: UInt8, item: Item)] = []
        var run: [(version: Version, why: UInt8, item: Item)] = []
        func closeRun() {
            history += run.filter { $0.version.hlc >= cutoff(r.days) }.suffix(r.keep)
            run = []
        }
        try scan(.history) { e in
            let h = try ItemEntries.decodeHistory(e)
            if let last = run.last, last.item.id != h.item.id { closeRun() }
            run.append(h)
            return true
        }
        closeRun()
        return (live, tombstones, history)
    }

    private func rewrite(header newHeader: Header, headerBytes: [UInt8]?, newKey: SecureBytes?, rule: KeepRule, random: RandomSource,
                         level: Int32, solidMembers: Int, now: UInt64) throws {
        try exclusively { try rewriteLocked(header: newHeader, headerBytes: headerBytes, newKey: newKey, rule: rule, random: random, level: level,
                                            solidMembers: solidMembers, now: now) }
    }

    private func rewriteLocked(header newHeader: Header, headerBytes: [UInt8]?, newKey: SecureBytes?, rule: KeepRule, random: RandomSource,
                               level: Int32, solidMembers: Int, now: UInt64) throws {
        let generation = Vault.rewriteGeneration(after: tail.trailer.generation)
        let newKeys = newKey.map { Subkeys(vaultKey: $0) } ?? keys
        let bytes = headerBytes ?? newHeader.encode(macKey: keys.header)
        let (tmp, newSource, built) = try writeKept(to: path, headerBytes: bytes, newKeys: newKeys, reseal: newKey != nil, rule: rule,
                                                    random: random, level: level, solidMembers: solidMembers, now: now, generation: generation)
        try tmp.commit(overwrite: true) {
            guard try file.isStill(path) else { throw VaultError(.io, "\(path) was replaced during the rewrite; nothing was changed") }
        }
        file = tmp.file
        header = newHeader
        keys = newKeys
        if let newKey { vaultKey = newKey }
        store = FilePageStore(source: newSource, limit: built.tail.1)
        root = built.root
        replay([])
        overlayBytes = 0
        tail = built.tail
    }

    /// Writes a new vault file at `target` that holds this vault's items for which `keeping` holds, and their
    /// history entries for which it holds, without tombstones (SPEC.md Part 3 §K9: the first push of a shared
    /// copy): the same header (vault id, key slots, group), schema and retention, one fold commit, records with
    /// a dropped member rebuilt from the kept values, so that nothing of a dropped item is in the file. Atomic;
    /// a file at `target` is never replaced (*exists*). This vault is only read.
    package func writeCopy(to target: String, keeping: @escaping (Item) -> Bool, random: RandomSource = SystemRandom.shared, level: Int32 = 6,
                           now: UInt64 = PagedRebuild.clockNow()) throws {
        let generation = Vault.rewriteGeneration(after: tail.trailer.generation)
        let rule = KeepRule(live: keeping, history: keeping, tombstones: false)
        let (tmp, _, _) = try writeKept(to: target, headerBytes: header.encode(macKey: keys.header), newKeys: keys, reseal: false,
                                        rule: rule, random: random, level: level, solidMembers: Limits.membersMax, now: now,
                                        generation: generation)
        try tmp.commit(overwrite: false)
    }

    /// Writes what a rewrite keeps (retention, then `rule`) into a temporary file beside `target`, synced by the
    /// caller's commit: the header, the copied records, one fold.
    private func writeKept(to target: String, headerBytes bytes: [UInt8], newKeys: Subkeys, reseal: Bool, rule: KeepRule,
                           random: RandomSource, level: Int32, solidMembers: Int, now: UInt64, generation: UInt64) throws
        -> (AtomicReplace, RecordSource, (root: IndexRoot, tail: (TrailerV2, UInt64))) {
        var base = root
        base.retention = rule.retention ?? root.retention
        var kept = try keptState(now: now, retention: base.retention)
        if let keep = rule.live { kept.live.removeAll { !keep($0.item!) } }
        if let keep = rule.history { kept.history.removeAll { !keep($0.item) } }
        if !rule.tombstones { kept.tombstones = [] }
        if let now = rule.rewindAbove { try rewind(&kept, above: now) }
        // The new root's clock is the greatest hlc the rewrite keeps (V4): a clock that ran ahead of every state
        // still held (their versions replaced, or renumbered just now) comes back down to them.
        var keptClock: UInt64 = 0
        for s in kept.live { keptClock = max(keptClock, s.version.hlc) }
        for h in kept.history { keptClock = max(keptClock, h.version.hlc) }
        for t in kept.tombstones { keptClock = max(keptClock, t.version.hlc) }
        // Every value kept, by where it lies: live items first, then history.
        let values: [Item] = kept.live.map { $0.item! } + kept.history.map(\.item)
        var sequenceOf = [Int](repeating: 0, count: values.count)
        let tmp = try AtomicReplace(path: target, random: random)
        let newSource = RecordSource(file: tmp.file, headerLength: UInt64(bytes.count), vaultID: header.vaultID, keys: newKeys)
        let newStore = FilePageStore(source: newSource, limit: 0)
        let built: (root: IndexRoot, tail: (TrailerV2, UInt64))
        do {
            try tmp.file.write(bytes, at: 0)
            let writer = CommitWriter(file: tmp.file, headerLength: UInt64(bytes.count), vaultID: header.vaultID, keys: newKeys,
                                      random: random, level: level, solidMembers: solidMembers, at: 0)
            try copyRecords(values, to: writer, newKeys: newKeys, reseal: reseal, random: random) { sequenceOf[$0] = $1 }
            try writer.flush()
            var moved: [Int: Item] = [:]
            for w in writer.written { moved[w.sequence] = w.item }
            // The value's entry as it was, at the copy's place (entries that name one value share its copy).
            func place(_ i: Int) throws -> Item {
                guard let copy = moved[sequenceOf[i]] else { throw VaultError(.io, "a copied value went missing") }
                var item = values[i]
                item.location = copy.location
                return item
            }
            var entries = kept.tombstones.map(\.entry)
            var attributeKeys: [[UInt8]] = []
            for (i, s) in kept.live.enumerated() {
                let item = try place(i)
                let e = ItemEntries.entry(item, version: s.version, schema: root.schema)
                attributeKeys += ItemEntries.attributeKeys(item, itemKey: e.key, schema: root.schema)
                entries.append(e)
            }
            var history: [LeafEntry] = []
            for (j, h) in kept.history.enumerated() {
                history.append(ItemEntries.history(try place(kept.live.count + j), version: h.version, why: h.why))
            }
            newStore.position = writer.position
            newStore.limit = writer.position
            newStore.random = random
            newStore.level = level
            built = try PagedRebuild.writeFold(store: newStore, items: entries, attributeKeys: attributeKeys, history: history,
                                               base: base, clock: keptClock, commitStart: 0, generation: generation, previous: nil)
        } catch {
            tmp.abandon()
            throw error
        }
        return (tmp, newSource, built)
    }

    /// V5.1 rule 6: renumbers every version of `kept` above `now` (live items, tombstones and history alike), in
    /// version order, to `(now + 1, W)`, `(now + 2, W)`, ..., W this writer: a monotone map, so the order of any
    /// two versions in the vault is unchanged.
    private func rewind(_ kept: inout (live: [ItemState], tombstones: [(entry: LeafEntry, version: Version)],
                                       history: [(version: Version, why: UInt8, item: Item)]), above now: UInt64) throws {
        var ahead = Set<Version>()
        for s in kept.live where s.version.hlc > now { ahead.insert(s.version) }
        for h in kept.history where h.version.hlc > now { ahead.insert(h.version) }
        for t in kept.tombstones where t.version.hlc > now { ahead.insert(t.version) }
        guard !ahead.isEmpty else { return }
        guard UInt64(ahead.count) < HybridClock.ceiling - now else {
            throw VaultError(.invalidArgument, "\(ahead.count) versions cannot be renumbered above \(now)")
        }
        var renumbered: [Version: Version] = [:]
        for (i, v) in ahead.sorted().enumerated() { renumbered[v] = Version(hlc: now + UInt64(i) + 1, writer: writerID) }
        for i in kept.live.indices { kept.live[i].version = renumbered[kept.live[i].version] ?? kept.live[i].version }
        for i in kept.history.indices { kept.history[i].version = renumbered[kept.history[i].version] ?? kept.history[i].version }
        for i in kept.tombstones.indices {
            guard let v = renumbered[kept.tombstones[i].version] else { continue }
            kept.tombstones[i] = (ItemEntries.tombstone(key: kept.tombstones[i].entry.key, version: v), v)
        }
    }

    /// Copies the records holding `values` to `writer`: a record all of whose members are kept byte for byte
    /// (authenticated first, or re-sealed under `newKeys`), any other rebuilt from its kept members. Tells
    /// `placed` the position in `values` of each value and the writer's sequence number that now holds it.
    private func copyRecords(_ values: [Item], to writer: CommitWriter, newKeys: Subkeys, reseal: Bool, random: RandomSource,
                             placed: (Int, Int) throws -> Void) throws {
        let records = Dictionary(grouping: values.indices, by: { values[$0].location.recordID })
            .values.sorted { values[$0[0]].location.offset < values[$1[0]].location.offset }
        var solidIDs = Set<ItemID>()
        for group in records {
            let members = group.sorted { values[$0].location.member < values[$1].location.member }
            let first = values[members[0]]
            let l = first.location
            let fail = { (m: String) in VaultError(.damagedRecord, "\(first.displayName): \(m)") }
            var reader = source.recordReader(l, fail: fail)
            let (table, _) = try reader.memberTable()
            try table.check(members.map { values[$0] })
            if Set(members.map { values[$0].location.member }).count == table.members.count {
                let oldKey = StreamKey.record(keys, vaultID: header.vaultID, recordID: l.recordID)
                let newStreamKey = StreamKey.record(newKeys, vaultID: header.vaultID, recordID: l.recordID)
                var raw = source.recordReader(l, fail: fail)
                let base = writer.sequence
                try writer.appendSealed(members.map { values[$0] }) { emit in
                    while let b = try raw.nextRaw() {
                        if !reseal {
                            // Authenticate before copying, so compaction never carries damage forward.
                            _ = try Blocks.open(nonce: Array(b.frame[4..<28]), sealed: b.sealed, key: oldKey, index: b.index, last: b.last, fail: fail)
                            try emit(b.frame + b.sealed)
                        } else {
                            try emit(try Blocks.reseal(frame: b.frame, sealed: b.sealed, from: oldKey, to: newStreamKey, index: b.index,
                                                       last: b.last, nonce: random.bytes(Sodium.aeadNonceBytes), fail: fail))
                        }
                    }
                }
                for (k, i) in members.enumerated() { try placed(i, base + k + 1) }
            } else {
                // One pass over the record, each kept member read once, in member order (SPEC.md Part 4 V8): reading
                // them one by one would decode the record again from its start for each. A value that several
                // entries name (an item and its kept version whose attributes alone changed) is copied once.
                var distinct: [Int] = []
                for i in members where distinct.last.map({ values[$0].location.member != values[i].location.member }) ?? true {
                    distinct.append(i)
                }
                var sequenceOf: [Int: Int] = [:]  // member index -> the writer's sequence number of its copy
                try source.readMembers(distinct.map { values[$0] }, begin: { item in
                    // Two versions of one item never share a record (its member ids are distinct).
                    if solidIDs.contains(item.id) {
                        try writer.endSolidRecord()
                        solidIDs = []
                    }
                    solidIDs.insert(item.id)
                    try writer.beginValue(item, size: item.size)
                }, bytes: { try writer.appendValue($0) }, end: { item in
                    try writer.endValue()
                    sequenceOf[item.location.member] = writer.sequence
                })
                for i in members {
                    guard let n = sequenceOf[values[i].location.member] else { throw VaultError(.io, "a copied value went missing") }
                    try placed(i, n)
                }
            }
        }
    }
}
