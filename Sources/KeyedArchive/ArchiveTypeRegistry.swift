/// The closed set of custom types an ``ArchiveEncoder`` writes as objects and an ``ArchiveDecoder`` admits.
///
/// Each type is registered under a stable class name (written into archives) and optional aliases (legacy
/// names it also reads). Nothing is ever resolved by name at run time: decoding asks for a static type, and
/// that type admits only its own name and aliases, never another registered type or a subclass.
public struct ArchiveTypeRegistry: Sendable {
    struct Entry: Sendable {
        let name: String
        let names: Set<String>
    }

    private(set) var entries: [ObjectIdentifier: Entry] = [:]

    public init() {}

    /// Registers `type` under `name`; an archive object named `name` or one of `aliases` decodes as it.
    public mutating func register<T>(_ type: T.Type, as name: String, aliases: [String] = []) {
        precondition(!name.isEmpty, "a class name is at least one byte")
        entries[ObjectIdentifier(type)] = Entry(name: name, names: Set([name] + aliases))
    }

    /// The registry with `type` added.
    public func registering<T>(_ type: T.Type, as name: String, aliases: [String] = []) -> ArchiveTypeRegistry {
        var copy = self
        copy.register(type, as: name, aliases: aliases)
        return copy
    }

    func entry(for type: Any.Type) -> Entry? { entries[ObjectIdentifier(type)] }
}
