#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reads an archive (SPEC.md Part 2 §A2-§A6) with an explicit stack of open containers: nesting costs heap,
/// never call stack. Every count, length, index and limit is checked before the work it allows.
struct ArchiveReader {
    private let bytes: [UInt8]
    private var position = 0
    private let limits: ArchiveLimits
    private var sorted = false
    private var strings: [String] = []
    private var stringSet: Set<ExactString> = []
    /// Shared definitions by index: the box once complete (nil while its value is being read), its expanded
    /// size and its height (the levels it spans, references expanded); in a sorted archive, also the box with
    /// the order of what it holds.
    private var shared: [(box: ArchiveShared?, size: Int, height: Int, ordered: ArchiveOrderedValue?)] = []
    private var values = 0
    private var expanded = 0
    /// The deepest level reached so far inside the innermost open shared definition (or the root), with
    /// references expanded (SPEC.md Part 2 §A3, `DEPTH_MAX`).
    private var deepest = 0
    /// The sort keys of a sorted archive's elements and keys (one `SORT_KEYS_MAX` budget).
    let sortKeys: ArchiveSortKeys
    /// Bytes of strings at every use so far (`STRING_USES_MAX`).
    private var stringUses = 0
    /// The weight of the set elements and any-key keys so far, nested ones at every level (`ELEMENT_WEIGHT_MAX`).
    private var elementWeight = 0

    private enum Kind { case array, dictionary, anyKeyDictionary, set, object, shared }

    /// A container being read.
    private struct Frame {
        let kind: Kind
        var remaining: Int
        var items: [ArchiveValue] = []
        var fields: [String: ArchiveValue] = [:]
        var entries: [ArchiveValue: ArchiveValue] = [:]
        var elements: Set<ArchiveValue> = []
        var className = ""
        /// The key read for the value that comes next (dictionary, object, any-key dictionary).
        var key: String?
        var anyKey: ArchiveValue?
        /// The previous key or sort key, for the order check of a sorted archive.
        var lastKey: String?
        var lastSortKey: [UInt8]?
        var elementStart = 0
        var sharedIndex = 0
        var sharedStart = 0
        var sharedDepth = 0
        var outerDeepest = 0
        /// Sorted archives: the order inside the children read so far (ArchiveOrderedValue), so that a sort key
        /// never orders again what was read in order: a set's elements or an any-key dictionary's keys (all),
        /// the any-key values, and for the other kinds the children with something to order.
        var orderedElements: [ArchiveOrderedValue] = []
        var orderedValues: [ArchiveOrderedValue] = []
        var orderedItems: [Int: ArchiveOrderedValue] = [:]
        var orderedFields: [String: ArchiveOrderedValue] = [:]
        /// The sort-key bytes this set's or any-key dictionary's order counted.
        var orderCost = 0
        /// The weight (§A3) of the children so far, with the field names and class name: the container then
        /// weighs 1 more, so no set element is walked again to weigh it.
        var weight = 0

        init(_ kind: Kind, remaining: Int) {
            self.kind = kind
            self.remaining = remaining
        }

        /// The order inside `value`, this container once complete (sorted archives; nil otherwise, or when there
        /// is nothing to order in it).
        func ordered(_ value: ArchiveValue) -> ArchiveOrderedValue? {
            switch kind {
            case .set:
                return orderedElements.isEmpty
                    ? nil : ArchiveOrderedValue(value, .elements(orderedElements, cost: orderCost))
            case .anyKeyDictionary:
                guard !orderedElements.isEmpty else { return nil }
                let entries = zip(orderedElements, orderedValues).map { (key: $0, value: $1) }
                return ArchiveOrderedValue(value, .entries(entries, cost: orderCost))
            case .array: return orderedItems.isEmpty ? nil : ArchiveOrderedValue(value, .items(orderedItems))
            case .dictionary, .object:
                return orderedFields.isEmpty ? nil : ArchiveOrderedValue(value, .fields(orderedFields))
            case .shared: return nil  // made when the box is
            }
        }
    }

