/// Order-preserving encodings of typed values for tree keys (SPEC.md Part 4, V3.1): the bytewise order of
/// two encodings is the order of their values, and no encoding of a type is a prefix of another of it, so
/// keys made of several values compare field by field.
package enum KeyCoding {
    /// Appends a string or data value: each 0x00 as 0x00 0xFF, then the terminator 0x00 0x01.
    package static func appendEscaped<C: Collection>(_ bytes: C, to out: inout [UInt8]) where C.Element == UInt8 {
        for b in bytes {
            out.append(b)
            if b == 0 { out.append(0xFF) }
        }
        out.append(0)
        out.append(1)
    }

    package static func appendOrdered(_ v: Int64, to out: inout [UInt8]) {
        let u = UInt64(bitPattern: v) ^ 0x8000_0000_0000_0000
        for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: u >> (8 * UInt64(i)))) }
    }

    /// `u8 type || ordered(v)`.
    package static func appendTyped(_ value: AttributeValue, to out: inout [UInt8]) {
        switch value {
        case .string(let s):
            out.append(1)
            appendEscaped(s.utf8, to: &out)
        case .integer(let i):
            out.append(2)
            appendOrdered(i, to: &out)
        case .bool(let b):
            out.append(3)
            out.append(b ? 1 : 0)
        case .date(let ns):
            out.append(4)
            appendOrdered(ns, to: &out)
        case .data(let d):
            out.append(5)
            appendEscaped(d, to: &out)
        }
    }

    /// Reads an escaped string or data value at `p` in `key`, advancing `p` past its terminator.
    package static func readEscaped(_ key: [UInt8], _ p: inout Int, max: Int) throws -> [UInt8] {
        // Runs of bytes other than 0x00 are copied whole; each 0x00 ends the string (0x00 0x01) or stands for
        // one zero byte (0x00 0xFF). A run is read no further than would make the string longer than `max`.
        var out: [UInt8] = []
        var i = p
        let n = key.count
        while true {
            let start = i
            let limit = min(n, i + (max - out.count) + 1)
            while i < limit && key[i] != 0 { i += 1 }
            if out.isEmpty { out = Array(key[start..<i]) } else { out.append(contentsOf: key[start..<i]) }
            guard out.count <= max else { throw damaged("a key string longer than \(max) bytes") }
            guard i + 1 < n else { throw damaged("a key ends inside a string") }
            let next = key[i + 1]
            i += 2
            if next == 1 {
                p = i
                return out
            }
            guard next == 0xFF else { throw damaged("0x00 followed by 0x\(String(next, radix: 16)) in a key string") }
            out.append(0)
            guard out.count <= max else { throw damaged("a key string longer than \(max) bytes") }
        }
    }

    package static func readOrdered(_ key: [UInt8], _ p: inout Int) throws -> Int64 {
        guard key.count - p >= 8 else { throw damaged("a key ends inside an integer") }
        var u: UInt64 = 0
        for i in 0..<8 { u = u << 8 | UInt64(key[p + i]) }
        p += 8
        return Int64(bitPattern: u ^ 0x8000_0000_0000_0000)
    }

    package static func readString(_ key: [UInt8], _ p: inout Int, max: Int) throws -> String {
        // Most strings hold no zero byte: validated straight from the key, without an array between.
        let fast: String?? = key.withUnsafeBufferPointer { k in
            var i = p
            let limit = min(k.count, p + max + 1)
            while i < limit && k[i] != 0 { i += 1 }
            guard i - p <= max, i + 1 < k.count, k[i + 1] == 1 else { return nil }
            let s = validatedUTF8(UnsafeBufferPointer(rebasing: k[p..<i]))
            if s != nil { p = i + 2 }
            return .some(s)
        }
        if let fast {
            guard let s = fast else { throw damaged("a key string is not UTF-8") }
            return s
        }
        let b = try readEscaped(key, &p, max: max)
        guard let s = String(validating: b, as: UTF8.self) else { throw damaged("a key string is not UTF-8") }
        return s
    }

    /// Reads `u8 type || ordered(v)`.
    package static func readTyped(_ key: [UInt8], _ p: inout Int) throws -> AttributeValue {
        guard p < key.count else { throw damaged("a key ends before a value's type") }
        let type = key[p]
        p += 1
        switch type {
        case 1: return .string(try readString(key, &p, max: Limits.attrValueMax))
        case 2: return .integer(try readOrdered(key, &p))
        case 3:
            guard p < key.count, key[p] <= 1 else { throw damaged("a key bool is not 0 or 1") }
            p += 1
            return .bool(key[p - 1] == 1)
        case 4: return .date(nanoseconds: try readOrdered(key, &p))
        case 5: return .data(try readEscaped(key, &p, max: Limits.attrValueMax))
        default: throw damaged("value type \(type) in a key")
        }
    }

    package static func damaged(_ message: String) -> VaultError { VaultError(.damagedIndex, message) }
}

