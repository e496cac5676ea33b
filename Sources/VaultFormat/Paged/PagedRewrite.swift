extension ItemEntries {
    /// A history entry, decoded (V3.4): the version it was, why it was kept, and the item as it was then
    /// (its value where the entry's record says).
    static func decodeHistory(_ e: LeafEntry) throws -> (version: Version, why: UInt8, item: Item) {
        var r = ByteReader(e.rest, failure: .damagedIndex, what: "history entry")
        guard e.key.count == 32 else { throw r.fail("a key of \(e.key.count) bytes") }
        let id = ItemID(e.key[0..<16])
        let version = Version(
            hlc: UInt64(bigEndianBytes: Array(e.key[16..<24])), writer: UInt64(bigEndianBytes: Array(e.key[24..<32])))
        guard let rec = e.record, e.writer == nil else { throw r.fail("no record, or a writer in its body") }
        let why = try r.readU8()
        guard (1...3).contains(why) else { throw r.fail("why \(why)") }
        let cls = try r.readString(max: Limits.attrNameMax, "class")
        guard !cls.isEmpty else { throw r.fail("an empty class") }  // 1..ATTR_NAME_MAX bytes (V3.4)
        var names = NameCache()
        let pairs = try IndexCodec.decodeAttributes(
            &r, count: try r.readCount(max: Limits.attrsMax, "attribute count"), names: &names)
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
    package func compact(
        random: RandomSource = SystemRandom.shared, level: Int32 = 6, solidMembers: Int = Limits.membersMax,
        now: UInt64 = PagedRebuild.clockNow(), retention: Retention? = nil, droppingHistoryOf dropped: Set<ItemID> = [],
        rewindingClock: Bool = false
    ) throws {
        var rule = KeepRule(retention: retention)
        if !dropped.isEmpty { rule.history = { !dropped.contains($0.id) } }
        if rewindingClock { rule.rewindAbove = now }
        try rewrite(
            header: header, headerBytes: nil, newKey: nil, rule: rule, random: random, level: level,
            solidMembers: solidMembers, now: now)
    }

    /// Compacts under a new random vault key wrapped for `slots` (which replace all the old ones), re-sealing
    /// every kept record and page. Item ids, record ids, versions and history are kept.
    package func rekey(
        slots: [SlotSecret], random: RandomSource = SystemRandom.shared, level: Int32 = 6,
        solidMembers: Int = Limits.membersMax, now: UInt64 = PagedRebuild.clockNow()
    ) throws {
        let (newHeader, bytes, vk) = try Vault.rekeyedHeader(header, slots: slots, random: random)
        try rewrite(
            header: newHeader, headerBytes: bytes, newKey: vk, rule: KeepRule(), random: random, level: level,
            solidMembers: solidMembers, now: now)
    }

    /// Changes the key slots (as ``Vault/changeSlots(remove:add:random:)``): removes the slots of ``header`` at
    /// the indexes in `remove` and adds slots for `add`; the vault key and the body are unchanged, and the
    /// file keeps its format version. Atomic.
    package func changeSlots(remove: [Int], add: [SlotSecret], random: RandomSource = SystemRandom.shared) throws {
        guard remove.allSatisfy({ header.slots.indices.contains($0) }) else {
            throw VaultError(.invalidArgument, "no such slot")
        }
        let removed = remove.map { header.slots[$0] }
        try exclusively {
            let end = tail.offset + UInt64(TrailerV2.size)
            let (newHeader, _, newFile) = try Vault.copyWithSlots(
                path: path, file: file, header: header, vaultKey: vaultKey, headerKey: keys.header,
                bodyEnd: end, removing: removed, add: add, random: random
            ) {
                guard try file.isStill(path) else {
                    throw VaultError(.io, path: path, "\(path) was replaced during the rewrite; nothing was changed")
                }
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

    /// Hands over what a rewrite keeps (V8) under `r` and `rule`, in key order, one page of the items tree at a
    /// time: each live item `rule` keeps (with its entry), each tombstone younger than `tombstone days` (with its
    /// version). Nothing is held: a compaction reads the items tree twice, once to learn the values it copies and
    /// once to write the new tree, so that its memory does not grow with the entries (V8, §T).
    /// With `accepted`, the entries were decoded by a pass before, under the same lock: a tombstone's key is not
    /// parsed again.
    private func forEachKeptItem(
        now: UInt64, retention r: Retention, rule: KeepRule, accepted: Bool = false, live: (ItemState) throws -> Void,
        tombstone: (LeafEntry, Version) throws -> Void
    ) throws {
        let cutoff = Retention.cutoff(days: r.tombstoneDays, before: now)
        var names = NameCache()
        try streaming {
            try scan(.items) { e in
                if accepted, rule.tombstones, let v = try ItemEntries.acceptedTombstoneVersion(e) {
                    if v.hlc >= cutoff { try tombstone(e, v) }
                    return true
                }
                let s = try ItemEntries.decode(e, schema: root.schema, names: &names)
                if let item = s.item {
                    if rule.live?(item) ?? true { try live(s) }
                } else if rule.tombstones, s.version.hlc >= cutoff {
                    try tombstone(e, s.version)
                }
                return true
            }
        }
    }

    /// Hands over the history entries a rewrite keeps, in key order: for each item its `keep` most recent entries
    /// younger than `days`, of those the ones `rule` keeps. One item's kept entries are held at a time, at most
    /// 2 × `keep` of them.
    private func forEachKeptVersion(
        now: UInt64, retention r: Retention, rule: KeepRule,
        _ body: ((version: Version, why: UInt8, item: Item)) throws -> Void
    ) throws {
        let cutoff = Retention.cutoff(days: r.days, before: now)
        // History keys sort by item id, then version: each item's entries come together, oldest first.
        var run: [(version: Version, why: UInt8, item: Item)] = []
        func closeRun() throws {
            for h in run.suffix(r.keep) where rule.history?(h.item) ?? true { try body(h) }
            run = []
        }
        try streaming {
            try scan(.history) { e in
                let h = try ItemEntries.decodeHistory(e)
                if let last = run.last, last.item.id != h.item.id { try closeRun() }
                guard h.version.hlc >= cutoff else { return true }
                run.append(h)
                if run.count >= 2 * max(r.keep, 1) { run.removeFirst(run.count - r.keep) }
                return true
            }
        }
        try closeRun()
    }

    private func rewrite(
        header newHeader: Header, headerBytes: [UInt8]?, newKey: SecureBytes?, rule: KeepRule, random: RandomSource,
        level: Int32, solidMembers: Int, now: UInt64
    ) throws {
        try exclusively {
            try rewriteLocked(
                header: newHeader, headerBytes: headerBytes, newKey: newKey, rule: rule, random: random, level: level,
                solidMembers: solidMembers, now: now)
        }
    }

    private func rewriteLocked(
        header newHeader: Header, headerBytes: [UInt8]?, newKey: SecureBytes?, rule: KeepRule, random: RandomSource,
        level: Int32, solidMembers: Int, now: UInt64
    ) throws {
        let generation = Vault.rewriteGeneration(after: tail.trailer.generation)
        let newKeys = newKey.map { Subkeys(vaultKey: $0) } ?? keys
        let bytes = headerBytes ?? newHeader.encode(macKey: keys.header)
        let (tmp, newSource, built) = try writeKept(
            to: path, headerBytes: bytes, newKeys: newKeys, reseal: newKey != nil, rule: rule,
            random: random, level: level, solidMembers: solidMembers, now: now, generation: generation)
        try tmp.commit(overwrite: true, replacing: file) {
            guard try file.isStill(path) else {
                throw VaultError(.io, path: path, "\(path) was replaced during the rewrite; nothing was changed")
            }
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
    package func writeCopy(
        to target: String, keeping: @escaping (Item) -> Bool, random: RandomSource = SystemRandom.shared,
        level: Int32 = 6,
        now: UInt64 = PagedRebuild.clockNow()
    ) throws {
        let generation = Vault.rewriteGeneration(after: tail.trailer.generation)
        let rule = KeepRule(live: keeping, history: keeping, tombstones: false)
        let (tmp, _, _) = try writeKept(
            to: target, headerBytes: header.encode(macKey: keys.header), newKeys: keys, reseal: false,
            rule: rule, random: random, level: level, solidMembers: Limits.membersMax, now: now,
            generation: generation)
        try tmp.commit(overwrite: false)
    }

    /// Writes what a rewrite keeps (retention, then `rule`) into a temporary file beside `target`, synced by the
    /// caller's commit: the header, the copied records, one fold. Streamed: a first pass over the trees learns
    /// the values kept (each distinct value once), the greatest version kept and the versions a rewind renumbers;
    /// the records are copied; a second pass writes each tree as it reads the old one. Memory grows with the
    /// distinct values kept and the attribute keys of the live items, not with the entries (tombstones and kept
    /// versions naming one value cost nothing held).
    private func writeKept(
        to target: String, headerBytes bytes: [UInt8], newKeys: Subkeys, reseal: Bool, rule: KeepRule,
        random: RandomSource, level: Int32, solidMembers: Int, now: UInt64, generation: UInt64
    ) throws
        -> (AtomicReplace, RecordSource, (root: IndexRoot, tail: (TrailerV2, UInt64)))
    {
        var base = root
        base.retention = rule.retention ?? root.retention
        let retention = base.retention
        // Pass 1. Every value kept, by where it lies (live items first, then history), each once: entries that name
        // one member of one record name one value, which its first entry names (the record's member table checks
        // it; the others must name the same item, size and data offset).
        var values: [Item] = []
        var valueAt: [ValueKey: Int] = [:]
        var keptClock: UInt64 = 0
        var ahead: [Version] = []
        /// A version kept: renumbered if it runs ahead (`--rewind-clock`), else counted towards the new clock.
        func noteVersion(_ v: Version) {
            if let above = rule.rewindAbove, v.hlc > above {
                ahead.append(v)
            } else {
                keptClock = max(keptClock, v.hlc)
            }
        }
        func note(_ item: Item, _ v: Version) throws {
            noteVersion(v)
            let k = ValueKey(item.location)
            guard let i = valueAt[k] else {
                valueAt[k] = values.count
                values.append(item)
                return
            }
            let first = values[i]
            guard first.id == item.id, first.size == item.size, first.location.dataOffset == item.location.dataOffset
            else {
                throw VaultError(
                    .damagedRecord, "\(item.displayName): the record's member table does not name this item")
            }
        }
        try forEachKeptItem(
            now: now, retention: retention, rule: rule, live: { try note($0.item!, $0.version) },
            tombstone: { _, v in noteVersion(v) })
        try forEachKeptVersion(now: now, retention: retention, rule: rule) { try note($0.item, $0.version) }
        // V5.1 rule 6: the versions above `rewindAbove`, in order, become (now + 1, W), (now + 2, W), ...: a monotone
        // map, so the order of any two versions in the vault (and of the history keys) is unchanged.
        ahead.sort()
        ahead = ahead.reduce(into: []) { out, v in if out.last != v { out.append(v) } }
        if let above = rule.rewindAbove, !ahead.isEmpty {
            guard UInt64(ahead.count) < HybridClock.ceiling - above else {
                throw VaultError(.invalidArgument, "\(ahead.count) versions cannot be renumbered above \(above)")
            }
        }
        func renumbered(_ v: Version) -> Version {
            guard let above = rule.rewindAbove, v.hlc > above else { return v }
            var lo = 0
            var hi = ahead.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if ahead[mid] < v { lo = mid + 1 } else { hi = mid }
            }
            return Version(hlc: above + UInt64(lo) + 1, writer: writerID)
        }
        // The new root's clock is the greatest hlc the rewrite keeps (V4): a clock that ran ahead of every state
        // still held (their versions replaced, or renumbered just now) comes back down to them.
        if let above = rule.rewindAbove, !ahead.isEmpty { keptClock = max(keptClock, above + UInt64(ahead.count)) }
        var sequenceOf = [Int](repeating: 0, count: values.count)
        let tmp = try AtomicReplace(path: target, random: random)
        let newSource = RecordSource(
            file: tmp.file, headerLength: UInt64(bytes.count), vaultID: header.vaultID, keys: newKeys)
        let newStore = FilePageStore(source: newSource, limit: 0)
        let built: (root: IndexRoot, tail: (TrailerV2, UInt64))
        do {
            try tmp.file.write(bytes, at: 0)
            let writer = CommitWriter(
                file: tmp.file, headerLength: UInt64(bytes.count), vaultID: header.vaultID, keys: newKeys,
                random: random, level: level, solidMembers: solidMembers, at: 0)
            try copyRecords(values, to: writer, newKeys: newKeys, reseal: reseal, random: random) {
                sequenceOf[$0] = $1
            }
            try writer.flush()
            var moved: [Int: RecordLocation] = [:]
            for w in writer.written { moved[w.sequence] = w.item.location }
            values = []
            // An entry as it was, at its value's copy (entries that name one value share its copy).
            func place(_ item: Item) throws -> Item {
                guard let i = valueAt[ValueKey(item.location)], let copy = moved[sequenceOf[i]] else {
                    throw VaultError(.io, "a copied value went missing")
                }
                var item = item
                item.location = copy
                return item
            }
            newStore.position = writer.position
            newStore.limit = writer.position
            newStore.random = random
            newStore.level = level
            // Pass 2: the trees, written as the old ones are read.
            let schema = root.schema
            built = try PagedRebuild.writeFold(
                store: newStore, base: base, clock: keptClock, commitStart: 0, generation: generation,
                previous: nil,
                items: { builder in
                    var live: UInt64 = 0
                    var attributeKeys: [[UInt8]] = []
                    try forEachKeptItem(
                        now: now, retention: retention, rule: rule, accepted: true,
                        live: { s in
                            let item = try place(s.item!)
                            let e = ItemEntries.entry(item, version: renumbered(s.version), schema: schema)
                            attributeKeys += ItemEntries.attributeKeys(item, itemKey: e.key, schema: schema)
                            try builder.append(e)
                            live += 1
                        },
                        tombstone: { e, v in
                            let r = renumbered(v)
                            try builder.append(r == v ? e : ItemEntries.tombstone(key: e.key, version: r))
                        })
                    return (live, attributeKeys)
                },
                history: { builder in
                    try forEachKeptVersion(now: now, retention: retention, rule: rule) { h in
                        try builder.append(
                            ItemEntries.history(try place(h.item), version: renumbered(h.version), why: h.why))
                    }
                })
        } catch {
            tmp.abandon()
            throw error
        }
        return (tmp, newSource, built)
    }

    /// A value's place in a file: one member of one record.
    private struct ValueKey: Hashable {
        var record: ID128
        var offset: UInt64
        var length: UInt64
        var member: Int

        init(_ l: RecordLocation) {
            record = l.recordID
            offset = l.offset
            length = l.length
            member = l.member
        }
    }

    /// Copies the records holding `values` to `writer`: a record all of whose members are kept byte for byte
    /// (authenticated first, or re-sealed under `newKeys`), any other rebuilt from its kept members. Tells
    /// `placed` the position in `values` of each value and the writer's sequence number that now holds it.
    private func copyRecords(
        _ values: [Item], to writer: CommitWriter, newKeys: Subkeys, reseal: Bool, random: RandomSource,
        placed: (Int, Int) throws -> Void
    ) throws {
        let records = Dictionary(grouping: values.indices, by: { values[$0].location.recordID })
            .values.sorted { values[$0[0]].location.offset < values[$1[0]].location.offset }
        var solidIDs = Set<ItemID>()
        for group in records {
            let members = group.sorted { values[$0].location.member < values[$1].location.member }
            let first = values[members[0]]
            let l = first.location
            let fail = { (m: String) in VaultError(.damagedRecord, item: first.id, "\(first.displayName): \(m)") }
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
                            _ = try Blocks.open(
                                nonce: Array(b.frame[4..<28]), sealed: b.sealed, key: oldKey, index: b.index,
                                last: b.last, fail: fail)
                            try emit(b.frame + b.sealed)
                        } else {
                            try emit(
                                try Blocks.reseal(
                                    frame: b.frame, sealed: b.sealed, from: oldKey, to: newStreamKey, index: b.index,
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
                for i in members
                where distinct.last.map({ values[$0].location.member != values[i].location.member }) ?? true {
                    distinct.append(i)
                }
                var sequenceOf: [Int: Int] = [:]  // member index -> the writer's sequence number of its copy
                try source.readMembers(
                    distinct.map { values[$0] },
                    begin: { item in
                        // Two versions of one item never share a record (its member ids are distinct).
                        if solidIDs.contains(item.id) {
                            try writer.endSolidRecord()
                            solidIDs = []
                        }
                        solidIDs.insert(item.id)
                        try writer.beginValue(item, size: item.size)
                    }, bytes: { try writer.appendValue($0) },
                    end: { item in
                        try writer.endValue()
                        sequenceOf[item.location.member] = writer.sequence
                    })
                for i in members {
                    guard let n = sequenceOf[values[i].location.member] else {
                        throw VaultError(.io, "a copied value went missing")
                    }
                    try placed(i, n)
                }
            }
        }
    }
}
