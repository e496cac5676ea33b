import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The changes to one access group that commit together (``KeychainStore/transaction(group:_:)``). Enforces
/// the primary-key rule (SPEC.md §K4) on every add and update.
public final class GroupTransaction {
    /// The access group whose vault this transaction changes.
    public let group: String
    let tx: Transaction
    let vault: Vault
    /// Primary key -> item for the items as they stand in this transaction: handed over by the store (kept
    /// from its last transaction on the group, when the items have not changed since) or built on first
    /// need, and kept up to date by every change made here, so one add to a large group does not hash all
    /// of its items again.
    private var keys: [PrimaryKey: ItemID]?
    /// Whether any change was made (added, updated or deleted).
    private(set) var changed = false
    /// Whether the first add without an index may look for its key by a scan instead of building the index
    /// (cheaper for one add, as a `kcar add` process makes; the store allows it on a group's first
    /// transaction, and later ones build the index and keep it).
    private var mayScan: Bool
    /// Set when the closure the transaction was given returns: its changes are then committed (or dropped),
    /// and the transaction refuses any further use.
    private var ended = false
    /// A version 2 vault opened with its items on demand, whose keys are the primary keys of §K4: primary
    /// keys are looked up in its items tree instead of an index of every item, and `pending` holds the keys
    /// this transaction took (an id) or gave up (nil) over what the vault held before it. `pendingValid`
    /// falls when a change failed part-way: the full index is built from then on.
    private var pending: [PrimaryKey: ItemID?] = [:]
    private var pendingValid = true
    /// Adds in bulk (``addInBulk(spillEvery:)``): `pending` holds at most this many keys (it is emptied when it
    /// is full), so an add finds a key taken by one of the adds just before it at once, by its place in the file;
    /// the commit refuses two adds with one key wherever they are. Nil: not in bulk.
    private var bulkWindow: Int?
    private var lookups: ItemIndex? {
        guard keys == nil, pendingValid else { return nil }
        return tx.itemIndex
    }

    init(group: String, _ tx: Transaction, vault: Vault, keys: [PrimaryKey: ItemID]? = nil, mayScan: Bool = false) {
        self.group = group
        self.tx = tx
        self.vault = vault
        self.keys = keys
        self.mayScan = mayScan
    }

    /// Ends the transaction: every method throws from now on, and the keys it took are let go before the
    /// commit writes its trees.
    func end() {
        ended = true
        pending = [:]
    }

    /// Throws ``KeychainStatus/param`` (``KeychainReason/transactionEnded``) once the closure has returned:
    /// a transaction kept after it would otherwise take changes that are never committed.
    private func live() throws {
        guard !ended else {
            throw KeychainError(
                .param,
                "the transaction on group \(group) has ended (its closure returned); make changes "
                    + "inside the closure, or start another transaction", reason: .transactionEnded)
        }
    }

    /// The value of an item as it was committed before this transaction began.
    public func value(of item: KeychainItem) throws -> [UInt8] {
        try live()
        guard let committed = try vault.current(item) else {
            throw KeychainError(.itemNotFound, "the item was added in this transaction; its value is not readable yet")
        }
        return try vault.read(committed)
    }

    private func buildKeys() throws {
        guard keys == nil else { return }
        try tx.loadAll()
        let all = tx.items
        var k: [PrimaryKey: ItemID] = [:]
        k.reserveCapacity(all.count)
        for item in all { k[PrimaryKey(item.itemClass.rawValue, item.attributes)] = item.id }
        keys = k
    }

    /// Whether an item holds `pk`: from the index, or, once, by comparing the key attributes of every item
    /// (no key built per item).
    private func isTaken(_ pk: PrimaryKey, _ attributes: Attributes) throws -> Bool {
        if let p = lookups, Schema.keysByPrimaryKey(p.schema, pk.itemClass) {
            if let held = pending[pk] { return held != nil }
            let holders = try p.items(
                class: ItemClass(rawValue: pk.itemClass),
                keyValues: Schema.primaryKeyValues(attributes, class: pk.itemClass))
            // An item this transaction changed holds the keys `pending` says.
            return holders.contains { tx.touchedItems[$0.id] == nil }
        }
        if keys == nil, mayScan, tx.itemIndex == nil {
            mayScan = false
            let wanted = Schema.primaryKeyValues(attributes, class: pk.itemClass)
            return tx.items.contains { item in
                item.itemClass.rawValue == pk.itemClass
                    && PrimaryKey.exactlyEqual(Schema.primaryKeyValues(item.attributes, class: pk.itemClass), wanted)
            }
        }
        try buildKeys()
        return keys![pk] != nil
    }

