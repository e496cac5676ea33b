import VaultFormat

/// The named limits of DER reading (SPEC.md Part 3 §K3.1), checked before the work they bound.
public enum DERLimits {
    /// `DER_INPUT_MAX`: bytes of one DER input (a certificate, a key). Larger values are not parsed at all.
    public static let inputMax = 65_536
    /// `DER_DEPTH_MAX`: nesting of constructed elements in a DER tree (the outermost element is depth 1).
    public static let depthMax = 32
    /// `DER_LENGTH_BYTES_MAX`: bytes of a long-form length (`0x81`..`0x84`); 4 covers any length below 4 GiB.
    public static let lengthBytesMax = 4
}

/// The DER tags kcar reads (class, constructed bit and number in one byte; numbers 0..30 only).
enum DERTag {
    static let boolean: UInt8 = 0x01
    static let integer: UInt8 = 0x02
    static let bitString: UInt8 = 0x03
    static let octetString: UInt8 = 0x04
    static let null: UInt8 = 0x05
    static let objectIdentifier: UInt8 = 0x06
    static let utf8String: UInt8 = 0x0C
    static let printableString: UInt8 = 0x13
    static let teletexString: UInt8 = 0x14
    static let ia5String: UInt8 = 0x16
    static let utcTime: UInt8 = 0x17
    static let generalizedTime: UInt8 = 0x18
    static let universalString: UInt8 = 0x1C
    static let bmpString: UInt8 = 0x1E
    static let sequence: UInt8 = 0x30
    static let set: UInt8 = 0x31

    /// `[n]` context-specific, constructed (EXPLICIT tagging).
    static func explicit(_ n: UInt8) -> UInt8 { 0xA0 | n }
    /// `[n]` context-specific, primitive (IMPLICIT tagging of a primitive type).
    static func implicit(_ n: UInt8) -> UInt8 { 0x80 | n }
}

/// One element as read: its tag byte and where its header and content lie in the input.
struct DERElement: Hashable, Sendable {
    let tag: UInt8
    /// Offset of the tag byte.
    let start: Int
    /// Offset of the first content byte.
    let contentStart: Int
    /// One past the last content byte.
    let end: Int

    var isConstructed: Bool { tag & 0x20 != 0 }
    var contentLength: Int { end - contentStart }
}

/// A bounds-checked DER cursor over `bytes[position..<end]`: reads that advance, a peek that does not; a
/// failed read throws and leaves the cursor where it was. Every length is checked against what is left
/// before anything is read past it.
struct DERReader {
    let bytes: [UInt8]
    private(set) var position: Int
    let end: Int
    /// What this cursor reads, for errors ("certificate tbsCertificate").
    let what: String

