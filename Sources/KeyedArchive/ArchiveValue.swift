#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One heterogeneous value: what an archive stores.
///
/// Values are plain Swift values: equality is structural. Identity exists only where it is written down: a
/// ``shared(_:)`` box. The same box used at several places is archived once and decodes as one box; two
/// different boxes, or two equal containers, stay distinct (SPEC.md Part 2 §A4). Boxes are immutable, so a
/// value can never contain itself: cycles cannot be built, and the reader refuses archives that describe one.
///
/// Kinds never merge: `.bool(true)`, `.int(1)`, `.uint(1)` and `.double(1)` are four different values.
/// Doubles and dates compare by bit pattern, so `NaN == NaN` (same payload) and `0.0 != -0.0`: two values are
/// equal exactly when they archive to the same scalar bytes.
public enum ArchiveValue: Sendable {
    /// No value (NSNull, Swift `nil`).
    case null
    /// A Boolean.
    case bool(Bool)
    /// A signed 64-bit integer.
    case int(Int64)
    /// An unsigned 64-bit integer (a kind of its own: `.uint(1) != .int(1)`).
    case uint(UInt64)
    /// An IEEE 754 binary64, every bit pattern kept (NaN payloads, the sign of zero).
    case double(Double)
    /// A string, kept as its UTF-8 bytes (no normalization).
    case string(String)
    /// Bytes.
    case data(Data)
    /// A point in time, kept as its `timeIntervalSinceReferenceDate` bits.
    case date(Date)
    /// A UUID.
    case uuid(UUID)
    /// A URL: its relative string and, if any, its base URL (kept as the base's absolute string).
    case url(URL)
    /// An ordered list of values.
    case array([ArchiveValue])
    /// A dictionary with string keys.
    case dictionary([String: ArchiveValue])
    /// A dictionary whose keys are any values.
    case anyKeyDictionary([ArchiveValue: ArchiveValue])
    /// An unordered set of distinct values.
    case set(Set<ArchiveValue>)
    /// An instance of a named class: its class name and keyed fields.
    case object(ArchiveObject)
    /// A value with an identity: every use of the same box is archived once and decodes as the same box.
    case shared(ArchiveShared)
}

/// An instance of a named class, as an archive keeps it: the class name and the fields by key.
public struct ArchiveObject: Sendable, Hashable {
    /// The stable name the class is registered under (never resolved to a type at run time).
    public var className: String
    /// The object's fields, by key.
    public var fields: [String: ArchiveValue]

    /// An instance of the class registered as `className` with `fields`.
    public init(className: String, fields: [String: ArchiveValue] = [:]) {
        self.className = className
        self.fields = fields
    }
}

/// An immutable box that gives a value an identity (reference semantics). Equality is that of the contents;
/// sharing is kept by the archive: the same box used twice is written once and read back as one box.
public final class ArchiveShared: Sendable, Hashable {
    /// The value in the box.
    public let value: ArchiveValue
    // Hashed once, so hashing a graph of boxes costs its size, not its expansion.
    private let contentHash: Int

    /// A new box, with an identity of its own, holding `value`.
    public init(_ value: ArchiveValue) {
        self.value = value
        self.contentHash = value.hashValue
    }

    /// Boxes are equal when they are the same box or hold equal values.
    public static func == (lhs: ArchiveShared, rhs: ArchiveShared) -> Bool {
        lhs === rhs || (lhs.contentHash == rhs.contentHash && lhs.value == rhs.value)
    }

    /// Hashes the contents (computed once, when the box was made).
    public func hash(into hasher: inout Hasher) { hasher.combine(contentHash) }
}

