/// The keys at which two trees differ (SPEC.md Part 4, V9 step 1), found by walking both together and
/// skipping every pair of subtrees that are one page: copies of one vault share the pages written before
/// they parted, so the pages read follow the changes, not the items. Both trees are read with every check
/// of V3.3 (``TreeReader/open(_:parentLevel:first:upper:)``).
package struct TreeDiff {
    /// A key whose entries differ: the entry each tree holds there (nil: none).
    package typealias Difference = (key: [UInt8], a: LeafEntry?, b: LeafEntry?)

    /// Hands `body` every difference between the trees of `a` and `b`, in key order.
    package static func walk(_ a: TreeReader, _ b: TreeReader, _ body: (Difference) throws -> Void) throws {
        var x = Cursor(a)
        var y = Cursor(b)
        while true {
            switch (x.position, y.position) {
            case (.end, .end):
                return
            case (.subtree(let s), .subtree(let t))
            where s.ref.id == t.ref.id && s.ref.offset == t.ref.offset && s.ref.length == t.ref.length:
                // One page under both: equal subtrees (a page is written once, V3.2).
                try x.skip()
                try y.skip()
                continue
            default:
                break
            }
            let kx = x.position.key
            let ky = y.position.key
            if let kx, ky.map({ kx.lexicographicallyPrecedes($0) }) ?? true {
                if case .entry(let e) = x.position {
                    try body((kx, e, nil))
                    try x.advance()
                } else {
                    try x.expand()
                }
            } else if let ky, kx.map({ ky.lexicographicallyPrecedes($0) }) ?? true {
                if case .entry(let e) = y.position {
                    try body((ky, nil, e))
                    try y.advance()
                } else {
                    try y.expand()
                }
            } else {
                // The same key on both sides: open subtrees until both stand at an entry (the higher one
                // first: its first child may be the other's page).
                switch (x.position, y.position) {
                case (.entry(let e), .entry(let f)):
                    if e != f { try body((e.key, e, f)) }
                    try x.advance()
                    try y.advance()
                case (.subtree(let s), .subtree(let t)):
                    if s.level >= t.level { try x.expand() } else { try y.expand() }
                case (.subtree, _):
                    try x.expand()
                default:
                    try y.expand()
                }
            }
        }
    }

    /// A position in one tree: at an entry, at the start of a subtree not opened yet, or past the end.
    enum Position {
        case entry(LeafEntry)
        case subtree((ref: PageRef, first: [UInt8], upper: [UInt8]?, level: Int, parentLevel: Int?))
        case end

        var key: [UInt8]? {
            switch self {
            case .entry(let e): return e.key
            case .subtree(let s): return s.first
            case .end: return nil
            }
        }
    }

    struct Cursor {
        let reader: TreeReader
        /// Open pages from the top: a branch's children or a leaf's entries, with the position being read.
        var frames: [(page: Page, at: Int, upper: [UInt8]?)] = []
        var position: Position

        init(_ reader: TreeReader) {
            self.reader = reader
            if let top = reader.top {
                // The top page's first key is only known once it is open; its level bounds nothing above it.
                position = .subtree((top, [], nil, PagedLimits.heightMax, nil))
            } else {
                position = .end
            }
        }

        /// Opens the subtree at the position: the position becomes its first child, or its first entry.
        mutating func expand() throws {
            guard case .subtree(let s) = position else { return }
            let isTop = s.parentLevel == nil
            let page = try reader.open(s.ref, parentLevel: s.parentLevel, first: isTop ? nil : s.first, upper: s.upper)
            frames.append((page, 0, s.upper))
            settle()
        }

        /// Moves past the subtree at the position without opening it.
        mutating func skip() throws {
            guard case .subtree = position else { return }
            if frames.isEmpty {
                position = .end
                return
            }
            frames[frames.count - 1].at += 1
            try climb()
        }

        /// Moves past the entry at the position.
        mutating func advance() throws {
            guard case .entry = position else { return }
            frames[frames.count - 1].at += 1
            try climb()
        }

        /// After a move: up to the nearest page with something left, then what stands there.
        private mutating func climb() throws {
            while let f = frames.last, f.at >= f.page.entryCount {
                frames.removeLast()
                if frames.isEmpty {
                    position = .end
                    return
                }
                frames[frames.count - 1].at += 1
            }
            settle()
        }

        /// The position the innermost frame stands at.
        private mutating func settle() {
            let f = frames[frames.count - 1]
            switch f.page.content {
            case .leaf(let entries):
                position = .entry(entries[f.at])
            case .branch(let children):
                let upper = f.at + 1 < children.count ? children[f.at + 1].key : f.upper
                position = .subtree((children[f.at].child, children[f.at].key, upper, f.page.level - 1, f.page.level))
            }
        }
    }
}
