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
    /// The time dates are stamped with (``WriteOptions/stampsDates``), in nanoseconds; nil: none are.
    private let stamp: Int64?

    init(_ changes: any TransactionChanges, stamp: Int64? = nil) {
        self.changes = changes
        self.stamp = stamp
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

    /// Lets this transaction add any number of items in bounded memory (a version 2 vault opened with its
    /// items on demand): every `count` changes (or sooner, once the items added hold about `bytes` of
    /// attributes), the items added since leave memory, sealed into a temporary
    /// file that the commit merges back (``PagedTransaction/spillAfter``). An item added is then not known to
    /// the transaction for long: ``item(_:)`` may not find it, and updating or deleting it fails as for an
    /// item the vault lacks. With `refusingEqualKeys`, the commit fails with ``VaultError/Code/exists``,
    /// nothing written, when two live items of a class with key attributes have one key (what
    /// ``KeyConflict/refuse`` would have refused at the add, checked when the entries are merged). Returns
    /// false, changing nothing, where the vault cannot (version 1, or its items all held in memory).
    package func spillAdds(every count: Int, bytes: Int = 32 << 20, refusingEqualKeys: Bool) -> Bool {
        guard let c = changes as? OnDemandPagedChanges, count > 0 else { return false }
        c.paged.spillAfter = count
        c.paged.spillBytes = bytes
        c.paged.refusesEqualKeys = refusingEqualKeys
        return true
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

    /// Adds a new item and returns its id (or, with `.replace`, the id of the item it replaced).
    ///
    /// An item's *key* is the values of its class's key attributes, as the vault keys them: its schema's in
    /// the current format (``ItemIndex/schema``; ``IndexSchema/primaryKeys`` unless the vault was made with
    /// another), those of ``IndexSchema/primaryKeys`` in version 1; an attribute an item lacks counts as its
    /// default. A generic password's key is its `sync`, service and account. `ifKeyExists` says what happens
    /// when a live item, stored or added in this transaction, already has the new item's key:
    /// ``KeyConflict/refuse`` (``VaultError/Code/exists``, naming that item), ``KeyConflict/replace`` or
    /// ``KeyConflict/keepBoth``. A class without key attributes never conflicts. Under
    /// ``WriteOptions/stampsDates``, a new item given no creation or modification date gets the commit's time.
    @discardableResult
    public func add(
        class itemClass: ItemClass = .genericPassword, attributes: Attributes, value: ValueSource,
        ifKeyExists conflict: KeyConflict = .refuse
    ) throws -> ItemID {
        try Transaction.check(itemClass, attributes)
        var key: ItemKeyValues?
        if conflict != .keepBoth, let k = keyOf(itemClass, attributes) {
            key = k
            let existing = try liveItems(withKey: k)
            if let found = existing.first {
                let first = found.id
                guard conflict == .replace else {
                    throw VaultError(
                        .exists, item: first,
                        "an item of class \(itemClass.rawValue) with the key \(k.text) is already in the vault "
                            + "(item \(first)); add it with ifKeyExists: .replace to replace it")
                }
                guard existing.count == 1 else {
                    throw VaultError(
                        .exists, item: first,
                        "\(existing.count) items of class \(itemClass.rawValue) have the key \(k.text); "
                            + "update the one to change by its id")
                }
                // Known to the transaction as the index found it: on demand, nothing else is read.
                changes.know(found)
                try update(first, class: itemClass, attributes: attributes, value: value)
                return first
            }
        }
        guard changes.held.count < Limits.itemsMax else {
            throw VaultError(.invalidArgument, "a vault holds at most \(Limits.itemsMax) items")
        }
        var attributes = attributes
        if let stamp {
            for name in [AttributeName.creationDate, AttributeName.modificationDate] where attributes[name] == nil {
                attributes[name] = .date(nanoseconds: stamp)
            }
            try Transaction.check(itemClass, attributes)
        }
        let id = try changes.add(class: itemClass, attributes: attributes, value: value)
        if keepsKeys, let key = key ?? keyOf(itemClass, attributes) { remember(id, under: key) }
        return id
    }

    /// Changes an item's class or attributes, its value, or both. `attributes` replaces the item's attributes
    /// (under ``WriteOptions/stampsDates``, the creation date they leave out is kept and the modification
    /// date is the commit's time unless they change it).
    public func update(
        _ id: ItemID, class itemClass: ItemClass? = nil, attributes: Attributes? = nil,
        value: ValueSource? = nil
    ) throws {
        guard let item = try current(id) else { throw VaultError(.itemNotFound, item: id, "item \(id)") }
        var attributes = attributes
        if let stamp {
            var stamped = attributes ?? item.attributes
            let created = AttributeName.creationDate
            let modified = AttributeName.modificationDate
            if stamped[created] == nil, let kept = item.attributes[created] { stamped[created] = kept }
            if stamped[modified] == nil || stamped[modified] == item.attributes[modified] {
                stamped[modified] = .date(nanoseconds: stamp)
            }
            attributes = stamped
        }
        try changes.update(item, class: itemClass, attributes: attributes, value: value)
        if keepsKeys, itemClass != nil || attributes != nil,
            let key = keyOf(itemClass ?? item.itemClass, attributes ?? item.attributes)
        {
            remember(id, under: key)
        }
    }

    /// Removes an item.
    public func delete(_ id: ItemID) throws {
        guard let item = try current(id) else { throw VaultError(.itemNotFound, item: id, "item \(id)") }
        try changes.delete(item)
    }

    // MARK: Keys

    /// Version 1: the ids of live items under each key, built from every item on the first add that checks,
    /// then kept up by every add and update (an id under a key its item no longer has is dropped when it is
    /// looked up).
    private var idsByKey: [ItemKeyValues: [ItemID]]?
    /// Version 2: the ids this transaction added or moved under each key (the vault's index answers for the
    /// stored items, so that a commit of one item reads a few pages, not every item). Built from the changed
    /// items on the first add that checks keys, then kept up: a transaction whose adds never check (an import
    /// through the keychain, which checks its own primary keys: ``KeyConflict/keepBoth``) never holds one,
    /// which was a quarter of the memory and of the time of a large import (1M items: 1.33 GB and 30.7 s
    /// with it, 1.01 GB and 23.4 s without).
    private var changedIDsByKey: [ItemKeyValues: [ItemID]]?

    /// Whether an add or update must record the key it gives an item (one of the maps above is built).
    private var keepsKeys: Bool { changedIDsByKey != nil || idsByKey != nil }

    /// The key of an item of class `itemClass` with `attributes`, or nil when the class has no key attributes.
    private func keyOf(_ itemClass: ItemClass, _ attributes: Attributes) -> ItemKeyValues? {
        guard let keyed = changes.keySchema.classes[itemClass.rawValue]?.keyAttributes, !keyed.isEmpty else {
            return nil
        }
        return ItemKeyValues(
            itemClass: itemClass, names: keyed.map(\.name),
            values: keyed.map { attributes[$0.name] ?? $0.defaultValue })
    }

    private func remember(_ id: ItemID, under key: ItemKeyValues) {
        if changedIDsByKey != nil {
            changedIDsByKey![key, default: []].append(id)
        } else if idsByKey != nil {
            idsByKey![key, default: []].append(id)
        }
    }

    /// The live items with `key`, as this transaction stands.
    private func liveItems(withKey key: ItemKeyValues) throws -> [Item] {
        // Each candidate as it stands now: the index answers for the stored items this transaction did not
        // touch (on demand, the transaction does not hold them), the transaction for the others.
        var candidates: [Item]
        if let (index, touched) = changes.storedIndex {
            if changedIDsByKey == nil {
                // In id order: which of several changed items with one key an error names does not depend on
                // the order a dictionary hands them over in.
                var all: [ItemKeyValues: [ItemID]] = [:]
                for id in touched.keys.sorted() {
                    if let item = touched[id] ?? nil, let k = keyOf(item.itemClass, item.attributes) {
                        all[k, default: []].append(id)
                    }
                }
                changedIDsByKey = all
            }
            candidates = try index.items(class: key.itemClass, keyValues: key.values).filter { touched[$0.id] == nil }
            candidates += (changedIDsByKey?[key] ?? []).compactMap { changes.item($0) }
        } else {
            if idsByKey == nil {
                var all: [ItemKeyValues: [ItemID]] = [:]
                for item in changes.held.values {
                    if let k = keyOf(item.itemClass, item.attributes) { all[k, default: []].append(item.id) }
                }
                idsByKey = all
            }
            candidates = (idsByKey?[key] ?? []).compactMap { changes.item($0) }
        }
        // An id may be listed twice, or under a key its item no longer has (moved or deleted since).
        var seen = Set<ItemID>()
        return candidates.filter { item in
            seen.insert(item.id).inserted && keyOf(item.itemClass, item.attributes) == key
        }
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
            guard value.byteCount <= Limits.attrValueMax else {
                throw VaultError(.invalidArgument, "attribute \(name) longer than \(Limits.attrValueMax) bytes")
            }
        }
    }
}

