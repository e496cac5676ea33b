/// The states of the items a merge looks at (V9 step 1): one row per item either side changed, in item id
/// order, each naming its state in BASE, OURS and THEIRS (nil: the side holds no entry for it).
///
/// Held as one array of states and one of rows, sorted once, never as maps: a merge of a million changed
/// entries holds about 100 bytes per entry here (and the keys) and hashes nothing; the maps this replaced cost
/// several hundred bytes per entry and a third of the merge's CPU.
struct MergeStates {
    /// Every state read, with the side that read it; rows name them by index.
    private var states: [(state: ItemState, tag: Tag)] = []
    /// In ascending item id order.
    private(set) var rows: [Row] = []

    struct Row {
        var id: ItemID
        var base: Int32 = -1
        var ours: Int32 = -1
        var theirs: Int32 = -1
        /// The merge takes THEIRS's state (otherwise the item stays as OURS holds it).
        var taken = false
        /// A live item that gave way to another sharing its primary key: OURS writes a tombstone for it.
        var tombstoned = false
    }

    func state(_ i: Int32) -> ItemState? { i < 0 ? nil : states[Int(i)].state }
    func base(_ r: Int) -> ItemState? { state(rows[r].base) }
    func ours(_ r: Int) -> ItemState? { state(rows[r].ours) }
    func theirs(_ r: Int) -> ItemState? { state(rows[r].theirs) }
    /// The state the merge leaves: THEIRS's where taken, else OURS's.
    func final(_ r: Int) -> ItemState? { rows[r].taken ? theirs(r) : ours(r) }

    /// Whether two states are the same change: one version, both live or both deleted.
    static func same(_ x: ItemState?, _ y: ItemState?) -> Bool {
        x?.version == y?.version && (x?.item == nil) == (y?.item == nil)
    }

    /// Whether `x` is newer than `y`; an absent state is older than any.
    static func newer(_ x: ItemState?, _ y: ItemState?) -> Bool {
        guard let x else { return false }
        guard let y else { return true }
        return y.version < x.version
    }

    mutating func setTaken(_ r: Int, _ taken: Bool) { rows[r].taken = taken }
    mutating func setTombstoned(_ r: Int) { rows[r].tombstoned = true }

    /// The row of `id`, by binary search.
    func row(of id: ItemID) -> Int? {
        var (lo, hi) = (0, rows.count)
        while lo < hi {
            let mid = (lo + hi) / 2
            if rows[mid].id < id { lo = mid + 1 } else { hi = mid }
        }
        return lo < rows.count && rows[lo].id == id ? lo : nil
    }

    /// Where a state read comes from: the entry of one side of a difference.
    private enum Tag: UInt8 {
        /// BASE's entry, as OURS's walk from BASE found it (or, with no BASE, OURS's own entry).
        case baseFromOurs = 0
        case ours = 1
        /// BASE's entry, as THEIRS's walk found it.
        case baseFromTheirs = 2
        case theirs = 3
    }

    /// The states of a three-way merge: the items OURS and THEIRS each changed since BASE. An item either
    /// side left alone holds BASE's state on that side.
    static func threeWay(base: PagedVault, ours: PagedVault, theirs: PagedVault) throws -> MergeStates {
        var read: [(state: ItemState, tag: Tag)] = []
        try ours.forEachChangedItem(since: base, side: .ours) { read.append(($1, $0 ? .baseFromOurs : .ours)) }
        try theirs.forEachChangedItem(since: base, side: .theirs) {
            read.append(($1, $0 ? .baseFromTheirs : .theirs))
        }
        return try grouped(&read, threeWay: true) {
            $0 == .ours || $0 == .baseFromOurs ? (.ours, ours.path) : (.theirs, theirs.path)
        }
    }

    /// The states of a merge without BASE: every item at which OURS and THEIRS differ.
    static func twoWay(ours: PagedVault, theirs: PagedVault) throws -> MergeStates {
        var read: [(state: ItemState, tag: Tag)] = []
        try theirs.forEachChangedItem(since: ours, side: .both) { read.append(($1, $0 ? .ours : .theirs)) }
        return try grouped(&read, threeWay: false) { _ in (.both, theirs.path) }
    }

    /// Sorts the states read by item id and makes one row of each id (the rows name the states where the sort
    /// left them). A side whose walk names one item twice (two keys for one id) is damaged.
    private static func grouped(
        _ read: inout [(state: ItemState, tag: Tag)], threeWay: Bool, side: (Tag) -> (MergeSide, String)
    ) throws -> MergeStates {
        read.sort { a, b in a.state.id < b.state.id || (a.state.id == b.state.id && a.tag.rawValue < b.tag.rawValue) }
        var out = MergeStates()
        var i = 0
        while i < read.count {
            let id = read[i].state.id
            var row = Row(id: id)
            var inOurs = false
            var inTheirs = false
            var last: Tag?
            while i < read.count, read[i].state.id == id {
                let tag = read[i].tag
                let at = Int32(i)
                i += 1
                guard tag != last else {
                    let (s, path) = side(tag)
                    throw VaultError(.damagedIndex, side: s, path: path, item: id, ": item \(id) has two entries")
                }
                last = tag
                switch tag {
                case .baseFromOurs:
                    inOurs = true
                    if threeWay { row.base = at } else { row.ours = at }
                case .ours:
                    inOurs = true
                    row.ours = at
                case .baseFromTheirs:
                    // BASE's entry, found by both walks, is one state.
                    inTheirs = true
                    if row.base < 0 { row.base = at }
                case .theirs:
                    inTheirs = true
                    row.theirs = at
                }
            }
            if threeWay {
                // A side whose walk did not name the item holds it as BASE does.
                if !inOurs { row.ours = row.base }
                if !inTheirs { row.theirs = row.base }
            }
            out.rows.append(row)
        }
        swap(&out.states, &read)
        return out
    }
}

extension PagedVault {
    /// The items this vault changed since `base` (V9 step 1), state by state, in key order: `body(isBase,
    /// state)` gets each entry at which the two differ, BASE's (`isBase`) and this vault's. An item whose key
    /// changed shows at two keys with one id.
    func forEachChangedItem(
        since base: PagedVault?, side: MergeSide, _ body: (Bool, ItemState) throws -> Void
    ) throws {
        do {
            var names = NameCache()
            try streaming(with: base) {
                try forEachDifference(.items, from: base) { d in
                    if let e = d.base { try body(true, try ItemEntries.decode(e, schema: root.schema, names: &names)) }
                    if let e = d.side { try body(false, try ItemEntries.decode(e, schema: root.schema, names: &names)) }
                }
            }
        } catch let e as VaultError {
            throw VaultError(e.code, side: side, path: path, ": \(e.context)")
        }
    }
}