extension ArchiveValue: Hashable {
    /// Structural equality: same kind and equal contents, doubles and dates by bit pattern.
    public static func == (lhs: ArchiveValue, rhs: ArchiveValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.uint(let a), .uint(let b)): return a == b
        case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern
        case (.string(let a), .string(let b)): return a == b
        case (.data(let a), .data(let b)): return a == b
        case (.date(let a), .date(let b)):
            return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.uuid(let a), .uuid(let b)): return a == b
        case (.url(let a), .url(let b)):
            return a.relativeString == b.relativeString && a.baseURL?.absoluteString == b.baseURL?.absoluteString
        case (.array(let a), .array(let b)): return a == b
        case (.dictionary(let a), .dictionary(let b)): return a == b
        case (.anyKeyDictionary(let a), .anyKeyDictionary(let b)): return a == b
        case (.set(let a), .set(let b)): return a == b
        case (.object(let a), .object(let b)): return a == b
        case (.shared(let a), .shared(let b)): return a == b
        default: return false
        }
    }

    /// Hashes the kind and the contents, as ``==(_:_:)`` compares them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(hashTag)
        switch self {
        case .null: break
        case .bool(let v): hasher.combine(v)
        case .int(let v): hasher.combine(v)
        case .uint(let v): hasher.combine(v)
        case .double(let v): hasher.combine(v.bitPattern)
        case .string(let v): hasher.combine(v)
        case .data(let v): hasher.combine(v)
        case .date(let v): hasher.combine(v.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let v): hasher.combine(v)
        case .url(let v):
            hasher.combine(v.relativeString)
            hasher.combine(v.baseURL?.absoluteString)
        case .array(let v): hasher.combine(v)
        case .dictionary(let v): hasher.combine(v)
        case .anyKeyDictionary(let v): hasher.combine(v)
        case .set(let v): hasher.combine(v)
        case .object(let v): hasher.combine(v)
        case .shared(let v): hasher.combine(v)
        }
    }

    /// The kind as a number: hashing ``kind``'s name would hash a string for every value (nested sets hash
    /// every value inside them with a hasher of its own).
    private var hashTag: UInt8 {
        switch self {
        case .null: 0
        case .bool: 1
        case .int: 2
        case .uint: 3
        case .double: 4
        case .string: 5
        case .data: 6
        case .date: 7
        case .uuid: 8
        case .url: 9
        case .array: 10
        case .dictionary: 11
        case .anyKeyDictionary: 12
        case .set: 13
        case .object: 14
        case .shared: 15
        }
    }
}

extension ArchiveValue {
    /// The kinds of value, as an open set of names (for errors and descriptions).
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The kind's name.
        public let rawValue: String
        /// A kind by its name (the ones below are those ``ArchiveValue`` has).
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The kind's name, as errors show it.
        public var description: String { rawValue }

