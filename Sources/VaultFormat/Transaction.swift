/// The changes of one commit, gathered by the closure given to
/// ``Vault/create(path:group:slots:format:options:overwrite:random:_:)`` or ``Vault/commit(options:random:_:)``. Values
/// are written as they are added; the commit becomes visible only when the closure returns and the trailer is
/// on disk.
///
/// The same API over every format version: what a version does with a change is its `TransactionChanges`
/// (`LogChanges` for version 1, `PagedChanges` and `OnDemandPagedChanges` for version 2), which the vault's
/// commit makes and reads back when the closure returns.
public final class Transaction {
    /// Where the changes go; replaced once by ``loadAll()`` when the items were not all read.
    private var changes: any TransactionChanges

    init(_ changes: any TransactionChanges) {
        self.changes = changes
    }

    /// The index a search in this transaction goes to, while ``items`` holds only the items known and
    /// changed (a vault opened with its items on demand, until ``loadAll()``); nil when ``items`` holds every
    /// item. What it answers is the vault before this transaction: correct it by ``touchedItems``.
    package var itemIndex: ItemIndex? { changes.itemIndex }

    /// The items this transaction changed, as they stand now (nil: deleted), while ``itemIndex`` is not nil:
    /// what a search of the vault (which sees the items before the transaction) must be corrected by.
    package var touchedItems: [ItemID: Item?] { changes.touchedItems }

    /// Makes `item`, as the vault holds it before this transaction (looked up by the caller), known to
    /// ``item(_:)``, ``update(_:class:attributes:value:)`` and ``delete(_:)`` without ``loadAll()``.
    package func know(_ item: Item) { changes.know(item) }

    /// Reads every item of the vault into ``items`` (a transaction on a vault opened with its items on
    /// demand), with this transaction's changes so far applied.
    package func loadAll() throws {
        if let all = try changes.loadingAll() { changes = all }
    }

    /// The items as they stand in this transaction (in a vault opened with its items on demand, until they are
    /// all loaded: those known and changed).
    public var items: [Item] { changes.items }

    /// The items held in memory, by id: every item, unless the vault was opened with its items on demand.
    var heldItems: [ItemID: Item] { changes.held }

    /// Looks up an item as it stands in this transaction.
    public func item(_ id: ItemID) -> Item? { changes.item(id) }

    /// ``item(_:)``, reading every item first if, on demand, the transaction does not know it.
    package func current(_ id: ItemID) throws -> Item? {
        if !changes.knows(id) { try loadAll() }
        return item(id)
    }

    /// Adds a new item and returns its id.
    @discardableResult
    public func add(class itemClass: ItemClass = .genericPassword, attributes: Attributes, value: ValueSource) throws
        -> ItemID
    {
        try Transaction.check(itemClass, attributes)
        guard changes.held.count < Limits.itemsMax else {
            throw VaultError(.invalidArgument, "a vault holds at most \(Limits.itemsMax) items")
        }
        return try changes.add(class: itemClass, attributes: attributes, value: value)
    }

    /// Changes an item's class or attributes, its value, or both.
    public func update(
        _ id: ItemID, class itemClass: ItemClass? = nil, attributes: Attributes? = nil,
        value: ValueSource? = nil
    ) throws {
        guard let item = try current(id) else { throw VaultError(.itemNotFound, item: id, "item \(id)") }
        try changes.update(item, class: itemClass, attributes: attributes, value: value)
    }

    /// Removes an item.
    public func delete(_ id: ItemID) throws {
        guard let item = try current(id) else { throw VaultError(.itemNotFound, item: id, "item \(id)") }
        try changes.delete(item)
    }

    static func check(_ c: ItemClass, _ attributes: Attributes) throws {
        let n = c.rawValue.utf8.count
        guard n >= 1, n <= Limits.attrNameMax else { throw VaultError(.invalidArgument, "class name of \(n) bytes") }
        guard attributes.count <= Limits.attrsMax else {
            throw VaultError(.invalidArgument, "more than \(Limits.attrsMax) attributes")
        }
        for (name, value) in attributes {
            let k = name.utf8.count
            guard k >= 1, k <= Limits.attrNameMax else {
                throw VaultError(.invalidArgument, "attribute name of \(k) bytes")
            }
            let length: Int
            switch value {
            case .string(let s): length = s.utf8.count
            case .data(let d): length = d.count
            default: length = 0
            }
            guard length <= Limits.attrValueMax else {
                throw VaultError(.invalidArgument, "attribute \(name) longer than \(Limits.attrValueMax) bytes")
            }
        }
    }
}

