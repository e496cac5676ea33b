/// Where the values a merge writes into OURS come from (SPEC.md Part 4, V9): a winner's or a kept version's
/// record that OURS lacks is copied from THEIRS; one OURS already holds (at THEIRS's place or, after either side
/// compacted, elsewhere) is named where OURS holds it; under the device-only rule (§K9) a record of THEIRS that
/// holds an own value is split, each value it places written into a record of its own. What is learnt of a
/// record is learnt once per merge, by its extent, so that a record of many members is opened once, not once per
/// member: a merge decodes each record of THEIRS at most once, and its cost stays linear in its input.
final class MergePlacement {
    private let ours: PagedVault
    private let theirs: PagedVault
    /// The items either side changed, with the merge's decisions (which rows are taken, which tombstoned).
    private let states: MergeStates
    /// The history entries THEIRS holds and OURS lacks.
    private let theirsHistory: [LeafEntry]
    /// The live versions that lost, each with the side whose records hold its value.
    private let losers: [(state: ItemState, fromOurs: Bool)]
    private let policy: MergePolicy
    private let writer: CommitWriter
    /// Records copied or split out of THEIRS so far (``MergeReport/recordsCopied``).
    private(set) var recordsCopied = 0

    init(
        ours: PagedVault, theirs: PagedVault, states: MergeStates, theirsHistory: [LeafEntry],
        losers: [(state: ItemState, fromOurs: Bool)], policy: MergePolicy, writer: CommitWriter
    ) {
        self.ours = ours
        self.theirs = theirs
        self.states = states
        self.theirsHistory = theirsHistory
        self.losers = losers
        self.policy = policy
        self.writer = writer
    }

