#if canImport(Glibc)
    import Glibc
#endif

/// Reading a version 2 vault: entries of its trees through the overlay of delta changes, items by key range or
/// indexed attribute, and the streaming of leaves while a command walks two vaults.
extension PagedVault {
    func reader(_ tree: TreeID) -> TreeReader { TreeReader(store: store, tree: tree, top: root.top(tree)) }

    /// The entry at `key` of `tree`, the deltas first.
    func entry(_ tree: TreeID, _ key: [UInt8]) throws -> LeafEntry? {
        if let c = overlay[tree]?[key] {
            if case .put(let e) = c { return e }
            return nil
        }
        return try reader(tree).lookup(key)
    }

    /// Entries of `tree` with keys ≥ `lower`, in order, the deltas merged in, until `body` returns false.
    func scan(_ tree: TreeID, from lower: [UInt8] = [], _ body: (LeafEntry) throws -> Bool) throws {
        let pending = sortedChanges(tree)
        // Without changes, the tree's entries as they are: the merge's state, shared with the closure below, is
        // checked for exclusive access at each entry (a twentieth of a list).
        guard !pending.isEmpty else { return try reader(tree).scan(from: lower, body) }
        // The first change at or after `lower`.
        var lo = 0
        var hi = pending.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if pending[mid].key.lexicographicallyPrecedes(lower) { lo = mid + 1 } else { hi = mid }
        }
        var merge = ChangeMerge(changes: pending[lo...])
        var going = true
        try reader(tree).scan(from: lower) { e in
            going = try merge.hand(e, to: body)
            return going
        }
        if going { try merge.handRest(to: body) }
    }

    /// The items of `class` whose first key attributes are `values` (all of them: one item at most, as a
    /// primary-key lookup), in key order.
    package func items(class itemClass: ItemClass, keyValues values: [AttributeValue]) throws -> [Item] {
        let found = try items(keyPrefix: ItemKey.prefix(class: itemClass.rawValue, values: values))
        keptLookup = found.count <= PagedVault.keptLookupMax ? (indexChanges, found) : nil
        return found
    }

    /// The items of `class` whose first key attribute has the type of `sample` (any value of that type), in
    /// key order: the range of the items tree that the type's byte opens (V3.1).
    package func items(class itemClass: ItemClass, keyTypeOfFirst sample: AttributeValue) throws -> [Item] {
        let classPrefix = ItemKey.prefix(class: itemClass.rawValue, values: [])
        return try items(
            keyPrefix: Array(ItemKey.prefix(class: itemClass.rawValue, values: [sample]).prefix(classPrefix.count + 1)))
    }

    /// How many entries of `tree` have keys that start with `prefix`, counted up to `limit` (the scan stops
    /// there): what a query weighs its candidate ranges by before it reads one. Tombstones count.
    private func count(_ tree: TreeID, prefix: [UInt8], upTo limit: Int) throws -> Int {
        var n = 0
        guard limit > 0 else { return 0 }
        try scan(tree, from: prefix) { e in
            guard e.key.starts(with: prefix) else { return false }
            n += 1
            return n < limit
        }
        return n
    }

    /// How many entries the items tree holds under `class` and leading key `values`, up to `limit`.
    package func count(class itemClass: ItemClass, keyValues values: [AttributeValue], upTo limit: Int) throws -> Int {
        try count(.items, prefix: ItemKey.prefix(class: itemClass.rawValue, values: values), upTo: limit)
    }

    /// How many entries the attributes tree holds for `name` = `value`, up to `limit`.
    package func count(attribute name: String, equals value: AttributeValue, upTo limit: Int) throws -> Int {
        try count(.attributes, prefix: ItemEntries.attributePrefix(name, value), upTo: limit)
    }

    /// The live items whose keys start with `prefix`, in key order.
    private func items(keyPrefix prefix: [UInt8]) throws -> [Item] {
        var out: [Item] = []
        try scan(.items, from: prefix) { e in
            guard e.key.starts(with: prefix) else { return false }
            if let item = try ItemEntries.decode(e, schema: root.schema).item { out.append(item) }
            return true
        }
        return out
    }

    /// The live items whose attribute `name` is a string bytewise equal to one of `values`, in key order,
    /// found through the items tree without reading every item: classes are visited by skipping from one to
    /// the next; in a class whose key attributes start with `name`, or with one attribute and then `name`
    /// (the primary keys' `sync`, `svce`), only the ranges of those values are read, each value of the
    /// leading attribute seen by skipping too (up to ``rangedLeadingValuesMax`` of them: past that, and in
    /// every other class, the rest of the class is read whole; past ``rangedClassesMax`` classes, the rest of
    /// the tree). What `extract NAME` selects by service.
    package func items(stringAttribute name: String, among values: [String]) throws -> [Item] {
        let wanted = values.map { v -> [UInt8] in
            var typed: [UInt8] = []
            KeyCoding.appendTyped(.string(v), to: &typed)
            return typed
        }
        var found: [(key: [UInt8], item: Item)] = []
        /// Reads the entries from `start` on that start with `prefix`, keeping the items that match.
        func take(_ prefix: [UInt8], from start: [UInt8]? = nil) throws {
            try scan(.items, from: start ?? prefix) { e in
                guard e.key.starts(with: prefix) else { return false }
                if let item = try ItemEntries.decode(e, schema: root.schema).item,
                    let v = item.attributes.string(name), values.contains(where: { $0.utf8.elementsEqual(v.utf8) })
                {
                    found.append((e.key, item))
                }
                return true
            }
        }
        /// The first key at or after `from`, if it starts with `prefix`.
        func first(from: [UInt8], within prefix: [UInt8]) throws -> [UInt8]? {
            var key: [UInt8]?
            try scan(.items, from: from) { e in
                if e.key.starts(with: prefix) { key = e.key }
                return false
            }
            return key
        }
        var next: [UInt8]? = []
        var classes = 0
        while let from = next, let key = try first(from: from, within: []) {
            // Two seeks or more per class: a vault of many classes (crafted) is read whole from here on.
            guard classes < PagedVault.rangedClassesMax else {
                try take([], from: from)
                break
            }
            classes += 1
            var p = 0
            let className = String(
                decoding: try KeyCoding.readEscaped(key, &p, max: Limits.attrNameMax), as: UTF8.self)
            let classPrefix = Array(key[..<p])
            next = PagedVault.successor(classPrefix)
            let keyNames = root.schema.classes[className]?.keyAttributes.map(\.name) ?? []
            switch keyNames.firstIndex(of: name) {
            case 0:
                for w in wanted { try take(classPrefix + w) }
            case 1:
                var leadingFrom: [UInt8]? = classPrefix
                var seen = 0
                while let at = leadingFrom, let k = try first(from: at, within: classPrefix) {
                    guard seen < PagedVault.rangedLeadingValuesMax else {
                        try take(classPrefix, from: at)
                        break
                    }
                    var q = classPrefix.count
                    _ = try KeyCoding.readTyped(k, &q)
                    let leading = Array(k[..<q])
                    for w in wanted { try take(leading + w) }
                    leadingFrom = PagedVault.successor(leading)
                    seen += 1
                }
            default:
                try take(classPrefix)
            }
        }
        found.sort { $0.key.bytesPrecede($1.key) }
        return found.map(\.item)
    }

    /// Distinct values of a class's first key attribute that ``items(stringAttribute:among:)`` reads ranges
    /// under, one seek each; a class with more (a crafted vault) is read whole from there.
    static let rangedLeadingValuesMax = 16
    /// Classes that ``items(stringAttribute:among:)`` visits one by one; the rest of a vault of more is read
    /// whole, so that no vault costs much more than reading every item.
    static let rangedClassesMax = 64

    /// The least key above every key that starts with `prefix`: its last byte below 0xFF incremented, the
    /// 0xFF bytes after it dropped. Nil for a prefix of 0xFF bytes only (no key is above all of its keys).
    static func successor(_ prefix: [UInt8]) -> [UInt8]? {
        var s = prefix
        while s.last == 0xFF { s.removeLast() }
        guard !s.isEmpty else { return nil }
        s[s.count - 1] += 1
        return s
    }

    /// The live items whose indexed attribute `name` is `value`: a range of the attributes tree, then one
    /// lookup per match.
    package func items(attribute name: String, equals value: AttributeValue) throws -> [Item] {
        guard root.schema.isIndexed(name) else {
            throw VaultError(.invalidArgument, "attribute \(name) is not indexed in this vault")
        }
        let prefix = ItemEntries.attributePrefix(name, value)
        var keys: [[UInt8]] = []
        try scan(.attributes, from: prefix) { e in
            guard e.key.starts(with: prefix) else { return false }
            keys.append(Array(e.key[prefix.count...]))
            return true
        }
        return try keys.compactMap { k in
            guard let e = try entry(.items, k), let item = try ItemEntries.decode(e, schema: root.schema).item else {
                throw VaultError(.damagedIndex, "an attribute entry names an item the items tree lacks")
            }
            return item
        }
    }

    /// The live item with this id, class and attributes (its key attributes name its key), if it is there.
    package func liveItem(id: ItemID, class itemClass: ItemClass, attributes: Attributes) throws -> Item? {
        // An item the last lookup returned, nothing it read changed since: the lookup below would find it again.
        if let kept = keptLookup, kept.changes == indexChanges,
            let item = kept.items.first(where: { $0.id == id }), item.itemClass == itemClass,
            item.attributes == attributes
        {
            return item
        }
        let key = ItemKey.make(
            class: itemClass.rawValue, attributes: attributes, schema: root.schema.classes[itemClass.rawValue], id: id
        ).key
        guard let e = try entry(.items, key) else { return nil }
        return try ItemEntries.decode(e, schema: root.schema).item
    }

    /// Every live item in key order (class, then key attributes, then id), one page at a time.
    package func forEachItem(_ body: (Item) throws -> Bool) throws {
        var names = NameCache()
        try streaming {
            try scan(.items) { e in
                guard let item = try ItemEntries.decodeParts(e, schema: root.schema, names: &names).item else {
                    return true
                }
                return try body(item)
            }
        }
    }

    /// Every live item with its version (its items-tree entry, decoded), in key order, one page at a time.
    package func forEachLiveState(_ body: (ItemState) throws -> Bool) throws {
        var names = NameCache()
        try streaming {
            try scan(.items) { e in
                let s = try ItemEntries.decode(e, schema: root.schema, names: &names)
                return s.item == nil ? true : try body(s)
            }
        }
    }

    /// The largest value size among the live items (0 for none), read from each items-tree entry's body
    /// without building its item (no strings, no attributes): the first of a table's two passes over a million
    /// items. It checks only what it reads (the body's framing, types and limits; not the key, UTF-8 or the
    /// order of names, which ``ItemEntries/decode(_:schema:names:)`` checks), so a damaged entry it passes
    /// is found by the caller's next pass, which decodes every item. The size of an entry decode accepts is the
    /// one decode reads.
    package func largestItemSize() throws -> UInt64 {
        var largest: UInt64 = 0
        let walked = try mapLeaves(.items) { entries in
            var m: UInt64 = 0
            try entries.forEach { e in m = max(m, try PagedVault.valueSize(e) ?? 0) }
            return m
        } _: {
            largest = max(largest, $0)
        }
        guard !walked else { return largest }
        try streaming {
            try scan(.items) { e in
                largest = max(largest, try PagedVault.valueSize(e) ?? 0)
                return true
            }
        }
        return largest
    }

    /// The value size an items-tree entry's body gives (nil for a deleted item), read as
    /// ``largestItemSize()`` reads it.
    private static func valueSize(_ e: LeafEntry) throws -> UInt64? {
        var r = ByteReader(e.rest, failure: .damagedIndex, what: "item entry")
        let flags = try r.readU8()
        guard flags == 0 else {
            guard flags == 1 else { throw r.fail("flags \(flags)") }
            return nil
        }
        _ = try r.readVarint()  // the version's clock
        _ = try r.readVarint()  // absent key attributes
        for _ in 0..<(try r.readCount(max: Limits.attrsMax, "attribute count")) {
            try r.skip(try r.readCount(max: Limits.attrNameMax, "attribute name length"))
            switch try r.readU8() {
            case 1: try r.skip(try r.readCount(max: Limits.attrValueMax, "attribute length"))
            case 2, 4: try r.skip(8)
            case 3: try r.skip(1)
            case 5: try r.skip(try r.readCount(max: Limits.attrValueMax, "attribute length"))
            case let t: throw r.fail("an attribute of unknown type \(t)")
            }
        }
        let size = try r.readVarint()
        guard size <= Limits.valueMax else { throw r.fail("value size \(size)") }
        return size
    }

    /// Runs `body`, a walk over whole trees, without keeping the leaves it reads: its memory stays that of
    /// one page whatever the size of the trees.
    func streaming<T>(_ body: () throws -> T) rethrows -> T {
        let keeps = store.keepsLeaves
        store.keepsLeaves = false
        defer { store.keepsLeaves = keeps }
        return try body()
    }

    /// As ``streaming(_:)``, for a walk over the trees of this vault and `other` together (a difference).
    func streaming<T>(with other: PagedVault?, _ body: () throws -> T) rethrows -> T {
        try streaming { try other.map { try $0.streaming(body) } ?? body() }
    }

    /// Runs `body`, a run of lookups in key order, keeping the leaves it reads (inside a walk that keeps none):
    /// neighbouring keys mostly lie in one leaf, which is then opened once, not once per key.
    func keepingLeaves<T>(with other: PagedVault?, _ body: () throws -> T) rethrows -> T {
        let (mine, theirs) = (store.keepsLeaves, other?.store.keepsLeaves)
        store.keepsLeaves = true
        other?.store.keepsLeaves = true
        defer {
            store.keepsLeaves = mine
            if let theirs { other?.store.keepsLeaves = theirs }
        }
        return try body()
    }

    package func read(_ item: Item) throws -> [UInt8] {
        var out: [UInt8] = []
        try source.read(item) { out.append(contentsOf: $0) }
        return out
    }
}

