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
    public var limits: ArchiveLimits = .default
    public var registry = ArchiveTypeRegistry()

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

    init(registry: ArchiveTypeRegistry, maxDepth: Int) {
        self.registry = registry
        self.maxDepth = maxDepth
    }

    func value<T: Encodable>(of value: T, path: [any CodingKey]) throws -> ArchiveValue {
        guard path.count < maxDepth, depth < maxDepth else {
            throw ArchiveError(.depthLimit, "more than \(maxDepth) nested values at \(path.map(\.stringValue))")
        }
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
        let id = ObjectIdentifier(object)
        if let known = instances[id] {
            guard let box = known else {
                throw ArchiveError(.cycle, "\(T.self) at \(path.map(\.stringValue)) contains itself")
            }
            return .shared(box)
        }
        instances[id] = .some(nil)
        retained.append(object)
        let box = ArchiveShared(try encodeFresh(value, path: path))
        instances[id] = box
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

/// A node under construction: containers hand out references to it, so it is a class.
private final class Node {
    enum Storage {
        case empty
        case value(ArchiveValue)
        case array([Node])
        case keyed([String: Node])
    }
    var storage: Storage = .empty

    init() {}
    init(_ value: ArchiveValue) { storage = .value(value) }

    func finish() throws -> ArchiveValue {
        switch storage {
        case .empty: return .dictionary([:])
        case .value(let v): return v
        case .array(let nodes): return .array(try nodes.map { try $0.finish() })
        case .keyed(let nodes): return .dictionary(try nodes.mapValues { try $0.finish() })
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
        if case .keyed = root.storage {} else { root.storage = .keyed([:]) }
        return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self, node: root))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = root.storage {} else { root.storage = .array([]) }
        return UnkeyedContainer(encoder: self, node: root)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleContainer(encoder: self) }

    func encoded<T: Encodable>(_ value: T, at key: any CodingKey) throws -> ArchiveValue {
        try state.value(of: value, path: codingPath + [key])
    }
}

private struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ i: Int) { intValue = i }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: ArchiveEncoderImpl
    let node: Node
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ child: Node, _ key: Key) {
        guard case .keyed(var fields) = node.storage else { return }
        node.storage = .empty  // keeps the dictionary uniquely referenced while it changes
        fields[key.stringValue] = child
        node.storage = .keyed(fields)
    }

    mutating func encodeNil(forKey key: Key) throws { set(Node(.null), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(Node(try encoder.encoded(value, at: key)), key)
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(Node(.bool(value)), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(Node(.string(value)), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(Node(.double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(Node(.int(Int64(value))), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(Node(.int(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(Node(.uint(value)), key) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = Node()
        set(child, key)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath + [key], node: child)
            .container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = Node()
        set(child, key)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath + [key], node: child).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { superEncoder(key: "super") }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key.stringValue) }
    private func superEncoder(key: String) -> any Encoder {
        let child = Node()
        guard case .keyed(var fields) = node.storage else { return ArchiveEncoderImpl(state: encoder.state, path: codingPath) }
        fields[key] = child
        node.storage = .keyed(fields)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath, node: child)
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: ArchiveEncoderImpl
    let node: Node
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { if case .array(let a) = node.storage { a.count } else { 0 } }

    private func append(_ child: Node) {
        guard case .array(var items) = node.storage else { return }
        node.storage = .empty
        items.append(child)
        node.storage = .array(items)
    }

    mutating func encodeNil() throws { append(Node(.null)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        append(Node(try encoder.encoded(value, at: IndexKey(count))))
    }
    mutating func encode(_ value: Bool) throws { append(Node(.bool(value))) }
    mutating func encode(_ value: String) throws { append(Node(.string(value))) }
    mutating func encode(_ value: Double) throws { append(Node(.double(value))) }
    mutating func encode(_ value: Int) throws { append(Node(.int(Int64(value)))) }
    mutating func encode(_ value: Int64) throws { append(Node(.int(value))) }
    mutating func encode(_ value: UInt64) throws { append(Node(.uint(value))) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = Node()
        let key = IndexKey(count)
        append(child)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath + [key], node: child)
            .container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = Node()
        let key = IndexKey(count)
        append(child)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath + [key], node: child).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = Node()
        append(child)
        return ArchiveEncoderImpl(state: encoder.state, path: codingPath, node: child)
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let encoder: ArchiveEncoderImpl
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.root.storage = .value(.null) }
    mutating func encode(_ value: Bool) throws { encoder.root.storage = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { encoder.root.storage = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { encoder.root.storage = .value(.double(value)) }
    mutating func encode(_ value: Float) throws { encoder.root.storage = .value(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { encoder.root.storage = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { encoder.root.storage = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { encoder.root.storage = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { encoder.root.storage = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { encoder.root.storage = .value(.int(value)) }
    mutating func encode(_ value: UInt) throws { encoder.root.storage = .value(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { encoder.root.storage = .value(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { encoder.root.storage = .value(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { encoder.root.storage = .value(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { encoder.root.storage = .value(.uint(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.root.storage = .value(try encoder.state.value(of: value, path: codingPath))
    }
}
