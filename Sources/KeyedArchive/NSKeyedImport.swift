#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Imports an NSKeyedArchiver property list in two passes without recursion: a depth-first walk from `$top`
/// over the UIDs (the `$objects` graph) that refuses cycles, counts how often each object is referenced and
/// orders the objects children-first; then each object is built from its already-built children. The tree
/// the archive stands for is bounded as the archive reader bounds it: shared objects count their full size
/// (``ArchiveLimits/maxExpandedValues``), and the graph's height is at most ``ArchiveLimits/maxDepth``.
struct NSKeyedImporter {
    private let limits: ArchiveLimits
    private let objects: [PropertyList]
    private let top: [String: PropertyList]
    private var built: [ArchiveValue?]
    private var references: [Int]
    private var expanded: [Int]
    private var height: [Int]
    private var classNames: [Int: String] = [:]
    /// Each object's children, computed once by the walk and used (then dropped) by the build.
    private var childLists: [[Int]]
    /// Bytes of strings at every use (`STRING_USES_MAX`): one string object may be the key of many
    /// dictionaries, and each use hashes all of it; and the weight of set elements and any-key keys
    /// (`ELEMENT_WEIGHT_MAX`): nested sets hash everything inside them again at each level.
    private let budgets = Budgets()
    /// Values the import builds (`VALUES_MAX`, as an archive's items count): every UID reference and every
    /// inline value is one. Scalars have no identity, so `$objects` within the limit can still stand for far
    /// more values: an array of 9 million UIDs naming one NSNumber (a 9 MB plist) built 9 million of them.
    private var valuesBuilt = 0

    private final class Budgets {
        var stringUses = 0
        var elementWeight = 0
    }

    init(_ plist: PropertyList, limits: ArchiveLimits) throws {
        guard case .dictionary(let root) = plist else {
            throw ArchiveError(.notAKeyedArchive, "the root is a \(plist.kindName), not a dictionary")
        }
        guard root["$archiver"] == .string("NSKeyedArchiver") else {
            throw ArchiveError(.notAKeyedArchive, "no $archiver NSKeyedArchiver")
        }
        guard let version = root["$version"] else { throw ArchiveError(.notAKeyedArchive, "no $version") }
        guard version == .int(NSKeyedArchive.archiverVersion) else {
            throw ArchiveError(.unsupportedVersion, "$version is not \(NSKeyedArchive.archiverVersion)")
        }
        guard case .array(let objects)? = root["$objects"], objects.first == .string("$null") else {
            throw ArchiveError(.notAKeyedArchive, "no $objects array starting with $null")
        }
        guard case .dictionary(let top)? = root["$top"] else {
            throw ArchiveError(.notAKeyedArchive, "no $top dictionary")
        }
        guard objects.count <= limits.maxValues else {
            throw ArchiveError(.valueLimit, "\(objects.count) objects, more than \(limits.maxValues)")
        }
        self.limits = limits
        self.objects = objects
        self.top = top
        built = Array(repeating: nil, count: objects.count)
        references = Array(repeating: 0, count: objects.count)
        expanded = Array(repeating: 0, count: objects.count)
        height = Array(repeating: 0, count: objects.count)
        childLists = Array(repeating: [], count: objects.count)
    }

    mutating func run() throws -> ArchiveValue {
        var roots: [Int] = []
        for key in top.keys.sorted() {
            guard case .uid(let raw)? = top[key] else {
                throw ArchiveError(.wrongFieldType, "$top[\(key)] is not a UID")
            }
            if let index = try index(raw) { roots.append(index) }
        }
        for index in try walk(from: roots) { try build(index) }
        if top.count == 1, let root = top["root"] { return try resolve(root) }
        // The dictionary of every top-level key is one more level, and one more value.
        guard roots.allSatisfy({ height[$0] < limits.maxDepth }) else {
            throw ArchiveError(.depthLimit, "deeper than \(limits.maxDepth)")
        }
        guard roots.reduce(1, { $0 + expanded[$1] }) <= limits.maxExpandedValues else {
            throw ArchiveError(.expansionLimit, "more than \(limits.maxExpandedValues) values once expanded")
        }
        var out: [String: ArchiveValue] = [:]
        for (key, uid) in top { out[key] = try resolve(uid) }
        return .dictionary(out)
    }

    // MARK: Graph

    /// The `$objects` index a UID names, nil for UID 0 (`$null`, nil).
    private func index(_ raw: UInt64) throws -> Int? {
        guard raw < UInt64(objects.count) else {
            throw ArchiveError(.badReference, "UID \(raw) of \(objects.count) objects")
        }
        return raw == 0 ? nil : Int(raw)
    }

