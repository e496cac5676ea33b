#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Archives `Encodable` values, like `JSONEncoder`: value -> ``ArchiveValue`` tree -> archive bytes.
///
/// Registered types become objects named by their registered class name; other keyed types become
/// dictionaries. Class instances met more than once are written once and shared (§A4); a class instance
/// that contains itself is refused with ``ArchiveError/Code/cycle``.
public struct ArchiveEncoder: Sendable {
    /// Deterministic output by default: the same value gives the same bytes in every process.
    public var options: ArchiveWritingOptions = .deterministic
    /// The bounds the written archive must stay within, as a reader will check them.
    public var limits: ArchiveLimits = .default
    /// The class types archived as objects, by the name they are registered under.
    public var registry = ArchiveTypeRegistry()

    /// An encoder that archives the types of `registry`, deterministically.
    public init(registry: ArchiveTypeRegistry = ArchiveTypeRegistry()) { self.registry = registry }

    /// The archive of `value`.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        try ArchiveSerialization.data(from: encodeToValue(value), options: options, limits: limits)
    }

    /// The value tree of `value`, without writing it.
    public func encodeToValue<T: Encodable>(_ value: T) throws -> ArchiveValue {
        let state = EncodingState(registry: registry, maxDepth: limits.maxDepth)
        return try state.value(of: value, path: [])
    }
}

/// Marks `Optional`, whose dynamic casts look through the wrapper.
private protocol OptionalMarker {}
extension Optional: OptionalMarker {}

/// The value of the common leaf types, without an encoder: the same value their `encode(to:)` produces.
@inline(__always)
private func leafValue<T: Encodable>(_ value: T) -> ArchiveValue? {
    if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
    if T.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
    if T.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
    if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
    if T.self == Date.self { return .date(unsafeBitCast(value, to: Date.self)) }
    if T.self == Data.self { return .data(unsafeBitCast(value, to: Data.self)) }
    if T.self == [String].self {
        return .array(unsafeBitCast(value, to: [String].self).map { .string($0) })
    }
    if T.self == Int64.self { return .int(unsafeBitCast(value, to: Int64.self)) }
    if T.self == UInt64.self { return .uint(unsafeBitCast(value, to: UInt64.self)) }
    if T.self == ArchiveValue.self { return unsafeBitCast(value, to: ArchiveValue.self) }
    if T.self == UUID.self { return .uuid(unsafeBitCast(value, to: UUID.self)) }
    if T.self == Float.self { return .double(Double(unsafeBitCast(value, to: Float.self))) }
    return nil
}

/// What one encode call shares: the registry and the class instances met so far.
private final class EncodingState {
    let registry: ArchiveTypeRegistry
    let maxDepth: Int
    /// Class instances by identity: their shared box once encoded, nil while being encoded.
    var instances: [ObjectIdentifier: ArchiveShared?] = [:]
    /// Keeps instances alive so their identifiers are not reused during the call.
    var retained: [AnyObject] = []
    /// Nested `encode(to:)` calls: single-value wrappers nest without growing the coding path.
    var depth = 0
    /// Types whose values can be neither one of the specially archived types nor a class instance (structs and
    /// enums other than `Optional`): their dynamic casts below would all fail, so they are skipped.
    var plainTypes: [ObjectIdentifier: Bool] = [:]

    init(registry: ArchiveTypeRegistry, maxDepth: Int) {
        self.registry = registry
        self.maxDepth = maxDepth
    }

    /// `value(of:path:)` for a value at `key` below `parent`: the path is built only when it is needed.
    @inline(__always)
    func value<T: Encodable>(of value: T, parent: [any CodingKey], key: @autoclosure () -> any CodingKey) throws
        -> ArchiveValue
    {
        if parent.count + 1 < maxDepth, depth < maxDepth, let v = leafValue(value) { return v }
        return try self.value(of: value, path: parent + [key()])
    }