    init(bytes: [UInt8], limits: ArchiveLimits) {
        self.bytes = bytes
        self.limits = limits
        sortKeys = ArchiveSortKeys(limits: limits)
    }

    mutating func readArchive() throws -> ArchiveValue {
        try limits.checkSize(bytes.count)
        let magic = ArchiveFormat.magic
        for i in 0..<min(magic.count, bytes.count) where bytes[i] != magic[i] {
            throw ArchiveError(.notAnArchive, at: 0, "magic differs")
        }
        guard bytes.count >= ArchiveFormat.headerSize else { throw ArchiveError(.truncated, at: bytes.count, "header") }
        guard bytes[4] == ArchiveSerialization.formatVersion else {
            throw ArchiveError(.unsupportedVersion, at: 4, "version \(bytes[4])")
        }
        guard bytes[5] & ~ArchiveFormat.flagSorted == 0 else {
            throw ArchiveError(.reservedFlags, at: 5, "flags \(bytes[5])")
        }
        sorted = bytes[5] & ArchiveFormat.flagSorted != 0
        position = ArchiveFormat.headerSize
        let root = try readRoot()
        guard position == bytes.count else {
            throw ArchiveError(.trailingBytes, at: position, "\(bytes.count - position) bytes after the root item")
        }
        return root
    }

    // MARK: The item loop