/// What ``Transaction/add(class:attributes:value:ifKeyExists:)`` does when a live item already has the new
/// item's key.
public enum KeyConflict: Sendable {
    /// Throws ``VaultError/Code/exists`` naming the item that has the key; nothing is added.
    case refuse
    /// Replaces that item's class, attributes and value (as ``Transaction/update(_:class:attributes:value:)``:
    /// it keeps its id, and in the current format its old value stays in its history). Refused when several
    /// items have the key.
    case replace
    /// Adds the item beside it: two items with one key, which a lookup by key finds both of (as a merge of
    /// two copies that each added one can also leave). For callers that know their keys are distinct.
    case keepBoth
}

/// An item's key: its class and the values of the class's key attributes. Two keys are equal when their
/// encodings are (SPEC.md Part 4, V3.1: strings compare as bytes, so "é" and "e\u{301}", equal as Swift
/// strings, are two keys, as they are two names to `extract`).
struct ItemKeyValues: Hashable {
    let itemClass: ItemClass
    let names: [String]
    let values: [AttributeValue]
    /// `ordered-string(class) || typed key values`: what equality and hashing use.
    let bytes: [UInt8]

    init(itemClass: ItemClass, names: [String], values: [AttributeValue]) {
        self.itemClass = itemClass
        self.names = names
        self.values = values
        bytes = ItemKey.prefix(class: itemClass.rawValue, values: values)
    }

