/// Where pages are kept: a vault file's body (sealed, V3.2) or memory (tests). `read` authenticates and
/// decodes a page; where it sits in a tree is checked by ``TreeReader``.
package protocol PageStore: AnyObject {
    func read(_ ref: PageRef) throws -> Page
    /// The page at `ref` as a search reads it: a branch decoded, a leaf as a checked ``LeafView`` (or decoded,
    /// when the store knows it is read whole).
    func node(_ ref: PageRef) throws -> PageNode
    /// Stores a new page and returns its reference (with its count).
    func write(_ page: Page) throws -> PageRef
}

/// A page as lookups and scans read it: decoded (a branch, or a leaf a walk reads whole), or a leaf searched in
/// place.
package enum PageNode {
    case page(Page)
    case leaf(LeafView)
}

/// Reads one tree (SPEC.md Part 4, V3.3), checking each page it opens against the reference and the
/// separators that led to it.
package struct TreeReader {
    package let store: PageStore
    package let tree: TreeID
    /// The tree's top page; nil for an empty tree.
    package let top: PageRef?

    package init(store: PageStore, tree: TreeID, top: PageRef?) {
        self.store = store
        self.tree = tree
        self.top = top
    }

    /// Opens `ref` as the child a branch at `parentLevel` names (nil: the top page), whose keys must start at
    /// `first` (nil: the top page) and stay below `upper` (nil: no bound).
    package func open(_ ref: PageRef, parentLevel: Int?, first: [UInt8]?, upper: [UInt8]?) throws -> Page {
        let page = try store.read(ref)
        let leafCount: Int?
        if case .leaf(let e) = page.content { leafCount = e.count } else { leafCount = nil }
        try check(
            ref, tree: page.tree, level: page.level, firstKey: page.firstKey, lastKey: page.lastKey,
            leafCount: leafCount, page: page, parentLevel: parentLevel, first: first, upper: upper)
        return page
    }

    /// As ``open(_:parentLevel:first:upper:)``, a leaf given as a view (``PageStore/node(_:)``).
    package func openNode(_ ref: PageRef, parentLevel: Int?, first: [UInt8]?, upper: [UInt8]?) throws -> PageNode {
        let node = try store.node(ref)
        switch node {
        case .page(let page):
            let leafCount: Int?
            if case .leaf(let e) = page.content { leafCount = e.count } else { leafCount = nil }
            try check(
                ref, tree: page.tree, level: page.level, firstKey: page.firstKey, lastKey: page.lastKey,
                leafCount: leafCount, page: page, parentLevel: parentLevel, first: first, upper: upper)
        case .leaf(let view):
            try check(
                ref, tree: view.tree, level: 0, firstKey: view.firstKey, lastKey: view.lastKey, leafCount: view.count,
                page: nil, parentLevel: parentLevel, first: first, upper: upper)
        }
        return node
    }

    /// The rules of V3.3 for a page opened from `ref`: a leaf's count, or a branch `page`'s children's counts.
    private func check(
        _ ref: PageRef, tree pageTree: TreeID, level: Int, firstKey: [UInt8], lastKey: [UInt8], leafCount: Int?,
        page: Page?, parentLevel: Int?, first: [UInt8]?, upper: [UInt8]?
    ) throws {
        func fail(_ what: String) -> VaultError {
            VaultError(.damagedIndex, "\(tree) tree, page \(Hex.encode(ref.id.bytes)): \(what)")
        }
        guard pageTree == tree else { throw fail("a page of the \(pageTree) tree") }
        if let parentLevel, level != parentLevel - 1 {
            throw fail("level \(level) under a branch of level \(parentLevel)")
        }
        if let first, firstKey != first { throw fail("its first key is not the separator that names it") }
        if let upper, !lastKey.bytesPrecede(upper) {
            throw fail("its last key is not below the next separator")
        }
        // V3.3 rule 4, checked whenever a page is opened: a leaf's entries, or the counts its children's
        // references give (each child is checked against its own when it is opened).
        if let n = leafCount {
            if UInt64(n) != ref.count { throw fail("\(n) entries where its reference says \(ref.count)") }
        } else if let page, case .branch(let e) = page.content {
            let sum = e.reduce(UInt64(0)) { $0 &+ $1.child.count }
            if sum != ref.count { throw fail("its children hold \(sum) entries, its reference says \(ref.count)") }
        }
    }

    /// The position of the child whose range holds `key` (the last separator ≤ key), or nil if `key` is
    /// below the first.
    package static func child(for key: [UInt8], in entries: [(key: [UInt8], child: PageRef)]) -> Int? {
        var lo = 0
        var hi = entries.count  // first separator > key
        while lo < hi {
            let mid = (lo + hi) / 2
            if key.bytesPrecede(entries[mid].key) { hi = mid } else { lo = mid + 1 }
        }
        return lo == 0 ? nil : lo - 1
    }

    /// The entry with this key: at most ``PagedLimits/heightMax`` pages.
    package func lookup(_ key: [UInt8]) throws -> LeafEntry? {
        var found: LeafEntry?
        try scan(from: key) { e in
            if e.key == key { found = e }
            return false
        }
        return found
    }

    /// Hands `body` the entries with keys ≥ `lower`, in order, until it returns false: one descent, then one
    /// page per leaf read on.
    package func scan(from lower: [UInt8] = [], _ body: (LeafEntry) throws -> Bool) throws {
        guard let top else { return }
        // The path from the top: each branch with the position of the child being read and its upper bound.
        var path: [(entries: [(key: [UInt8], child: PageRef)], level: Int, at: Int, upper: [UInt8]?)] = []
        var node = try openNode(top, parentLevel: nil, first: nil, upper: nil)
        var upper: [UInt8]? = nil
        var seek = true
        while true {
            switch node {
            case .page(let page):
                switch page.content {
                case .branch(let entries):
                    let i = seek ? (TreeReader.child(for: lower, in: entries) ?? 0) : 0
                    path.append((entries, page.level, i, upper))
                    let childUpper = i + 1 < entries.count ? entries[i + 1].key : upper
                    node = try openNode(
                        entries[i].child, parentLevel: page.level, first: entries[i].key, upper: childUpper)
                    upper = childUpper
                    continue
                case .leaf(let entries):
                    var i = 0
                    if seek {
                        var lo = 0
                        var hi = entries.count
                        while lo < hi {
                            let mid = (lo + hi) / 2
                            if entries[mid].key.bytesPrecede(lower) { lo = mid + 1 } else { hi = mid }
                        }
                        i = lo
                        seek = false
                    }
                    while i < entries.count {
                        if try !body(entries[i]) { return }
                        i += 1
                    }
                }
            case .leaf(let view):
                // The leaf is searched in place; only the entries handed on are built.
                var cursor = seek ? view.seek(lower) : view.start
                seek = false
                while let e = view.next(&cursor) {
                    if try !body(e) { return }
                }
            }
            // Up to the nearest branch with a child left, then down its next child's leftmost path.
            while let last = path.last, last.at + 1 >= last.entries.count { path.removeLast() }
            guard !path.isEmpty else { return }
            path[path.count - 1].at += 1
            let b = path[path.count - 1]
            let childUpper = b.at + 1 < b.entries.count ? b.entries[b.at + 1].key : b.upper
            node = try openNode(
                b.entries[b.at].child, parentLevel: b.level, first: b.entries[b.at].key, upper: childUpper)
            upper = childUpper
        }
    }

    /// Reads every page of the tree once and checks every rule of V3.3, counts included; returns the
    /// entries of its leaves. The recursion follows levels, which strictly decrease: at most
    /// ``PagedLimits/heightMax`` deep.
    package func verify(_ visit: (LeafEntry) throws -> Void = { _ in }, page onPage: (PageRef) -> Void = { _ in })
        throws -> UInt64
    {
        try verifyLeaves({ e, _ in try visit(e) }, page: onPage)
    }

    /// ``verify(_:page:)``, handing `visit` each entry with the reference of the leaf that holds it.
    package func verifyLeaves(_ visit: (LeafEntry, PageRef) throws -> Void, page onPage: (PageRef) -> Void = { _ in })
        throws -> UInt64
    {
        guard let top else { return 0 }
        func walk(_ ref: PageRef, parentLevel: Int?, first: [UInt8]?, upper: [UInt8]?) throws -> UInt64 {
            let page = try open(ref, parentLevel: parentLevel, first: first, upper: upper)
            onPage(ref)
            switch page.content {
            case .leaf(let entries):
                for e in entries { try visit(e, ref) }
                return UInt64(entries.count)
            case .branch(let entries):
                var sum: UInt64 = 0
                for (i, e) in entries.enumerated() {
                    let n = try walk(
                        e.child, parentLevel: page.level, first: e.key,
                        upper: i + 1 < entries.count ? entries[i + 1].key : upper)
                    sum = sum.addingReportingOverflow(n).partialValue
                }
                guard sum == ref.count else {
                    throw VaultError(
                        .damagedIndex,
                        "\(tree) tree, page \(Hex.encode(ref.id.bytes)): its children hold \(sum) entries, its reference says \(ref.count)"
                    )
                }
                return sum
            }
        }
        return try walk(top, parentLevel: nil, first: nil, upper: nil)
    }
}

