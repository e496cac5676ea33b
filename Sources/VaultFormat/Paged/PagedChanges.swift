/// Version 2 (SPEC.md Part 4) with every item in memory: each change is handed to the paged vault's
/// transaction, which writes the values and makes the tree entries; the items are kept here for
/// ``Transaction/items`` and ``Transaction/item(_:)``.
final class PagedChanges: TransactionChanges {
    let paged: PagedTransaction
    private(set) var held: [ItemID: Item]

    init(_ paged: PagedTransaction, state: [ItemID: Item]) {
        self.paged = paged
        held = state
    }

    var keySchema: IndexSchema { paged.vault.schema }
    var storedIndex: (index: ItemIndex, touched: [ItemID: Item?])? { (ItemIndex(paged.vault), paged.changedItems) }

    func add(class itemClass: ItemClass, attributes: Attributes, value: ValueSource) throws -> ItemID {
        let id = try paged.add(class: itemClass, attributes: attributes, value: value)
        held[id] = Item.pending(id, itemClass, attributes)
        return id
    }

    func update(_ item: Item, class itemClass: ItemClass?, attributes: Attributes?, value: ValueSource?) throws {
        try paged.update(item, class: itemClass, attributes: attributes, value: value)
        var item = item
        if let c = itemClass { item.itemClass = c }
        if let a = attributes { item.attributes = a }
        held[item.id] = item
    }

    func delete(_ item: Item) throws {
        try paged.delete(item)
        held[item.id] = nil
    }
}

/// Version 2 opened with its items on demand: only the items searches made known (``know(_:)``) are held
/// here; the items this transaction changed are the paged transaction's (``touchedItems``), not a second copy,
/// so a large import holds its items once. ``loadingAll()`` reads every item into a ``PagedChanges``.
final class OnDemandPagedChanges: TransactionChanges {
    let paged: PagedTransaction
    private(set) var held: [ItemID: Item] = [:]

    init(_ paged: PagedTransaction) {
        self.paged = paged
    }

    var itemIndex: ItemIndex? { ItemIndex(paged.vault) }
    var keySchema: IndexSchema { paged.vault.schema }
    var storedIndex: (index: ItemIndex, touched: [ItemID: Item?])? { (ItemIndex(paged.vault), paged.changedItems) }
    var touchedItems: [ItemID: Item?] { paged.changedItems }

    var items: [Item] {
        let touched = touchedItems
        return held.values.filter { touched[$0.id] == nil } + touched.values.compactMap { $0 }
    }

    func item(_ id: ItemID) -> Item? {
        if let t = touchedItems[id] { return t }
        return held[id]
    }

    func knows(_ id: ItemID) -> Bool { touchedItems[id] != nil || held[id] != nil }

    func know(_ item: Item) {
        guard held[item.id] == nil, touchedItems[item.id] == nil else { return }
        held[item.id] = item
    }

    func loadingAll() throws -> (any TransactionChanges)? {
        var all = try Vault.items(of: paged.vault)
        for (id, t) in touchedItems { all[id] = t }
        return PagedChanges(paged, state: all)
    }

    func add(class itemClass: ItemClass, attributes: Attributes, value: ValueSource) throws -> ItemID {
        try paged.add(class: itemClass, attributes: attributes, value: value)
    }

    func update(_ item: Item, class itemClass: ItemClass?, attributes: Attributes?, value: ValueSource?) throws {
        try paged.update(item, class: itemClass, attributes: attributes, value: value)
        held[item.id] = nil
    }

    func delete(_ item: Item) throws {
        try paged.delete(item)
        held[item.id] = nil
    }
}
