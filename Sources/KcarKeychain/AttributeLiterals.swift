import FoundationEssentials
import VaultFormat

// Literals and `Date`s for attribute values, so that typed code reads as SecItem code does:
// `["category": "admin", "level": 3, "when": .date(Date())]`.

extension AttributeValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral
{
    /// `"admin"` is `.string("admin")`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// `3` is `.integer(3)`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// `true` is `.bool(true)`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension AttributeValue {
    /// A date attribute from a `Date` (kept to the nanosecond the `Date` rounds to; SPEC.md §K5).
    public static func date(_ date: Date) -> AttributeValue { .date(nanoseconds: KeychainDate.nanoseconds(date)) }

    /// The `Date` of a date attribute, nil for another type.
    public var dateValue: Date? {
        guard case .date(let ns) = self else { return nil }
        return KeychainDate.date(ns)
    }
}

// `ArchiveValue`'s spellings, so code that builds both reads alike. The stored cases keep
// their names (`integer`, `data([UInt8])`, `date(nanoseconds:)`), which the vault format and existing code use;
// these build the same values and read them back.
extension AttributeValue {
    /// `ArchiveValue.int`: the same as ``integer(_:)``.
    public static func int(_ value: Int64) -> AttributeValue { .integer(value) }
    /// `ArchiveValue.data` takes `Data`: the same bytes as ``data(_:)`` with `[UInt8]`.
    public static func data(_ value: Data) -> AttributeValue { .data([UInt8](value)) }

    /// The string of a string attribute, nil for another type (as `ArchiveValue.stringValue`).
    public var stringValue: String? { if case .string(let v) = self { v } else { nil } }
    /// The integer of an integer attribute (as `ArchiveValue.intValue`).
    public var intValue: Int64? { if case .integer(let v) = self { v } else { nil } }
    /// The flag of a boolean attribute (as `ArchiveValue.boolValue`).
    public var boolValue: Bool? { if case .bool(let v) = self { v } else { nil } }
    /// The bytes of a data attribute (as `ArchiveValue.dataValue`).
    public var dataValue: Data? { if case .data(let v) = self { Data(v) } else { nil } }
}

extension KeychainItem {
    /// `kSecAttrService`: the service of a generic password.
    public var service: String? { attributes.string(AttributeName.service) }
    /// `kSecAttrAccount`: the key of a value in the typed API.
    public var account: String? { attributes.string(AttributeName.account) }
    /// `kSecAttrLabel`.
    public var label: String? { attributes.string(AttributeName.label) }
    /// `kSecAttrCreationDate`, as a `Date`.
    public var creationDate: Date? { attributes[AttributeName.creationDate]?.dateValue }
    /// `kSecAttrModificationDate`, as a `Date`.
    public var modificationDate: Date? { attributes[AttributeName.modificationDate]?.dateValue }
}
