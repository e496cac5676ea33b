#if canImport(Glibc)
    import Glibc
#endif

/// 16 bytes held as two integers (no allocation, cheap hashing); ordered as the bytes are, bytewise.
package struct ID128: Hashable, Comparable, Sendable {
    package let hi: UInt64
    package let lo: UInt64

    package init(hi: UInt64, lo: UInt64) {
        self.hi = hi
        self.lo = lo
    }

    package init<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        precondition(bytes.count == 16)
        var h: UInt64 = 0
        var l: UInt64 = 0
        for (i, b) in bytes.enumerated() {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
        }
        hi = h
        lo = l
    }

    package var bytes: [UInt8] {
        (0..<16).map { i in UInt8(truncatingIfNeeded: (i < 8 ? hi : lo) >> (8 * (7 - UInt64(i % 8)))) }
    }

    package static func < (a: ID128, b: ID128) -> Bool { (a.hi, a.lo) < (b.hi, b.lo) }
}

/// The 16-byte random identifier of an item, stable across updates.
public struct ItemID: Hashable, Comparable, Sendable, CustomStringConvertible {
    let raw: ID128

    package init<C: Collection>(_ bytes: C) where C.Element == UInt8 { raw = ID128(bytes) }
    init(raw: ID128) { self.raw = raw }

    /// The 16 bytes; ids are ordered bytewise.
    public var bytes: [UInt8] { raw.bytes }

    /// Parses 32 hex digits (as ``description`` prints them).
    public init?(hex: String) {
        guard let b = Hex.decode(hex), b.count == 16 else { return nil }
        raw = ID128(b)
    }

    /// Bytewise order of the ids.
    public static func < (a: ItemID, b: ItemID) -> Bool { a.raw < b.raw }
    /// The id in lowercase hexadecimal (32 digits).
    public var description: String { Hex.encode(bytes) }

    /// Appends ``description``'s UTF-8 bytes to `out`, without making the string.
    package func appendHex(to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { hex in
            for i in 0..<32 {
                let word = i < 16 ? raw.hi : raw.lo
                let d = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (i % 16))) & 15
                hex[i] = d < 10 ? 48 + d : 87 + d
            }
            out.append(contentsOf: UnsafeBufferPointer(hex))
        }
    }
}

/// An item's class, as Apple's `kSecClass` values. An open set: any 1...255-byte name is valid in a vault.
public struct ItemClass: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The class's four-letter code (`genp`, ...), as stored.
    public let rawValue: String
    /// A class by its code: kcar stores any class, the keychain Apple's five.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The code.
    public var description: String { rawValue }

    /// A generic password (`kSecClassGenericPassword`), keyed by service and account.
    public static let genericPassword = ItemClass(rawValue: "genp")
    /// An internet password (`kSecClassInternetPassword`), keyed by server, protocol, port, path, ...
    public static let internetPassword = ItemClass(rawValue: "inet")
    /// A certificate (`kSecClassCertificate`).
    public static let certificate = ItemClass(rawValue: "cert")
    /// A cryptographic key (`kSecClassKey`).
    public static let key = ItemClass(rawValue: "keys")
    /// An identity: a certificate with its private key (`kSecClassIdentity`).
    public static let identity = ItemClass(rawValue: "idnt")

    /// Apple's five classes, in the order a search of every class goes through them.
    package static let keychainClasses: [ItemClass] = [
        .genericPassword, .internetPassword, .certificate, .key, .identity
    ]
}

/// A typed attribute value (SPEC.md §7).
public enum AttributeValue: Hashable, Sendable {
    /// A UTF-8 string, at most ``Limits/attrValueMax`` bytes.
    case string(String)
    /// A signed 64-bit integer.
    case integer(Int64)
    /// A boolean.
    case bool(Bool)
    /// Nanoseconds since 1970-01-01T00:00:00Z.
    case date(nanoseconds: Int64)
    /// Bytes, at most ``Limits/attrValueMax``.
    case data([UInt8])
}

