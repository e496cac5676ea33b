#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Exports a value as NSKeyedArchiver's object graph with a work list (no recursion): each value gets a UID
/// (an index into `$objects`) when first met and is filled in when its turn comes. Strings are stored once
/// whatever their number of uses; a shared box is one object, referenced from every place it is used.
///
/// Kinds: null -> an NSNull instance; bool, int, double -> plist scalars (NSNumber); uint -> a 16-byte plist
/// integer (CoreFoundation's unsigned 64-bit NSNumber); string -> a plist string (NSString); data -> plist
/// data (NSData); date -> NSDate (`NS.time`); uuid -> NSUUID (`NS.uuidbytes`); url -> NSURL (`NS.base`,
/// `NS.relative`); array -> NSArray; dictionary and any-key dictionary -> NSDictionary; set -> NSSet;
/// object -> its class name (`$classes` = name, NSObject) with each field a UID.
struct NSKeyedExporter {
    private let limits: ArchiveLimits
    private var objects: [PropertyList] = [.string("$null")]
    private var pending: [(index: Int, value: ArchiveOrderedValue, depth: Int)] = []
    private var strings: [ExactString: Int] = [:]
    private var boxes: [ObjectIdentifier: Int] = [:]
    private var classes: [String: Int] = [:]
    private var null: Int?
    /// One `SORT_KEYS_MAX` budget for ordering every set and any-key dictionary of the export.
    private let sortKeys: ArchiveSortKeys

    init(limits: ArchiveLimits) {
        self.limits = limits
        sortKeys = ArchiveSortKeys(limits: limits)
    }

    mutating func archive(_ root: ArchiveValue) throws -> PropertyList {
        // Sets and any-key dictionaries in canonical order (SPEC.md Part 2 §A6), so the same value gives the
        // same archive: worked out once for the whole value.
        let rootUID = try uid(sortKeys.ordered(root), depth: 1)
        while let (index, value, depth) = pending.popLast() {
            objects[index] = try entry(for: value, depth: depth)
        }
        return .dictionary([
            "$archiver": .string("NSKeyedArchiver"),
            "$version": .int(NSKeyedArchive.archiverVersion),
            "$top": .dictionary(["root": rootUID]),
            "$objects": .array(objects)
        ])
    }

    /// The UID of `value`: the existing one for a string or a shared box already met, else a new object.
    private mutating func uid(_ value: ArchiveOrderedValue, depth: Int) throws -> PropertyList {
        guard depth <= limits.maxDepth else { throw ArchiveError(.depthLimit, "depth \(depth)") }
        var o = value
        var met: [ObjectIdentifier] = []
        while case .shared(let box) = o.value {
            let id = ObjectIdentifier(box)
            if let index = boxes[id] {
                for m in met { boxes[m] = index }
                return .uid(UInt64(index))
            }
            met.append(id)
            o = o.contents
        }
        let v = o.value
        if case .string(let s) = v, let index = strings[ExactString(string: s)] {
            for m in met { boxes[m] = index }
            return .uid(UInt64(index))
        }
        if case .null = v, let null {
            for m in met { boxes[m] = null }
            return .uid(UInt64(null))
        }
        guard objects.count < limits.maxValues else {
            throw ArchiveError(.valueLimit, "more than \(limits.maxValues) objects")
        }
        let index = objects.count
        objects.append(.null)
        for m in met { boxes[m] = index }
        switch v {
        case .string(let s): strings[ExactString(string: s)] = index
        case .null: null = index
        default: break
        }
        pending.append((index, o, depth))
        return .uid(UInt64(index))
    }

    private mutating func uid(_ value: ArchiveValue, depth: Int) throws -> PropertyList {
        try uid(ArchiveOrderedValue(unordered: value), depth: depth)
    }

    private mutating func classUID(_ name: String) -> PropertyList {
        if let index = classes[name] { return .uid(UInt64(index)) }
        let index = objects.count
        objects.append(
            .dictionary([
                "$classname": .string(name), "$classes": .array([.string(name), .string("NSObject")])
            ]))
        classes[name] = index
        return .uid(UInt64(index))
    }

    private mutating func instance(_ className: String, _ fields: [String: PropertyList]) -> PropertyList {
        var d = fields
        d["$class"] = classUID(className)
        return .dictionary(d)
    }

    private mutating func entry(for item: ArchiveOrderedValue, depth: Int) throws -> PropertyList {
        let next = depth + 1
        switch item.value {
        case .null: return instance("NSNull", [:])
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .uint(let u): return .uint(u)
        case .double(let d): return .real(d)
        case .string(let s):
            guard s.utf8.count <= limits.maxStringLength else { throw ArchiveError(.lengthLimit, "string") }
            return .string(s)
        case .data(let d):
            guard d.count <= limits.maxDataLength else { throw ArchiveError(.lengthLimit, "data") }
            return .data(d)
        case .date(let d): return instance("NSDate", ["NS.time": .real(d.timeIntervalSinceReferenceDate)])
        case .uuid(let u):
            let t = u.uuid
            let bytes: [UInt8] = [t.0, t.1, t.2, t.3, t.4, t.5, t.6, t.7, t.8, t.9, t.10, t.11, t.12, t.13, t.14, t.15]
            return instance("NSUUID", ["NS.uuidbytes": .data(Data(bytes))])
        case .url(let url):
            if let p = ArchiveURL.problem(url) { throw ArchiveError(.invalidValue, p) }
            var base: PropertyList = .uid(0)
            if let b = url.baseURL {
                guard let absolute = URL(string: b.absoluteString) else {
                    throw ArchiveError(.invalidValue, "base URL does not parse")
                }
                base = try uid(.url(absolute), depth: next)
            }
            return instance(
                "NSURL", ["NS.base": base, "NS.relative": try uid(.string(url.relativeString), depth: next)])
        case .array:
            return instance("NSArray", ["NS.objects": .array(try item.items.map { try uid($0, depth: next) })])
        case .set:
            return instance("NSSet", ["NS.objects": .array(try item.elements.map { try uid($0, depth: next) })])
        case .dictionary:
            let fields = item.fields
            return instance(
                "NSDictionary",
                [
                    "NS.keys": .array(try fields.map { try uid(.string($0.key), depth: next) }),
                    "NS.objects": .array(try fields.map { try uid($0.value, depth: next) })
                ])
        case .anyKeyDictionary:
            let entries = item.entries
            return instance(
                "NSDictionary",
                [
                    "NS.keys": .array(try entries.map { try uid($0.key, depth: next) }),
                    "NS.objects": .array(try entries.map { try uid($0.value, depth: next) })
                ])
        case .object(let o):
            guard !o.className.isEmpty, !NSKeyedArchive.standardClasses.contains(o.className) else {
                throw ArchiveError(.notExportable, "class name \(o.className.isEmpty ? "empty" : "reserved")")
            }
            guard !o.fields.keys.contains(where: { $0.hasPrefix("$") }) else {
                throw ArchiveError(.notExportable, "a field name starts with $")
            }
            var fields: [String: PropertyList] = [:]
            for (key, value) in item.fields { fields[key] = try uid(value, depth: next) }
            return instance(o.className, fields)
        case .shared: return try entry(for: item.contents, depth: depth)  // unwrapped by uid(_:depth:)
        }
    }
}