/// What one format version does with the changes of a ``Transaction``. The transaction checks what every
/// version refuses (class and attribute limits, the item count, an unknown id) and hands the change over; the
/// vault's commit reads the result from the concrete type it made.
protocol TransactionChanges: AnyObject {
    /// The items held in memory, by id, as they stand in the transaction.
    var held: [ItemID: Item] { get }
    /// The items as they stand in the transaction.
    var items: [Item] { get }
    func item(_ id: ItemID) -> Item?
    /// Whether ``item(_:)`` answers for `id` without reading every item first.
    func knows(_ id: ItemID) -> Bool
    var itemIndex: ItemIndex? { get }
    var touchedItems: [ItemID: Item?] { get }
    func know(_ item: Item)
    /// The changes with every item read, when this one holds only some (nil: it holds them all).
    func loadingAll() throws -> (any TransactionChanges)?
    func add(class itemClass: ItemClass, attributes: Attributes, value: ValueSource) throws -> ItemID
    /// Changes `item` (as it stands in the transaction).
    func update(_ item: Item, class itemClass: ItemClass?, attributes: Attributes?, value: ValueSource?) throws
    func delete(_ item: Item) throws
}

extension TransactionChanges {
    var items: [Item] { Array(held.values) }
    func item(_ id: ItemID) -> Item? { held[id] }
    func knows(_ id: ItemID) -> Bool { true }
    var itemIndex: ItemIndex? { nil }
    var touchedItems: [ItemID: Item?] { [:] }
    func know(_ item: Item) {}
    func loadingAll() throws -> (any TransactionChanges)? { nil }
}

extension Item {
    /// An item just added, before its value is written: no record yet.
    static func pending(_ id: ItemID, _ itemClass: ItemClass, _ attributes: Attributes) -> Item {
        Item(
            id: id, itemClass: itemClass, attributes: attributes, size: 0,
            location: RecordLocation(
                recordID: ID128([UInt8](repeating: 0, count: 16)), offset: 0, length: 0, member: 0, dataOffset: 0))
    }
}

/// Version 1 (SPEC.md §7): values are written as records as they are added; the commit's index operations
/// (``finalize()``) are the items put and deleted, with the locations their records were written at.
final class LogChanges: TransactionChanges {
    let writer: CommitWriter
    let random: RandomSource
    /// The items before this transaction: only those can be deleted in the index.
    private let original: [ItemID: Item]
    private(set) var state: [ItemID: Item]
    /// Items put or deleted in this transaction (nil = deleted).
    private var changes: [ItemID: Item?] = [:]
    /// Items added with a value; their locations are known once the writer flushes.
    private var valued = Set<ItemID>()

    init(writer: CommitWriter, random: RandomSource, state: [ItemID: Item]) {
        self.writer = writer
        self.random = random
        self.state = state
        original = state
    }

    var held: [ItemID: Item] { state }

    func add(class itemClass: ItemClass, attributes: Attributes, value: ValueSource) throws -> ItemID {
        let id = ItemID(random.bytes(16))
        let item = Item.pending(id, itemClass, attributes)
        try writer.add(item, value: value)
        state[id] = item
        changes[id] = item
        valued.insert(id)
        return id
    }

    func update(_ item: Item, class itemClass: ItemClass?, attributes: Attributes?, value: ValueSource?) throws {
        var item = item
        if let c = itemClass { item.itemClass = c }
        if let a = attributes { item.attributes = a }
        try Transaction.check(item.itemClass, item.attributes)
        if let v = value {
            try writer.add(item, value: v)
            valued.insert(item.id)
        }
        state[item.id] = item
        changes[item.id] = item
    }

    func delete(_ item: Item) throws {
        state[item.id] = nil
        changes[item.id] = .some(nil)
        valued.remove(item.id)
    }

    /// Writes pending records and returns the index operations, in id order, with final locations.
    func finalize() throws -> [IndexOperation] {
        try writer.flush()
        // A value given twice in one transaction: the one added last wins, whatever order records were written in.
        var latest: [ItemID: (sequence: Int, item: Item)] = [:]
        for w in writer.written where latest[w.item.id].map({ $0.sequence < w.sequence }) ?? true {
            latest[w.item.id] = w
        }
        for w in latest.values.map(\.item) where valued.contains(w.id) {
            if var s = state[w.id] {
                s.size = w.size
                s.location = w.location
                state[w.id] = s
                changes[w.id] = s
            }
        }
        // An item added and deleted again in this transaction leaves no operation (its value is dead space).
        return changes.keys.sorted().compactMap { id in
            if let item = state[id] { return .put(item) }
            return original[id] == nil ? nil : .delete(id)
        }
    }
}