    // Records: a winner's or a kept version's record that OURS lacks is copied from THEIRS, byte for byte.
    // Copies share the records written before they parted, at the same place: one that authenticates
    // there under its record id (random, so it is that record) is not copied.
    // What is learnt of a record of THEIRS is learnt once, by its extent: its members are placed one by one, and
    // finding out again for each would open the record once per member.
    private var holds: [RecordRef: Bool] = [:]
    private func oursHolds(_ l: RecordLocation) -> Bool {
        let at = RecordRef(id: l.recordID, offset: l.offset, length: l.length)
        if let known = holds[at] { return known }
        let known = oursHoldsUncached(l)
        holds[at] = known
        return known
    }
    private func oursHoldsUncached(_ l: RecordLocation) -> Bool {
        guard let end = l.offset.adding(l.length), end <= ours.tail.offset else { return false }
        var raw = ours.source.recordReader(l) { VaultError(.damagedRecord, $0) }
        let key = StreamKey.record(ours.keys, vaultID: ours.header.vaultID, recordID: l.recordID)
        guard let blk = try? raw.nextRaw() else { return false }
        return
            (try? Blocks.open(
                nonce: Array(blk.frame[4..<28]), sealed: blk.sealed, key: key, index: blk.index, last: blk.last,
                fail: { VaultError(.damagedRecord, $0) })) != nil
    }
    private var moved: [ID128: RecordRef] = [:]
    /// Where OURS holds the record at `l` of THEIRS, if it holds it elsewhere. An entry of OURS that names it is
    /// the entry of one of its members (or a kept version of one): a member neither side changed has one
    /// entry in both, which names the record where both hold it (found in place), so only the members
    /// either side changed and their kept versions are looked at, never every record of OURS.
    private var elsewhere: [RecordRef: RecordRef?] = [:]
    private func oursRecord(_ l: RecordLocation) throws -> RecordRef? {
        let at = RecordRef(id: l.recordID, offset: l.offset, length: l.length)
        if let known = elsewhere[at] { return known }
        let found = try oursRecordUncached(l)
        elsewhere[at] = found
        return found
    }
    private func oursRecordUncached(_ l: RecordLocation) throws -> RecordRef? {
        let fail = { (m: String) in VaultError(.damagedRecord, side: .theirs, path: self.theirs.path, ": \(m)") }
        var reader = theirs.source.recordReader(l, fail: fail)
        for m in try reader.memberTable().0.members.map(\.id) {
            if let it = states.row(of: m).flatMap(states.ours)?.item, it.location.recordID == l.recordID {
                return RecordRef(id: l.recordID, offset: it.location.offset, length: it.location.length)
            }
            var found: RecordRef?
            try ours.scan(.history, from: m.bytes) { e in
                guard e.key.starts(with: m.bytes) else { return false }
                if let r = e.record, r.id == l.recordID { found = r }
                return found == nil
            }
            if let found { return found }
        }
        return nil
    }
    /// A taken item's record, where OURS now holds it, must name the item at its member: only the first block
    /// of a reused record authenticates, and the member a THEIRS entry names is THEIRS's word.
    /// Member tables read so far, by where OURS holds the record: members of one solid record read it once.
    private var tables: [RecordRef: MemberTable] = [:]
    private func named(_ item: Item) throws -> Item {
        let fail = { (m: String) in
            VaultError(
                .damagedRecord, side: .theirs, path: self.theirs.path, item: item.id, ", \(item.displayName): \(m)")
        }
        let at = RecordRef(id: item.location.recordID, offset: item.location.offset, length: item.location.length)
        do {
            if tables[at] == nil {
                var reader = ours.source.recordReader(item.location, fail: fail)
                tables[at] = try reader.memberTable().0
            }
            try tables[at]!.check([item])
        } catch let e as VaultError {
            throw VaultError(.damagedRecord, side: .theirs, path: theirs.path, ": \(e.context)")
        }
        return item
    }
    /// THEIRS's items and kept versions by id, with the records their values are in: whether member `id` of
    /// THEIRS's record `record` is a value THEIRS names (live or kept) that is not own. A member nothing names
    /// (a dead value, or one of an item this merge does not look at) is not known to be shareable.
    private var keptByID: [ItemID: [Item]]?
    private func shareable(_ id: ItemID, in record: ID128) -> Bool {
        if let item = states.row(of: id).flatMap(states.theirs)?.item, item.location.recordID == record {
            return !policy.isOwn!(item)
        }
        if keptByID == nil {
            keptByID = [:]
            for e in theirsHistory {
                if let h = try? ItemEntries.decodeHistory(e) { keptByID![h.item.id, default: []].append(h.item) }
            }
        }
        guard let kept = keptByID?[id]?.first(where: { $0.location.recordID == record }) else { return false }
        return !policy.isOwn!(kept)
    }
    /// The values of THEIRS this merge places (taken live items, kept versions, losing versions), by record and
    /// member: a record that is not copied whole is read once for all of them (built when first needed).
    private var placedFromTheirs: [RecordRef: [Int: Item]]?
    private func theirsValues(in at: RecordRef) throws -> [Int: Item] {
        if placedFromTheirs == nil {
            var all: [RecordRef: [Int: Item]] = [:]
            func note(_ it: Item) {
                let l = it.location
                let at = RecordRef(id: l.recordID, offset: l.offset, length: l.length)
                if all[at]?[l.member] == nil { all[at, default: [:]][l.member] = it }
            }
            for r in states.rows.indices where states.rows[r].taken && !states.rows[r].tombstoned {
                if let it = states.final(r)?.item { note(it) }
            }
            for e in theirsHistory {
                let h = try ItemEntries.decodeHistory(e)
                if !(policy.isOwn?(h.item) ?? false) { note(h.item) }
            }
            for s in losers where !s.fromOurs { if let it = s.state.item { note(it) } }
            placedFromTheirs = all
        }
        return placedFromTheirs?[at] ?? [:]
    }
    /// Where the values of a record of THEIRS split by the device-only rule were written, by member: each the
    /// item read (whose id, size and data offset the record's table proved) and its new location.
    private var split: [RecordRef: [Int: (read: Item, at: RecordLocation)]] = [:]
    private func splitPlace(_ item: Item) throws -> Item? {
        let l = item.location
        guard let got = split[RecordRef(id: l.recordID, offset: l.offset, length: l.length)]?[l.member] else {
            return nil
        }
        // Another entry naming the same member names the same value, or THEIRS is damaged.
        guard got.read.id == item.id, got.read.size == item.size, got.read.location.dataOffset == l.dataOffset
        else {
            throw VaultError(
                .damagedRecord, side: .theirs, path: theirs.path,
                ", \(item.displayName): the record's member table does not name this item")
        }
        var placed = item
        placed.location = got.at
        return placed
    }
    /// `item` (a value of `source`, OURS or THEIRS) with the location OURS holds its value at once the merge
    /// commits: copied, split out or found in OURS.
    func place(_ item: Item, from source: PagedVault) throws -> Item {
        var item = item
        let l = item.location
        if let r = moved[l.recordID] {
            item.location.offset = r.offset
            item.location.length = r.length
            return source === ours ? item : try named(item)
        }
        if source === ours { return item }
        if let placed = try splitPlace(item) { return placed }
        if oursHolds(l) { return try named(item) }
        // Not at THEIRS's place: OURS may still hold it elsewhere (either side compacted since they parted).
        // A copy would give one record id two extents (V3.4), and a leaf naming both cannot be written.
        if let r = try oursRecord(l) {
            item.location.offset = r.offset
            item.location.length = r.length
            moved[l.recordID] = r
            return try named(item)
        }
        let fail = { (m: String) in
            VaultError(.damagedRecord, side: .theirs, path: source.path, item: item.id, ", \(item.displayName): \(m)")
        }
        // The device-only rule (§K9): a record of several members is copied only when each member is known not
        // to be own (another member may be an own item's value, live or dead); otherwise the taken value gets a
        // record of its own, read (and authenticated) from THEIRS.
        if policy.isOwn != nil {
            var reader = source.source.recordReader(l, fail: fail)
            let members = try reader.memberTable().0.members.map(\.id)
            if members.count > 1, !members.allSatisfy({ shareable($0, in: l.recordID) }) {
                // Every value of the record this merge places, read in one pass, each into a record of its own.
                let at = RecordRef(id: l.recordID, offset: l.offset, length: l.length)
                var wanted = try theirsValues(in: at)
                if wanted[l.member] == nil { wanted[l.member] = item }
                try writer.flush()
                let first = writer.written.count
                var read: [Int: Item] = [:]  // sequence number -> the value read
                try source.source.readMembers(
                    wanted.keys.sorted().map { wanted[$0]! }, begin: { try writer.beginValue($0, size: $0.size) },
                    bytes: { try writer.appendValue($0) },
                    end: { it in
                        try writer.endValue()
                        try writer.endSolidRecord()
                        read[writer.sequence] = it
                        recordsCopied += 1
                    })
                try writer.flush()
                var places: [Int: (read: Item, at: RecordLocation)] = [:]
                for w in writer.written[first...] {
                    guard let it = read[w.sequence] else { continue }
                    places[it.location.member] = (it, w.item.location)
                }
                split[at] = places
                guard let placed = try splitPlace(item) else {
                    throw VaultError(.io, "a copied value went missing")
                }
                return placed
            }
        }
        let key = StreamKey.record(ours.keys, vaultID: ours.header.vaultID, recordID: l.recordID)
        var raw = source.source.recordReader(l, fail: fail)
        try writer.appendSealed([item]) { emit in
            while let blk = try raw.nextRaw() {
                // Authenticated before it is copied: a merge never carries damage into OURS.
                _ = try Blocks.open(
                    nonce: Array(blk.frame[4..<28]), sealed: blk.sealed, key: key, index: blk.index, last: blk.last,
                    fail: fail)
                try emit(blk.frame + blk.sealed)
            }
        }
        let copied = writer.written[writer.written.count - 1].item.location
        moved[l.recordID] = RecordRef(id: l.recordID, offset: copied.offset, length: copied.length)
        recordsCopied += 1
        item.location = copied
        return try named(item)
    }
}