    static func == (a: ItemKeyValues, b: ItemKeyValues) -> Bool { a.bytes == b.bytes }
    func hash(into h: inout Hasher) { h.combine(bytes) }

    /// The key as an error shows it (attribute values are not secret: `kcar list` shows them).
    var text: String {
        func shown(_ v: AttributeValue) -> String {
            switch v {
            case .string(let s): return "\"\(s.count > 64 ? s.prefix(64) + "..." : s)\""
            case .integer(let n): return String(n)
            case .bool(let b): return String(b)
            case .date(let ns): return "\(ns) ns"
            case .data(let d): return "0x" + Hex.encode(Array(d.prefix(32))) + (d.count > 32 ? "..." : "")
            }
        }
        return "(" + zip(names, values).map { "\($0)=\(shown($1))" }.joined(separator: ", ") + ")"
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
    /// How the vault keys its items: what ``Transaction/add(class:attributes:value:ifKeyExists:)`` checks.
    var keySchema: IndexSchema { get }
    /// The index of the items as stored before this transaction, and the items the transaction changed since
    /// (nil: deleted), whether or not every item is held (nil: the format keeps no index).
    var storedIndex: (index: ItemIndex, touched: [ItemID: Item?])? { get }
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
    var keySchema: IndexSchema { .primaryKeys }
    var storedIndex: (index: ItemIndex, touched: [ItemID: Item?])? { nil }
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