    private mutating func readRoot() throws -> ArchiveValue {
        var stack: [Frame] = []
        while true {
            if let top = stack.indices.last {
                stack[top].elementStart = position
                if stack[top].kind == .dictionary || stack[top].kind == .object, stack[top].key == nil {
                    try readFieldKey(&stack[top])
                }
            }
            let start = position
            guard stack.count < limits.maxDepth else {
                throw ArchiveError(.depthLimit, at: start, "deeper than \(limits.maxDepth)")
            }
            let depth = stack.count + 1
            deepest = max(deepest, depth)
            values += 1
            guard values <= limits.maxValues else {
                throw ArchiveError(.valueLimit, at: start, "more than \(limits.maxValues) items")
            }
            let tag = try readByte()
            var value: ArchiveValue
            var weight = 1  // of `value`, §A3 (a shared value weighs 1)
            var ordered: ArchiveOrderedValue?  // nil: nothing inside to order (or not a sorted archive)
            switch tag {
            case ArchiveFormat.Tag.sharedRef:
                let raw = try readVarint()
                guard raw < UInt64(shared.count), let index = Int(exactly: raw) else {
                    throw ArchiveError(.badReference, at: start, "shared value \(raw) of \(shared.count)")
                }
                guard let box = shared[index].box else {
                    throw ArchiveError(.cycle, at: start, "shared value \(index) refers to itself")
                }
                // The reference stands for the definition: it reaches `height - 1` levels below its own depth.
                let height = shared[index].height
                guard height - 1 <= limits.maxDepth - depth else {
                    throw ArchiveError(
                        .depthLimit, at: start, "shared value \(index) reaches deeper than \(limits.maxDepth)")
                }
                deepest = max(deepest, depth + height - 1)
                try addExpanded(shared[index].size, at: start)
                value = .shared(box)
                ordered = shared[index].ordered
            case ArchiveFormat.Tag.shared:
                try addExpanded(1, at: start)
                var frame = Frame(.shared, remaining: 1)
                frame.sharedIndex = shared.count
                frame.sharedStart = expanded - 1
                frame.sharedDepth = depth
                frame.outerDeepest = deepest
                deepest = depth
                shared.append((nil, 0, 0, nil))
                stack.append(frame)
                continue
            case ArchiveFormat.Tag.array, ArchiveFormat.Tag.set:
                try addExpanded(1, at: start)
                let count = try readCount(bytesEach: 1, at: start)
                let kind: Kind = tag == ArchiveFormat.Tag.array ? .array : .set
                guard count > 0 else {
                    value = kind == .array ? .array([]) : .set([])
                    break
                }
                var frame = Frame(kind, remaining: count)
                // A set that grows hashes its elements again, all of a nested set's values with each.
                if kind == .array {
                    frame.items.reserveCapacity(min(count, 1 << 16))
                } else {
                    frame.elements.reserveCapacity(min(count, 1 << 12))
                }
                stack.append(frame)
                continue
            case ArchiveFormat.Tag.dictionary, ArchiveFormat.Tag.anyKeyDictionary, ArchiveFormat.Tag.object:
                try addExpanded(1, at: start)
                var className = ""
                if tag == ArchiveFormat.Tag.object {
                    className = try readStringSlot()
                    guard !className.isEmpty else { throw ArchiveError(.invalidValue, at: start, "empty class name") }
                }
                let count = try readCount(bytesEach: 2, at: start)
                let kind: Kind =
                    switch tag {
                    case ArchiveFormat.Tag.dictionary: .dictionary
                    case ArchiveFormat.Tag.object: .object
                    default: .anyKeyDictionary
                    }
                guard count > 0 else {
                    switch kind {
                    case .dictionary: value = .dictionary([:])
                    case .object: value = .object(ArchiveObject(className: className))
                    default: value = .anyKeyDictionary([:])
                    }
                    weight = ArchiveLimits.ownWeight(of: value)
                    break
                }
                var frame = Frame(kind, remaining: count)
                frame.className = className
                frame.weight = className.utf8.count
                if kind == .anyKeyDictionary { frame.entries.reserveCapacity(min(count, 1 << 12)) }
                stack.append(frame)
                continue
            default:
                try addExpanded(1, at: start)
                value = try readScalar(tag: tag, at: start)
                weight = ArchiveLimits.ownWeight(of: value)
            }

            // Hand the finished value to the open containers, closing each one it completes.
            while let top = stack.indices.last {
                let at = stack[top].elementStart
                switch stack[top].kind {
                case .shared:
                    let frame = stack.removeLast()
                    let box = ArchiveShared(value)
                    value = .shared(box)
                    if let o = ordered { ordered = ArchiveOrderedValue(shared: value, contents: o) }
                    shared[frame.sharedIndex] = (
                        box, expanded - frame.sharedStart, deepest - frame.sharedDepth + 1, ordered
                    )
                    deepest = max(deepest, frame.outerDeepest)
                    weight = 1
                    continue
                case .array:
                    if let o = ordered { stack[top].orderedItems[stack[top].items.count] = o }
                    stack[top].items.append(value)
                case .set:
                    try limits.addElementWeight(weight, to: &elementWeight, at: at)
                    try checkSortOrder(of: value, ordered, in: &stack[top], at: at)
                    guard stack[top].elements.insert(value).inserted else {
                        throw ArchiveError(.duplicateKey, at: at, "set element repeated")
                    }
                case .dictionary, .object:
                    let key = stack[top].key ?? ""
                    stack[top].fields[key] = value
                    stack[top].weight += key.utf8.count
                    if let o = ordered { stack[top].orderedFields[key] = o }
                    stack[top].key = nil
                case .anyKeyDictionary:
                    guard let key = stack[top].anyKey else {
                        try limits.addElementWeight(weight, to: &elementWeight, at: at)
                        try checkSortOrder(of: value, ordered, in: &stack[top], at: at)
                        guard stack[top].entries[value] == nil else {
                            throw ArchiveError(.duplicateKey, at: at, "any-key dictionary key repeated")
                        }
                        stack[top].anyKey = value
                        break
                    }
                    stack[top].entries[key] = value
                    if sorted { stack[top].orderedValues.append(ordered ?? ArchiveOrderedValue(unordered: value)) }
                    stack[top].anyKey = nil
                }
                stack[top].weight += weight
                if stack[top].kind == .anyKeyDictionary, stack[top].anyKey != nil { break }
                stack[top].remaining -= 1
                guard stack[top].remaining == 0 else { break }
                let frame = stack.removeLast()
                switch frame.kind {
                case .array: value = .array(frame.items)
                case .set: value = .set(frame.elements)
                case .dictionary: value = .dictionary(frame.fields)
                case .object: value = .object(ArchiveObject(className: frame.className, fields: frame.fields))
                case .anyKeyDictionary: value = .anyKeyDictionary(frame.entries)
                case .shared: break  // closed above
                }
                ordered = frame.ordered(value)
                weight = 1 + frame.weight
            }
            if stack.isEmpty { return value }
        }
    }

