/// What a vault answers from an index instead of from every item: the items under a key range or with an
/// indexed attribute's value (SPEC.md Part 4, V4). A vault whose format keeps its items in key order has one
/// (version 2); version 1 has none, and its callers read ``Vault/items``. Callers (the keychain's queries, a
/// transaction's primary-key checks) name this capability, never the engine behind it, so that a later format
/// is one more engine that provides it.
package struct ItemIndex {
    private let engine: PagedVault

    init(_ engine: PagedVault) { self.engine = engine }

    /// How the vault keys its items: each class by its key attributes, and which attributes are indexed.
    package var schema: IndexSchema { engine.schema }

    /// The items of class `itemClass` whose leading key attributes are `values`, in key order.
    package func items(class itemClass: ItemClass, keyValues values: [AttributeValue]) throws -> [Item] {
        try engine.items(class: itemClass, keyValues: values)
    }

    /// The items of class `itemClass` whose first key attribute has the type of `sample` (any value of it).
    package func items(class itemClass: ItemClass, keyTypeOfFirst sample: AttributeValue) throws -> [Item] {
        try engine.items(class: itemClass, keyTypeOfFirst: sample)
    }

    /// The items whose indexed attribute `name` is `value`.
    package func items(attribute name: String, equals value: AttributeValue) throws -> [Item] {
        try engine.items(attribute: name, equals: value)
    }

    /// Pages read so far (for tests and measurements of how much a lookup reads).
    package var pagesOpened: Int { engine.pagesOpened }
}

extension Vault {
    /// The vault's index of items, or nil when its format keeps none (version 1).
    package var itemIndex: ItemIndex? { engine.itemIndex }
}
