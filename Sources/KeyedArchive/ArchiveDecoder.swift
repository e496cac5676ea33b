#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Decodes `Decodable` values from archives, like `JSONDecoder`: archive bytes -> ``ArchiveValue`` tree ->
/// value. Secure by construction: an archive object decodes only into the static type the caller asks for,
/// and only if that type is registered under the object's class name or one of its aliases
/// (``ArchiveError/Code/classNotAllowed`` otherwise). Shared class instances decode as one instance.
public struct ArchiveDecoder: Sendable {
    /// The bounds reading an archive stays within (``ArchiveLimits/default`` unless set).
    public var limits: ArchiveLimits = .default
    /// The types an archive object may decode into, by class name.
    public var registry = ArchiveTypeRegistry()

    /// A decoder that allows the types of `registry`, within the default limits.
    public init(registry: ArchiveTypeRegistry = ArchiveTypeRegistry()) { self.registry = registry }

    /// The value of type `T` an archive holds.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decode(type, fromValue: ArchiveSerialization.value(from: data, limits: limits))
    }

    /// The value of type `T` a value tree holds.
    public func decode<T: Decodable>(_ type: T.Type, fromValue value: ArchiveValue) throws -> T {
        try DecodingState(registry: registry).decode(type, from: value, path: [])
    }
}

/// The common leaf types, decoded without a decoder when the value is of the expected kind: the same result their
/// `init(from:)` gives. Nil otherwise (the general path then decodes it, or throws its error).
@inline(__always)
private func leafValue<T: Decodable>(_ type: T.Type, _ value: ArchiveValue) -> T? {
    if T.self == String.self {
        guard case .string(let s) = value.unshared else { return nil }
        return unsafeBitCast(s, to: T.self)
    }
    if T.self == Int.self {
        let r: Int? =
            switch value.unshared {
            case .int(let n): Int(exactly: n)
            case .uint(let n): Int(exactly: n)
            default: nil
            }
        guard let r else { return nil }
        return unsafeBitCast(r, to: T.self)
    }
    if T.self == Double.self {
        guard case .double(let d) = value.unshared else { return nil }
        return unsafeBitCast(d, to: T.self)
    }
    if T.self == Bool.self {
        guard case .bool(let b) = value.unshared else { return nil }
        return unsafeBitCast(b, to: T.self)
    }
    if T.self == Date.self {
        guard case .date(let d) = value.unshared else { return nil }
        return unsafeBitCast(d, to: T.self)
    }
    if T.self == Data.self {
        guard case .data(let d) = value.unshared else { return nil }
        return unsafeBitCast(d, to: T.self)
    }
    if T.self == [String].self {
        guard case .array(let items) = value.unshared else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for item in items {
            guard case .string(let s) = item.unshared else { return nil }
            strings.append(s)
        }
        return unsafeBitCast(strings, to: T.self)
    }
    if T.self == Int64.self {
        let r: Int64? =
            switch value.unshared {
            case .int(let n): n
            case .uint(let n): Int64(exactly: n)
            default: nil
            }
        guard let r else { return nil }
        return unsafeBitCast(r, to: T.self)
    }
    if T.self == UInt64.self {
        let r: UInt64? =
            switch value.unshared {
            case .int(let n): UInt64(exactly: n)
            case .uint(let n): n
            default: nil
            }
        guard let r else { return nil }
        return unsafeBitCast(r, to: T.self)
    }
    if T.self == UUID.self {
        guard case .uuid(let u) = value.unshared else { return nil }
        return unsafeBitCast(u, to: T.self)
    }
    return nil
}

private final class DecodingState {
    let registry: ArchiveTypeRegistry
    /// Class instances already made from a shared box, by (box, type): shared values decode as one instance.
    var instances: [[ObjectIdentifier]: AnyObject] = [:]

    init(registry: ArchiveTypeRegistry) { self.registry = registry }

    /// `decode(_:from:path:)` for a value at `key` below `parent`: the path is built only when it is needed.
    @inline(__always)
    func decode<T: Decodable>(
        _ type: T.Type, from value: ArchiveValue, parent: [any CodingKey],
        key: @autoclosure () -> any CodingKey
    ) throws -> T {
        if let v = leafValue(type, value) { return v }
        return try decode(type, from: value, path: parent + [key()])
    }

    func decode<T: Decodable>(_ type: T.Type, from value: ArchiveValue, path: [any CodingKey]) throws -> T {
        if T.self == ArchiveValue.self { return unsafeBitCast(value, to: T.self) }
        if let v = leafValue(type, value) { return v }
        if case .shared(let box) = value, T.self is AnyClass {
            let key = [ObjectIdentifier(box), ObjectIdentifier(T.self)]
            if let made = instances[key] as? T { return made }
            let made = try decode(type, from: box.value, path: path)
            instances[key] = made as AnyObject
            return made
        }
        let value = value.unshared
        func mismatch(_ expected: String) -> DecodingError {
            .typeMismatch(
                T.self, .init(codingPath: path, debugDescription: "expected \(expected), found \(value.kind)"))
        }
        if T.self == Data.self {
            guard case .data(let d) = value else { throw mismatch("data") }
            return unsafeBitCast(d, to: T.self)
        }
        if T.self == Date.self {
            guard case .date(let d) = value else { throw mismatch("date") }
            return unsafeBitCast(d, to: T.self)
        }
        if T.self == UUID.self {
            guard case .uuid(let u) = value else { throw mismatch("uuid") }
            return unsafeBitCast(u, to: T.self)
        }
        if T.self == URL.self {
            guard case .url(let u) = value else { throw mismatch("url") }
            return unsafeBitCast(u, to: T.self)
        }
        if let entry = registry.entry(for: T.self) {
            guard case .object(let object) = value else { throw mismatch("object \(entry.name)") }
            let fields = ArchiveDecoderImpl(state: self, value: .dictionary(object.fields), path: path)
            if entry.names.contains(object.className) { return try T(from: fields) }
            // A subclass registered below T, made by its own initializer (the registry checked it is a T).
            if let subclass = entry.subclasses[object.className], let made = try subclass.make(fields) as? T {
                return made
            }
            throw ArchiveError(.classNotAllowed, "\(object.className) where \(entry.name) was expected")
        }
        if case .object(let object) = value {
            throw ArchiveError(.classNotAllowed, "\(object.className) is not registered for \(T.self)")
        }
        return try T(from: ArchiveDecoderImpl(state: self, value: value, path: path))
    }
}

