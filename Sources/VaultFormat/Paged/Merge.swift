/// An item both sides of a merge changed differently (V9 step 3): the state each side held, and which won (the
/// newer version). The losing live version is kept in OURS's history.
public struct MergeConflict: Hashable, Sendable {
    /// The item both copies changed.
    public var id: ItemID
    /// OURS's and THEIRS's states (nil: the side holds no entry; a state without an item: a deletion).
    public var ours: ItemState?
    /// THEIRS's state.
    public var theirs: ItemState?
    /// The side whose version won (the newer one).
    public var winner: MergeSide

    /// The item as the winner holds it, else as the loser does (a deletion names its item by the other side).
    public var item: Item? {
        (winner == .ours ? ours?.item : theirs?.item) ?? (winner == .ours ? theirs?.item : ours?.item)
    }
    /// The state that lost (kept in history when it was live).
    public var loser: ItemState? { winner == .ours ? theirs : ours }
}

/// An entry a merge took from THEIRS: the item as taken, or, for a deletion, as OURS held it before (nil: OURS
/// had no live version of it).
public struct MergeTaken: Hashable, Sendable {
    /// The item's id.
    public var id: ItemID
    /// The item as taken (for a deletion, as OURS held it, when it did).
    public var item: Item?
    /// Whether what was taken is a deletion.
    public var deleted: Bool
}

/// What a merge did (SPEC.md Part 4, V9).
public struct MergeReport: Hashable, Sendable {
    /// Items whose entry (live or tombstone) was taken from THEIRS.
    public var taken = 0
    /// The entries taken from THEIRS, in item id order, when ``listsTaken``.
    public var takenItems: [MergeTaken] = []
    /// Whether ``takenItems`` was asked for (`listingTaken`).
    public var listsTaken = false
    /// Items both sides changed differently (the newer version won).
    public var conflicts = 0
    /// Each conflict, in item id order.
    public var conflictDetails: [MergeConflict] = []
    /// Live versions that lost (a conflict or a shared primary key) and went to history.
    public var keptInHistory = 0
    /// Items that shared a primary key with an item of the other side and gave way to the newer one.
    public var sharedKeys = 0
    /// History entries copied from THEIRS.
    public var historyCopied = 0
    /// Records copied from THEIRS (records both copies hold are not copied).
    public var recordsCopied = 0
    /// THEIRS's last change is older than OURS's tombstone horizon (V8): a deletion OURS made and has since
    /// forgotten (its tombstone expired) cannot be told from an item THEIRS still holds, which then comes
    /// back. The caller warns (`kcar merge` will).
    public var theirsOlderThanTombstones = false
    /// States of THEIRS not taken because OURS holds the item, or its primary key, as its own (the device-only
    /// rule, SPEC.md Part 3 §K9); each live one is kept in OURS's history.
    public var keptOwn = 0

    package init() {}
}

/// What a merge does beyond V9 (SPEC.md Part 3, §K9): items that stay with the side that holds them, and
/// whether THEIRS's tombstones of items OURS never held are taken.
package struct MergePolicy: Sendable {
    /// Whether an item is its side's own (kcar: ThisDeviceOnly): never taken from THEIRS, never replaced in
    /// OURS, never copied in a record with other members. Nil: no item is.
    package var isOwn: (@Sendable (Item) -> Bool)?
    /// False when merging into a shared copy (a sync's push): a tombstone of an item OURS has no entry for (live
    /// or tombstone) is not taken, since no reader of OURS ever had the item.
    package var takesUnknownTombstones: Bool

    package init(isOwn: (@Sendable (Item) -> Bool)? = nil, takesUnknownTombstones: Bool = true) {
        self.isOwn = isOwn
        self.takesUnknownTombstones = takesUnknownTombstones
    }

    /// V9 alone.
    package static let plain = MergePolicy()
}

/// The side of a merge an input is: named in errors, so that a user (or git) knows which file failed.
public enum MergeSide: String, Sendable {
    /// The common ancestor.
    case base = "BASE"
    /// The copy merged into.
    case ours = "OURS"
    /// The copy merged from.
    case theirs = "THEIRS"
    /// Where OURS and THEIRS are compared with no BASE.
    case both = "OURS or THEIRS"
}

