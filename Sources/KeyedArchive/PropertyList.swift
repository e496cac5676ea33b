#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A property list, as a `bplist00` or XML plist holds it: the layer NSKeyedArchiver archives are written in.
///
/// A tree of values; the binary format's shared objects become shared storage here (copy-on-write arrays), and
/// the reader bounds the tree they stand for (``ArchiveLimits/maxExpandedValues``, ``ArchiveLimits/maxDepth``),
/// so walking a tree the reader returned is bounded too.
public enum PropertyList: Hashable, Sendable {
    /// The `0x00` marker (binary only; never written by NSKeyedArchiver).
    case null
    /// A Boolean.
    case bool(Bool)
    /// An integer of 1, 2, 4 (unsigned) or 8 (signed) bytes.
    case int(Int64)
    /// A 16-byte integer whose high 8 bytes are zero: CoreFoundation's form of an unsigned 64-bit value.
    case uint(UInt64)
    /// A real of 4 or 8 bytes, as a Double.
    case real(Double)
    /// Seconds since 2001-01-01T00:00:00Z.
    case date(Double)
    /// Bytes.
    case data(Data)
    /// A string (ASCII or UTF-16 in the file).
    case string(String)
    /// A keyed-archiver reference: an index into `$objects`.
    case uid(UInt64)
    /// An array, in file order.
    case array([PropertyList])
    /// A set, in file order (the format allows repeats; readers of keyed archives check them).
    case set([PropertyList])
    /// A dictionary with string keys (keyed archives use no others).
    case dictionary([String: PropertyList])

    /// The string, if this is one.
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    /// The UID, if this is one.
    public var uidValue: UInt64? { if case .uid(let u) = self { u } else { nil } }
    /// The dictionary, if this is one.
    public var dictionaryValue: [String: PropertyList]? { if case .dictionary(let d) = self { d } else { nil } }

    /// A short name of the kind, for error contexts (never the value itself).
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .uint: "uint"
        case .real: "real"
        case .date: "date"
        case .data: "data"
        case .string: "string"
        case .uid: "uid"
        case .array: "array"
        case .set: "set"
        case .dictionary: "dictionary"
        }
    }
}

extension ArchiveError.Code {
    /// The input is neither a `bplist00` nor an XML property list.
    public static let notAPropertyList = Self(rawValue: "not a property list")
    /// A binary plist trailer is impossible: zero or oversized field sizes, a top object or offset table outside
    /// the file, an object count that the reference size cannot address.
    public static let invalidPlistTrailer = Self(rawValue: "invalid plist trailer")
    /// A binary plist object offset points outside the object area.
    public static let invalidPlistOffset = Self(rawValue: "invalid plist offset")
    /// An ASCII or UTF-16 plist string is not valid text.
    public static let invalidString = Self(rawValue: "invalid string")
    /// A plist dictionary key is not a string.
    public static let nonStringKey = Self(rawValue: "non-string key")
    /// A valid property list that is not an NSKeyedArchiver archive (no `$archiver`, `$top` or `$objects`).
    public static let notAKeyedArchive = Self(rawValue: "not a keyed archive")
    /// A `$class` reference that is not a class description (`$classname` string, `$classes` strings).
    public static let badClass = Self(rawValue: "bad class")
    /// A field a class requires is absent.
    public static let missingField = Self(rawValue: "missing field")
    /// A field has the wrong plist type for its class (`NS.time` a string, `NS.objects` not an array).
    public static let wrongFieldType = Self(rawValue: "wrong field type")
    /// `NS.keys` and `NS.objects` have different counts.
    public static let countMismatch = Self(rawValue: "count mismatch")
    /// Export met a value NSKeyedArchiver cannot hold as is (a reserved class or field name).
    public static let notExportable = Self(rawValue: "not exportable")
}

extension PropertyList: ExpressibleByStringLiteral {
    /// A string literal is `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
}