    func value<T: Encodable>(of value: T, path: [any CodingKey]) throws -> ArchiveValue {
        guard path.count < maxDepth, depth < maxDepth else {
            throw ArchiveError(.depthLimit, "more than \(maxDepth) nested values at \(path.map(\.stringValue))")
        }
        if let v = leafValue(value) { return v }
        let id = ObjectIdentifier(T.self)
        let plain: Bool
        if let known = plainTypes[id] {
            plain = known
        } else {
            plain = !(T.self is AnyClass) && !(T.self is any OptionalMarker.Type) && T.self != URL.self
            plainTypes[id] = plain
        }
        if plain { return try encodeFresh(value, path: path) }
        switch value {
        case let v as ArchiveValue: return v
        case let v as Data: return .data(v)
        case let v as Date: return .date(v)
        case let v as UUID: return .uuid(v)
        case let v as URL: return .url(v)
        default: break
        }
        guard type(of: value) is AnyClass else { return try encodeFresh(value, path: path) }
        let object = value as AnyObject
        let oid = ObjectIdentifier(object)
        if let known = instances[oid] {
            guard let box = known else {
                throw ArchiveError(.cycle, "\(T.self) at \(path.map(\.stringValue)) contains itself")
            }
            return .shared(box)
        }
        instances[oid] = .some(nil)
        retained.append(object)
        let box = ArchiveShared(try encodeFresh(value, path: path))
        instances[oid] = box
        return .shared(box)
    }

    private func encodeFresh<T: Encodable>(_ value: T, path: [any CodingKey]) throws -> ArchiveValue {
        let encoder = ArchiveEncoderImpl(state: self, path: path)
        depth += 1
        defer { depth -= 1 }
        try value.encode(to: encoder)
        let result = try encoder.root.finish()
        guard let entry = registry.entry(for: type(of: value)) else { return result }
        guard case .dictionary(let fields) = result else {
            throw ArchiveError(.invalidValue, "registered type \(T.self) must encode a keyed container")
        }
        return .object(ArchiveObject(className: entry.name, fields: fields))
    }
}

/// A node under construction: containers hand out references to it, so it is a class. Finished values are
/// stored directly; nested containers stay nodes (`pending`) until `finish()`.
private final class Node {
    enum Kind { case empty, value, array, keyed }
    var kind: Kind = .empty
    var value: ArchiveValue = .null
    var items: [ArchiveValue] = []
    var fields: [String: ArchiveValue] = [:]
    /// Nested nodes: by index into `items`, or by key of `fields` (a placeholder is stored there meanwhile).
    var pendingItems: [(index: Int, node: Node)] = []
    var pendingFields: [String: Node] = [:]

    init() {}

    func makeKeyed() {
        guard kind != .keyed else { return }
        kind = .keyed
        value = .null
        items = []
        pendingItems = []
    }

    func makeArray() {
        guard kind != .array else { return }
        kind = .array
        value = .null
        fields = [:]
        pendingFields = [:]
    }

    func setValue(_ v: ArchiveValue) {
        kind = .value
        value = v
        items = []
        fields = [:]
        pendingItems = []
        pendingFields = [:]
    }

    @inline(__always)
    func set(_ v: ArchiveValue, forKey key: String) {
        guard kind == .keyed else { return }
        if !pendingFields.isEmpty { pendingFields[key] = nil }
        fields[key] = v
    }

    func setNode(_ child: Node, forKey key: String) {
        guard kind == .keyed else { return }
        fields[key] = .null
        pendingFields[key] = child
    }

    @inline(__always)
    func append(_ v: ArchiveValue) {
        guard kind == .array else { return }
        items.append(v)
    }

    func appendNode(_ child: Node) {
        guard kind == .array else { return }
        pendingItems.append((items.count, child))
        items.append(.null)
    }