    init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil, what: String) {
        self.bytes = bytes
        self.position = start
        self.end = end ?? bytes.count
        self.what = what
    }

    /// A cursor over the content of the one SEQUENCE that `bytes` must be (at most `DER_INPUT_MAX` bytes,
    /// nothing after it): how a certificate or a key is read. The whole input is first read as a
    /// ``DERTree``, so the rules that do not depend on the structure hold everywhere, in the elements of any
    /// type (algorithm parameters, name values) that the structure's reader only steps over too.
    static func sequence(_ bytes: [UInt8], _ name: String) throws -> DERReader {
        _ = try DERTree.parse(bytes)
        var outer = DERReader(bytes, what: name)
        let e = try outer.read(DERTag.sequence, name)
        try outer.finish()
        return DERReader(bytes, from: e.contentStart, to: e.end, what: name)
    }

    var isAtEnd: Bool { position >= end }

    /// The next tag byte, if any, without advancing.
    var peekTag: UInt8? { position < end ? bytes[position] : nil }

    func error(_ code: DERError.Code, at offset: Int? = nil, _ detail: String) -> DERError {
        DERError(code, at: offset ?? position, "\(what): \(detail)")
    }

    /// Reads one element's tag and length and moves past its content.
    mutating func readElement() throws -> DERElement {
        var p = position
        guard p < end else { throw error(.truncated, "an element expected, the input ends") }
        let tag = bytes[p]
        guard tag & 0x1F != 0x1F else { throw error(.highTagNumber, "tag number 31 or more") }
        p += 1
        guard p < end else { throw error(.truncated, "the input ends before the length") }
        let first = bytes[p]
        p += 1
        var length: Int
        if first < 0x80 {
            length = Int(first)
        } else if first == 0x80 {
            throw error(.indefiniteLength, at: p - 1, "indefinite length")
        } else {
            let count = Int(first & 0x7F)
            guard count <= DERLimits.lengthBytesMax else {
                throw error(.lengthTooLong, at: p - 1, "\(count) length bytes, more than \(DERLimits.lengthBytesMax)")
            }
            guard count <= end - p else { throw error(.truncated, at: p - 1, "the input ends inside the length") }
            guard bytes[p] != 0 else { throw error(.nonMinimalLength, at: p - 1, "a length with a leading zero byte") }
            length = 0
            for i in 0..<count { length = length << 8 | Int(bytes[p + i]) }
            p += count
            guard length >= 0x80 else {
                throw error(.nonMinimalLength, at: p - count - 1, "long form for a length below 128")
            }
        }
        guard length <= end - p else {
            throw error(.truncated, "a length of \(length) bytes, \(end - p) left")
        }
        let element = DERElement(tag: tag, start: position, contentStart: p, end: p + length)
        position = p + length
        return element
    }

    /// Reads one element that must have `tag`.
    mutating func read(_ tag: UInt8, _ name: String) throws -> DERElement {
        let start = position
        let e = try readElement()
        guard e.tag == tag else {
            position = start
            throw error(
                .unexpectedTag, at: start, "\(name): tag 0x\(Hex.encode([e.tag])), expected 0x\(Hex.encode([tag]))")
        }
        return e
    }

    /// Reads the next element if it has `tag`; nil (nothing read) if the input ends or another tag follows.
    mutating func readOptional(_ tag: UInt8, _ name: String) throws -> DERElement? {
        guard peekTag == tag else { return nil }
        return try read(tag, name)
    }

    /// A cursor over a constructed element's content.
    func contents(of e: DERElement, _ name: String) -> DERReader {
        DERReader(bytes, from: e.contentStart, to: e.end, what: what + " " + name)
    }

    /// Throws ``DERError/Code/trailingBytes`` unless everything was read.
    func finish() throws {
        guard isAtEnd else { throw error(.trailingBytes, "\(end - position) bytes after the last element") }
    }

    /// The bytes of an element, header included.
    func encoded(_ e: DERElement) -> [UInt8] { Array(bytes[e.start..<e.end]) }

    /// The content bytes of an element.
    func content(_ e: DERElement) -> [UInt8] { Array(bytes[e.contentStart..<e.end]) }

    // MARK: Primitive values, each checked for its one DER encoding

    /// An INTEGER's content bytes (two's complement, big-endian), checked to be minimal.
    mutating func readInteger(_ name: String, tag: UInt8 = DERTag.integer) throws -> DERElement {
        let e = try read(tag, name)
        try checkInteger(e, name)
        return e
    }

    func checkInteger(_ e: DERElement, _ name: String) throws {
        guard e.contentLength > 0 else { throw error(.invalidInteger, at: e.start, "\(name): an empty INTEGER") }
        if e.contentLength > 1 {
            let a = bytes[e.contentStart]
            let b = bytes[e.contentStart + 1]
            if (a == 0x00 && b < 0x80) || (a == 0xFF && b >= 0x80) {
                throw error(.invalidInteger, at: e.start, "\(name): an INTEGER not in its shortest form")
            }
        }
    }

    /// A small non-negative INTEGER (a version).
    mutating func readSmallInteger(_ name: String) throws -> Int {
        let e = try readInteger(name)
        guard e.contentLength == 1, bytes[e.contentStart] < 0x80 else {
            throw error(.invalidVersion, at: e.start, "\(name): not a small non-negative INTEGER")
        }
        return Int(bytes[e.contentStart])
    }

    func checkBoolean(_ e: DERElement, _ name: String) throws -> Bool {
        guard e.contentLength == 1, bytes[e.contentStart] == 0x00 || bytes[e.contentStart] == 0xFF else {
            throw error(.invalidBoolean, at: e.start, "\(name): a BOOLEAN is one byte, 0x00 or 0xFF")
        }
        return bytes[e.contentStart] == 0xFF
    }

    /// A BIT STRING's bits, checked (unused bits 0..7 and zero, none in an empty string).
    func checkBitString(_ e: DERElement, _ name: String, wholeBytes: Bool) throws -> Range<Int> {
        guard e.contentLength >= 1 else { throw error(.invalidBitString, at: e.start, "\(name): no unused-bits byte") }
        let unused = bytes[e.contentStart]
        guard unused <= 7, !(e.contentLength == 1 && unused != 0) else {
            throw error(.invalidBitString, at: e.start, "\(name): \(unused) unused bits")
        }
        if unused != 0 {
            guard !wholeBytes else {
                throw error(.invalidBitString, at: e.start, "\(name): the key is not whole bytes")
            }
            let mask = UInt8((1 << Int(unused)) - 1)
            guard bytes[e.end - 1] & mask == 0 else {
                throw error(.invalidBitString, at: e.start, "\(name): unused bits are not zero")
            }
        }
        return e.contentStart + 1..<e.end
    }

    /// An OBJECT IDENTIFIER's content, checked: non-empty, no `0x80` padding, the last byte ends a sub-identifier.
    func checkObjectIdentifier(_ e: DERElement, _ name: String) throws {
        guard e.contentLength > 0, bytes[e.end - 1] & 0x80 == 0 else {
            throw error(.invalidObjectIdentifier, at: e.start, "\(name): empty, or ends inside a sub-identifier")
        }
        var startOfSub = true
        for i in e.contentStart..<e.end {
            if startOfSub, bytes[i] == 0x80 {
                throw error(.invalidObjectIdentifier, at: e.start, "\(name): a sub-identifier padded with 0x80")
            }
            startOfSub = bytes[i] & 0x80 == 0
        }
    }

    mutating func readObjectIdentifier(_ name: String) throws -> DERElement {
        let e = try read(DERTag.objectIdentifier, name)
        try checkObjectIdentifier(e, name)
        return e
    }

    /// Whether an element's content equals `bytes`.
    func contentEquals(_ e: DERElement, _ other: [UInt8]) -> Bool {
        e.contentLength == other.count && bytes[e.contentStart..<e.end].elementsEqual(other)
    }
}
