/// An error from writing or reading an archive: a stable ``Code`` that callers compare, the byte offset in the
/// archive where reading failed (nil when writing), and a context that says what. The context never holds
/// the archived values themselves (they may be secrets).
public struct ArchiveError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as an open set of codes (new codes may be added in later versions).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as messages show it.
        public let rawValue: String
        /// A code by its name (the ones below are those kcar throws).
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The input does not start with the archive magic.
        public static let notAnArchive = Code(rawValue: "not an archive")
        /// The header names a format version this reader does not support.
        public static let unsupportedVersion = Code(rawValue: "unsupported version")
        /// A header flag this version does not define is set.
        public static let reservedFlags = Code(rawValue: "reserved flags set")
        /// The input ends inside an item.
        public static let truncated = Code(rawValue: "truncated")
        /// Bytes follow the root item.
        public static let trailingBytes = Code(rawValue: "trailing bytes")
        /// An item starts with a tag this version does not define.
        public static let unknownTag = Code(rawValue: "unknown tag")
        /// A varint is longer than needed or does not fit 64 bits.
        public static let nonMinimalVarint = Code(rawValue: "non-minimal varint")
        /// The encoding is valid but not the canonical one (a string defined twice, keys out of order, ...).
        public static let nonCanonical = Code(rawValue: "non-canonical encoding")
        /// A string is not valid UTF-8.
        public static let invalidUTF8 = Code(rawValue: "invalid UTF-8")
        /// A scalar's bytes do not make a value of its kind (an unparsable URL, an empty class name).
        public static let invalidValue = Code(rawValue: "invalid value")
        /// A dictionary key, object field or set element appears twice.
        public static let duplicateKey = Code(rawValue: "duplicate key")
        /// A string or shared reference names an index that was not defined before it.
        public static let badReference = Code(rawValue: "bad reference")
        /// A shared value contains itself, directly or not.
        public static let cycle = Code(rawValue: "cycle")
        /// A collection count is larger than the rest of the input could hold.
        public static let countExceedsInput = Code(rawValue: "count exceeds input")
        /// Nesting deeper than ``ArchiveLimits/maxDepth``.
        public static let depthLimit = Code(rawValue: "depth limit exceeded")
        /// More items than ``ArchiveLimits/maxValues``.
        public static let valueLimit = Code(rawValue: "value count limit exceeded")
        /// An archive larger than ``ArchiveLimits/maxBytes``.
        public static let sizeLimit = Code(rawValue: "size limit exceeded")
        /// A string or data longer than ``ArchiveLimits/maxStringLength`` / ``ArchiveLimits/maxDataLength``.
        public static let lengthLimit = Code(rawValue: "length limit exceeded")
        /// Shared references expand to more than ``ArchiveLimits/maxExpandedValues`` values.
        public static let expansionLimit = Code(rawValue: "expansion limit exceeded")
        /// A string holds a run of more than ``ArchiveLimits/maxNonStarterRun`` non-starters (combining marks).
        public static let nonStarterRunLimit = Code(rawValue: "non-starter run limit exceeded")
        /// The sort keys of a sorted archive add up to more than ``ArchiveLimits/maxSortKeyBytes``.
        public static let sortKeyLimit = Code(rawValue: "sort key limit exceeded")
        /// Decoding met an object whose class name the caller did not allow.
        public static let classNotAllowed = Code(rawValue: "class not allowed")
        /// Encoding met a type that is not registered (only registered types are archived as objects).
        public static let typeNotRegistered = Code(rawValue: "type not registered")
    }

    /// What went wrong: compare this, not the message.
    public let code: Code
    /// The byte offset in the archive where reading failed; nil for errors raised while writing.
    public let offset: Int?
    /// What and where, in words: never contains archived values.
    public let context: String

    /// An error of `code` at byte `offset` of the archive (nil: while writing), saying `context`.
    public init(_ code: Code, at offset: Int? = nil, _ context: String = "") {
        self.code = code
        self.offset = offset
        self.context = context
    }

    /// The code, the offset and the context, in one line.
    public var description: String {
        var s = code.rawValue
        if let offset { s += " at byte \(offset)" }
        if !context.isEmpty { s += ": \(context)" }
        return s
    }
}