    func finish() throws -> ArchiveValue {
        switch kind {
        case .empty: return .dictionary([:])
        case .value: return value
        case .array:
            var items = self.items
            self.items = []
            for (index, node) in pendingItems { items[index] = try node.finish() }
            return .array(items)
        case .keyed:
            var fields = self.fields
            self.fields = [:]
            for (key, node) in pendingFields { fields[key] = try node.finish() }
            return .dictionary(fields)
        }
    }
}

private struct ArchiveEncoderImpl: Encoder {
    let state: EncodingState
    let codingPath: [any CodingKey]
    let root: Node
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(state: EncodingState, path: [any CodingKey], node: Node = Node()) {
        self.state = state
        self.codingPath = path
        self.root = node
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        root.makeKeyed()
        return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self, node: root))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        root.makeArray()
        return UnkeyedContainer(encoder: self, node: root)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleContainer(encoder: self) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: ArchiveEncoderImpl
    let node: Node
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil(forKey key: Key) throws { node.set(.null, forKey: key.stringValue) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        node.set(try encoder.state.value(of: value, parent: encoder.codingPath, key: key), forKey: key.stringValue)
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws { node.set(.bool(value), forKey: key.stringValue) }
    mutating func encode(_ value: String, forKey key: Key) throws { node.set(.string(value), forKey: key.stringValue) }
    mutating func encode(_ value: Double, forKey key: Key) throws { node.set(.double(value), forKey: key.stringValue) }
    mutating func encode(_ value: Int, forKey key: Key) throws { node.set(.int(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { node.set(.int(value), forKey: key.stringValue) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { node.set(.uint(value), forKey: key.stringValue) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = Node()
        node.setNode(child, forKey: key.stringValue)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath + [key], node: child)
            .container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = Node()
        node.setNode(child, forKey: key.stringValue)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath + [key], node: child).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { superEncoder(key: "super") }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key.stringValue) }
    private func superEncoder(key: String) -> any Encoder {
        guard node.kind == .keyed else { return ArchiveEncoderImpl(state: encoder.state, path: codingPath) }
        let child = Node()
        node.setNode(child, forKey: key)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath, node: child)
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: ArchiveEncoderImpl
    let node: Node
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { node.kind == .array ? node.items.count : 0 }

    mutating func encodeNil() throws { node.append(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        node.append(try encoder.state.value(of: value, parent: encoder.codingPath, key: IndexKey(count)))
    }
    mutating func encode(_ value: Bool) throws { node.append(.bool(value)) }
    mutating func encode(_ value: String) throws { node.append(.string(value)) }
    mutating func encode(_ value: Double) throws { node.append(.double(value)) }
    mutating func encode(_ value: Int) throws { node.append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { node.append(.int(value)) }
    mutating func encode(_ value: UInt64) throws { node.append(.uint(value)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = Node()
        let key = IndexKey(count)
        node.appendNode(child)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath + [key], node: child)
            .container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = Node()
        let key = IndexKey(count)
        node.appendNode(child)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath + [key], node: child).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = Node()
        node.appendNode(child)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath, node: child)
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let encoder: ArchiveEncoderImpl
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.root.setValue(.null) }
    mutating func encode(_ value: Bool) throws { encoder.root.setValue(.bool(value)) }
    mutating func encode(_ value: String) throws { encoder.root.setValue(.string(value)) }
    mutating func encode(_ value: Double) throws { encoder.root.setValue(.double(value)) }
    mutating func encode(_ value: Float) throws { encoder.root.setValue(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { encoder.root.setValue(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { encoder.root.setValue(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { encoder.root.setValue(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { encoder.root.setValue(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { encoder.root.setValue(.int(value)) }
    mutating func encode(_ value: UInt) throws { encoder.root.setValue(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { encoder.root.setValue(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { encoder.root.setValue(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { encoder.root.setValue(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { encoder.root.setValue(.uint(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.root.setValue(try encoder.state.value(of: value, path: codingPath))
    }
}