extension PagedVault {
    /// Hands over the entries of `tree` at which this vault differs from `base` (nil: an empty vault), deltas
    /// included, in key order, holding none of them: the keys the trees differ at (``TreeDiff``, which skips the
    /// pages both share) and the keys either chain of deltas names, each compared as a reader sees it; where
    /// neither vault has deltas on `tree`, straight from the walk of both trees.
    func forEachDifference(
        _ tree: TreeID, from base: PagedVault?,
        _ body: ((key: [UInt8], base: LeafEntry?, side: LeafEntry?)) throws -> Void
    ) throws {
        guard let base else {
            try scan(tree) {
                try body(($0.key, nil, $0))
                return true
            }
            return
        }
        let ours = overlay[tree] ?? [:]
        let theirs = base.overlay[tree] ?? [:]
        if ours.isEmpty, theirs.isEmpty {
            try TreeDiff.walk(base.reader(tree), reader(tree)) { try body(($0.key, $0.a, $0.b)) }
            return
        }
        // The keys, each once, in order: gathered, sorted with the flat-key sort and made unique as neighbours (a
        // set of 750,000 keys and a sort comparing arrays cost a merge of a long delta chain 40 % of its CPU).
        var keys: [[UInt8]] = []
        try TreeDiff.walk(base.reader(tree), reader(tree)) { keys.append($0.key) }
        keys.append(contentsOf: ours.keys)
        keys.append(contentsOf: theirs.keys)
        PagedRebuild.sortByKey(&keys) { $0 }
        try keepingLeaves(with: base) {
            for (i, k) in keys.enumerated() where i == 0 || keys[i - 1] != k {
                let (b, s) = (try base.entry(tree, k), try entry(tree, k))
                if b != s { try body((k, b, s)) }
            }
        }
    }

    /// Merges THEIRS into this vault (OURS), given their common ancestor BASE (nil: none, `merge --into`), by
    /// the rules of SPEC.md Part 4, V9, in one commit appended under OURS's lock (nothing is written if
    /// anything fails). THEIRS and BASE are only read. Copies of one vault share their vault key; a side
    /// that was rekeyed apart is refused (merging it would need a rewrite, which is not built). A merge is a
    /// commit: with `autoCompact` it is followed by a compaction as ``commit(level:random:solidMembers:autoCompact:now:_:)`` is.
    /// With `listingTaken`, the report names every entry taken (``MergeReport/takenItems``; otherwise it only
    /// counts them, so that a large merge holds no list).
    package func merge(
        base: PagedVault?, theirs: PagedVault, policy: MergePolicy = .plain, random: RandomSource = SystemRandom.shared,
        level: Int32 = 6, autoCompact: Bool = true, listingTaken: Bool = false
    ) throws -> MergeReport {
        for (side, v) in [(MergeSide.theirs, Optional(theirs)), (.base, base)] {
            guard let v else { continue }
            guard v.header.vaultID == header.vaultID else {
                throw VaultError(
                    .invalidArgument, side: side, path: v.path,
                    " is another vault (vault id \(Hex.encode(v.header.vaultID)), OURS is \(Hex.encode(header.vaultID)))"
                )
            }
            guard v.vaultKey.constantTimeEquals(vaultKey) else {
                throw VaultError(
                    .invalidArgument, side: side, path: v.path,
                    " is under another vault key (rekeyed apart from OURS); merge needs copies under one key"
                )
            }
        }
        for (side, v) in [(MergeSide.theirs, Optional(theirs)), (.base, base)] {
            guard let v, v.root.schema != root.schema else { continue }
            throw VaultError(
                .invalidArgument, side: side, path: v.path, " keys its items by another schema than OURS")
        }
        var report = MergeReport()
        report.listsTaken = listingTaken
        let now = PagedRebuild.clockNow()
        report.theirsOlderThanTombstones =
            theirs.clock < Retention.cutoff(days: root.retention.tombstoneDays, before: now)
        try committing(
            autoCompact: autoCompact, random: random, level: level, solidMembers: Limits.membersMax, now: now
        ) {
            // A merge gives versions above both clocks (tombstones for shared primary keys); OURS's clock read from
            // a file at the ceiling leaves none to give (as a commit refuses it, never a trap). THEIRS's is bounded
            // by the limit of V5.1 below.
            guard clock < HybridClock.ceiling else {
                throw VaultError(
                    .invalidArgument, side: .ours, path: path,
                    ": its clock is at \(clock): no versions are left to give; "
                        + "`kcar compact --rewind-clock` renumbers the versions that run ahead of this machine's clock")
            }
            // The states of the items either side changed; the other items stay as OURS has them.
            var states =
                try base.map { try MergeStates.threeWay(base: $0, ours: self, theirs: theirs) }
                ?? MergeStates.twoWay(ours: self, theirs: theirs)
            var theirsHistory: [LeafEntry] = []
            try streaming(with: theirs) {
                try forEachDifference(.history, from: theirs) { d in
                    if d.side == nil, let e = d.base { theirsHistory.append(e) }
                }
            }
            let theirsClock = try theirs.clockTaken(
                states: states.rows.indices.lazy.compactMap { states.theirs($0) }, history: theirsHistory, now: now)
            try appendCommit(level: level, random: random, solidMembers: Limits.membersMax) { writer in
                try mergeChanges(
                    &states, theirsHistory: theirsHistory, theirsClock: theirsClock, from: theirs, policy: policy,
                    writer: writer, report: &report)
            }
        }
        return report
    }

