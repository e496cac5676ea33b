/// The closed set of custom types an ``ArchiveEncoder`` writes as objects and an ``ArchiveDecoder`` admits.
///
/// Each type is registered under a stable class name (written into archives) and optional aliases (legacy
/// names it also reads). Nothing is ever resolved by name at run time: decoding asks for a static type, and
/// that type admits its own name and aliases and, for a class, the names of the subclasses registered
/// below it with ``register(_:as:aliases:subclassOf:)`` (as `NSKeyedUnarchiver` admits a subclass where its
/// base class is decoded), never another registered type.
public struct ArchiveTypeRegistry: Sendable {
    struct Entry: Sendable {
        let name: String
        let names: Set<String>
        /// The registered classes this one was registered below, nearest first.
        var ancestors: [ObjectIdentifier] = []
        /// Subclasses registered below this class (at any depth), by each of their names and aliases.
        var subclasses: [String: Subclass] = [:]
    }

    /// How to make a registered subclass where its base class is decoded.
    struct Subclass: Sendable {
        let name: String
        let make: @Sendable (any Decoder) throws -> AnyObject
    }

    private(set) var entries: [ObjectIdentifier: Entry] = [:]

    /// An empty registry: no class type may be archived or decoded until registered.
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

    /// Registers the class `type` under `name` as ``register(_:as:aliases:)`` does, and as a subclass of
    /// `base`: where `base`, or any class `base` was itself registered below, is decoded, an object named
    /// `name` or one of `aliases` decodes as `type` (through `type`'s own `init(from:)`). `base` must be
    /// registered first, and `type` must be a subclass of it; an object of any name registered for no class
    /// of the hierarchy is still *class not allowed*.
    public mutating func register<T: AnyObject & Decodable & SendableMetatype, Base: AnyObject>(
        _ type: T.Type, as name: String, aliases: [String] = [], subclassOf base: Base.Type
    ) {
        precondition((type as Any.Type) is Base.Type, "\(type) is not a subclass of \(base)")
        guard let baseEntry = entries[ObjectIdentifier(base)] else {
            preconditionFailure("register \(base) before its subclass \(type)")
        }
        register(type, as: name, aliases: aliases)
        let ancestors = [ObjectIdentifier(base)] + baseEntry.ancestors
        entries[ObjectIdentifier(type)]?.ancestors = ancestors
        let subclass = Subclass(name: name, make: { try T(from: $0) })
        for ancestor in ancestors {
            for n in [name] + aliases { entries[ancestor]?.subclasses[n] = subclass }
        }
    }

    /// The registry with the subclass `type` added.
    public func registering<T: AnyObject & Decodable & SendableMetatype, Base: AnyObject>(
        _ type: T.Type, as name: String, aliases: [String] = [], subclassOf base: Base.Type
    ) -> ArchiveTypeRegistry {
        var copy = self
        copy.register(type, as: name, aliases: aliases, subclassOf: base)
        return copy
    }

    func entry(for type: Any.Type) -> Entry? { entries[ObjectIdentifier(type)] }
}
