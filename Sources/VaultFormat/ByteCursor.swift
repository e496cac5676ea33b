/// A bounds-checked reader over bytes. A short read throws `failure` (the error code of the structure being
/// parsed) and leaves the cursor where it was.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var position: Int
    let end: Int
    let failure: VaultError.Code
    private let subject: Subject

    /// What is read, as errors name it: a text, or an item by id (spelt out only when an error is made, so that
    /// a scan of a million entries does not spell a million ids).
    private enum Subject {
        case text(String)
        case item(ItemID)
    }

    var what: String {
        switch subject {
        case .text(let s): s
        case .item(let id): "item \(id)"
        }
    }

    init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil, failure: VaultError.Code, what: String) {
        self.bytes = bytes
        self.position = start
        self.end = end ?? bytes.count
        self.failure = failure
        self.subject = .text(what)
    }

    /// A reader whose errors name `item`.
    init(_ bytes: [UInt8], failure: VaultError.Code, item: ItemID) {
        self.bytes = bytes
        self.position = 0
        self.end = bytes.count
        self.failure = failure
        self.subject = .item(item)
    }

    var remaining: Int { end - position }
    var isAtEnd: Bool { position == end }

    func fail(_ message: String) -> VaultError { VaultError(failure, "\(what): \(message)") }

    mutating func readBytes(_ count: Int) throws -> [UInt8] {
        guard count >= 0, count <= remaining else { throw fail("truncated at byte \(position)") }
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    mutating func skip(_ count: Int) throws {
        guard count >= 0, count <= remaining else { throw fail("truncated at byte \(position)") }
        position += count
    }

    mutating func readU8() throws -> UInt8 {
        guard remaining >= 1 else { throw fail("truncated at byte \(position)") }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func readLE<T: FixedWidthInteger & UnsignedInteger>(_: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw fail("truncated at byte \(position)") }
        var value: T = 0
        for i in 0..<size { value |= T(bytes[position + i]) << (8 * i) }
        position += size
        return value
    }

    mutating func readI64() throws -> Int64 { Int64(bitPattern: try readLE(UInt64.self)) }

    /// 16 bytes as an ``ID128``, without allocating.
    mutating func readID() throws -> ID128 {
        guard remaining >= 16 else { throw fail("truncated at byte \(position)") }
        var h: UInt64 = 0
        var l: UInt64 = 0
        for i in 0..<8 { h = h << 8 | UInt64(bytes[position + i]) }
        for i in 8..<16 { l = l << 8 | UInt64(bytes[position + i]) }
        position += 16
        return ID128(hi: h, lo: l)
    }

    /// A UTF-8 string of `count` bytes, validated without an intermediate array.
    mutating func readUTF8(_ count: Int, _ name: @autoclosure () -> String) throws -> String {
        guard count >= 0, count <= remaining else { throw fail("truncated at byte \(position)") }
        let start = position
        let s = bytes.withUnsafeBufferPointer { all in
            validatedUTF8(UnsafeBufferPointer(rebasing: all[start..<start + count]))
        }
        guard let s else { throw fail("\(name()) is not UTF-8") }
        position += count
        return s
    }

    /// Unsigned LEB128, minimal, at most 64 bits.
    mutating func readVarint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var p = position
        while true {
            guard p < end else { throw fail("truncated varint at byte \(position)") }
            let byte = bytes[p]
            p += 1
            if shift == 63, byte > 1 { throw fail("varint overflows 64 bits at byte \(position)") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0, shift > 0 { throw fail("non-minimal varint at byte \(position)") }
                break
            }
            shift += 7
        }
        position = p
        return value
    }

    /// A varint that must fit `Int` and not exceed `max`.
    mutating func readCount(max: Int, _ name: @autoclosure () -> String) throws -> Int {
        let v = try readVarint()
        guard v <= UInt64(max) else { throw fail("\(name()) \(v) exceeds \(max)") }
        return Int(v)
    }

    /// Whether the bytes at `a` sort strictly before those at `b` (both within the buffer).
    func precedes(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        bytes.withUnsafeBufferPointer { all in
            utf8Precedes(UnsafeBufferPointer(rebasing: all[a]), UnsafeBufferPointer(rebasing: all[b]))
        }
    }

    mutating func readString(max: Int, _ name: @autoclosure () -> String) throws -> String {
        try readUTF8(try readCount(max: max, "\(name()) length"), name())
    }
}

/// An appending byte writer, the inverse of ``ByteReader``.
package struct ByteWriter {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    package mutating func append(_ b: UInt8) { bytes.append(b) }
    package mutating func append<S: Sequence>(contentsOf s: S) where S.Element == UInt8 { bytes.append(contentsOf: s) }
    mutating func append(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    package mutating func appendLE<T: FixedWidthInteger & UnsignedInteger>(_ v: T) {
        for i in 0..<MemoryLayout<T>.size { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
    }

    mutating func appendI64(_ v: Int64) { appendLE(UInt64(bitPattern: v)) }

    package mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    package mutating func appendVarint(_ value: Int) { appendVarint(UInt64(value)) }

    mutating func appendString(_ s: String) {
        let u = Array(s.utf8)
        appendVarint(u.count)
        bytes.append(contentsOf: u)
    }

    /// Overwrite bytes already written (for lengths known only later).
    mutating func patchLE<T: FixedWidthInteger & UnsignedInteger>(_ v: T, at offset: Int) {
        for i in 0..<MemoryLayout<T>.size { bytes[offset + i] = UInt8(truncatingIfNeeded: v >> (8 * i)) }
    }
}

extension Array where Element == UInt8 {
    func readLE<T: FixedWidthInteger & UnsignedInteger>(_: T.Type, at offset: Int) -> T {
        var value: T = 0
        for i in 0..<MemoryLayout<T>.size { value |= T(self[offset + i]) << (8 * i) }
        return value
    }
}

extension UInt64 {
    /// `self + other`, or nil on overflow.
    func adding(_ other: UInt64) -> UInt64? {
        let (r, o) = addingReportingOverflow(other)
        return o ? nil : r
    }

    /// `self + other`, or UInt64.max on overflow: for sums of lengths and offsets an index gives (a version 2
    /// record's extent is bounded by 2^64 only), where a too-large result fails later (no file is that long).
    func saturatingAdding(_ other: UInt64) -> UInt64 { adding(other) ?? .max }
}

/// `b` as a string if it is UTF-8 (overlong forms, surrogates and truncation refused). ASCII needs no
/// validation, and takes none: `String(validating:)` looks up generic metadata on every call.
func validatedUTF8(_ b: UnsafeBufferPointer<UInt8>) -> String? {
    b.allSatisfy { $0 < 0x80 } ? String(decoding: b, as: UTF8.self) : String(validating: b, as: UTF8.self)
}
