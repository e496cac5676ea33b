/// What a vault answers from its index instead of from every item: the items under a key or with an indexed
/// attribute's value (SPEC.md Part 4, V4). A lookup reads the few pages of the B+tree on the way to its
/// matches, so it costs the same in a vault of ten items or a million; open the vault with `itemsOnDemand`
/// (``Vault/open(path:secret:mode:lockTimeout:itemsOnDemand:writerID:)``) so that opening does not read
/// every item either.
///
/// A vault of the current format has one (version 2); version 1 has none, and its callers read
/// ``Vault/items``. Callers name this capability, never the format behind it.
public struct ItemIndex {
    private let engine: PagedVault

    init(_ engine: PagedVault) { self.engine = engine }

    /// How the vault keys its items: each class by its key attributes, and which attributes are indexed.
    public var schema: IndexSchema { engine.schema }

    /// The live items of class `itemClass` whose key attributes, as the vault's ``schema`` lists them for the
    /// class, are those of `key`. An attribute that `key` lacks stands for its default, as in an item that
    /// lacks it (SPEC.md §K4). With the schema ``IndexSchema/primaryKeys``,
    /// `items(class: .genericPassword, key: Attributes(["svce": .string("db"), "acct": .string("app")]))` is
    /// the item of that service and account.
    ///
    /// Throws ``VaultError/Code/invalidArgument`` when `key` holds an attribute that is not a key attribute
    /// of the class: such an attribute would be silently ignored otherwise.
    public func items(class itemClass: ItemClass, key: Attributes) throws -> [Item] {
        let values = try ClassSchema.keyValues(
            key, of: schema.classes[itemClass.rawValue], itemClass, path: engine.path)
        return try items(class: itemClass, keyValues: values.map(\.value))
    }

    /// The live items of class `itemClass` whose leading key attributes are `values` (in the order of the
    /// class's key attributes; fewer values than key attributes select a range), in key order.
    public func items(class itemClass: ItemClass, keyValues values: [AttributeValue]) throws -> [Item] {
        try Vault.naming(engine.path) { try engine.items(class: itemClass, keyValues: values) }
    }

    /// The items of class `itemClass` whose first key attribute has the type of `sample` (any value of it).
    package func items(class itemClass: ItemClass, keyTypeOfFirst sample: AttributeValue) throws -> [Item] {
        try engine.items(class: itemClass, keyTypeOfFirst: sample)
    }

    /// The live items whose attribute `name` is a string bytewise equal to one of `values`, in key order, found
    /// through the items tree by key ranges where `name` is a (leading) key attribute, without an attribute
    /// index (``PagedVault/items(stringAttribute:among:)``).
    package func items(stringAttribute name: String, among values: [String]) throws -> [Item] {
        try Vault.naming(engine.path) { try engine.items(stringAttribute: name, among: values) }
    }

    /// The live items whose attribute `name` is `value`, found through the attributes tree. Throws
    /// ``VaultError/Code/invalidArgument`` when the vault's ``schema`` does not index `name`.
    public func items(attribute name: String, equals value: AttributeValue) throws -> [Item] {
        try Vault.naming(engine.path) { try engine.items(attribute: name, equals: value) }
    }

    /// How many items (tombstones included) the vault keys under class `itemClass` and the leading key
    /// attributes `values`, counted up to `limit`: the weight of that range, for a query to pick its cheapest.
    package func count(class itemClass: ItemClass, keyValues values: [AttributeValue], upTo limit: Int) throws -> Int {
        try Vault.naming(engine.path) { try engine.count(class: itemClass, keyValues: values, upTo: limit) }
    }

    /// How many index entries the vault holds for the indexed attribute `name` = `value`, up to `limit`.
    package func count(attribute name: String, equals value: AttributeValue, upTo limit: Int) throws -> Int {
        try Vault.naming(engine.path) { try engine.count(attribute: name, equals: value, upTo: limit) }
    }

    /// Pages read so far (for tests and measurements of how much a lookup reads).
    package var pagesOpened: Int { engine.pagesOpened }
}

extension Vault {
    /// The vault's index of items, or nil when its format keeps none (version 1).
    public var itemIndex: ItemIndex? { engine.itemIndex }

    /// The live items of class `itemClass` whose key is `key`, in either format: through ``itemIndex`` (see
    /// ``ItemIndex/items(class:key:)``: a few pages) when the vault keeps one, else among every item
    /// (version 1, read whole at open), by the key attributes of ``IndexSchema/primaryKeys``. An attribute `key`
    /// lacks stands for its default; one that is not a key attribute is refused
    /// (``VaultError/Code/invalidArgument``).
    public func items(class itemClass: ItemClass, key: Attributes) throws -> [Item] {
        if let index = itemIndex { return try index.items(class: itemClass, key: key) }
        let keyed = IndexSchema.primaryKeys.classes[itemClass.rawValue]
        let wanted = try ClassSchema.keyValues(key, of: keyed, itemClass, path: path)
        let defaults = keyed?.keyAttributes ?? []
        // Compared as the index compares them, encoded: strings as bytes, not as equal Swift strings.
        let target = ItemKey.prefix(class: itemClass.rawValue, values: wanted.map(\.value))
        let found = unorderedItems.filter { item in
            item.itemClass == itemClass
                && ItemKey.prefix(
                    class: itemClass.rawValue, values: defaults.map { item.attributes[$0.name] ?? $0.defaultValue })
                    == target
        }
        return Vault.sortOrder(found).map { found[$0] }
    }
}

extension ClassSchema {
    /// The value of each key attribute of `schema` (a class's; nil: it has none) in `key`, its default where
    /// `key` lacks it. Throws ``VaultError/Code/invalidArgument`` for an attribute of `key` that is not a key
    /// attribute, which a lookup would otherwise ignore.
    static func keyValues(_ key: Attributes, of schema: ClassSchema?, _ itemClass: ItemClass, path: String) throws
        -> [(name: String, value: AttributeValue)]
    {
        let keyed = schema?.keyAttributes ?? []
        for (name, _) in key where !keyed.contains(where: { $0.name == name }) {
            throw VaultError(
                .invalidArgument, path: path,
                "\(name) is not a key attribute of class \(itemClass.rawValue) in this vault (its key: "
                    + (keyed.isEmpty ? "the item id" : keyed.map(\.name).joined(separator: ", ")) + ")")
        }
        return keyed.map { ($0.name, key[$0.name] ?? $0.defaultValue) }
    }
}
