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
    typealias Ref = CompactPlistWriter.Ref
    private let limits: ArchiveLimits
    /// The property list, made as the objects are: no tree of `PropertyList` values is held.
    private var plist = CompactPlistWriter()
    /// The plist object of each `$objects` entry, by UID; `Ref.max` until the entry's turn comes.
    private var objects: [Ref] = []
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

    /// The binary plist of the archive of `root`.
    mutating func archive(_ root: ArchiveValue) throws -> [UInt8] {
        objects.append(plist.string("$null"))
        // Sets and any-key dictionaries in canonical order (SPEC.md Part 2 §A6), so the same value gives the
        // same archive: worked out once for the whole value.
        let rootUID = try uid(sortKeys.ordered(root), depth: 1)
        while let (index, value, depth) = pending.popLast() {
            objects[index] = try entry(for: value, depth: depth)
            try checkCount()
        }
        let all = plist.array(objects)
        objects = []
        let top = plist.dictionary([("root", plist.uid(rootUID))])
        let archive = plist.dictionary([
            ("$archiver", plist.string("NSKeyedArchiver")),
            ("$version", plist.int(Int64(NSKeyedArchive.archiverVersion))),
            ("$top", top),
            ("$objects", all)
        ])
        try checkCount()
        return plist.bytes(top: archive)
    }

    /// Export writes no plist that import refuses (SPEC.md §A10): import reads at most `VALUES_MAX` plist
    /// objects, and an archived value takes two or three (the object, its class reference, an inline array).
    private func checkCount() throws {
        guard plist.count <= limits.maxValues else {
            throw ArchiveError(
                .valueLimit, "the NSKeyedArchiver plist would hold more than \(limits.maxValues) objects")
        }
    }

    /// The UID of `value`: the existing one for a string or a shared box already met, else a new object.
    private mutating func uid(_ value: ArchiveOrderedValue, depth: Int) throws -> UInt64 {
        guard depth <= limits.maxDepth else { throw ArchiveError(.depthLimit, "depth \(depth)") }
        var o = value
        var met: [ObjectIdentifier] = []
        while case .shared(let box) = o.value {
            let id = ObjectIdentifier(box)
            if let index = boxes[id] {
                for m in met { boxes[m] = index }
                return UInt64(index)
            }
            met.append(id)
            o = o.contents
        }
        let v = o.value
        if case .string(let s) = v, let index = strings[ExactString(string: s)] {
            for m in met { boxes[m] = index }
            return UInt64(index)
        }
        if case .null = v, let null {
            for m in met { boxes[m] = null }
            return UInt64(null)
        }
        guard objects.count < limits.maxValues else {
            throw ArchiveError(.valueLimit, "more than \(limits.maxValues) objects")
        }
        let index = objects.count
        objects.append(Ref.max)
        for m in met { boxes[m] = index }
        switch v {
        case .string(let s): strings[ExactString(string: s)] = index
        case .null: null = index
        default: break
        }
        pending.append((index, o, depth))
        return UInt64(index)
    }

    private mutating func uid(_ value: ArchiveValue, depth: Int) throws -> UInt64 {
        try uid(ArchiveOrderedValue(unordered: value), depth: depth)
    }

    /// The plist UID object of `value` (see `uid(_:depth:)`).
    private mutating func reference(_ value: ArchiveOrderedValue, depth: Int) throws -> Ref {
        plist.uid(try uid(value, depth: depth))
    }

    private mutating func reference(_ value: ArchiveValue, depth: Int) throws -> Ref {
        plist.uid(try uid(value, depth: depth))
    }

    /// A plist array of the UIDs of `values`.
    private mutating func references(_ values: [ArchiveOrderedValue], depth: Int) throws -> Ref {
        var refs: [Ref] = []
        refs.reserveCapacity(values.count)
        for v in values { refs.append(try reference(v, depth: depth)) }
        return plist.array(refs)
    }

    private mutating func classUID(_ name: String) -> UInt64 {
        if let index = classes[name] { return UInt64(index) }
        let index = objects.count
        let names = plist.array([plist.string(name), plist.string("NSObject")])
        objects.append(plist.dictionary([("$classname", plist.string(name)), ("$classes", names)]))
        classes[name] = index
        return UInt64(index)
    }

    private mutating func instance(_ className: String, _ fields: [(key: String, value: Ref)]) -> Ref {
        let c = plist.uid(classUID(className))
        return plist.dictionary(fields + [("$class", c)])
    }

    private mutating func entry(for item: ArchiveOrderedValue, depth: Int) throws -> Ref {
        let next = depth + 1
        switch item.value {
        case .null: return instance("NSNull", [])
        case .bool(let b): return plist.scalar(.bool(b))
        case .int(let i): return plist.int(i)
        case .uint(let u): return plist.scalar(.uint(u))
        case .double(let d): return plist.scalar(.real(d))
        case .string(let s):
            guard s.utf8.count <= limits.maxStringLength else { throw ArchiveError(.lengthLimit, "string") }
            return plist.string(s)
        case .data(let d):
            guard d.count <= limits.maxDataLength else { throw ArchiveError(.lengthLimit, "data") }
            return plist.scalar(.data(d))
        case .date(let d):
            return instance("NSDate", [("NS.time", plist.scalar(.real(d.timeIntervalSinceReferenceDate)))])
        case .uuid(let u):
            let t = u.uuid
            let bytes: [UInt8] = [t.0, t.1, t.2, t.3, t.4, t.5, t.6, t.7, t.8, t.9, t.10, t.11, t.12, t.13, t.14, t.15]
            return instance("NSUUID", [("NS.uuidbytes", plist.scalar(.data(Data(bytes))))])
        case .url(let url):
            if let p = ArchiveURL.problem(url) { throw ArchiveError(.invalidValue, p) }
            var base = plist.uid(0)
            if let b = url.baseURL {
                guard let absolute = URL(string: b.absoluteString) else {
                    throw ArchiveError(.invalidValue, "base URL does not parse")
                }
                base = try reference(.url(absolute), depth: next)
            }
            let relative = try reference(.string(url.relativeString), depth: next)
            return instance("NSURL", [("NS.base", base), ("NS.relative", relative)])
        case .array:
            return instance("NSArray", [("NS.objects", try references(item.items, depth: next))])
        case .set:
            return instance("NSSet", [("NS.objects", try references(item.elements, depth: next))])
        case .dictionary:
            let fields = item.fields
            var keys: [Ref] = []
            keys.reserveCapacity(fields.count)
            for f in fields { keys.append(try reference(.string(f.key), depth: next)) }
            let keysRef = plist.array(keys)
            let values = try references(fields.map(\.value), depth: next)
            return instance("NSDictionary", [("NS.keys", keysRef), ("NS.objects", values)])
        case .anyKeyDictionary:
            let entries = item.entries
            let keys = try references(entries.map(\.key), depth: next)
            let values = try references(entries.map(\.value), depth: next)
            return instance("NSDictionary", [("NS.keys", keys), ("NS.objects", values)])
        case .object(let o):
            guard !o.className.isEmpty, !NSKeyedArchive.standardClasses.contains(o.className) else {
                throw ArchiveError(.notExportable, "class name \(o.className.isEmpty ? "empty" : "reserved")")
            }
            guard !o.fields.keys.contains(where: { $0.hasPrefix("$") }) else {
                throw ArchiveError(.notExportable, "a field name starts with $")
            }
            var fields: [(key: String, value: Ref)] = []
            for (key, value) in item.fields { fields.append((key, try reference(value, depth: next))) }
            return instance(o.className, fields)
        case .shared: return try entry(for: item.contents, depth: depth)  // unwrapped by uid(_:depth:)
        }
    }
}
