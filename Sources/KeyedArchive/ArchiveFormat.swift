#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The constants of the archive format (SPEC.md Part 2 §A2, §A5).
package enum ArchiveFormat {
    /// `89 4B 43 41` ("\x89KCA").
    package static let magic: [UInt8] = [0x89, 0x4B, 0x43, 0x41]
    static let headerSize = 6
    /// Header flag bit 0: the archive is in canonical order (keys, fields, set elements sorted).
    static let flagSorted: UInt8 = 0x01

    /// Item tags (§A5).
    package enum Tag {
        package static let null: UInt8 = 0x00
        static let `false`: UInt8 = 0x01
        package static let `true`: UInt8 = 0x02
        package static let int: UInt8 = 0x03
        static let uint: UInt8 = 0x04
        static let double: UInt8 = 0x05
        static let string: UInt8 = 0x06
        static let stringRef: UInt8 = 0x07
        package static let data: UInt8 = 0x08
        static let date: UInt8 = 0x09
        static let uuid: UInt8 = 0x0A
        static let url: UInt8 = 0x0B
        static let urlWithBase: UInt8 = 0x0C
        package static let array: UInt8 = 0x0D
        package static let dictionary: UInt8 = 0x0E
        static let anyKeyDictionary: UInt8 = 0x0F
        package static let set: UInt8 = 0x10
        static let object: UInt8 = 0x11
        package static let shared: UInt8 = 0x12
        package static let sharedRef: UInt8 = 0x13
    }

    static func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v &<< 1) ^ (v >> 63)) }
    static func unzigzag(_ u: UInt64) -> Int64 { Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1) }
}

/// A string compared and hashed by its exact UTF-8 bytes. Swift's `String` equality is Unicode canonical
/// equivalence, which would intern "é" (U+00E9) and "e\u{301}" as one string and change the bytes.
struct ExactString: Hashable {
    let string: String

    /// The lengths, then the bytes with `memcmp` (a hash table compares a key with every entry it probes, and
    /// `elementsEqual` on two UTF-8 views goes byte by byte through their common prefix).
    static func == (a: ExactString, b: ExactString) -> Bool {
        var x = a.string
        var y = b.string
        guard x.utf8.count == y.utf8.count else { return false }
        return x.withUTF8 { p in
            y.withUTF8 { q in p.count == 0 || memcmp(p.baseAddress!, q.baseAddress!, p.count) == 0 }
        }
    }

    func hash(into hasher: inout Hasher) {
        var s = string
        s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

extension Array where Element == UInt8 {
    /// Bytewise order, a shorter prefix first: the canonical order of keys and sort keys.
    @inline(__always)
    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBufferPointer { p in
            b.withUnsafeBufferPointer { q in
                let n = Swift.min(p.count, q.count)
                let c = n == 0 ? 0 : memcmp(p.baseAddress!, q.baseAddress!, n)
                return c != 0 ? c < 0 : p.count < q.count
            }
        }
    }
}

extension String {
    /// Bytewise UTF-8 order, the canonical order of dictionary keys and object fields.
    @inline(__always)
    func utf8Precedes(_ other: String) -> Bool { utf8.lexicographicallyPrecedes(other.utf8) }
}

/// The coding key of an unkeyed container's element, for the Codable coders' coding paths.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ i: Int) { intValue = i }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}