/// Apple's attribute names, as stored in the index.
public enum AttributeName {
    /// The service of a generic password (`kSecAttrService`).
    public static let service = "svce"
    /// The account (`kSecAttrAccount`).
    public static let account = "acct"
    /// A label for people (`kSecAttrLabel`).
    public static let label = "labl"
    /// What kind of item it is, for people (`kSecAttrDescription`).
    public static let description = "desc"
    /// A comment (`kSecAttrComment`).
    public static let comment = "icmt"
    /// Data the application keeps with a generic password (`kSecAttrGeneric`).
    public static let generic = "gena"
    /// The creator code, a FourCharCode (`kSecAttrCreator`).
    public static let creator = "crtr"
    /// The item type: a FourCharCode on passwords, a key type on keys (`kSecAttrType`, `kSecAttrKeyType`).
    public static let type = "type"
    /// When the item was created (`kSecAttrCreationDate`), a date.
    public static let creationDate = "cdat"
    /// When the item was last changed (`kSecAttrModificationDate`), a date.
    public static let modificationDate = "mdat"
    /// When the item may be read (`kSecAttrAccessible`): `ak`, `ck`, `dk`, and their `...ThisDeviceOnly` forms ending in `u`.
    public static let accessible = "pdmn"
    /// Whether the item is synchronized between devices (`kSecAttrSynchronizable`), a bool.
    public static let synchronizable = "sync"
    /// The access group (`kSecAttrAccessGroup`): in kcar, the vault holding the item says it.
    public static let accessGroup = "agrp"
    /// The server of an internet password (`kSecAttrServer`).
    public static let server = "srvr"
    /// The protocol of an internet password (`kSecAttrProtocol`).
    public static let `protocol` = "ptcl"
    /// The port of an internet password (`kSecAttrPort`), an integer.
    public static let port = "port"
    /// The path of an internet password (`kSecAttrPath`).
    public static let path = "path"
    /// The security domain of an internet password (`kSecAttrSecurityDomain`).
    public static let securityDomain = "sdmn"
    /// The authentication type of an internet password (`kSecAttrAuthenticationType`).
    public static let authenticationType = "atyp"
}

/// An item's attributes: names mapped to typed values, kept in the canonical (bytewise) order of names.
public struct Attributes: Hashable, Sendable, Sequence {
    private(set) var pairs: [(name: String, value: AttributeValue)] = []

    /// No attributes.
    public init() {}

    /// The attributes of `dictionary`, in canonical order.
    public init(_ dictionary: [String: AttributeValue]) {
        for (k, v) in dictionary { self[k] = v }
    }

    init(sortedPairs: [(name: String, value: AttributeValue)]) { pairs = sortedPairs }

    /// The number of attributes.
    public var count: Int { pairs.count }

    /// Makes room for `n` attributes in all, so that adding up to that many allocates no more (an item's
    /// attributes live as long as its transaction: a large import keeps a million of them).
    public mutating func reserveCapacity(_ n: Int) { pairs.reserveCapacity(n) }

    /// The value of attribute `name`, or nil; setting nil removes it.
    public subscript(name: String) -> AttributeValue? {
        get { find(name).map { pairs[$0].value } }
        set {
            let i = insertionPoint(name)
            let present = i < pairs.count && pairs[i].name == name
            switch (newValue, present) {
            case (let v?, true): pairs[i].value = v
            case (let v?, false): pairs.insert((name, v), at: i)
            case (nil, true): pairs.remove(at: i)
            case (nil, false): break
            }
        }
    }

    /// Adds attribute `name` unless it is there; false (and nothing changed) if it is.
    mutating func insertNew(_ name: String, _ value: AttributeValue) -> Bool {
        let i = insertionPoint(name)
        guard i == pairs.count || pairs[i].name != name else { return false }
        pairs.insert((name, value), at: i)
        return true
    }

    /// Whether attribute `name` is there.
    func contains(_ name: String) -> Bool { find(name) != nil }

    /// The attributes as name and value pairs, in bytewise order of name.
    public func makeIterator() -> IndexingIterator<[(name: String, value: AttributeValue)]> {
        pairs.makeIterator()
    }

