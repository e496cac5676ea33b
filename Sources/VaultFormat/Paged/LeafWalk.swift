import Dispatch

/// A walk over a whole tree on every core: the calling thread reads the branches and hands the leaves they
/// name to workers in windows of ``PagedVault/leafWindow``; each worker opens its leaf (with the checks a scan
/// makes: ``TreeReader/openNode(_:parentLevel:first:upper:)``) and turns it into a result, which reaches the
/// caller in key order. `list` and `list --json` build and print a million items this way.
extension PagedVault {
    /// Leaves handed to the workers at once, and the plaintext a worker reads of one: a larger leaf (a writer
    /// closes a leaf at `PAGE_TARGET`, 4 KiB, so only an entry of tens of kilobytes makes one) is read again by
    /// the calling thread when its turn comes. A walk holds at most `leafWindow` results of leaves of at most
    /// `leafBytesMax`, and one leaf of at most `PAGE_MAX`, whatever the vault.
    static let leafWindow = 64
    static let leafBytesMax = 64 << 10
    /// Entries in a tree below which a walk stays on the calling thread (starting workers would cost more).
    static let leafWalkEntriesMin: UInt64 = 4096

    /// Every live item, as ``forEachItem(_:)`` hands them, in runs: the items of one leaf of the items tree at a
    /// time (none for a leaf of deleted items) are given to `transform` on any core, and its result is handed
    /// to `body` on this thread, in key order. An error (of a page, an entry, `transform` or `body`) is thrown
    /// after `body` has had every run before it. The changes of delta commits over the tree are merged into the
    /// leaves whose key ranges hold them, as a scan merges them. Returns false, having handed nothing, for a tree
    /// of fewer than ``leafWalkEntriesMin`` entries or of one page (the caller walks it with ``forEachItem(_:)``).
    package func mapItemLeaves<T>(
        bytesMax: Int = PagedVault.leafBytesMax, _ transform: @escaping @Sendable ([Item]) throws -> T,
        _ body: (T) throws -> Void
    ) throws -> Bool {
        let schema = root.schema
        return try mapLeaves(.items, bytesMax: bytesMax) { entries in
            var names = NameCache()
            var items: [Item] = []
            items.reserveCapacity(entries.count)
            try entries.forEach { e in
                if let item = try ItemEntries.decodeParts(e, schema: schema, names: &names).item { items.append(item) }
            }
            return try transform(items)
        } _: {
            try body($0)
        }
    }

    /// ``forEachLiveState(_:)``'s states (each live item with its version) in runs, as
    /// ``mapItemLeaves(bytesMax:_:_:)`` hands items: `git textconv` prints a vault this way.
    package func mapLiveStateLeaves<T>(
        _ transform: @escaping @Sendable ([ItemState]) throws -> T, _ body: (T) throws -> Void
    ) throws -> Bool {
        let schema = root.schema
        return try mapLeaves(.items) { entries in
            var names = NameCache()
            var states: [ItemState] = []
            states.reserveCapacity(entries.count)
            try entries.forEach { e in
                let s = try ItemEntries.decode(e, schema: schema, names: &names)
                if s.item != nil { states.append(s) }
            }
            return try transform(states)
        } _: {
            try body($0)
        }
    }

