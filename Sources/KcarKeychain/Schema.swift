import VaultFormat

/// The type of an attribute's value in the index (SPEC.md §7).
public enum AttributeKind: String, Sendable, CaseIterable {
    /// A string, a signed integer, a Boolean, a date (nanoseconds since 1970) or bytes: AttributeValue's kinds.
    case string, integer, bool, date, data

    func matches(_ v: AttributeValue) -> Bool {
        switch (self, v) {
        case (.string, .string), (.integer, .integer), (.bool, .bool), (.date, .date), (.data, .data): return true
        default: return false
        }
    }

    /// The value an absent attribute compares equal to (SPEC.md §K4).
    var defaultValue: AttributeValue {
        switch self {
        case .string: return .string("")
        case .integer: return .integer(0)
        case .bool: return .bool(false)
        case .date: return .date(nanoseconds: 0)
        case .data: return .data([])
        }
    }
}

/// Apple's item attributes: which classes carry them and their types (SPEC.md §K3), and the primary keys (§K4).
public enum Schema {
    struct Attribute {
        let name: String
        let kind: AttributeKind
        let classes: Set<String>
    }

    static let passwords: Set<String> = ["genp", "inet"]
    static let all = Set(ItemClass.keychainClasses.map(\.rawValue))
    static let certs: Set<String> = ["cert", "idnt"]
    static let keys: Set<String> = ["keys", "idnt"]

    static let table: [Attribute] = {
        var t: [Attribute] = []
        func add(_ names: [String], _ kind: AttributeKind, _ classes: Set<String>) {
            t += names.map { Attribute(name: $0, kind: kind, classes: classes) }
        }
        add(["svce"], .string, ["genp"])
        add(["acct", "desc", "icmt"], .string, passwords)
        add(["labl", "pdmn"], .string, all)
        add(["gena"], .data, ["genp"])
        add(["crtr"], .integer, passwords)
        add(["cdat", "mdat"], .date, all)
        add(["sync"], .bool, all)
        add(["invi", "nega"], .bool, passwords)
        add(["srvr", "sdmn", "path", "ptcl", "atyp"], .string, ["inet"])
        add(["port"], .integer, ["inet"])
        add(["ctyp", "cenc"], .integer, certs)
        add(["subj", "issr", "slnr", "skid", "pkhh"], .data, certs)
        add(["kcls"], .string, keys)
        add(["klbl", "atag"], .data, keys)
        add(["bsiz", "esiz"], .integer, keys)
        add(["perm", "encr", "decr", "drve", "sign", "vrfy", "wrap", "unwp"], .bool, keys)
        return t
    }()

    /// `type` is an integer (a FourCharCode) on passwords and a string (`42`, `73`) on keys.
    static func kind(of name: String, class c: String) -> AttributeKind? {
        if name == "type" {
            if passwords.contains(c) { return .integer }
            if keys.contains(c) { return .string }
            return nil
        }
        return byName[name].flatMap { $0.classes.contains(c) ? $0.kind : nil }
    }

    private static let byName: [String: Attribute] = Dictionary(uniqueKeysWithValues: table.map { ($0.name, $0) })

    /// Whether `name` is one of Apple's attribute names (for any class).
    static func isApple(_ name: String) -> Bool { name == "type" || byName[name] != nil }

    /// The accessibility levels (`pdmn`); those ending in `u` are ThisDeviceOnly.
    public static let accessibility: Set<String> = ["ak", "ck", "dk", "aku", "cku", "dku", "akpu"]

    /// Whether an item's accessibility keeps it on this device (`...ThisDeviceOnly`).
    public static func isDeviceOnly(_ attributes: Attributes) -> Bool {
        attributes.string("pdmn").map { $0.hasSuffix("u") } ?? false
    }

    /// The primary key of each class (SPEC.md §K4).
    static func primaryKey(_ c: String) -> [String] {
        switch c {
        case "genp": return ["sync", "svce", "acct"]
        case "inet": return ["sync", "srvr", "ptcl", "port", "path", "sdmn", "atyp", "acct"]
        case "cert", "idnt": return ["sync", "ctyp", "issr", "slnr"]
        case "keys": return ["sync", "kcls", "klbl", "atag", "type", "bsiz", "esiz"]
        default: return []
        }
    }

