#if canImport(Glibc)
import Glibc
#endif
import VaultFormat

/// The changes to one access group that commit together (``KeychainStore/transaction(group:_:)``). Enforces
/// the primary-key rule (SPEC.md §K4) on every add and update.
public final class GroupTransaction {
    public let group: String
    let tx: Transaction
    let vault: Vault
    /// Primary key -> item, built on first need.
    private var keys: [PrimaryKey: ItemID]?

    init(group: String, _ tx: Transaction, vault: Vault) {
        self.group = group
        self.tx = tx
        self.vault = vault
    }

    /// The value of an item as it was committed before this transaction began.
    public func value(of item: KeychainItem) throws -> [UInt8] {
        guard let committed = vault.item(item.id) else {
            throw KeychainError(.itemNotFound, "the item was added in this transaction; its value is not readable yet")
        }
        return try vault.read(committed)
    }

    private func keyIndex() -> [PrimaryKey: ItemID] {
        if let keys { return keys }
        let all = tx.items
        var k: [PrimaryKey: ItemID] = [:]
        k.reserveCapacity(all.count)
        for item in all { k[PrimaryKey(item.itemClass.rawValue, item.attributes)] = item.id }
        keys = k
        return k
    }

    /// The group's items as they stand in this transaction.
    public var items: [KeychainItem] { tx.items.map { KeychainItem(group: group, $0) } }

    /// The matching items as they stand in this transaction (the query's group is ignored).
    public func find(_ query: ItemQuery) -> [KeychainItem] {
        var found = query.select(tx.items)
        if let limit = query.limit { found = Array(found.prefix(limit)) }
        return found.map { KeychainItem(group: group, $0) }
    }

    /// Adds an item; sets `cdat`, `mdat` (now) and `pdmn` (`ak`) unless given.
    @discardableResult
    public func add(class itemClass: ItemClass = .genericPassword, attributes: Attributes, value: [UInt8]) throws -> KeychainItem {
        var a = attributes
        try Schema.validate(a, class: itemClass.rawValue)
        let now = AttributeValue.date(nanoseconds: currentNanoseconds())
        if a["cdat"] == nil { a["cdat"] = now }
        if a["mdat"] == nil { a["mdat"] = now }
        if a["pdmn"] == nil { a["pdmn"] = .string("ak") }
        let pk = PrimaryKey(itemClass.rawValue, a)
        if keyIndex()[pk] != nil { throw KeychainError(.duplicateItem, "an item with the same \(describe(pk)) exists in group \(group)") }
        let id = try rebuildingOnError { try tx.add(class: itemClass, attributes: a, value: .bytes(value)) }
        keys![pk] = id  // in place: a copy per add would make a batch quadratic
        return KeychainItem(group: group, tx.item(id)!, size: UInt64(value.count))
    }

    /// Changes items: attributes set (a nil value removes the attribute), `mdat` to now, and the value if given.
    /// Refuses (``KeychainStatus/duplicateItem``) a change that would give two items one primary key.
    public func update(_ ids: [ItemID], set changes: [String: AttributeValue?], value: [UInt8]?) throws {
        // A copy, so a refused change leaves the index as it was.
        var index = keyIndex()
        var planned: [(ItemID, Attributes)] = []
        for id in ids {
            guard let item = tx.item(id) else { throw KeychainError(.itemNotFound, "item \(id)") }
            index[PrimaryKey(item.itemClass.rawValue, item.attributes)] = nil
            var a = item.attributes
            for (name, v) in changes { a[name] = v }
            if changes["mdat"] == nil { a["mdat"] = .date(nanoseconds: currentNanoseconds()) }
            try Schema.validate(a, class: item.itemClass.rawValue)
            planned.append((id, a))
        }
        for (id, a) in planned {
            let pk = PrimaryKey(tx.item(id)!.itemClass.rawValue, a)
            if index[pk] != nil {
                throw KeychainError(.duplicateItem, "the change would give two items the same \(describe(pk)) in group \(group)")
            }
            index[pk] = id
        }
        // A failure part-way (a vault limit) leaves some items changed: the index is rebuilt from the
        // transaction's state, so a caller that catches the error and goes on cannot add a duplicate.
        try rebuildingOnError {
            for (id, a) in planned { try tx.update(id, attributes: a, value: value.map { .bytes($0) }) }
        }
        keys = index
    }

    /// Removes an item.
    public func delete(_ id: ItemID) throws {
        guard let item = tx.item(id) else { throw KeychainError(.itemNotFound, "item \(id)") }
        try tx.delete(id)
        _ = keyIndex()
        keys![PrimaryKey(item.itemClass.rawValue, item.attributes)] = nil
    }

    private func rebuildingOnError<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            keys = nil
            throw error
        }
    }

    private func describe(_ pk: PrimaryKey) -> String {
        let names = Schema.primaryKey(pk.itemClass).filter { $0 != "sync" }
        return pk.itemClass + " " + names.joined(separator: "/")
    }
}

/// Nanoseconds since 1970, from the real-time clock.
func currentNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