/// Copy-on-write changes to a tree (V3.2, V6): new pages for the leaves that change and the branches above
/// them; every other page is shared with the tree it started from.
package struct TreeWriter {
    package let store: PageStore
    package let tree: TreeID
    package var pageTarget = PagedLimits.pageTarget

    package init(store: PageStore, tree: TreeID) {
        self.store = store
        self.tree = tree
    }

    /// A change: put `entry` at its key, or remove the key.
    package enum Change {
        case put(LeafEntry)
        case remove([UInt8])

        package var key: [UInt8] {
            switch self {
            case .put(let e): return e.key
            case .remove(let k): return k
            }
        }

        /// Bytes it takes, about: its entry's ``LeafEntry/weight``, or its key's.
        package var weight: Int {
            switch self {
            case .put(let e): return e.weight
            case .remove(let k): return k.count + 8
            }
        }

        /// The entry a put puts; nil for a remove.
        package var entry: LeafEntry? {
            if case .put(let e) = self { return e }
            return nil
        }
    }

    /// Applies `changes` (strictly ascending by key) to the tree whose top is `top`; returns the new top
    /// (nil: the tree is empty). Removing a key the tree lacks is *invalid argument*.
    package func apply(_ changes: [Change], to top: PageRef?) throws -> PageRef? {
        try apply(
            changes, to: top,
            onMissingRemove: { _ in
                throw VaultError(.invalidArgument, "removing a key the \(tree) tree does not hold")
            }
        ) { _, _ in }
    }

    /// As ``apply(_:to:)``, telling `observe` of each change with the entry it replaces or removes (nil: none);
    /// a remove of a key the tree lacks goes to `onMissingRemove`, which throws or lets it be dropped (a fold
    /// whose delta chain put and removed a key the tree never held). `dropped` is told of every page the new
    /// tree no longer names: each old page rewritten, and each new one given up for its only child (the
    /// garbage a fold counts, V8.1).
    func apply(
        _ changes: [Change], to top: PageRef?, onMissingRemove: ([UInt8]) throws -> Void,
        dropped: (PageRef) -> Void = { _ in }, observe: (LeafEntry?, Change) -> Void
    ) throws -> PageRef? {
        for i in changes.indices.dropFirst() where !changes[i - 1].key.lexicographicallyPrecedes(changes[i].key) {
            throw VaultError(.invalidArgument, "tree changes not in strictly ascending order of key")
        }
        guard !changes.isEmpty else { return top }
        let reader = TreeReader(store: store, tree: tree, top: top)
        var level: [(key: [UInt8], child: PageRef)]
        var height: Int
        if let top {
            let page = try reader.open(top, parentLevel: nil, first: nil, upper: nil)
            dropped(top)
            level = try rewrite(
                page, changes[...], reader: reader, upper: nil, skip: onMissingRemove, dropped: dropped,
                observe: observe)
            height = page.level
        } else if changes.allSatisfy({ if case .put = $0 { return true } else { return false } }) {
            // A new tree: built bottom-up as the puts stream by, one page per level in memory.
            let builder = TreeBuilder(store: store, tree: tree)
            builder.pageTarget = pageTarget
            for case .put(let e) in changes {
                observe(nil, .put(e))
                try builder.append(e)
            }
            return try builder.finish()
        } else {
            level = try rewriteLeaf([], changes[...], skip: onMissingRemove, observe: observe)
            height = 0
        }
        // Grow: branches above until one page holds the level.
        while level.count > 1 {
            height += 1
            guard height < PagedLimits.heightMax else {
                throw VaultError(.invalidArgument, "the \(tree) tree would pass \(PagedLimits.heightMax) levels")
            }
            level = try pack(level.map { ($0.key, $0.child) }, weight: { $0.0.count + 40 }) {
                Page(tree: tree, level: height, content: .branch($0.map { (key: $0.0, child: $0.1) }))
            }
        }
        // Shrink: a top branch with one child gives way to the child.
        var newTop = level.first?.child
        while let t = newTop, case .branch(let entries) = try store.read(t).content, entries.count == 1 {
            dropped(t)
            newTop = entries[0].child
        }
        return newTop
    }

    /// Writes the pages that replace `page` once `changes` (all within its range or, for the first page of a
    /// level, below it) are applied: none if it ends up empty, several if it grows past the target.
    private func rewrite(
        _ page: Page, _ changes: ArraySlice<Change>, reader: TreeReader, upper: [UInt8]?,
        skip: ([UInt8]) throws -> Void,
        dropped: (PageRef) -> Void, observe: (LeafEntry?, Change) -> Void
    ) throws -> [(key: [UInt8], child: PageRef)] {
        switch page.content {
        case .leaf(let entries):
            return try rewriteLeaf(entries, changes, skip: skip, observe: observe)
        case .branch(let entries):
            var out: [(key: [UInt8], child: PageRef)] = []
            var c = changes.startIndex
            for (i, e) in entries.enumerated() {
                let childUpper = i + 1 < entries.count ? entries[i + 1].key : upper
                var end = c
                while end < changes.endIndex, childUpper.map({ changes[end].key.lexicographicallyPrecedes($0) }) ?? true
                { end += 1 }
                if end == c {
                    out.append(e)
                    continue
                }
                let child = try reader.open(e.child, parentLevel: page.level, first: e.key, upper: childUpper)
                dropped(e.child)
                out.append(
                    contentsOf: try rewrite(
                        child, changes[c..<end], reader: reader, upper: childUpper, skip: skip, dropped: dropped,
                        observe: observe))
                c = end
            }
            guard !out.isEmpty else { return [] }
            return try pack(out.map { ($0.key, $0.child) }, weight: { $0.0.count + 40 }) {
                Page(tree: tree, level: page.level, content: .branch($0.map { (key: $0.0, child: $0.1) }))
            }
        }
    }

    private func rewriteLeaf(
        _ entries: [LeafEntry], _ changes: ArraySlice<Change>, skip: ([UInt8]) throws -> Void,
        observe: (LeafEntry?, Change) -> Void
    ) throws -> [(key: [UInt8], child: PageRef)] {
        var merged: [LeafEntry] = []
        merged.reserveCapacity(entries.count + changes.count)
        var i = 0
        for change in changes {
            let key = change.key
            while i < entries.count, entries[i].key.lexicographicallyPrecedes(key) {
                merged.append(entries[i])
                i += 1
            }
            let exists = i < entries.count && entries[i].key == key
            if exists { i += 1 }
            if case .remove = change, !exists {
                try skip(key)
                continue
            }
            observe(exists ? entries[i - 1] : nil, change)
            switch change {
            case .put(let e):
                guard PageCodec.fits(e, inDelta: false) else {
                    throw VaultError(.invalidArgument, "a \(tree) tree entry outside KEY_MAX or ENTRY_MAX")
                }
                merged.append(e)
            case .remove:
                break  // `exists`: a missing one went to `skip`
            }
        }
        merged.append(contentsOf: entries[i...])
        guard !merged.isEmpty else { return [] }
        return try pack(merged, weight: \.weight) { Page(tree: tree, level: 0, content: .leaf($0)) }
    }

    /// Cuts `items` into pages of about ``pageTarget`` bytes (a last page under a quarter of it joins the one
    /// before), writes them and returns each page's first key and reference.
    private func pack<T>(_ items: [T], weight: (T) -> Int, page make: ([T]) -> Page) throws -> [(
        key: [UInt8], child: PageRef
    )] {
        var cuts: [Range<Int>] = []
        var start = 0
        var filled = 0
        for (i, x) in items.enumerated() {
            filled += weight(x)
            if filled >= pageTarget || i - start + 1 >= PagedLimits.pageEntriesMax {
                cuts.append(start..<i + 1)
                start = i + 1
                filled = 0
            }
        }
        if start < items.count {
            if let last = cuts.last, filled < pageTarget / 4,
                last.count + items.count - start <= PagedLimits.pageEntriesMax
            {
                cuts[cuts.count - 1] = last.lowerBound..<items.count
            } else {
                cuts.append(start..<items.count)
            }
        }
        return try cuts.map { r in
            let page = make(Array(items[r]))
            return (page.firstKey, try store.write(page))
        }
    }
}