    /// Apple's attribute constants by name (`kSecAttrService` -> `svce`), for command lines and item files.
    public static let constantNames: [String: String] = [
        "kSecAttrSynchronizable": "sync",
        "kSecAttrService": "svce",
        "kSecAttrAccount": "acct",
        "kSecAttrLabel": "labl",
        "kSecAttrDescription": "desc",
        "kSecAttrComment": "icmt",
        "kSecAttrGeneric": "gena",
        "kSecAttrCreator": "crtr",
        "kSecAttrType": "type",
        "kSecAttrCreationDate": "cdat",
        "kSecAttrModificationDate": "mdat",
        "kSecAttrIsInvisible": "invi",
        "kSecAttrIsNegative": "nega",
        "kSecAttrServer": "srvr",
        "kSecAttrSecurityDomain": "sdmn",
        "kSecAttrPath": "path",
        "kSecAttrPort": "port",
        "kSecAttrCertificateType": "ctyp",
        "kSecAttrCertificateEncoding": "cenc",
        "kSecAttrSubject": "subj",
        "kSecAttrIssuer": "issr",
        "kSecAttrSerialNumber": "slnr",
        "kSecAttrSubjectKeyID": "skid",
        "kSecAttrPublicKeyHash": "pkhh",
        "kSecAttrApplicationLabel": "klbl",
        "kSecAttrApplicationTag": "atag",
        "kSecAttrKeySizeInBits": "bsiz",
        "kSecAttrEffectiveKeySize": "esiz",
        "kSecAttrIsPermanent": "perm",
        "kSecAttrCanEncrypt": "encr",
        "kSecAttrCanDecrypt": "decr",
        "kSecAttrCanDerive": "drve",
        "kSecAttrCanSign": "sign",
        "kSecAttrCanVerify": "vrfy",
        "kSecAttrCanWrap": "wrap",
        "kSecAttrCanUnwrap": "unwp",
        "kSecAttrKeyType": "type"
    ]

    /// The index name of an attribute given as a four-letter name or a `kSecAttr...` constant name.
    public static func indexName(_ name: String) -> String? {
        if let n = constantNames[name] { return n }
        return isApple(name) ? name : nil
    }

    /// The type of an Apple attribute on a class, nil if the class does not carry it.
    public static func kindOf(_ name: String, class c: ItemClass) -> AttributeKind? {
        kind(of: name, class: c.rawValue)
    }

    /// The prefix of user attributes in the index.
    public static let userPrefix = "@"

    /// Checks that every attribute is an Apple attribute of the right type for the class, or a user attribute.
    static func validate(_ attributes: Attributes, class c: String) throws {
        guard all.contains(c) else {
            throw KeychainError(
                .param,
                "unknown item class \"\(c)\" (\(ItemClass.keychainClasses.map(\.rawValue).joined(separator: ", ")))")
        }
        for (name, value) in attributes {
            if name.hasPrefix(userPrefix) {
                guard name.utf8.count >= 2 else { throw KeychainError(.param, "a user attribute needs a name") }
                continue
            }
            guard let kind = kind(of: name, class: c) else {
                throw KeychainError(.param, "attribute \(name) does not belong to class \(c)")
            }
            guard kind.matches(value) else { throw KeychainError(.param, "attribute \(name) takes a \(kind.rawValue)") }
            if name == "pdmn", case .string(let level) = value, !accessibility.contains(level) {
                throw KeychainError(.param, "unknown accessibility \"\(level)\"")
            }
        }
        if case .bool(true)? = attributes["sync"], isDeviceOnly(attributes) {
            throw KeychainError(.param, "a synchronizable item cannot be ThisDeviceOnly")
        }
    }

    /// The primary-key values of an item, absent ones as their default.
    static func primaryKeyValues(_ attributes: Attributes, class c: String) -> [AttributeValue] {
        primaryKey(c).map { name in attributes[name] ?? (kind(of: name, class: c)?.defaultValue ?? .string("")) }
    }
}

/// What identifies an item in its group: class and primary-key values (SPEC.md §K4). Strings compare by their
/// UTF-8 bytes (Swift's `==` would equate NFC and NFD spellings; Apple's database does not).
///
/// The values are kept as a 128-bit digest (two SipHash values under the process's random seed, each over a
/// typed, length-prefixed encoding of the values), not as copies: a transaction keeps one key per item it
/// adds (a million for a large import), and the values' copies cost several hundred bytes each. Equal keys
/// give equal digests; two different keys share one with probability 2^-128, which an input cannot raise
/// without the seed.
struct PrimaryKey: Hashable {
    let itemClass: String
    private let digest0: UInt64
    private let digest1: UInt64

    init(_ c: String, _ attributes: Attributes) {
        itemClass = c
        var h0 = Hasher()
        var h1 = Hasher()
        h0.combine(UInt8(0))
        h1.combine(UInt8(1))
        for v in Schema.primaryKeyValues(attributes, class: c) {
            PrimaryKey.combine(v, into: &h0)
            PrimaryKey.combine(v, into: &h1)
        }
        digest0 = UInt64(truncatingIfNeeded: h0.finalize())
        digest1 = UInt64(truncatingIfNeeded: h1.finalize())
    }

    /// A value exactly: a string as its UTF-8 bytes (not as `String` hashes, under canonical equivalence).
    private static func combine(_ v: AttributeValue, into h: inout Hasher) {
        guard case .string(var s) = v else {
            h.combine(UInt8(1))
            h.combine(v)
            return
        }
        h.combine(UInt8(0))
        h.combine(s.utf8.count)
        s.withUTF8 { h.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Whether two lists of primary-key values are equal, strings compared by their bytes.
    static func exactlyEqual(_ a: [AttributeValue], _ b: [AttributeValue]) -> Bool {
        a.count == b.count
            && zip(a, b).allSatisfy { x, y in
                switch (x, y) {
                case (.string(let s), .string(let t)): return s.utf8.elementsEqual(t.utf8)
                case (.string, _), (_, .string): return false
                default: return x == y
                }
            }
    }
}