    /// The leaves of `tree` in key order, each given to `transform` on any core; its results handed to `body`
    /// here, in order (see ``mapItemLeaves(bytesMax:_:_:)``). A leaf whose plaintext passes `bytesMax` is read
    /// on this thread (tests lower it).
    func mapLeaves<T>(
        _ tree: TreeID, bytesMax: Int = PagedVault.leafBytesMax,
        _ transform: @escaping @Sendable (LeafEntries) throws -> T,
        _ body: (T) throws -> Void
    ) throws -> Bool {
        guard let top = root.top(tree), top.count >= PagedVault.leafWalkEntriesMin else { return false }
        let reader = reader(tree)
        let changes = sortedChanges(tree)
        let context = LeafContext(source: store.source, limit: store.limit, tree: tree, changes: changes)
        // The first change at or after `key`: a leaf's changes lie between its first key's and its upper bound's
        // (the first leaf's from the first change: those below every key are handed with it).
        func changeIndex(_ key: [UInt8]) -> Int {
            var lo = 0
            var hi = changes.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if changes[mid].key.lexicographicallyPrecedes(key) { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
        var changesHanded = 0
        return try streaming {
            guard case .page(let page) = try reader.openNode(top, parentLevel: nil, first: nil, upper: nil),
                case .branch = page.content
            else { return false }
            var window: [LeafSlot] = []
            window.reserveCapacity(PagedVault.leafWindow)
            // The leaves gathered, on every core; then their results in order (a leaf too large for a worker is
            // read here, in its turn).
            func flush() throws {
                var results = [Result<T, Error>?](repeating: nil, count: window.count)
                // (The window alone is wrapped: a tuple of it, the context and the transform, destructured in
                // this closure, crashed Swift 6.3's optimizer.)
                let slots = UnsafeSendable(window)
                results.withUnsafeMutableBufferPointer { out in
                    let out = UnsafeSendable(out)
                    DispatchQueue.concurrentPerform(iterations: slots.value.count) { i in
                        do {
                            guard let entries = try context.open(slots.value[i], bytesMax: bytesMax)
                            else { return }
                            out.value[i] = .success(try transform(entries))
                        } catch {
                            out.value[i] = .failure(error)
                        }
                    }
                }
                for (i, r) in results.enumerated() {
                    guard let r else {
                        try body(try transform(try context.open(window[i], bytesMax: .max)!))
                        continue
                    }
                    try body(try r.get())
                }
                window.removeAll(keepingCapacity: true)
            }
            // A branch is opened when the walk reaches it, as a scan opens it: the leaves before it are handed
            // on before its error.
            func descend(_ page: Page, upper: [UInt8]?) throws {
                guard case .branch(let entries) = page.content else { return }
                for (i, e) in entries.enumerated() {
                    let childUpper = i + 1 < entries.count ? entries[i + 1].key : upper
                    if page.level == 1 {
                        // Separators ascend strictly (the page decoder checks it), so `end` does not fall back;
                        // `max` keeps the range valid whatever a page holds.
                        let end = changes.isEmpty ? 0 : max(changesHanded, childUpper.map(changeIndex) ?? changes.count)
                        window.append(
                            LeafSlot(ref: e.child, first: e.key, upper: childUpper, changes: changesHanded..<end))
                        changesHanded = end
                        if window.count == PagedVault.leafWindow { try flush() }
                        continue
                    }
                    let node: PageNode
                    do {
                        node = try reader.openNode(e.child, parentLevel: page.level, first: e.key, upper: childUpper)
                    } catch {
                        try flush()
                        throw error
                    }
                    // openNode refused a leaf under a branch above level 1 (its level is not the branch's less one).
                    guard case .page(let child) = node else {
                        preconditionFailure("a leaf under a level \(page.level) branch")
                    }
                    try descend(child, upper: childUpper)
                }
            }
            try descend(page, upper: nil)
            try flush()
            return true
        }
    }
}

/// A leaf a walk hands to a worker: its reference and the separators around it in its parent.
struct LeafSlot: Sendable {
    let ref: PageRef
    let first: [UInt8]
    let upper: [UInt8]?
    /// The delta changes merged into its entries (positions in ``LeafContext/changes``).
    let changes: Range<Int>
}

/// What a worker needs to open leaves: the file, the end of the commit being read, the tree, the delta changes
/// over it in key order (read, never changed, while the walk lasts).
struct LeafContext: @unchecked Sendable {
    let source: RecordSource
    let limit: UInt64
    let tree: TreeID
    let changes: [(key: [UInt8], value: TreeWriter.Change)]

    /// The entries of `slot`'s leaf, checked as a scan checks it (through a store of this thread's own); nil
    /// for a leaf whose plaintext passes `bytesMax`.
    func open(_ slot: LeafSlot, bytesMax: Int) throws -> LeafEntries? {
        let store = FilePageStore(source: source, limit: limit)
        store.keepsLeaves = false
        let node = try TreeReader(store: store, tree: tree, top: nil)
            .openNode(slot.ref, parentLevel: 1, first: slot.first, upper: slot.upper)
        switch node {
        case .leaf(let view):
            return view.bytes.count <= bytesMax ? LeafEntries(node: .leaf(view), changes: changes[slot.changes]) : nil
        case .page(let page):
            // A store that keeps no leaves gives them as views; a branch here failed openNode's level check.
            guard case .leaf = page.content else { preconditionFailure("a branch under a level 1 branch") }
            return LeafEntries(node: node, changes: changes[slot.changes])
        }
    }
}

/// The entries of one leaf, with the delta changes in its key range merged in, as a worker reads them.
package struct LeafEntries {
    let node: PageNode
    let changes: ArraySlice<(key: [UInt8], value: TreeWriter.Change)>

    /// Entries in the leaf and changes, at most.
    package var count: Int {
        switch node {
        case .leaf(let view): return view.count + changes.count
        case .page(let page): return page.entryCount + changes.count
        }
    }

    /// Hands `body` each entry in key order, the changes merged in (``ChangeMerge``).
    package func forEach(_ body: (LeafEntry) throws -> Void) throws {
        // Without changes, the leaf's entries as they are (the merge's shared index costs an exclusivity check
        // per entry).
        guard !changes.isEmpty else { return try forEachInLeaf(body) }
        var merge = ChangeMerge(changes: changes)
        func handed(_ e: LeafEntry) throws -> Bool {
            try body(e)
            return true
        }
        try forEachInLeaf { _ = try merge.hand($0, to: handed) }
        try merge.handRest(to: handed)
    }

    /// Hands `body` each entry of the leaf itself, in key order.
    private func forEachInLeaf(_ body: (LeafEntry) throws -> Void) rethrows {
        switch node {
        case .leaf(let view):
            var cursor = view.start
            while let e = view.next(&cursor) { try body(e) }
        case .page(let page):
            if case .leaf(let entries) = page.content { for e in entries { try body(e) } }
        }
    }
}