    /// Reads the key of the next dictionary entry or object field: distinct, and ascending in a sorted archive.
    private mutating func readFieldKey(_ frame: inout Frame) throws {
        let at = position
        let key = try readStringSlot()
        if sorted, let last = frame.lastKey, !last.utf8Precedes(key) {
            throw ArchiveError(.nonCanonical, at: at, "key out of order")
        }
        guard frame.fields[key] == nil else { throw ArchiveError(.duplicateKey, at: at, "key repeated") }
        frame.lastKey = key
        frame.key = key
    }

    /// A set element's or any-key key's sort key comes after the previous one's (sorted archives). The order
    /// inside it is that it was read in (checked): its sort key writes it without ordering anything again.
    private func checkSortOrder(of value: ArchiveValue, _ ordered: ArchiveOrderedValue?, in frame: inout Frame, at: Int)
        throws
    {
        guard sorted else { return }
        let element = ordered ?? ArchiveOrderedValue(unordered: value)
        let (key, cost) = try sortKeys.elementKey(of: element)
        if let last = frame.lastSortKey, ![UInt8].precedes(last, key) {
            throw ArchiveError(.nonCanonical, at: at, "element out of order")
        }
        frame.lastSortKey = key
        frame.orderedElements.append(element)
        frame.orderCost += cost
    }

