import CSystemd

/// A D-Bus value, read from or written to a message (sd-bus): what the Secret Service's calls take and
/// return. Byte arrays (secrets, public values) are one value, not an array of bytes.
package indirect enum BusValue: Equatable, Sendable {
    case byte(UInt8)
    case bool(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// `ay`.
    case bytes([UInt8])
    /// `a` of any other element type, whose signature is given (so that an empty array has one).
    case array(element: String, [BusValue])
    /// `a{..}`: a dictionary's key and value signatures and its entries, in message order.
    case dict(key: String, value: String, [DictEntry])
    case structure([BusValue])
    case variant(BusValue)

    package struct DictEntry: Equatable, Sendable {
        package var key: BusValue
        package var value: BusValue

        package init(_ key: BusValue, _ value: BusValue) {
            self.key = key
            self.value = value
        }
    }

    /// Its D-Bus type signature.
    package var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .dict(let k, let v, _): "a{" + k + v + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    /// A dictionary of strings to strings (`a{ss}`), as the Secret Service's attributes.
    package static func stringDict(_ pairs: [(String, String)]) -> BusValue {
        .dict(key: "s", value: "s", pairs.map { DictEntry(.string($0.0), .string($0.1)) })
    }

    /// A dictionary of strings to variants (`a{sv}`), as property maps.
    package static func properties(_ pairs: [(String, BusValue)]) -> BusValue {
        .dict(key: "s", value: "v", pairs.map { DictEntry(.string($0.0), .variant($0.1)) })
    }

    package var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    package var objectPath: String? {
        if case .objectPath(let s) = self { return s }
        return nil
    }
}

/// Reads and writes ``BusValue``s from and to sd-bus messages. sd-bus has checked a received message's
/// signature, nesting (at most 64 containers deep, as the D-Bus specification bounds it) and size (at most
/// 128 MiB) when it parsed it; reading walks it once, within a ``Budget`` for the whole message.
package enum BusCodec {
    /// What one message may hold once read (SPEC.md §K10 Bounds): `SS_CALL_VALUES_MAX` values and
    /// `SS_CALL_BYTES_MAX` bytes of strings and byte arrays, enough for the largest call a client may make (a
    /// secret of `SS_SECRET_MAX` and `ATTRS_MAX` attributes of `ATTR_VALUE_MAX`), checked as it is read.
    package struct Budget {
        package static let valuesMax = 65_536
        package static let bytesMax = 20 << 20
        var values = 0
        var bytes = 0

        package init() {}

        mutating func take(values n: Int = 1, bytes b: Int = 0) throws(SecretServiceError) {
            values += n
            bytes += b
            guard values <= Budget.valuesMax, bytes <= Budget.bytesMax else {
                throw .invalidArgs(
                    "a message of more than \(Budget.valuesMax) values or \(Budget.bytesMax) bytes (SS_CALL_VALUES_MAX, SS_CALL_BYTES_MAX)"
                )
            }
        }
    }

    /// Reads the values of `message` from its current position to the end of the current container.
    package static func readAll(_ message: OpaquePointer) throws(SecretServiceError) -> [BusValue] {
        var budget = Budget()
        return try readAll(message, &budget)
    }

    static func readAll(_ message: OpaquePointer, _ budget: inout Budget) throws(SecretServiceError) -> [BusValue] {
        var values: [BusValue] = []
        while sd_bus_message_at_end(message, 0) == 0 {
            values.append(try read(message, &budget))
        }
        return values
    }

    /// Reads one value at the message's current position.
    package static func read(_ m: OpaquePointer, _ budget: inout Budget) throws(SecretServiceError) -> BusValue {
        try budget.take()
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(m, &type, &contents) > 0 else { throw malformed("no value to read") }
        let inner = contents.map { String(cString: $0) } ?? ""
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "a"):
            if inner == "y" {
                var pointer: UnsafeRawPointer?
                var size = 0
                guard sd_bus_message_read_array(m, CChar(UInt8(ascii: "y")), &pointer, &size) >= 0 else {
                    throw malformed("a byte array")
                }
                try budget.take(values: 0, bytes: size)
                return .bytes(size == 0 ? [] : Array(UnsafeRawBufferPointer(start: pointer, count: size)))
            }
            try enter(m, "a", inner)
            if inner.first == "{" {
                let entry = String(inner.dropFirst().dropLast())
                let key = String(entry.prefix(1))
                var entries: [BusValue.DictEntry] = []
                while sd_bus_message_at_end(m, 0) == 0 {
                    try enter(m, "e", entry)
                    let k = try read(m, &budget)
                    let v = try read(m, &budget)
                    try exit(m)
                    entries.append(.init(k, v))
                }
                try exit(m)
                return .dict(key: key, value: String(entry.dropFirst()), entries)
            }
            let elements = try readAll(m, &budget)
            try exit(m)
            return .array(element: inner, elements)
        case UInt8(ascii: "r"):
            try enter(m, "r", inner)
            let fields = try readAll(m, &budget)
            try exit(m)
            return .structure(fields)
        case UInt8(ascii: "v"):
            try enter(m, "v", inner)
            let value = try read(m, &budget)
            try exit(m)
            return .variant(value)
        case let t:
            return try readBasic(m, t, &budget)
        }
    }

    private static func readBasic(_ m: OpaquePointer, _ t: UInt8, _ budget: inout Budget) throws(SecretServiceError)
        -> BusValue
    {
        func basic<T: BitwiseCopyable>(_ initial: T) throws(SecretServiceError) -> T {
            var v = initial
            guard sd_bus_message_read_basic(m, CChar(t), &v) > 0 else { throw malformed("a value of type \(t)") }
            return v
        }
        func text() throws(SecretServiceError) -> String {
            let p: UnsafePointer<CChar>? = try basic(nil)
            guard let p else { throw malformed("a string") }
            try budget.take(values: 0, bytes: strlen(p))
            return String(cString: p)
        }
        switch t {
        case UInt8(ascii: "y"): return .byte(try basic(0))
        case UInt8(ascii: "b"): return .bool(try basic(Int32(0)) != 0)
        case UInt8(ascii: "i"): return .int32(try basic(0))
        case UInt8(ascii: "u"): return .uint32(try basic(0))
        case UInt8(ascii: "x"): return .int64(try basic(0))
        case UInt8(ascii: "t"): return .uint64(try basic(0))
        case UInt8(ascii: "s"): return .string(try text())
        case UInt8(ascii: "o"): return .objectPath(try text())
        case UInt8(ascii: "g"): return .signature(try text())
        default: throw SecretServiceError.invalidArgs("a value of D-Bus type '\(Character(UnicodeScalar(t)))'")
        }
    }

    /// Appends `value` to `message`.
    package static func append(_ m: OpaquePointer, _ value: BusValue) throws(SecretServiceError) {
        func check(_ r: Int32) throws(SecretServiceError) {
            guard r >= 0 else { throw .failed("a reply could not be built (error \(-r))") }
        }
        func basic<T: BitwiseCopyable>(_ type: Character, _ v: T) throws(SecretServiceError) {
            var v = v
            try check(sd_bus_message_append_basic(m, CChar(type.asciiValue!), &v))
        }
        func text(_ type: Character, _ s: String) throws(SecretServiceError) {
            let r = s.withCString { sd_bus_message_append_basic(m, CChar(type.asciiValue!), $0) }
            try check(r)
        }
        func container(_ type: Character, _ contents: String, _ body: () throws(SecretServiceError) -> Void)
            throws(SecretServiceError)
        {
            try check(sd_bus_message_open_container(m, CChar(type.asciiValue!), contents))
            try body()
            try check(sd_bus_message_close_container(m))
        }
        switch value {
        case .byte(let v): try basic("y", v)
        case .bool(let v): try basic("b", Int32(v ? 1 : 0))
        case .int32(let v): try basic("i", v)
        case .uint32(let v): try basic("u", v)
        case .int64(let v): try basic("x", v)
        case .uint64(let v): try basic("t", v)
        case .string(let s): try text("s", s)
        case .objectPath(let s): try text("o", s)
        case .signature(let s): try text("g", s)
        case .bytes(let b):
            try check(
                b.withUnsafeBytes { sd_bus_message_append_array(m, CChar(UInt8(ascii: "y")), $0.baseAddress, $0.count) }
            )
        case .array(let element, let values):
            try container("a", element) { () throws(SecretServiceError) in
                for v in values { try append(m, v) }
            }
        case .dict(let k, let v, let entries):
            try container("a", "{" + k + v + "}") { () throws(SecretServiceError) in
                for e in entries {
                    try container("e", k + v) { () throws(SecretServiceError) in
                        try append(m, e.key)
                        try append(m, e.value)
                    }
                }
            }
        case .structure(let fields):
            try container("r", fields.map(\.signature).joined()) { () throws(SecretServiceError) in
                for f in fields { try append(m, f) }
            }
        case .variant(let inner):
            try container("v", inner.signature) { () throws(SecretServiceError) in try append(m, inner) }
        }
    }

    private static func enter(_ m: OpaquePointer, _ type: Character, _ contents: String) throws(SecretServiceError) {
        guard sd_bus_message_enter_container(m, CChar(type.asciiValue!), contents) > 0 else {
            throw malformed("a container '\(type)' of \(contents)")
        }
    }

    private static func exit(_ m: OpaquePointer) throws(SecretServiceError) {
        guard sd_bus_message_exit_container(m) > 0 else { throw malformed("the end of a container") }
    }

    private static func malformed(_ what: String) -> SecretServiceError {
        .invalidArgs("the message could not be read: \(what)")
    }
}
