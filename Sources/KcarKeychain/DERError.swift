/// An error from reading DER (SPEC.md Part 3 §K3.1): a stable ``Code`` that callers compare, the byte offset
/// where reading failed, and what was being read. Never holds the bytes themselves.
public struct DERError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as an open set of codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// A code by its name (the ones below are those the reader throws).
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name, as messages show it.
        public var description: String { rawValue }

        /// The input ends inside a tag, a length or a value.
        public static let truncated = Code(rawValue: "truncated")
        /// Bytes follow the outermost value, or a constructed value's last element.
        public static let trailingBytes = Code(rawValue: "trailingBytes")
        /// A length of the indefinite form (`0x80`), which DER forbids.
        public static let indefiniteLength = Code(rawValue: "indefiniteLength")
        /// A length in the long form that the short form could hold, or with a leading zero byte.
        public static let nonMinimalLength = Code(rawValue: "nonMinimalLength")
        /// A length of more than `DER_LENGTH_BYTES_MAX` bytes.
        public static let lengthTooLong = Code(rawValue: "lengthTooLong")
        /// A tag number of 31 or more (the high-tag-number form), which nothing kcar reads uses.
        public static let highTagNumber = Code(rawValue: "highTagNumber")
        /// Another tag than the structure requires at this place.
        public static let unexpectedTag = Code(rawValue: "unexpectedTag")
        /// An INTEGER that is empty or not in its shortest form.
        public static let invalidInteger = Code(rawValue: "invalidInteger")
        /// A BOOLEAN that is not one byte of `0x00` or `0xFF`.
        public static let invalidBoolean = Code(rawValue: "invalidBoolean")
        /// A BIT STRING with more than 7 unused bits, unused bits in an empty string, or unused bits not zero.
        public static let invalidBitString = Code(rawValue: "invalidBitString")
        /// An OBJECT IDENTIFIER that is empty, ends inside a sub-identifier, or pads one with `0x80`.
        public static let invalidObjectIdentifier = Code(rawValue: "invalidObjectIdentifier")
        /// A string type whose bytes are not valid in its encoding.
        public static let invalidString = Code(rawValue: "invalidString")
        /// A DEFAULT value encoded (DER omits it), or a version kcar does not know.
        public static let invalidVersion = Code(rawValue: "invalidVersion")
        /// A certificate extension present twice (RFC 5280 §4.2).
        public static let duplicateExtension = Code(rawValue: "duplicateExtension")
        /// Nesting deeper than `DER_DEPTH_MAX`.
        public static let depthLimit = Code(rawValue: "depthLimit")
        /// An input longer than `DER_INPUT_MAX`.
        public static let sizeLimit = Code(rawValue: "sizeLimit")
    }

    /// What went wrong: compare this, not the message.
    public let code: Code
    /// The byte offset in the input where the offending element starts.
    public let offset: Int
    /// What was being read (`"certificate serialNumber"`), never the input's bytes.
    public let context: String

    /// An error of `code` at byte `offset` of the DER input, saying `context`.
    public init(_ code: Code, at offset: Int, _ context: String) {
        self.code = code
        self.offset = offset
        self.context = context
    }

    /// The code, the offset and the context, in one line.
    public var description: String { "DER \(code) at byte \(offset): \(context)" }
}
