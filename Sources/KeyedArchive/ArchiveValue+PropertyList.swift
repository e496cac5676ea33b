#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension ArchiveValue {
    /// The value of a property list made of `Any`s, as `NSKeyedArchiver` would archive it (SPEC.md Part 2
    /// §A11): `String`, `Bool`, every integer type up to 64 bits, `Double`, `Float`, `Data`, `Date`, `UUID`,
    /// `URL`, arrays (`[Any]`), dictionaries (`[String: Any]`, or `[AnyHashable: Any]` with other keys),
    /// `Set<AnyHashable>`, `nil` and `ArchiveValue` itself; Foundation's `NSString`, `NSNumber`, `NSArray`,
    /// `NSDictionary`, `NSSet`, `NSData`, `NSDate` and `NSNull` through the casts Foundation provides, with
    /// an `NSNumber` made from a `Bool` as a bool, from an integer as an int (a uint above `Int64.max`) and
    /// from a floating-point number as a double. Anything else is *invalid value*.
    ///
    /// Nesting deeper than `limits.maxDepth` is *depth limit exceeded* (a Foundation array that contains
    /// itself ends there), and more than `limits.maxValues` values, counted at every use of a container
    /// that appears several times, *value count limit exceeded*.
    public init(propertyList: Any, limits: ArchiveLimits = ArchiveLimits()) throws {
        var budget = PropertyListBudget(limits: limits)
        self = try ArchiveValue.converting(propertyList, depth: 1, &budget)
    }

    /// Depth-bounded (`maxDepth`, checked before descending), so the recursion is bounded too.
    private static func converting(_ value: Any, depth: Int, _ budget: inout PropertyListBudget) throws -> ArchiveValue
    {
        try budget.count(depth)
        if let v = scalar(value) { return v }
        if Mirror(reflecting: value).displayStyle == .optional {
            guard let wrapped = Mirror(reflecting: value).children.first?.value else { return .null }
            return try converting(wrapped, depth: depth, &budget)
        }
        if let v = value as? String { return .string(v) }
        if let v = value as? Data { return .data(v) }
        if let v = value as? Date { return .date(v) }
        if let v = number(value) { return v }
        if let array = value as? [Any] {
            var out: [ArchiveValue] = []
            out.reserveCapacity(array.count)
            for element in array { out.append(try converting(element, depth: depth + 1, &budget)) }
            return .array(out)
        }
        if let dictionary = value as? [String: Any] {
            var out: [String: ArchiveValue] = [:]
            for (key, element) in dictionary { out[key] = try converting(element, depth: depth + 1, &budget) }
            return .dictionary(out)
        }
        if let dictionary = value as? [AnyHashable: Any] {
            var out: [ArchiveValue: ArchiveValue] = [:]
            for (key, element) in dictionary {
                let k = try converting(key.base, depth: depth + 1, &budget)
                guard out.updateValue(try converting(element, depth: depth + 1, &budget), forKey: k) == nil else {
                    throw ArchiveError(.duplicateKey, "two keys of a property-list dictionary make one value")
                }
            }
            return .anyKeyDictionary(out)
        }
        if let set = value as? Set<AnyHashable> {
            var out = Set<ArchiveValue>()
            for element in set {
                guard out.insert(try converting(element.base, depth: depth + 1, &budget)).inserted else {
                    throw ArchiveError(.duplicateKey, "two elements of a property-list set make one value")
                }
            }
            return .set(out)
        }
        if String(describing: type(of: value)) == "NSNull" { return .null }
        throw ArchiveError(.invalidValue, "a \(type(of: value)) is not a property-list value")
    }

    /// Swift's own scalar types, by their exact type (so no bridging turns an `Int8` into a `Bool`).
    private static func scalar(_ value: Any) -> ArchiveValue? {
        switch value {
        case let v as ArchiveValue: return v
        case let v as Bool where type(of: value) == Bool.self: return .bool(v)
        case let v as Int where type(of: value) == Int.self: return .int(Int64(v))
        case let v as Int8 where type(of: value) == Int8.self: return .int(Int64(v))
        case let v as Int16 where type(of: value) == Int16.self: return .int(Int64(v))
        case let v as Int32 where type(of: value) == Int32.self: return .int(Int64(v))
        case let v as Int64 where type(of: value) == Int64.self: return .int(v)
        case let v as UInt where type(of: value) == UInt.self: return .uint(UInt64(v))
        case let v as UInt8 where type(of: value) == UInt8.self: return .uint(UInt64(v))
        case let v as UInt16 where type(of: value) == UInt16.self: return .uint(UInt64(v))
        case let v as UInt32 where type(of: value) == UInt32.self: return .uint(UInt64(v))
        case let v as UInt64 where type(of: value) == UInt64.self: return .uint(v)
        case let v as Double where type(of: value) == Double.self: return .double(v)
        case let v as Float where type(of: value) == Float.self: return .double(Double(v))
        case let v as UUID where type(of: value) == UUID.self: return .uuid(v)
        case let v as URL where type(of: value) == URL.self: return .url(v)
        default: return nil
        }
    }

    /// An `NSNumber`, named by its class only (this module does not link Foundation): Foundation's boolean
    /// class on every platform is `__NSCFBoolean`; other numbers convert exactly, as `as?` does for them.
    private static func number(_ value: Any) -> ArchiveValue? {
        guard type(of: value) is AnyClass else { return nil }
        if String(describing: type(of: value)) == "__NSCFBoolean", let b = value as? Bool { return .bool(b) }
        if let i = value as? Int64 { return .int(i) }
        if let u = value as? UInt64 { return .uint(u) }
        if let d = value as? Double { return .double(d) }
        return nil
    }
}

/// What converting one property list may do: `maxDepth` levels and `maxValues` values in all.
private struct PropertyListBudget {
    let limits: ArchiveLimits
    var values = 0

    mutating func count(_ depth: Int) throws {
        guard depth <= limits.maxDepth else {
            throw ArchiveError(.depthLimit, "a property list nested deeper than \(limits.maxDepth)")
        }
        values += 1
        guard values <= limits.maxValues else {
            throw ArchiveError(.valueLimit, "a property list of more than \(limits.maxValues) values")
        }
    }
}
