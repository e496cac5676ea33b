/// Builds a tree bottom-up from entries handed over in ascending key order (SPEC.md Part 4, V8: compaction,
/// the upgrade of version 1 files, imports): leaves are filled to ``pageTarget`` and written as soon as the
/// next one starts, and each level's pages name their children as they are written, so memory holds one
/// page per level however many entries pass through.
package final class TreeBuilder {
    package let store: PageStore
    package let tree: TreeID
    package var pageTarget = PagedLimits.pageTarget

    /// One level being filled: the page being filled, and the full page before it, held back so that a short
    /// last page can join it (as ``TreeWriter`` cuts pages).
    private struct Level<T> {
        var filling: [T] = []
        var weight = 0
        var held: [T]?
        var written = 0
    }

    private var leaves = Level<LeafEntry>()
    /// Level i holds the branch entries of level i + 1.
    private var branches: [Level<(key: [UInt8], child: PageRef)>] = []
    private var last: [UInt8]?
    package private(set) var count: UInt64 = 0

    package init(store: PageStore, tree: TreeID) {
        self.store = store
        self.tree = tree
    }

    /// Adds the next entry; its key must be greater than the one before.
    package func append(_ e: LeafEntry) throws {
        guard PageCodec.fits(e, inDelta: false) else {
            throw VaultError(.invalidArgument, "a \(tree) tree entry outside KEY_MAX or ENTRY_MAX")
        }
        if let last, !last.lexicographicallyPrecedes(e.key) {
            throw VaultError(.invalidArgument, "\(tree) tree entries not in strictly ascending order of key")
        }
        last = e.key
        count += 1
        leaves.filling.append(e)
        leaves.weight += e.weight
        if leaves.weight >= pageTarget || leaves.filling.count >= PagedLimits.pageEntriesMax {
            try rotate(&leaves) { try self.writeLeaf($0) }
        }
    }

    /// Writes what is left and returns the tree's top page (nil: no entries).
    package func finish() throws -> PageRef? {
        var top = try close(&leaves) { try self.writeLeaf($0) }
        var level = 0
        while top == nil {
            // More than one page at `level`: close the level above, which names them all.
            guard level < branches.count else { return nil }
            var b = branches[level]
            top = try close(&b) { try self.writeBranch($0, level: level + 1) }
            branches[level] = b
            level += 1
        }
        return top
    }

    // MARK: Levels

    /// A full page: the one held back is written, and this one is held back instead.
    private func rotate<T>(_ l: inout Level<T>, write: ([T]) throws -> PageRef) throws {
        if let h = l.held { _ = try write(h) }
        l.held = l.filling
        l.filling = []
        l.weight = 0
        l.written += 1
    }

    /// Writes a level's last pages (a short last page joins the one held back). Returns the level's page if
    /// it is its only one, which is then the tree's top; nil if the level wrote several (or none).
    private func close<T>(_ l: inout Level<T>, write: ([T]) throws -> PageRef) throws -> PageRef? {
        if var h = l.held {
            if !l.filling.isEmpty, l.weight < pageTarget / 4, h.count + l.filling.count <= PagedLimits.pageEntriesMax {
                h += l.filling
                l.filling = []
            }
            let ref = try write(h)
            if l.filling.isEmpty { return l.written == 1 ? ref : nil }
            l.written += 1
            _ = try write(l.filling)
            return nil
        }
        guard !l.filling.isEmpty else { return nil }
        return try write(l.filling)
    }

    private func writeLeaf(_ entries: [LeafEntry]) throws -> PageRef {
        let ref = try store.write(Page(tree: tree, level: 0, content: .leaf(entries)))
        try push(entries[0].key, ref, level: 0)
        return ref
    }

    private func writeBranch(_ entries: [(key: [UInt8], child: PageRef)], level: Int) throws -> PageRef {
        guard level < PagedLimits.heightMax else {
            throw VaultError(.invalidArgument, "the \(tree) tree would pass \(PagedLimits.heightMax) levels")
        }
        let ref = try store.write(Page(tree: tree, level: level, content: .branch(entries)))
        try push(entries[0].key, ref, level: level)
        return ref
    }

    /// Names a page written at `level` in the level above.
    private func push(_ key: [UInt8], _ ref: PageRef, level: Int) throws {
        if branches.count == level { branches.append(Level()) }
        var b = branches[level]
        b.filling.append((key, ref))
        b.weight += key.count + 40
        if b.weight >= pageTarget || b.filling.count >= PagedLimits.pageEntriesMax {
            try rotate(&b) { try self.writeBranch($0, level: level + 1) }
        }
        branches[level] = b
    }
}