private struct ArchiveDecoderImpl: Decoder {
    let state: DecodingState
    let value: ArchiveValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(state: DecodingState, value: ArchiveValue, path: [any CodingKey]) {
        self.state = state
        self.value = value
        self.codingPath = path
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .dictionary(let fields) = value.unshared else {
            throw DecodingError.typeMismatch(
                [String: ArchiveValue].self,
                .init(codingPath: codingPath, debugDescription: "expected a dictionary, found \(value.kind)"))
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, fields: fields))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value.unshared else {
            throw DecodingError.typeMismatch(
                [ArchiveValue].self,
                .init(codingPath: codingPath, debugDescription: "expected an array, found \(value.kind)"))
        }
        return UnkeyedContainer(decoder: self, items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleContainer(decoder: self) }
}

/// Scalars: integers convert between int and uint only when exact; a Float is a double rounded (within range);
/// nothing else converts.
@inline(__always)
private func scalarMismatch<T>(_ type: T.Type, _ v: ArchiveValue, _ path: [any CodingKey]) -> DecodingError {
    DecodingError.typeMismatch(T.self, .init(codingPath: path, debugDescription: "found \(v.kind)"))
}

@inline(__always)
private func scalar<I: FixedWidthInteger>(
    _ type: I.Type, _ value: ArchiveValue,
    _ path: @autoclosure () -> [any CodingKey]
) throws -> I {
    let v = value.unshared
    let r: I? =
        switch v {
        case .int(let n): I(exactly: n)
        case .uint(let n): I(exactly: n)
        default: nil
        }
    guard let r else { throw scalarMismatch(I.self, v, path()) }
    return r
}

@inline(__always)
private func scalar(_ type: Bool.Type, _ value: ArchiveValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool
{
    let v = value.unshared
    guard case .bool(let b) = v else { throw scalarMismatch(Bool.self, v, path()) }
    return b
}

@inline(__always)
private func scalar(_ type: String.Type, _ value: ArchiveValue, _ path: @autoclosure () -> [any CodingKey]) throws
    -> String
{
    let v = value.unshared
    guard case .string(let s) = v else { throw scalarMismatch(String.self, v, path()) }
    return s
}

@inline(__always)
private func scalar(_ type: Double.Type, _ value: ArchiveValue, _ path: @autoclosure () -> [any CodingKey]) throws
    -> Double
{
    let v = value.unshared
    guard case .double(let d) = v else { throw scalarMismatch(Double.self, v, path()) }
    return d
}

@inline(__always)
private func scalar(_ type: Float.Type, _ value: ArchiveValue, _ path: @autoclosure () -> [any CodingKey]) throws
    -> Float
{
    let v = value.unshared
    guard case .double(let d) = v else { throw scalarMismatch(Float.self, v, path()) }
    // Rounded to the nearest Float, but a finite double beyond Float's range is an error, not an infinity.
    let f = Float(d)
    guard f.isFinite || !d.isFinite else {
        throw DecodingError.typeMismatch(
            Float.self, .init(codingPath: path(), debugDescription: "double beyond Float's range"))
    }
    return f
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ArchiveDecoderImpl
    let fields: [String: ArchiveValue]
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

    private func field(_ key: Key) throws -> ArchiveValue {
        guard let v = fields[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no field"))
        }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool { try field(key).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try scalar(type, field(key), codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try scalar(type, field(key), codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try scalar(type, field(key), codingPath + [key])
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try scalar(type, field(key), codingPath + [key]) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.state.decode(type, from: field(key), parent: codingPath, key: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try ArchiveDecoderImpl(state: decoder.state, value: field(key), path: codingPath + [key]).container(
            keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ArchiveDecoderImpl(state: decoder.state, value: field(key), path: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ArchiveDecoderImpl(state: decoder.state, value: fields["super"] ?? .null, path: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ArchiveDecoderImpl(state: decoder.state, value: fields[key.stringValue] ?? .null, path: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: ArchiveDecoderImpl
    let items: [ArchiveValue]
    var currentIndex = 0
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(decoder: ArchiveDecoderImpl, items: [ArchiveValue]) {
        self.decoder = decoder
        self.items = items
    }

    private mutating func next<T>(_ type: T.Type) throws -> (ArchiveValue, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: codingPath, debugDescription: "array ended"))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: codingPath, debugDescription: "array ended"))
        }
        let index = currentIndex
        currentIndex = index + 1
        return try decoder.state.decode(type, from: items[index], parent: codingPath, key: IndexKey(index))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (v, path) = try next([String: ArchiveValue].self)
        return try ArchiveDecoderImpl(state: decoder.state, value: v, path: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, path) = try next([ArchiveValue].self)
        return try ArchiveDecoderImpl(state: decoder.state, value: v, path: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (v, path) = try next(ArchiveValue.self)
        return ArchiveDecoderImpl(state: decoder.state, value: v, path: path)
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    let decoder: ArchiveDecoderImpl
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try scalar(type, decoder.value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try scalar(type, decoder.value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.state.decode(type, from: decoder.value, path: codingPath)
    }
}