    /// The fields a standard class's value is decoded from; a class not here (NSOrderedSet, any other class)
    /// is decoded from all of its fields.
    private static let fieldsRead: [String: [String]] = [
        "NSString": ["NS.string"], "NSMutableString": ["NS.string"], "NSData": ["NS.data"],
        "NSMutableData": ["NS.data"],
        "NSDate": [], "NSUUID": [], "NSNull": [], "NSURL": ["NS.base", "NS.relative"],
        "NSArray": ["NS.objects"], "NSMutableArray": ["NS.objects"], "NSSet": ["NS.objects"],
        "NSMutableSet": ["NS.objects"],
        "NSDictionary": ["NS.keys", "NS.objects"], "NSMutableDictionary": ["NS.keys", "NS.objects"]
    ]

    /// The fields an object's value is decoded from, when its `$class` names a standard class; nil for other
    /// classes (decoded from all of their fields) and for a `$class` that is no class (an error when built).
    private func fieldsRead(_ fields: [String: PropertyList]) -> [String]? {
        guard case .uid(let c)? = fields["$class"], c > 0, c < UInt64(objects.count),
            case .dictionary(let d) = objects[Int(c)],
            case .string(let name)? = d["$classname"]
        else { return nil }
        return Self.fieldsRead[name]
    }

    /// The objects an object's value is made of, with repeats, in order: for a standard class those its
    /// decoding reads, for any other class every UID in it except `$class`. Every UID is checked; one in a
    /// field the decoding does not read (`NS.keys` of an NSSet) names no part of the value, so it is not
    /// walked and is no reference (it must not make an object shared).
    private func children(of index: Int) throws -> [Int] {
        guard case .dictionary(let fields) = objects[index] else { return [] }
        // Within what is left of `VALUES_MAX` as the list grows, not once built (9M UIDs made 72 MB here).
        let room = limits.maxValues - valuesBuilt
        func add(_ i: Int, to list: inout [Int]) throws {
            guard list.count < room else {
                throw ArchiveError(
                    .valueLimit,
                    "object \(index) holds more references than the \(limits.maxValues) values an import builds")
            }
            list.append(i)
        }
        var out: [Int] = []
        var stack: [PropertyList] = []
        for (key, value) in fields where key != "$class" {
            switch value {
            case .uid(let raw):
                if let i = try self.index(raw) { try add(i, to: &out) }
            case .array(let a), .set(let a):
                for p in a {
                    if case .uid(let raw) = p {
                        if let i = try self.index(raw) { try add(i, to: &out) }
                    } else {
                        stack.append(p)
                    }
                }
            case .dictionary: stack.append(value)
            default: break
            }
        }
        while let p = stack.popLast() {
            switch p {
            case .uid(let raw): if let i = try self.index(raw) { try add(i, to: &out) }
            case .array(let a), .set(let a): stack += a
            case .dictionary(let d): stack += d.values
            default: break
            }
        }
        guard let read = fieldsRead(fields) else { return out }
        var uses: [Int] = []
        for key in read {
            switch fields[key] {
            case .uid(let raw)?: if let i = try self.index(raw) { try add(i, to: &uses) }
            case .array(let a)?:
                for case .uid(let raw) in a { if let i = try self.index(raw) { try add(i, to: &uses) } }
            default: break
            }
        }
        return uses
    }

    /// Depth-first from `roots`: counts references, refuses cycles, returns the objects children-first.
    private mutating func walk(from roots: [Int]) throws -> [Int] {
        var state = [UInt8](repeating: 0, count: objects.count)  // 0 unseen, 1 open, 2 done
        var order: [Int] = []
        var stack: [(index: Int, children: [Int], next: Int)] = []
        for root in roots {
            references[root] += 1
            guard state[root] == 0 else { continue }
            state[root] = 1
            let rootChildren = try children(of: root)
            try countValues(1 + rootChildren.count)
            childLists[root] = rootChildren
            stack.append((root, rootChildren, 0))
            while let last = stack.indices.last {
                guard stack[last].next < stack[last].children.count else {
                    let index = stack.removeLast().index
                    state[index] = 2
                    order.append(index)
                    continue
                }
                let child = stack[last].children[stack[last].next]
                stack[last].next += 1
                references[child] += 1
                switch state[child] {
                case 2: continue
                case 1: throw ArchiveError(.cycle, "object \(child) contains itself")
                default:
                    guard stack.count < limits.maxDepth else {
                        throw ArchiveError(.depthLimit, "objects nested deeper than \(limits.maxDepth)")
                    }
                    state[child] = 1
                    let grandchildren = try children(of: child)
                    try countValues(grandchildren.count)
                    childLists[child] = grandchildren
                    stack.append((child, grandchildren, 0))
                }
            }
        }
        return order
    }

