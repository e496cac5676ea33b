import VaultFormat

/// Searches of a group whose vault keeps an index of its items (``ItemIndex``; version 2, SPEC.md Part 4), opened
/// with its items on demand: a query reads the range of the items tree its primary-key attributes pin, or the
/// entries of an indexed attribute it asks for, instead of every item (SPEC.md §K4 on Part 4, V4).
extension Schema {
    /// How a group's version 2 vault keys its items: each class by its primary-key attributes (§K4), in
    /// their order, with the defaults a missing one takes; user attributes (`@name`) and labels are indexed.
    package static let group = IndexSchema(
        classes: IndexSchema.primaryKeys.classes, indexed: [userPrefix + "*", "labl"])

    /// How a packed vault (`kcar pack`, `kcar upgrade`) keys its items: as a group does, so that a name finds
    /// its item with one lookup, but with no attribute indexed (``IndexSchema/primaryKeys``). Nothing searches
    /// a packed vault by attribute, and an index entry per attribute would make a pack of items with many
    /// attributes cost several times its input (7,000 items of 256 attributes: 689 MiB). Copies of one vault
    /// merge; a packed vault and a group never share a vault id, so their schemas need not agree.
    package static let packed = IndexSchema.primaryKeys

    /// Whether `schema` keys class `c` by the primary key of §K4, so that one key range holds exactly the
    /// items that share a primary key.
    static func keysByPrimaryKey(_ schema: IndexSchema, _ c: String) -> Bool {
        let names = primaryKey(c)
        guard let keyed = schema.classes[c]?.keyAttributes else { return names.isEmpty }
        return keyed.map(\.name) == names
            && keyed.map(\.defaultValue) == names.map { kind(of: $0, class: c)?.defaultValue ?? .string("") }
    }
}

extension ItemQuery {
    /// Entries a query counts of each candidate source (a key range, an indexed attribute's entries) before
    /// it reads the smallest.
    static let probeMax = 4096

    /// Whether the query compares `value` exactly (bytes, not case folded; not as a `Date`), so that an
    /// index keyed by the value's bytes finds every match.
    private func isExact(_ value: AttributeValue) -> Bool {
        switch value {
        case .string: return !caseInsensitive
        case .date: return !datesAsDate
        default: return true
        }
    }

    /// The items of `vault` (version 2) that match, in the order ``select(_:)`` gives: from the key range of
    /// the primary-key attributes the query gives exactly (from the first on), else from the entries of an
    /// indexed attribute it gives exactly, else from every item of the class.
    func select(in vault: ItemIndex) throws -> [Item] {
        let c = itemClass.rawValue
        var candidates: [Item] = []
        let keyed = vault.schema.classes[c]?.keyAttributes ?? []
        // The values of the key's leading attributes the query pins; `sync` may take two.
        var prefixes: [[AttributeValue]] = [[]]
        var pinned = 0
        for k in keyed {
            // An item without the attribute is keyed under the schema's default but matches a query for
            // §K4's: a vault whose schema gives another default cannot be searched by this range.
            if let d = Schema.kind(of: k.name, class: c)?.defaultValue, d != k.defaultValue { break }
            if k.name == "sync", synchronizableAny {
                prefixes = prefixes.flatMap { [$0 + [.bool(false)], $0 + [.bool(true)]] }
                continue
            }
            // Without `sync` asked for, an item with sync true never matches: the key's default stands.
            let wanted = attributes[k.name] ?? (k.name == "sync" ? k.defaultValue : nil)
            guard let wanted, isExact(wanted) else { break }
            prefixes = prefixes.map { $0 + [wanted] }
            if k.name != "sync" { pinned += 1 }
        }
        // Indexed attributes whose default the query does not ask for (an item without the attribute matches a
        // query for its default, and the index holds only the attributes items have).
        let indexed = attributes.filter { name, value in
            vault.schema.isIndexed(name) && isExact(value) && Schema.kind(of: name, class: c)?.defaultValue != value
        }
        // Every source holds all the matches; the one read is the smallest. A whole primary key names one item;
        // otherwise the sources' entries are counted, each up to a cap that grows eightfold from 64 until one
        // source ends below it, so that the probe costs about the smallest source's size per source: a rare
        // attribute beside a common one (`@app=many @key=k7` among 100,000 items of one app) reads its few
        // entries, not the whole app's. Past `ItemQuery.probeMax` the first source (the key range if the query
        // pins one) is read, as before the probe.
        var chosen: (name: String, value: AttributeValue)? = pinned == 0 ? indexed.first : nil
        if (pinned > 0 ? 1 : 0) + indexed.count > 1, pinned < keyed.filter({ $0.name != "sync" }).count {
            var cap = 64
            probing: while cap <= ItemQuery.probeMax {
                var best = cap
                var smallest: (name: String, value: AttributeValue)?? = nil
                if pinned > 0 {
                    var n = 0
                    for p in prefixes { n += try vault.count(class: itemClass, keyValues: p, upTo: cap) }
                    if n < best { (best, smallest) = (n, .some(nil)) }
                }
                for (name, value) in indexed {
                    let n = try vault.count(attribute: name, equals: value, upTo: best)
                    if n < best { (best, smallest) = (n, (name, value)) }
                }
                if let smallest {
                    chosen = smallest
                    break probing
                }
                cap *= 8
            }
        }
        if let (name, value) = chosen {
            candidates = try vault.items(attribute: name, equals: value)
        } else {
            for p in prefixes { candidates += try vault.items(class: itemClass, keyValues: p) }
            // An item whose `sync` is not a bool (§K3 types it bool; another writer may not have) is not
            // synchronizable to a search that does not ask for `sync`: it matches, and sits in the ranges of
            // the other types, read here (normally empty: a path of pages each).
            if keyed.first?.name == "sync", synchronizableAny || attributes["sync"] == nil, prefixes[0].first != nil {
                for other: AttributeValue in [.string(""), .integer(0), .date(nanoseconds: 0), .data([])] {
                    candidates += try vault.items(class: itemClass, keyTypeOfFirst: other)
                }
            }
        }
        return select(candidates)
    }
}

extension Vault {
    /// The item a search returned, as the vault holds it now: looked up at its key when the vault was
    /// opened with its items on demand, else from the items in memory.
    func current(_ item: KeychainItem) throws -> Item? {
        try liveItem(id: item.id, class: item.itemClass, attributes: item.attributes)
    }
}
