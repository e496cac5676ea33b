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
        let keyed = schema.classes[itemClass.rawValue]?.keyAttributes ?? []
        for (name, _) in key where !keyed.contains(where: { $0.name == name }) {
            throw VaultError(
                .invalidArgument,
                "\(name) is not a key attribute of class \(itemClass.rawValue) in this vault (its key: "
                    + (keyed.isEmpty ? "the item id" : keyed.map(\.name).joined(separator: ", ")) + ")")
        }
        return try items(class: itemClass, keyValues: keyed.map { key[$0.name] ?? $0.defaultValue })
    }

    /// The live items of class `itemClass` whose leading key attributes are `values` (in the order of the
    /// class's key attributes; fewer values than key attributes select a range), in key order.
    public func items(class itemClass: ItemClass, keyValues values: [AttributeValue]) throws -> [Item] {
        try engine.items(class: itemClass, keyValues: values)
    }

    /// The items of class `itemClass` whose first key attribute has the type of `sample` (any value of it).
    package func items(class itemClass: ItemClass, keyTypeOfFirst sample: AttributeValue) throws -> [Item] {
        try engine.items(class: itemClass, keyTypeOfFirst: sample)
    }

    /// The live items whose attribute `name` is `value`, found through the attributes tree. Throws
    /// ``VaultError/Code/invalidArgument`` when the vault's ``schema`` does not index `name`.
    public func items(attribute name: String, equals value: AttributeValue) throws -> [Item] {
        try engine.items(attribute: name, equals: value)
    }

    /// Pages read so far (for tests and measurements of how much a lookup reads).
    package var pagesOpened: Int { engine.pagesOpened }
}

extension Vault {
    /// The vault's index of items, or nil when its format keeps none (version 1).
    public var itemIndex: ItemIndex? { engine.itemIndex }
}