    /// Records that `id` now holds `pk` (nil: that `id` gave `pk` up), in whichever index this transaction keeps.
    private func setHolder(_ pk: PrimaryKey, _ id: ItemID, holds: Bool) {
        if keys != nil {
            if holds { keys![pk] = id } else if keys![pk] == id { keys![pk] = nil }
        } else if holds {
            pending[pk] = .some(id)
        } else if case .some(.some(let other)) = pending[pk], other != id {
            // Another changed item moved onto the key earlier: it keeps it.
        } else {
            pending.updateValue(nil, forKey: pk)
        }
    }

    /// Lets this transaction add any number of items in bounded memory (`kcar import --items`): the vault
    /// moves its adds out of memory every `count` changes, sealed into a temporary file that the commit merges
    /// back, and an add checks its primary key against the items stored before the transaction and the last
    /// `count` adds only; two adds of the transaction with one primary key further apart make the commit fail
    /// with ``KeychainStatus/duplicateItem``, nothing added. An item added may then no longer be known to the
    /// transaction: update or delete it in another. Returns false, changing nothing, where the group's vault
    /// cannot (its keys are not the primary keys of §K4 for every class, or the transaction has changed
    /// anything already).
    package func addInBulk(spillEvery count: Int = 65_536) -> Bool {
        guard !changed, keys == nil, let p = tx.itemIndex,
            ItemClass.keychainClasses.allSatisfy({ Schema.keysByPrimaryKey(p.schema, $0.rawValue) }),
            tx.spillAdds(every: count, refusingEqualKeys: true)
        else { return false }
        bulkWindow = count
        return true
    }

    /// The item with this id as it stands in this transaction: known from a search made in it, or read.
    private func item(_ id: ItemID) throws -> Item? { try tx.current(id) }

    /// Gives up the primary-key index (for the store to keep after the commit); nil if it was never built.
    func takeKeys() -> [PrimaryKey: ItemID]? {
        var k: [PrimaryKey: ItemID]?
        swap(&k, &keys)
        return k
    }

    /// The group's items as they stand in this transaction.
    public var items: [KeychainItem] {
        get throws {
            try live()
            try tx.loadAll()
            return tx.items.map { KeychainItem(group: group, $0) }
        }
    }

    /// The matching items as they stand in this transaction (the query's group is ignored).
    public func find(_ query: ItemQuery) throws -> [KeychainItem] {
        try live()
        var found: [Item]
        if let p = tx.itemIndex {
            // The vault's items before this transaction, less those it changed, plus those as it left them.
            let touched = tx.touchedItems
            found = try query.select(in: p).filter { touched[$0.id] == nil }
            for case let item? in touched.values where query.matches(item) { found.append(item) }
            found = query.select(found)
            for item in found { tx.know(item) }
        } else {
            found = query.select(tx.items)
        }
        if let limit = query.limit { found = Array(found.prefix(limit)) }
        return found.map { KeychainItem(group: group, $0) }
    }