/// Delta changes (sorted by key) merged into a tree's entries, as a reader of the tree sees them: a change's
/// entry comes before the tree's entries above its key and in place of the tree's entry at its key; a removal
/// hands nothing. A scan (``PagedVault/scan(_:from:_:)``) and a walk by leaves (``LeafEntries``) both merge so.
struct ChangeMerge {
    let changes: ArraySlice<(key: [UInt8], value: TreeWriter.Change)>
    private var next: Int

    init(changes: ArraySlice<(key: [UInt8], value: TreeWriter.Change)>) {
        self.changes = changes
        next = changes.startIndex
    }

    /// Hands `body` the changes below `e`'s key, then `e` or the change at its key; false once `body` is.
    mutating func hand(_ e: LeafEntry, to body: (LeafEntry) throws -> Bool) rethrows -> Bool {
        while next < changes.endIndex, changes[next].key.lexicographicallyPrecedes(e.key) {
            let change = changes[next].value
            next += 1
            if case .put(let o) = change, try !body(o) { return false }
        }
        guard next < changes.endIndex, changes[next].key == e.key else { return try body(e) }
        let change = changes[next].value
        next += 1
        if case .put(let o) = change { return try body(o) }
        return true
    }

    /// Hands `body` the changes after the last entry, until it returns false.
    mutating func handRest(to body: (LeafEntry) throws -> Bool) rethrows {
        while next < changes.endIndex {
            let change = changes[next].value
            next += 1
            if case .put(let o) = change, try !body(o) { return }
        }
    }
}
