#if canImport(Glibc)
    import Glibc
#endif

/// The versions of a version 2 vault (SPEC.md Part 4, V5-V8): an item's version, its kept history, and what
/// passes retention.
extension PagedVault {
    /// The version of the item at `item`'s key, if it is there.
    package func version(of item: Item) throws -> Version? {
        let key = ItemKey.make(
            class: item.itemClass.rawValue, attributes: item.attributes,
            schema: root.schema.classes[item.itemClass.rawValue], id: item.id
        ).key
        return try entry(.items, key).map { try ItemEntries.decode($0, schema: root.schema).version }
    }

    /// Kept earlier versions of the item with this id, oldest first.
    package func history(of id: ItemID) throws -> [(version: Version, why: UInt8, size: UInt64)] {
        try keptVersions(of: id).map { ($0.version, $0.why, $0.item.size) }
    }

    /// Kept earlier versions of the item with this id (its history entries, V3.4), oldest first, each with the
    /// item as it was: ``read(_:)`` gives its value.
    package func keptVersions(of id: ItemID) throws -> [KeptVersion] {
        var out: [KeptVersion] = []
        try forEachKeptVersion(from: id.bytes) { k in
            guard k.item.id == id else { return false }
            out.append(k)
            return true
        }
        return out
    }

    /// Every kept version of every item (the history tree in key order: by item id, then version), from the
    /// item id whose bytes are `lower`, until `body` returns false.
    package func forEachKeptVersion(from lower: [UInt8] = [], _ body: (KeptVersion) throws -> Bool) throws {
        try scan(.history, from: lower) { e in
            let h = try ItemEntries.decodeHistory(e)
            return try body(KeptVersion(version: h.version, why: h.why, item: h.item))
        }
    }

    /// The items-tree entry (live or tombstone) of the item with `item`'s id: looked up at the key `item`'s
    /// attributes make (a tombstone keeps the key of the last live version, which a deletion's kept version
    /// has), else found by a scan of the items tree.
    package func state(of item: Item) throws -> ItemState? {
        let schema = root.schema
        let key = ItemKey.make(
            class: item.itemClass.rawValue, attributes: item.attributes,
            schema: schema.classes[item.itemClass.rawValue], id: item.id
        ).key
        if let e = try entry(.items, key) { return try ItemEntries.decode(e, schema: schema) }
        var found: ItemState?
        var names = NameCache()
        try scan(.items) { e in
            guard e.key.suffix(16).elementsEqual(item.id.bytes) else { return true }
            found = try ItemEntries.decode(e, schema: schema, names: &names)
            return false
        }
        return found
    }

    /// The keys of `id`'s history entries that retention (V8) drops once `adding` newer ones join them: past
    /// the `keep` most recent, or older than `days` before `now` (an hlc). Read from the item's range of the
    /// history tree, deltas included: a commit that touches an item trims its history.
    func historyPastRetention(of id: ItemID, adding: Int, now: UInt64) throws -> [[UInt8]] {
        let r = root.retention
        let cutoff = Retention.cutoff(days: r.days, before: now)
        var keys: [[UInt8]] = []
        try scan(.history, from: id.bytes) { e in
            guard e.key.starts(with: id.bytes) else { return false }
            keys.append(e.key)
            return true
        }
        // Oldest first (the key orders an item's versions); the newest `keep - adding` stay if young enough.
        let keepOld = max(0, r.keep - adding)
        return keys.enumerated().filter { i, k in
            i < keys.count - keepOld || UInt64(bigEndianBytes: Array(k[16..<24])) < cutoff
        }.map(\.element)
    }
}
