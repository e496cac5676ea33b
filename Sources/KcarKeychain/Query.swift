import FoundationEssentials
import VaultFormat

/// One item of a keychain, as its group's index describes it: no value (read it with
/// ``KeychainStore/value(of:)``).
public struct KeychainItem: Hashable, Sendable {
    /// The access group (vault) that holds it.
    public let group: String
    /// The item's id in its group's vault.
    public let id: ItemID
    /// The item's class.
    public let itemClass: ItemClass
    /// Apple's attributes under their four-letter names, and user attributes under `@name`.
    public let attributes: Attributes
    /// Bytes of the value.
    public let size: UInt64

    init(group: String, _ item: Item, size: UInt64? = nil) {
        self.group = group
        id = item.id
        itemClass = item.itemClass
        attributes = item.attributes
        self.size = size ?? item.size
    }

    /// User attributes, named without their `@`.
    public var userAttributes: [String: AttributeValue] {
        var out: [String: AttributeValue] = [:]
        for (name, value) in attributes where name.hasPrefix(Schema.userPrefix) {
            out[String(name.dropFirst())] = value
        }
        return out
    }

    /// Whether the item's accessibility keeps it on this device.
    public var isDeviceOnly: Bool { Schema.isDeviceOnly(attributes) }
}

/// Which items an operation applies to (SPEC.md §K5): a class, exact attribute values, optionally a group.
public struct ItemQuery: Sendable {
    /// The class of the items searched for.
    public var itemClass: ItemClass
    /// Exact values to match: Apple names (`svce`, `acct`, ...) and user attributes as `@name`.
    public var attributes: Attributes
    /// Restrict to one group; nil spans the process's access groups.
    public var group: String?
    /// At most this many results (nil: all).
    public var limit: Int?
    /// Compare strings after Unicode case folding.
    public var caseInsensitive: Bool
    /// Match synchronizable and non-synchronizable items alike (`kSecAttrSynchronizableAny`).
    public var synchronizableAny: Bool
    /// Compare date attributes as Swift `Date`s (SPEC.md §K5): an item's date matches when the `Date` kcar
    /// returns for it has the nanoseconds asked for (``KeychainDate/nanoseconds(_:)``), so the attributes a
    /// search returned find their item again. The SecItem functions set it; nil compares nanoseconds exactly.
    public var datesAsDate = false

    /// A search for items of `itemClass` whose attributes match `attributes`, in `group` (nil: every group of the process's list), at most `limit` of them (nil: all); see the properties for `caseInsensitive` and `synchronizableAny`.
    public init(
        class itemClass: ItemClass = .genericPassword, attributes: Attributes = Attributes(), group: String? = nil,
        limit: Int? = nil, caseInsensitive: Bool = false, synchronizableAny: Bool = false
    ) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.group = group
        self.limit = limit
        self.caseInsensitive = caseInsensitive
        self.synchronizableAny = synchronizableAny
    }

    /// A generic-password query by service and account.
    public static func password(service: String? = nil, account: String? = nil, group: String? = nil) -> ItemQuery {
        var a = Attributes()
        if let service { a[AttributeName.service] = .string(service) }
        if let account { a[AttributeName.account] = .string(account) }
        return ItemQuery(class: .genericPassword, attributes: a, group: group)
    }

    /// Checks that every attribute may be asked for this class.
    func validate() throws {
        try Schema.validate(attributes, class: itemClass.rawValue)
    }

    func matches(_ item: Item) -> Bool {
        guard item.itemClass == itemClass else { return false }
        let c = itemClass.rawValue
        for (name, wanted) in attributes {
            if name == "sync", synchronizableAny { continue }
            let have = item.attributes[name] ?? Schema.kind(of: name, class: c)?.defaultValue
            guard let have else { return false }
            if case .string(let a) = have, case .string(let b) = wanted {
                // Bytes, not Swift's canonical equivalence; case-insensitive: Unicode's default lowercase mapping.
                if sameBytes(a, b) { continue }
                if caseInsensitive, a.lowercased().utf8.elementsEqual(b.lowercased().utf8) { continue }
                return false
            }
            if datesAsDate, case .date(let a) = have, case .date(let b) = wanted {
                guard KeychainDate.roundTrip(a) == b else { return false }
                continue
            }
            guard have == wanted else { return false }
        }
        // Checked last: most items fail on an attribute asked for, and this is a lookup in every item.
        if !synchronizableAny, attributes["sync"] == nil, case .bool(true)? = item.attributes["sync"] { return false }
        return true
    }

    /// The matching items of one vault, in the vault's item order (service, account, id; UTF-8 bytes).
    func select(_ items: some Sequence<Item>) -> [Item] {
        items.filter(matches).sorted { a, b in
            let sa = a.service ?? ""
            let sb = b.service ?? ""
            if !sameBytes(sa, sb) { return sa.utf8.lexicographicallyPrecedes(sb.utf8) }
            let aa = a.account ?? ""
            let ab = b.account ?? ""
            if !sameBytes(aa, ab) { return aa.utf8.lexicographicallyPrecedes(ab.utf8) }
            return a.id < b.id
        }
    }
}

extension ItemQuery {
    /// The same query without a result limit (update and delete apply to every match).
    var unlimited: ItemQuery {
        var q = self
        q.limit = nil
        return q
    }
}

/// Dates between a keychain's nanoseconds (SPEC.md §K3) and Swift's `Date`, whose `Double` of seconds
/// since 2001 keeps about a quarter of a microsecond today: one conversion each way, used by every API.
public enum KeychainDate {
    /// The `Date` of an attribute's nanoseconds since 1970.
    public static func date(_ nanoseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(nanoseconds) / 1e9) }

    /// The nanoseconds since 1970 of a `Date`, rounded to the nearest, clamped to the range of Int64.
    public static func nanoseconds(_ d: Date) -> Int64 {
        let ns = (d.timeIntervalSince1970 * 1e9).rounded()
        return ns >= 9.2e18 ? Int64.max : ns <= -9.2e18 ? Int64.min : Int64(ns)
    }

    /// What a date reads as after a trip through `Date`: the value a query made from a returned `Date` holds.
    static func roundTrip(_ nanoseconds: Int64) -> Int64 { self.nanoseconds(date(nanoseconds)) }
}

/// Whether two strings have the same UTF-8 bytes. Swift's `==` (canonical equivalence) is a fast necessary
/// condition; the bytes are compared only when it holds.
@inline(__always)
func sameBytes(_ a: String, _ b: String) -> Bool {
    a.utf8.count == b.utf8.count && a == b && a.utf8.elementsEqual(b.utf8)
}