    /// Where `name` is or would go: a binary search comparing UTF-8 bytes (memcmp, no allocation; lookups
    /// run once per item per query term, so they are on the path of every search).
    private func insertionPoint(_ name: String) -> Int {
        var key = name
        return key.withUTF8 { k in
            var lo = 0
            var hi = pairs.count
            while lo < hi {
                let mid = (lo + hi) / 2
                var n = pairs[mid].name
                if n.withUTF8({ utf8Precedes($0, k) }) { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
    }

    private func find(_ name: String) -> Int? {
        let i = insertionPoint(name)
        return i < pairs.count && pairs[i].name == name ? i : nil
    }

    /// Whether both hold the same names with equal values.
    public static func == (a: Attributes, b: Attributes) -> Bool {
        a.pairs.count == b.pairs.count
            && zip(a.pairs, b.pairs).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// Hashes every name and value, in order.
    public func hash(into h: inout Hasher) {
        for p in pairs {
            h.combine(p.name)
            h.combine(p.value)
        }
    }

    /// The string value of `name`, if it is a string.
    public func string(_ name: String) -> String? {
        if case .string(let s)? = self[name] { return s }
        return nil
    }
}

/// Whether `a` sorts before `b`, bytewise (as `lexicographicallyPrecedes` over the bytes).
@inline(__always)
func utf8Precedes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    let n = min(a.count, b.count)
    if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
        // Most names differ in their first byte: compared here, without a call.
        if pa[0] != pb[0] { return pa[0] < pb[0] }
        let c = memcmp(pa, pb, n)
        if c != 0 { return c < 0 }
    }
    return a.count < b.count
}

extension Array where Element == UInt8 {
    /// Whether these bytes sort before `other`'s (`lexicographicallyPrecedes`, through memcmp): tree keys
    /// share long prefixes, which the generic comparison walks a byte at a time.
    @inline(__always)
    func bytesPrecede(_ other: [UInt8]) -> Bool {
        withUnsafeBufferPointer { a in other.withUnsafeBufferPointer { b in utf8Precedes(a, b) } }
    }
}

/// Where an item's value lives: a member of one record (SPEC.md §6, §7).
package struct RecordLocation: Hashable, Sendable {
    var recordID: ID128
    var offset: UInt64
    var length: UInt64
    var member: Int
    var dataOffset: UInt64

    package init(recordID: ID128, offset: UInt64, length: UInt64, member: Int, dataOffset: UInt64) {
        (self.recordID, self.offset, self.length, self.member, self.dataOffset) = (
            recordID, offset, length, member, dataOffset
        )
    }
}

/// One item of a vault: its id, class, attributes and the size of its value. The value itself is read
/// with ``Vault/read(_:)`` or ``Vault/read(_:into:)``.
public struct Item: Hashable, Sendable {
    /// The item's id: random, 16 bytes, kept by updates and merges.
    public let id: ItemID
    /// The item's class.
    public var itemClass: ItemClass
    /// The item's attributes.
    public var attributes: Attributes
    /// Bytes of the value.
    public internal(set) var size: UInt64
    var location: RecordLocation

    package init(id: ItemID, itemClass: ItemClass, attributes: Attributes, size: UInt64, location: RecordLocation) {
        (self.id, self.itemClass, self.attributes, self.size, self.location) = (
            id, itemClass, attributes, size, location
        )
    }

    /// The `svce` attribute, when it is a string.
    public var service: String? { attributes.string(AttributeName.service) }
    /// The `acct` attribute, when it is a string.
    public var account: String? { attributes.string(AttributeName.account) }
    /// The `mdat` attribute, when it is a date (nanoseconds since 1970).
    public var modified: Int64? {
        if case .date(let ns)? = attributes[AttributeName.modificationDate] { return ns }
        return nil
    }
}

/// Lowercase hexadecimal, as ids and public keys are printed.
public enum Hex {
    /// `bytes` as lowercase hexadecimal.
    public static func encode(_ bytes: [UInt8]) -> String { hexEncode(bytes) }
    /// Accepts either case; nil for an odd length or a non-hex digit.
    public static func decode(_ text: String) -> [UInt8]? { hexDecode(text) }
}

func hexEncode(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

func hexDecode(_ s: String) -> [UInt8]? {
    let u = Array(s.utf8)
    guard u.count % 2 == 0 else { return nil }
    func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 97...102: return c - 87
        case 65...70: return c - 55
        default: return nil
        }
    }
    var out = [UInt8]()
    out.reserveCapacity(u.count / 2)
    var i = 0
    while i < u.count {
        guard let hi = nibble(u[i]), let lo = nibble(u[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
        i += 2
    }
    return out
}

extension AttributeValue {
    /// The bytes of a string (UTF-8) or data value, which `ATTR_VALUE_MAX` bounds; 0 for the others.
    var byteCount: Int {
        switch self {
        case .string(let s): return s.utf8.count
        case .data(let d): return d.count
        default: return 0
        }
    }
}