    /// Adds an item; sets `cdat`, `mdat` (now) and `pdmn` (`ak`) unless given, and the attributes a
    /// certificate's or key's value gives (SPEC.md §K3.1) unless given.
    @discardableResult
    public func add(class itemClass: ItemClass = .genericPassword, attributes: Attributes, value: [UInt8]) throws
        -> KeychainItem
    {
        try live()
        try Schema.validate(attributes, class: itemClass.rawValue)
        var a = DerivedAttributes.filling(attributes, class: itemClass.rawValue, value: value)
        a.reserveCapacity(a.count + 3)
        let now = AttributeValue.date(nanoseconds: currentNanoseconds())
        if a["cdat"] == nil { a["cdat"] = now }
        if a["mdat"] == nil { a["mdat"] = now }
        if a["pdmn"] == nil { a["pdmn"] = .string("ak") }
        let pk = PrimaryKey(itemClass.rawValue, a)
        if try isTaken(pk, a) {
            throw KeychainError(.duplicateItem, "an item with the same \(describe(pk)) exists in group \(group)")
        }
        // Checked above by §K4's rules (which a vault's own key check would repeat at a lookup per add).
        let id = try rebuildingOnError {
            try tx.add(class: itemClass, attributes: a, value: .bytes(value), ifKeyExists: .keepBoth)
        }
        changed = true
        // In place: a copy per add would make a batch quadratic. Without an index (and without lookups), the
        // next add builds one from the items, this one included.
        if keys != nil || lookups != nil {
            // Emptied, not grown, in bulk: a key forgotten here is still refused by the commit.
            if let n = bulkWindow, pending.count >= n { pending.removeAll(keepingCapacity: true) }
            setHolder(pk, id, holds: true)
        }
        return KeychainItem(group: group, tx.item(id)!, size: UInt64(value.count))
    }

    /// Changes items: attributes set (a nil value removes the attribute), `mdat` to now, and the value if given.
    /// Refuses (``KeychainStatus/duplicateItem``) a change that would give two items one primary key, before
    /// changing anything.
    public func update(_ ids: [ItemID], set changes: [String: AttributeValue?], value: [UInt8]?) throws {
        try live()
        if lookups == nil { try buildKeys() }
        var planned: [(id: ItemID, old: PrimaryKey, new: PrimaryKey, attributes: Attributes)] = []
        for id in ids {
            guard let item = try item(id) else { throw KeychainError(.itemNotFound, "item \(id)") }
            var a = item.attributes
            for (name, v) in changes { a[name] = v }
            if changes["mdat"] == nil { a["mdat"] = .date(nanoseconds: currentNanoseconds()) }
            try Schema.validate(a, class: item.itemClass.rawValue)
            planned.append(
                (id, PrimaryKey(item.itemClass.rawValue, item.attributes), PrimaryKey(item.itemClass.rawValue, a), a))
        }
        // A changed item may take a key that another changed item gives up, but not one that an item left
        // alone holds, and no two changed items may take one key.
        let vacated = Set(planned.map(\.old))
        var taken = Set<PrimaryKey>()
        for p in planned {
            if try !taken.insert(p.new).inserted || (!vacated.contains(p.new) && isTaken(p.new, p.attributes)) {
                throw KeychainError(
                    .duplicateItem, "the change would give two items the same \(describe(p.new)) in group \(group)")
            }
        }
        // A vault limit can still refuse a change part-way; the index is then dropped (rebuilt from the
        // transaction's state on next need), so a caller that catches the error and goes on adds no duplicate.
        try rebuildingOnError {
            for p in planned {
                try tx.update(p.id, attributes: p.attributes, value: value.map { .bytes($0) })
                changed = true
                // The key may already belong to a changed item moved onto it earlier in this loop.
                setHolder(p.old, p.id, holds: false)
                setHolder(p.new, p.id, holds: true)
            }
        }
    }

    /// Removes an item.
    public func delete(_ id: ItemID) throws {
        try live()
        guard let item = try item(id) else { throw KeychainError(.itemNotFound, "item \(id)") }
        try tx.delete(id)
        changed = true
        if keys != nil || lookups != nil {
            setHolder(PrimaryKey(item.itemClass.rawValue, item.attributes), id, holds: false)
        }
    }

    private func rebuildingOnError<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            keys = nil
            mayScan = true
            pendingValid = false
            changed = true
            throw error
        }
    }

    private func describe(_ pk: PrimaryKey) -> String {
        let names = Schema.primaryKey(pk.itemClass).filter { $0 != "sync" }
        return pk.itemClass + " " + names.joined(separator: "/")
    }
}

/// Nanoseconds since 1970, from the real-time clock.
func currentNanoseconds() -> Int64 { HybridClock.nowNanoseconds() }