    /// V5.1 rule 2, on THEIRS: the greatest hlc a merge takes from it (its clock, or a greater version among
    /// `states` and `history`, which a forged root's clock may understate), refused as *clock ahead* past the
    /// limit, naming an item that passes it where one does.
    package func clockTaken(
        states: some Sequence<ItemState>, history: [LeafEntry], now: UInt64
    ) throws -> UInt64 {
        let limit = HybridClock.limit(now: now)
        var top = clock
        for s in states {
            guard s.version.hlc <= limit else {
                let what = s.item.map { "item \($0.displayName)" } ?? "the deletion of item \(s.id)"
                throw HybridClock.refusal(.theirs, path, what, hlc: s.version.hlc, now: now)
            }
            top = max(top, s.version.hlc)
        }
        for e in history where e.key.count == 32 {
            let hlc = UInt64(bigEndianBytes: Array(e.key[16..<24]))
            guard hlc <= limit else {
                throw HybridClock.refusal(
                    .theirs, path, "a kept version of item \(ItemID(e.key[0..<16]))", hlc: hlc, now: now)
            }
            top = max(top, hlc)
        }
        guard clock <= limit else { throw HybridClock.refusal(.theirs, path, "its clock", hlc: clock, now: now) }
        return top
    }

    /// V5.1 rule 2 for a copy taken whole (a sync's join): its clock and every version it holds, live, tombstone
    /// or kept, within the limit; one page at a time.
    package func checkClockTakenWhole(now: UInt64) throws {
        var names = NameCache()
        try streaming {
            try scan(.items) { e in
                _ = try clockTaken(
                    states: [try ItemEntries.decode(e, schema: root.schema, names: &names)], history: [], now: now)
                return true
            }
            try scan(.history) { e in
                _ = try clockTaken(states: [], history: [e], now: now)
                return true
            }
        }
    }