/// The key attributes of one class, with the defaults that stand for absent ones (SPEC.md Part 4, V4).
public struct ClassSchema: Hashable, Sendable {
    /// The attributes an item of the class is keyed by, in order: the items tree orders the class's items by
    /// their values, and an item without one is keyed by its default.
    public var keyAttributes: [(name: String, defaultValue: AttributeValue)]

    /// A class keyed by `keyAttributes`, in order.
    public init(keyAttributes: [(name: String, defaultValue: AttributeValue)]) { self.keyAttributes = keyAttributes }

    /// Whether both key by the same attributes, in the same order, with equal defaults.
    public static func == (a: ClassSchema, b: ClassSchema) -> Bool {
        a.keyAttributes.elementsEqual(b.keyAttributes) { $0.name == $1.name && $0.defaultValue == $1.defaultValue }
    }

    /// Hashes each key attribute's name and default, in order.
    public func hash(into h: inout Hasher) {
        for k in keyAttributes {
            h.combine(k.name)
            h.combine(k.defaultValue)
        }
    }
}

/// An item's place in the items tree: `ordered-string(class) || key values || item id` (V3.4).
package struct ItemKey {
    /// The key up to, not including, the item id: what a lookup by primary key reads the range of.
    package static func prefix(class itemClass: String, values: [AttributeValue]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(itemClass.utf8.count + 2 + values.count * 12 + 16)
        KeyCoding.appendEscaped(itemClass.utf8, to: &out)
        for v in values { KeyCoding.appendTyped(v, to: &out) }
        return out
    }

    /// The key of an item with these attributes, and the absent mask (bit i: the i-th key attribute is
    /// missing and its default stands in the key).
    package static func make(class itemClass: String, attributes: Attributes, schema: ClassSchema?, id: ItemID) -> (
        key: [UInt8], absent: UInt64
    ) {
        var values: [AttributeValue] = []
        var absent: UInt64 = 0
        for (i, k) in (schema?.keyAttributes ?? []).enumerated() {
            if let v = attributes[k.name] {
                values.append(v)
            } else {
                values.append(k.defaultValue)
                absent |= 1 << UInt64(i)
            }
        }
        var key = prefix(class: itemClass, values: values)
        key.append(contentsOf: id.bytes)
        return (key, absent)
    }

    /// Splits an items-tree key into class, key values and item id, checking it against the schema.
    package static func parse(_ key: [UInt8], schemaFor: (String) -> ClassSchema?) throws -> (
        itemClass: String, values: [AttributeValue], id: ItemID
    ) {
        var names = NameCache()
        return try parse(key, names: &names, schemaFor: schemaFor)
    }

    static func parse(_ key: [UInt8], names: inout NameCache, schemaFor: (String) -> ClassSchema?) throws -> (
        itemClass: String, values: [AttributeValue], id: ItemID
    ) {
        var p = 0
        // A class without a 0x00 byte is its bytes up to the terminator: read through the name cache.
        let cls: String
        if let end = key.firstIndex(of: 0), end + 1 < key.count, key[end + 1] == 1 {
            var r = ByteReader(key, from: 0, to: end, failure: .damagedIndex, what: "item key")
            cls = try names.read(&r, count: end, "class")
            guard end <= Limits.attrNameMax else {
                throw KeyCoding.damaged("a class longer than \(Limits.attrNameMax) bytes")
            }
            p = end + 2
        } else {
            cls = try KeyCoding.readString(key, &p, max: Limits.attrNameMax)
        }
        guard !cls.isEmpty else { throw KeyCoding.damaged("an item key with an empty class") }
        let keyAttributes = schemaFor(cls)?.keyAttributes ?? []
        var values: [AttributeValue] = []
        values.reserveCapacity(keyAttributes.count)
        for _ in keyAttributes { values.append(try KeyCoding.readTyped(key, &p)) }
        guard key.count - p == 16 else {
            throw KeyCoding.damaged("an item key of class \(cls) does not end with a 16-byte item id")
        }
        return (cls, values, ItemID(key[p...]))
    }
}