        /// ``ArchiveValue/null``; each kind below is the case of the same name.
        public static let null = Kind(rawValue: "null")
        /// ``ArchiveValue/bool(_:)``.
        public static let bool = Kind(rawValue: "bool")
        /// ``ArchiveValue/int(_:)``.
        public static let int = Kind(rawValue: "int")
        /// ``ArchiveValue/uint(_:)``.
        public static let uint = Kind(rawValue: "uint")
        /// ``ArchiveValue/double(_:)``.
        public static let double = Kind(rawValue: "double")
        /// ``ArchiveValue/string(_:)``.
        public static let string = Kind(rawValue: "string")
        /// ``ArchiveValue/data(_:)``.
        public static let data = Kind(rawValue: "data")
        /// ``ArchiveValue/date(_:)``.
        public static let date = Kind(rawValue: "date")
        /// ``ArchiveValue/uuid(_:)``.
        public static let uuid = Kind(rawValue: "uuid")
        /// ``ArchiveValue/url(_:)``.
        public static let url = Kind(rawValue: "url")
        /// ``ArchiveValue/array(_:)``.
        public static let array = Kind(rawValue: "array")
        /// ``ArchiveValue/dictionary(_:)``.
        public static let dictionary = Kind(rawValue: "dictionary")
        /// ``ArchiveValue/anyKeyDictionary(_:)``.
        public static let anyKeyDictionary = Kind(rawValue: "anyKeyDictionary")
        /// ``ArchiveValue/set(_:)``.
        public static let set = Kind(rawValue: "set")
        /// ``ArchiveValue/object(_:)``.
        public static let object = Kind(rawValue: "object")
        /// ``ArchiveValue/shared(_:)``.
        public static let shared = Kind(rawValue: "shared")
    }

    /// This value's kind (a shared box reports `.shared`, not the kind of its contents).
    public var kind: Kind {
        switch self {
        case .null: .null
        case .bool: .bool
        case .int: .int
        case .uint: .uint
        case .double: .double
        case .string: .string
        case .data: .data
        case .date: .date
        case .uuid: .uuid
        case .url: .url
        case .array: .array
        case .dictionary: .dictionary
        case .anyKeyDictionary: .anyKeyDictionary
        case .set: .set
        case .object: .object
        case .shared: .shared
        }
    }

    /// The value with every enclosing shared box removed (a box's contents are never a cycle, so this ends).
    public var unshared: ArchiveValue {
        var v = self
        while case .shared(let box) = v { v = box.value }
        return v
    }

    /// Wraps the value in a new shared box: use the result at several places to store it once.
    public func makeShared() -> ArchiveValue { .shared(ArchiveShared(self)) }

    /// A new `.object` value.
    public static func object(_ className: String, _ fields: [String: ArchiveValue]) -> ArchiveValue {
        .object(ArchiveObject(className: className, fields: fields))
    }

    /// Whether the value (inside any shared box) is `.null`.
    public var isNull: Bool { if case .null = unshared { true } else { false } }
    /// The Boolean, if the value (inside any shared box) is one; nil otherwise. The same for the other kinds below.
    public var boolValue: Bool? { if case .bool(let v) = unshared { v } else { nil } }
    /// The signed integer, if the value is one (a `.uint` is not).
    public var intValue: Int64? { if case .int(let v) = unshared { v } else { nil } }
    /// The unsigned integer, if the value is one (an `.int` is not).
    public var uintValue: UInt64? { if case .uint(let v) = unshared { v } else { nil } }
    /// The double, if the value is one.
    public var doubleValue: Double? { if case .double(let v) = unshared { v } else { nil } }
    /// The string, if the value is one.
    public var stringValue: String? { if case .string(let v) = unshared { v } else { nil } }
    /// The bytes, if the value is data.
    public var dataValue: Data? { if case .data(let v) = unshared { v } else { nil } }
    /// The date, if the value is one.
    public var dateValue: Date? { if case .date(let v) = unshared { v } else { nil } }
    /// The UUID, if the value is one.
    public var uuidValue: UUID? { if case .uuid(let v) = unshared { v } else { nil } }
    /// The URL, if the value is one.
    public var urlValue: URL? { if case .url(let v) = unshared { v } else { nil } }
    /// The elements, if the value is an array.
    public var arrayValue: [ArchiveValue]? { if case .array(let v) = unshared { v } else { nil } }
    /// The entries, if the value is a string-keyed dictionary.
    public var dictionaryValue: [String: ArchiveValue]? { if case .dictionary(let v) = unshared { v } else { nil } }
    /// The object, if the value is one.
    public var objectValue: ArchiveObject? { if case .object(let v) = unshared { v } else { nil } }

    /// The element at `index` of an array, or nil.
    public subscript(index: Int) -> ArchiveValue? {
        guard let a = arrayValue, a.indices.contains(index) else { return nil }
        return a[index]
    }

    /// The value for `key` of a string-keyed dictionary or an object's field, or nil.
    public subscript(key: String) -> ArchiveValue? {
        switch unshared {
        case .dictionary(let d): d[key]
        case .object(let o): o.fields[key]
        default: nil
        }
    }
}

extension ArchiveValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `nil` is `.null`.
    public init(nilLiteral: ()) { self = .null }
    /// `true` and `false` are `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// Integer literals are signed: write `.uint(...)` for an unsigned value.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A floating-point literal is `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string literal is `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array literal is `.array`.
    public init(arrayLiteral elements: ArchiveValue...) { self = .array(elements) }
    /// A string-keyed dictionary; a repeated key keeps the last value.
    public init(dictionaryLiteral elements: (String, ArchiveValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension ArchiveValue: CustomStringConvertible {
    /// A compact text form for debugging (it shows the values: never log it for secrets).
    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let v): "\(v)"
        case .int(let v): "\(v)"
        case .uint(let v): "\(v)u"
        case .double(let v): "\(v)"
        case .string(let v): String(reflecting: v)
        case .data(let v): "<\(v.count) bytes>"
        case .date(let v): "date(\(v.timeIntervalSinceReferenceDate))"
        case .uuid(let v): "uuid(\(v.uuidString))"
        case .url(let v): "url(\(v.absoluteString))"
        case .array(let v): "\(v)"
        case .dictionary(let v): "\(v)"
        case .anyKeyDictionary(let v): "anyKey\(v)"
        case .set(let v): "set\(Array(v))"
        case .object(let v): "\(v.className)\(v.fields)"
        case .shared(let v): "shared(\(v.value))"
        }
    }
}