    /// The tree changes that bring THEIRS's changes into OURS (V9), with the records they need copied.
    /// `states`: the items either side changed, with their states in BASE, OURS and THEIRS; `theirsHistory`: the
    /// history entries THEIRS holds and OURS lacks; `theirsClock`: the greatest hlc taken from THEIRS (V5.1).
    private func mergeChanges(
        _ states: inout MergeStates, theirsHistory: [LeafEntry], theirsClock: UInt64, from theirs: PagedVault,
        policy: MergePolicy, writer: CommitWriter, report: inout MergeReport
    ) throws -> CommitChanges {
        let schema = root.schema
        let losers = try decide(&states, from: theirs, policy: policy, report: &report)
        // OURS's below the ceiling, THEIRS's below the limit (V5.1), checked by `merge`
        var clock = max(self.clock, theirsClock)
        func nextVersion() -> Version {
            clock += 1
            return Version(hlc: clock, writer: writerID)
        }
        let placement = MergePlacement(
            ours: self, theirs: theirs, states: states, theirsHistory: theirsHistory, losers: losers, policy: policy,
            writer: writer)
        defer { report.recordsCopied += placement.recordsCopied }
        // The changes.
        var items: [TreeWriter.Change] = []
        items.reserveCapacity(states.rows.lazy.filter { $0.taken || $0.tombstoned }.count)
        var attributes: [TreeWriter.Change] = []
        var history: [TreeWriter.Change] = []
        var liveChange = 0
        func attributeKeys(_ s: ItemState?) -> [[UInt8]] {
            guard let s, let item = s.item else { return [] }
            return ItemEntries.attributeKeys(item, itemKey: s.key, schema: schema)
        }
        for r in states.rows.indices where states.rows[r].taken || states.rows[r].tombstoned {
            let id = states.rows[r].id
            let was = states.ours(r)
            var now: LeafEntry
            if states.rows[r].tombstoned, let s = states.final(r) {
                now = ItemEntries.tombstone(key: s.key, version: nextVersion())
            } else if let s = states.final(r), let item = s.item {
                now = ItemEntries.entry(try placement.place(item, from: theirs), version: s.version, schema: schema)
                report.taken += 1
                if report.listsTaken { report.takenItems.append(MergeTaken(id: id, item: item, deleted: false)) }
            } else if let s = states.final(r) {
                // The device-only rule (§K9): a tombstone taken for an item OURS holds is put at the key OURS holds it
                // at, so that a class or primary key the item had only as an own item (made ThisDeviceOnly, changed,
                // then deleted) does not travel with its deletion.
                now = ItemEntries.tombstone(key: policy.isOwn != nil ? (was?.key ?? s.key) : s.key, version: s.version)
                report.taken += 1
                if report.listsTaken { report.takenItems.append(MergeTaken(id: id, item: was?.item, deleted: true)) }
            } else {
                continue  // THEIRS lacks an item OURS and BASE hold unchanged (dropped by its compaction): kept
            }
            if let was, was.key != now.key { items.append(.remove(was.key)) }
            items.append(.put(now))
            let old = attributeKeys(was)
            let new =
                now.record == nil
                ? []
                : ItemEntries.attributeKeys(
                    try ItemEntries.decode(now, schema: schema).item!, itemKey: now.key, schema: schema)
            for k in old where !new.contains(k) { attributes.append(.remove(k)) }
            for k in new where !old.contains(k) { attributes.append(.put(LeafEntry(key: k))) }
            liveChange += (now.record == nil ? 0 : 1) - (was?.item == nil ? 0 : 1)
        }
        // History: THEIRS's kept versions, and the losing live versions.
        var historyKeys = Set<[UInt8]>()
        for e in theirsHistory {
            let h = try ItemEntries.decodeHistory(e)
            if let isOwn = policy.isOwn, isOwn(h.item) { continue }
            let kept = ItemEntries.history(try placement.place(h.item, from: theirs), version: h.version, why: h.why)
            if historyKeys.insert(kept.key).inserted { history.append(.put(kept)) }
            report.historyCopied += 1
        }
        for (s, fromOurs) in losers {
            let lost = ItemEntries.history(
                try placement.place(s.item!, from: fromOurs ? self : theirs), version: s.version, why: 2)
            guard try entry(.history, lost.key) == nil, historyKeys.insert(lost.key).inserted else { continue }
            history.append(.put(lost))
            report.keptInHistory += 1
        }
        PagedRebuild.sortByKey(&items, key: \.key)
        PagedRebuild.sortByKey(&attributes, key: \.key)
        PagedRebuild.sortByKey(&history, key: \.key)
        return ([(.items, items), (.attributes, attributes), (.history, history)], clock, liveChange)
    }