    private mutating func readScalar(tag: UInt8, at start: Int) throws -> ArchiveValue {
        switch tag {
        case ArchiveFormat.Tag.null: return .null
        case ArchiveFormat.Tag.false: return .bool(false)
        case ArchiveFormat.Tag.true: return .bool(true)
        case ArchiveFormat.Tag.int: return .int(ArchiveFormat.unzigzag(try readVarint()))
        case ArchiveFormat.Tag.uint: return .uint(try readVarint())
        case ArchiveFormat.Tag.double: return .double(Double(bitPattern: try readU64()))
        case ArchiveFormat.Tag.date:
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try readU64())))
        case ArchiveFormat.Tag.string: return .string(try readNewString())
        case ArchiveFormat.Tag.stringRef: return .string(try readStringIndex(try readVarint(), at: start))
        case ArchiveFormat.Tag.data:
            let length = try readLength(max: limits.maxDataLength, what: "data")
            return .data(Data(try readBytes(length)))
        case ArchiveFormat.Tag.uuid:
            let b = Array(try readBytes(16))
            return .uuid(
                UUID(
                    uuid: (
                        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                        b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]
                    )))
        case ArchiveFormat.Tag.url, ArchiveFormat.Tag.urlWithBase:
            let relative = try readStringSlot()
            var base: String?
            if tag == ArchiveFormat.Tag.urlWithBase {
                let b = try readStringSlot()
                if let p = ArchiveURL.problem(b, .absolute) {
                    throw ArchiveError(.invalidValue, at: start, "base URL: \(p)")
                }
                base = b
            }
            if let p = ArchiveURL.problem(relative, base == nil ? .reference : .relative) {
                throw ArchiveError(.invalidValue, at: start, "URL: \(p)")
            }
            guard let url = ArchiveURL.make(relative, base: base) else {
                throw ArchiveError(.invalidValue, at: start, "URL not given back by Foundation")
            }
            return .url(url)
        default:
            throw ArchiveError(.unknownTag, at: start, "tag 0x\(String(tag, radix: 16))")
        }
    }

    private mutating func addExpanded(_ n: Int, at: Int) throws {
        expanded += n  // both at most maxExpandedValues: no overflow
        guard expanded <= limits.maxExpandedValues else {
            throw ArchiveError(.expansionLimit, at: at, "more than \(limits.maxExpandedValues) values once expanded")
        }
    }

    // MARK: Strings

    /// A string slot (§A5): `0` then a new string, or `index + 1`.
    private mutating func readStringSlot() throws -> String {
        let at = position
        let slot = try readVarint()
        return slot == 0 ? try readNewString() : try readStringIndex(slot - 1, at: at)
    }

    private mutating func readStringIndex(_ raw: UInt64, at: Int) throws -> String {
        guard raw < UInt64(strings.count), let index = Int(exactly: raw) else {
            throw ArchiveError(.badReference, at: at, "string \(raw) of \(strings.count)")
        }
        try limits.addStringUse(strings[index].utf8.count, to: &stringUses, at: at)
        return strings[index]
    }

    /// A new string: length, UTF-8, and not a repeat of an earlier string (a repeat MUST be a reference).
    private mutating func readNewString() throws -> String {
        let at = position
        let length = try readLength(max: limits.maxStringLength, what: "string")
        let start = position
        guard length <= bytes.count - start else { throw ArchiveError(.truncated, at: bytes.count, "string") }
        let string: String? = bytes.withUnsafeBufferPointer { all in
            String(validating: UnsafeBufferPointer(rebasing: all[start..<start + length]), as: UTF8.self)
        }
        guard let string else { throw ArchiveError(.invalidUTF8, at: at, "string") }
        try limits.checkNonStarterRun(string, at: at, "string")
        guard stringSet.insert(ExactString(string: string)).inserted else {
            throw ArchiveError(.nonCanonical, at: at, "string defined twice (a repeat must be a reference)")
        }
        try limits.addStringUse(length, to: &stringUses, at: at)
        position = start + length
        strings.append(string)
        return string
    }

    // MARK: Bytes

    private mutating func readByte() throws -> UInt8 {
        guard position < bytes.count else { throw ArchiveError(.truncated, at: position, "item") }
        defer { position += 1 }
        return bytes[position]
    }

    private mutating func readBytes(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count <= bytes.count - position else { throw ArchiveError(.truncated, at: bytes.count, "\(count) bytes") }
        defer { position += count }
        return bytes[position..<position + count]
    }

    private mutating func readU64() throws -> UInt64 {
        let b = try readBytes(8)
        var v: UInt64 = 0
        for (i, byte) in b.enumerated() { v |= UInt64(byte) << (8 * i) }
        return v
    }

    /// Unsigned LEB128: minimal, at most 64 bits. Leaves the position unchanged on failure.
    private mutating func readVarint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var p = position
        while true {
            guard p < bytes.count else { throw ArchiveError(.truncated, at: p, "varint") }
            let byte = bytes[p]
            p += 1
            if shift == 63, byte > 1 { throw ArchiveError(.nonMinimalVarint, at: position, "varint overflows 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0, shift > 0 { throw ArchiveError(.nonMinimalVarint, at: position, "varint") }
                break
            }
            shift += 7
        }
        position = p
        return value
    }

    /// A byte length, within `max` and within the rest of the input.
    private mutating func readLength(max: Int, what: String) throws -> Int {
        let at = position
        let raw = try readVarint()
        guard raw <= UInt64(max) else {
            throw ArchiveError(.lengthLimit, at: at, "\(what) of \(raw) bytes, more than \(max)")
        }
        let length = Int(raw)
        guard length <= bytes.count - position else { throw ArchiveError(.truncated, at: bytes.count, what) }
        return length
    }

    /// A collection count: each entry takes at least `bytesEach` bytes, so the count must fit the rest of the
    /// input; it must also fit the value budget.
    private mutating func readCount(bytesEach: Int, at start: Int) throws -> Int {
        let raw = try readVarint()
        guard raw <= UInt64((bytes.count - position) / bytesEach) else {
            throw ArchiveError(.countExceedsInput, at: start, "\(raw) entries in \(bytes.count - position) bytes")
        }
        let count = Int(raw)
        guard count <= limits.maxValues - values else {
            throw ArchiveError(.valueLimit, at: start, "\(count) entries, more than \(limits.maxValues) items")
        }
        return count
    }
}