extension TreeID: CustomStringConvertible {
    package var description: String {
        switch self {
        case .items: return "items"
        case .attributes: return "attributes"
        case .history: return "history"
        }
    }
}

/// Pages kept in memory as their encoded plaintext (tests, and building before sealing): every read decodes
/// again, so what is read back is what the codec makes of the bytes.
package final class MemoryPageStore: PageStore {
    package private(set) var pages: [ID128: (offset: UInt64, bytes: [UInt8])] = [:]
    private var next: UInt64 = 0
    private var counter: UInt64 = 0
    package private(set) var reads = 0

    package init() {}

    package func read(_ ref: PageRef) throws -> Page {
        reads += 1
        guard let p = pages[ref.id], p.offset == ref.offset, UInt64(p.bytes.count) == ref.length else {
            throw VaultError(.damagedIndex, "page \(Hex.encode(ref.id.bytes)) is not where its reference says")
        }
        return try PageCodec.decode(p.bytes)
    }

    package func node(_ ref: PageRef) throws -> PageNode {
        reads += 1
        guard let p = pages[ref.id], p.offset == ref.offset, UInt64(p.bytes.count) == ref.length else {
            throw VaultError(.damagedIndex, "page \(Hex.encode(ref.id.bytes)) is not where its reference says")
        }
        if p.bytes.first == 1 { return try LeafView.open(p.bytes, recordsBefore: nil, page: ref.id).node }
        return .page(try PageCodec.decode(p.bytes))
    }

    package func write(_ page: Page) throws -> PageRef {
        counter += 1
        let id = ID128(hi: 0x6b63_6172_7061_6765, lo: counter)
        let bytes = PageCodec.encode(page)
        guard bytes.count <= PagedLimits.pageMax else {
            throw VaultError(.invalidArgument, "a page of \(bytes.count) bytes")
        }
        let ref = PageRef(id: id, offset: next, length: UInt64(bytes.count), count: page.count)
        pages[id] = (next, bytes)
        next += UInt64(bytes.count)
        return ref
    }

    /// Replaces a stored page's bytes (tests forge pages with it).
    package func overwrite(_ id: ID128, with bytes: [UInt8]) {
        guard let p = pages[id] else { return }
        pages[id] = (p.offset, bytes)
    }
}