    /// Rules 1-3 of V9 and the device-only rule (§K9), per item: marks the rows whose state THEIRS wins
    /// (`taken`) and the live items that lose a shared primary key (`tombstoned`), and returns the live versions
    /// that lose, each with the side whose records hold its value (they are kept in history).
    private func decide(
        _ states: inout MergeStates, from theirs: PagedVault, policy: MergePolicy, report: inout MergeReport
    ) throws -> [(state: ItemState, fromOurs: Bool)] {
        let schema = root.schema
        let same = MergeStates.same
        let newer = MergeStates.newer
        var losers: [(state: ItemState, fromOurs: Bool)] = []
        func own(_ s: ItemState?) -> Bool {
            guard let isOwn = policy.isOwn, let item = s?.item else { return false }
            return isOwn(item)
        }
        for r in states.rows.indices {
            let id = states.rows[r].id
            let (bo, oo, tt) = (states.base(r), states.ours(r), states.theirs(r))
            let oursChanged = !same(oo, bo)
            let theirsChanged = !same(tt, bo)
            guard theirsChanged, !same(oo, tt) else { continue }
            // The device-only rule (§K9): OURS's own item stays, a newer live version of THEIRS is kept in its
            // history; THEIRS's own states are never taken.
            if own(oo) {
                if let tt, tt.item != nil, !own(tt), newer(tt, oo) {
                    losers.append((tt, false))
                    report.keptOwn += 1
                }
                continue
            }
            if own(tt) { continue }
            if !policy.takesUnknownTombstones, let tt, tt.item == nil, oo == nil { continue }
            // A tombstone names its item's class and primary key as the item last had them: one of an item OURS never
            // held whose last version (THEIRS's newest kept one) was own is an own state, not taken.
            if let isOwn = policy.isOwn, let tt, tt.item == nil, oo == nil,
                let last = try theirs.keptVersions(of: id).last,
                isOwn(last.item)
            {
                continue
            }
            // A state older than the one it replaces is no change of THEIRS's (V5: every change is newer than all
            // the vault held); BASE is then not its ancestor (a wrong BASE given), and the newer state stays, as
            // in a conflict, so that OURS's newest version is never dropped unkept.
            if oursChanged || (tt != nil && !newer(tt, oo)) {
                report.conflicts += 1
                report.conflictDetails.append(
                    MergeConflict(id: id, ours: oo, theirs: tt, winner: newer(tt, oo) ? .theirs : .ours))
                if !newer(tt, oo) {
                    if let tt, tt.item != nil { losers.append((tt, false)) }
                    continue
                }
                if let oo, oo.item != nil { losers.append((oo, true)) }
            }
            states.setTaken(r, true)
        }
        // The device-only rule (§K9): an item of THEIRS that would share its primary key with an own live item
        // of OURS is not taken (changed or not: OURS's own item is never replaced); it is kept in history.
        if policy.isOwn != nil {
            for r in states.rows.indices where states.rows[r].taken {
                guard let s = states.final(r), s.item != nil,
                    schema.classes[s.item!.itemClass.rawValue]?.keyAttributes.isEmpty == false,
                    try oursOwnItem(keyPrefix: Array(s.key.dropLast(16)), other: s.id, policy: policy)
                else { continue }
                states.setTaken(r, false)
                losers.append((s, false))
                report.keptOwn += 1
            }
        }
        // After the rules, two live items changed on different sides that share a primary key are one: the
        // newer stays, the other becomes a tombstone and its version goes to history. The candidates are sorted by
        // primary key (the item key without its id), so that items sharing one are neighbours.
        // A class the schema gives no key attributes has no primary key: its item keys are equal up to the item
        // id for all its items, which are nonetheless distinct items.
        var keyed = states.rows.indices.filter { r in
            guard let s = states.final(r), let item = s.item else { return false }
            return (states.rows[r].taken || !same(states.ours(r), states.base(r)))
                && schema.classes[item.itemClass.rawValue]?.keyAttributes.isEmpty == false
        }
        func primaryKey(_ r: Int) -> ArraySlice<UInt8> { states.final(r)!.key.dropLast(16) }
        keyed.sort { a, c in
            let (ka, kc) = (primaryKey(a), primaryKey(c))
            return ka.lexicographicallyPrecedes(kc) || (ka.elementsEqual(kc) && states.rows[a].id < states.rows[c].id)
        }
        var start = 0
        while start < keyed.count {
            var end = start + 1
            while end < keyed.count, primaryKey(keyed[end]).elementsEqual(primaryKey(keyed[start])) { end += 1 }
            let group = keyed[start..<end]
            start = end
            guard group.count > 1, group.contains(where: { states.rows[$0].taken }),
                group.contains(where: { !states.rows[$0].taken })
            else { continue }
            // The newest stays; of equal versions, the smallest id.
            let keep = group.max { a, c in
                newer(states.final(c), states.final(a))
                    || (states.final(c)!.version == states.final(a)!.version && states.rows[c].id < states.rows[a].id)
            }!
            for r in group where r != keep {
                losers.append((states.final(r)!, !states.rows[r].taken))
                report.sharedKeys += 1
                states.setTombstoned(r)
            }
        }
        return losers
    }

    /// Whether this vault holds a live item other than `other`, own by `policy`, whose item key starts with
    /// `keyPrefix` (class and primary key: the item key without its id).
    func oursOwnItem(keyPrefix: [UInt8], other: ItemID, policy: MergePolicy) throws -> Bool {
        guard let isOwn = policy.isOwn else { return false }
        var found = false
        var names = NameCache()
        try scan(.items, from: keyPrefix) { e in
            guard e.key.starts(with: keyPrefix) else { return false }
            guard e.key.count == keyPrefix.count + 16 else { return true }
            let s = try ItemEntries.decode(e, schema: root.schema, names: &names)
            if s.id != other, let item = s.item, isOwn(item) { found = true }
            return !found
        }
        return found
    }
}