    private mutating func countValues(_ n: Int) throws {
        valuesBuilt += n
        guard valuesBuilt <= limits.maxValues else {
            throw ArchiveError(.valueLimit, "more than \(limits.maxValues) values built (references and inline values)")
        }
    }

    /// The value a UID (or an inline field value) stands for; its objects are built already.
    private func resolve(_ p: PropertyList) throws -> ArchiveValue {
        guard case .uid(let raw) = p else { return try inline(p) }
        return try resolveUID(raw)
    }

    @inline(__always)
    private func resolveUID(_ raw: UInt64) throws -> ArchiveValue {
        guard let i = try index(raw) else { return .null }
        guard let value = built[i] else { throw ArchiveError(.badReference, "object \(i) not built") }
        if case .string(let s) = value { try limits.addStringUse(s.utf8.count, to: &budgets.stringUses) }
        return value
    }

    /// For an object of a class decoded from all of its fields: the values its fields hold inline (plist
    /// scalars and containers, not through a UID), and the height of its value: a field's own value is at
    /// level 0, a scalar or container at level L reaches L + 1 levels below the object, an object a UID at
    /// level L names reaches L + its height. Nil for a standard class (its value is the objects it names).
    private func inlineValues(of index: Int) -> (count: Int, height: Int)? {
        guard case .dictionary(let fields) = objects[index], fieldsRead(fields) == nil else { return nil }
        var count = 0
        var h = 0
        var stack: [(PropertyList, Int)] = fields.filter { $0.key != "$class" }.map { ($0.value, 0) }
        while let (p, level) = stack.popLast() {
            switch p {
            // every UID was checked and built
            case .uid(let raw): h = max(h, level + (raw == 0 ? 1 : height[Int(raw)]))
            case .array(let a), .set(let a):
                count += 1
                h = max(h, level + 1)
                stack += a.map { ($0, level + 1) }
            case .dictionary(let d):
                count += 1
                h = max(h, level + 1)
                stack += d.values.map { ($0, level + 1) }
            default:
                count += 1
                h = max(h, level + 1)
            }
        }
        return (count, h)
    }

    // MARK: Building

    private mutating func build(_ index: Int) throws {
        var size = 1
        var h = 0
        let children = childLists[index]
        childLists[index] = []
        for c in children {
            size += expanded[c]
            guard size <= limits.maxExpandedValues else {
                throw ArchiveError(.expansionLimit, "more than \(limits.maxExpandedValues) values once expanded")
            }
            h = max(h, height[c])
        }
        // Values nested inline in the fields count, and sit between the object and the objects their UIDs name.
        if let (count, inlineHeight) = inlineValues(of: index) {
            try countValues(count)
            size += count
            guard size <= limits.maxExpandedValues else {
                throw ArchiveError(.expansionLimit, "more than \(limits.maxExpandedValues) values once expanded")
            }
            h = inlineHeight
        }
        guard h < limits.maxDepth else { throw ArchiveError(.depthLimit, "deeper than \(limits.maxDepth)") }
        expanded[index] = size
        height[index] = h + 1
        var value = try value(of: index)
        switch value {
        case .array, .dictionary, .anyKeyDictionary, .set, .object:
            if references[index] > 1 {
                // A shared definition's value is one level below the box (SPEC.md Part 2 §A3).
                height[index] += 1
                guard height[index] <= limits.maxDepth else {
                    throw ArchiveError(.depthLimit, "deeper than \(limits.maxDepth)")
                }
                value = .shared(ArchiveShared(value))
            }
        default: break
        }
        built[index] = value
    }

    private mutating func value(of index: Int) throws -> ArchiveValue {
        let entry = objects[index]
        guard case .dictionary(let fields) = entry else {
            switch entry {
            case .string, .int, .uint, .real, .bool, .data, .date: return try inline(entry)
            default: throw ArchiveError(.invalidValue, "object \(index) is a plist \(entry.kindName)")
            }
        }
        guard let classRef = fields["$class"] else { throw ArchiveError(.badClass, "object \(index) has no $class") }
        let className = try self.className(classRef, of: index)
        let f = Fields(fields: fields, className: className, index: index)
        switch className {
        case "NSString", "NSMutableString":
            guard case .string(let s) = try resolve(try f.require("NS.string")) else { throw f.wrongType("NS.string") }
            return .string(s)
        case "NSData", "NSMutableData":
            guard case .data(let d) = try resolve(try f.require("NS.data")) else { throw f.wrongType("NS.data") }
            return .data(d)
        case "NSDate":
            switch try f.require("NS.time") {
            case .real(let t): return .date(Date(timeIntervalSinceReferenceDate: t))
            case .int(let i):
                guard let t = Double(exactly: i) else { throw f.wrongType("NS.time") }
                return .date(Date(timeIntervalSinceReferenceDate: t))
            default: throw f.wrongType("NS.time")
            }
        case "NSArray", "NSMutableArray":
            return .array(try f.uidArray("NS.objects").map { try resolve($0) })
        case "NSSet", "NSMutableSet":
            var set: Set<ArchiveValue> = []
            for uid in try f.uidArray("NS.objects") {
                let element = try resolve(uid)
                try limits.addElementWeight(of: element, to: &budgets.elementWeight)
                guard set.insert(element).inserted else {
                    throw ArchiveError(.duplicateKey, "object \(index): set element repeated")
                }
            }
            return .set(set)
        case "NSOrderedSet", "NSMutableOrderedSet":
            let n = fields.count - 1
            var items: [ArchiveValue] = []
            items.reserveCapacity(n)
            for i in 0..<n {
                let key = "NS.object.\(i)"
                guard case .uid? = fields[key] else {
                    throw fields[key] == nil
                        ? ArchiveError(.missingField, "object \(index) (\(className)): no \(key)")
                        : f.wrongType(key)
                }
                items.append(try resolve(try f.require(key)))
            }
            return .array(items)
        case "NSDictionary", "NSMutableDictionary":
            let keys = try f.uidArray("NS.keys")
            let values = try f.uidArray("NS.objects")
            guard keys.count == values.count else {
                throw ArchiveError(.countMismatch, "object \(index): \(keys.count) keys, \(values.count) objects")
            }
            let resolvedKeys = try keys.map { try resolve($0) }
            if resolvedKeys.allSatisfy({ if case .string = $0 { true } else { false } }) {
                var d: [String: ArchiveValue] = [:]
                d.reserveCapacity(keys.count)
                for (k, v) in zip(resolvedKeys, values) {
                    guard case .string(let key) = k else { continue }
                    guard d.updateValue(try resolve(v), forKey: key) == nil else {
                        throw ArchiveError(.duplicateKey, "object \(index): dictionary key repeated")
                    }
                }
                return .dictionary(d)
            }
            var d: [ArchiveValue: ArchiveValue] = [:]
            for (k, v) in zip(resolvedKeys, values) {
                try limits.addElementWeight(of: k, to: &budgets.elementWeight)
                guard d.updateValue(try resolve(v), forKey: k) == nil else {
                    throw ArchiveError(.duplicateKey, "object \(index): dictionary key repeated")
                }
            }
            return .anyKeyDictionary(d)
        case "NSUUID":
            guard case .data(let bytes) = try f.require("NS.uuidbytes") else { throw f.wrongType("NS.uuidbytes") }
            guard bytes.count == 16 else {
                throw ArchiveError(.invalidValue, "object \(index): NS.uuidbytes of \(bytes.count) bytes, not 16")
            }
            let b = [UInt8](bytes)
            return .uuid(
                UUID(
                    uuid: (
                        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                        b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]
                    )))
        case "NSURL":
            var base: URL?
            switch try resolve(fields["NS.base"] ?? .uid(0)) {
            case .null: base = nil
            case .url(let u): base = u
            default: throw f.wrongType("NS.base")
            }
            guard case .string(let relative) = try resolve(try f.require("NS.relative")) else {
                throw f.wrongType("NS.relative")
            }
            guard let url = URL(string: relative, relativeTo: base), url.relativeString == relative else {
                throw ArchiveError(.invalidValue, "object \(index): NS.relative is not a URL")
            }
            // Only what an archive can hold (SPEC.md Part 2 §A5.4), so that every import can be written.
            if let p = ArchiveURL.problem(url) { throw ArchiveError(.invalidValue, "object \(index): \(p)") }
            return .url(url)
        case "NSNull":
            return .null
        default:
            var out: [String: ArchiveValue] = [:]
            for (key, field) in fields where key != "$class" { out[key] = try resolve(field) }
            return .object(ArchiveObject(className: className, fields: out))
        }
    }

    /// The class name `$class` names: a class description with a non-empty `$classname` string and, if
    /// present, `$classes` an array of strings.
    private mutating func className(_ ref: PropertyList, of index: Int) throws -> String {
        guard case .uid(let raw) = ref else { throw ArchiveError(.badClass, "object \(index): $class is not a UID") }
        guard let i = try self.index(raw) else { throw ArchiveError(.badClass, "object \(index): $class is $null") }
        if let name = classNames[i] { return name }
        guard case .dictionary(let d) = objects[i], case .string(let name)? = d["$classname"], !name.isEmpty else {
            throw ArchiveError(.badClass, "object \(index): $class \(i) is not a class description")
        }
        if let classes = d["$classes"] {
            guard case .array(let chain) = classes, chain.allSatisfy({ $0.stringValue != nil }) else {
                throw ArchiveError(.badClass, "object \(index): $classes of class \(i) is not an array of strings")
            }
        }
        classNames[i] = name
        return name
    }

    /// A field value stored inline (not through a UID): plist scalars map to their kinds, plist containers to
    /// arrays, sets and dictionaries, UIDs inside them to their objects. An explicit stack, no recursion.
    private func inline(_ root: PropertyList) throws -> ArchiveValue {
        switch root {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .uint(let u): return .uint(u)
        case .real(let d): return .double(d)
        case .date(let t): return .date(Date(timeIntervalSinceReferenceDate: t))
        case .data(let d): return .data(d)
        case .string(let s): return .string(s)
        case .uid(let raw): return try resolveUID(raw)
        case .array, .set, .dictionary: break
        }
        enum Task {
            case visit(PropertyList)
            case array(Int)
            case set(Int)
            case dictionary([String])
        }
        var tasks: [Task] = [.visit(root)]
        var results: [ArchiveValue] = []
        while let task = tasks.popLast() {
            switch task {
            case .visit(let p):
                switch p {
                case .null: results.append(.null)
                case .bool(let b): results.append(.bool(b))
                case .int(let i): results.append(.int(i))
                case .uint(let u): results.append(.uint(u))
                case .real(let d): results.append(.double(d))
                case .date(let t): results.append(.date(Date(timeIntervalSinceReferenceDate: t)))
                case .data(let d): results.append(.data(d))
                case .string(let s): results.append(.string(s))
                case .uid: results.append(try resolve(p))
                case .array(let a):
                    tasks.append(.array(a.count))
                    tasks += a.reversed().map { .visit($0) }
                case .set(let a):
                    tasks.append(.set(a.count))
                    tasks += a.reversed().map { .visit($0) }
                case .dictionary(let d):
                    let keys = Array(d.keys)
                    tasks.append(.dictionary(keys))
                    tasks += keys.reversed().map { .visit(d[$0] ?? .null) }
                }
            case .array(let n):
                let items = Array(results.suffix(n))
                results.removeLast(n)
                results.append(.array(items))
            case .set(let n):
                let items = results.suffix(n)
                results.removeLast(n)
                for item in items { try limits.addElementWeight(of: item, to: &budgets.elementWeight) }
                let set = Set(items)
                guard set.count == n else { throw ArchiveError(.duplicateKey, "inline set element repeated") }
                results.append(.set(set))
            case .dictionary(let keys):
                let items = results.suffix(keys.count)
                results.removeLast(keys.count)
                results.append(.dictionary(Dictionary(uniqueKeysWithValues: zip(keys, items))))
            }
        }
        return results.last ?? .null
    }
}

/// The fields of one object, with the errors its class's decoding raises.
private struct Fields {
    let fields: [String: PropertyList]
    let className: String
    let index: Int

    func require(_ key: String) throws -> PropertyList {
        guard let v = fields[key] else {
            throw ArchiveError(.missingField, "object \(index) (\(className)): no \(key)")
        }
        return v
    }

    func wrongType(_ key: String) -> ArchiveError {
        ArchiveError(.wrongFieldType, "object \(index) (\(className)): \(key) has the wrong type")
    }

    /// A field that must be an array of UIDs (`NS.objects`, `NS.keys`).
    func uidArray(_ key: String) throws -> [PropertyList] {
        guard case .array(let a) = try require(key), a.allSatisfy({ $0.uidValue != nil }) else { throw wrongType(key) }
        return a
    }
}
