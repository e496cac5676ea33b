#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Writes items (SPEC.md Part 2 §A5) with an explicit work stack, interning strings and shared boxes as it
/// meets them.
struct ArchiveWriter {
    var out: [UInt8] = []
    private let sorted: Bool
    private let limits: ArchiveLimits
    /// The sort-key bytes left for the whole archive (shared with the writers of nested sort keys).
    private let sortKeys: ArchiveSortKeys
    /// Whether `out` is itself a sort key, so counts against `sortKeys` as it grows.
    private let isSortKey: Bool
    /// Whether each set and any-key dictionary written counts again what ordering it cost: in the sort key of
    /// an element, as if it were ordered from scratch (SPEC.md Part 2 §A3); not where its order was worked out
    /// (and counted) for this very writing.
    private let countsOrders: Bool
    private var strings: [ExactString: Int] = [:]
    private var sharedIndex: [ObjectIdentifier: Int] = [:]
    /// Expanded size and height of each shared definition; nil while it is being written.
    private var sharedSize: [(size: Int, height: Int)?] = []
    private var values = 0
    private var expanded = 0
    /// The deepest level reached so far inside the innermost open shared definition (or the root), with
    /// references expanded: what makes a definition's height (SPEC.md Part 2 §A3, `DEPTH_MAX`).
    private var deepest = 0
    /// Bytes of strings at every use so far (`STRING_USES_MAX`), and, in a sort key, the bytes the string
    /// references in it name (they count against `SORT_KEYS_MAX` as if written out).
    private var stringUses = 0
    private(set) var referencedBytes = 0
    /// `ELEMENT_WEIGHT_MAX`: the weight of the set elements and any-key keys written so far.
    private var elementWeight = 0

    private enum Task {
        case item(ArchiveOrderedValue, depth: Int)
        case key(String)
        case endShared(index: Int, start: Int, depth: Int, outerDeepest: Int)
    }

    init(
        sorted: Bool, limits: ArchiveLimits, sortKeys: ArchiveSortKeys? = nil, isSortKey: Bool = false,
        countsOrders: Bool = false
    ) {
        self.sorted = sorted
        self.limits = limits
        self.sortKeys = sortKeys ?? ArchiveSortKeys(limits: limits)
        self.isSortKey = isSortKey
        self.countsOrders = countsOrders
    }

    /// Writes `root`, in canonical order if sorted: the order of its sets and any-key dictionaries is worked
    /// out first, each once (``ArchiveSortKeys/ordered(_:)``).
    mutating func write(_ root: ArchiveValue) throws {
        try write(sorted ? sortKeys.ordered(root) : ArchiveOrderedValue(unordered: root))
    }

    mutating func write(_ root: ArchiveOrderedValue) throws {
        var stack: [Task] = [.item(root, depth: 1)]
        while let task = stack.popLast() {
            switch task {
            case .item(let value, let depth): try writeItem(value, depth: depth, stack: &stack)
            case .key(let key): try writeStringSlot(key)
            case .endShared(let index, let start, let depth, let outerDeepest):
                sharedSize[index] = (expanded - start, deepest - depth + 1)
                deepest = max(deepest, outerDeepest)
            }
            try checkSortKeyBudget(adding: 0)
        }
    }

    /// A use of an interned string counts its bytes: against `STRING_USES_MAX` in an archive, against the
    /// sort-key budget in a sort key.
    private mutating func countReference(to s: String) throws {
        let count = s.utf8.count
        guard isSortKey else { return try limits.addStringUse(count, to: &stringUses) }
        try checkSortKeyBudget(adding: count)
        referencedBytes += count
    }

    /// Throws once a sort key being written would pass what is left of `SORT_KEYS_MAX` with `n` more bytes.
    private func checkSortKeyBudget(adding n: Int) throws {
        guard isSortKey, n > sortKeys.remaining - out.count - referencedBytes else { return }
        throw ArchiveError(.sortKeyLimit, "sort keys of more than \(limits.maxSortKeyBytes) bytes")
    }

    /// In an element's sort key, a set or any-key dictionary counts the sort keys ordering it cost, as the
    /// sort keys computed inside this one (§A3), without computing them again.
    private func countOrder(of item: ArchiveOrderedValue) throws {
        guard countsOrders else { return }
        let cost = item.orderCost
        try checkSortKeyBudget(adding: cost)
        sortKeys.remaining -= cost
    }

    private mutating func writeItem(_ item: ArchiveOrderedValue, depth: Int, stack: inout [Task]) throws {
        let value = item.value
        guard depth <= limits.maxDepth else { throw ArchiveError(.depthLimit, "depth \(depth)") }
        deepest = max(deepest, depth)
        values += 1
        guard values <= limits.maxValues else { throw ArchiveError(.valueLimit, "more than \(limits.maxValues) items") }
        if case .shared(let box) = value {
            let id = ObjectIdentifier(box)
            if let index = sharedIndex[id] {
                // Boxes are immutable, so a box in progress cannot be met again; checked all the same.
                guard let (size, height) = sharedSize[index] else {
                    throw ArchiveError(.cycle, "shared value \(index)")
                }
                // The reference stands for the definition: it reaches `height - 1` levels below its own depth.
                guard height - 1 <= limits.maxDepth - depth else {
                    throw ArchiveError(.depthLimit, "shared value \(index) of height \(height) at depth \(depth)")
                }
                deepest = max(deepest, depth + height - 1)
                out.append(ArchiveFormat.Tag.sharedRef)
                appendVarint(UInt64(index))
                try addExpanded(size)
                return
            }
            let index = sharedSize.count
            sharedIndex[id] = index
            sharedSize.append(nil)
            let start = expanded
            try addExpanded(1)
            out.append(ArchiveFormat.Tag.shared)
            stack.append(.endShared(index: index, start: start, depth: depth, outerDeepest: deepest))
            deepest = depth
            stack.append(.item(item.contents, depth: depth + 1))
            return
        }
        try addExpanded(1)
        switch value {
        case .null: out.append(ArchiveFormat.Tag.null)
        case .bool(let b): out.append(b ? ArchiveFormat.Tag.true : ArchiveFormat.Tag.false)
        case .int(let v):
            out.append(ArchiveFormat.Tag.int)
            appendVarint(ArchiveFormat.zigzag(v))
        case .uint(let v):
            out.append(ArchiveFormat.Tag.uint)
            appendVarint(v)
        case .double(let v):
            out.append(ArchiveFormat.Tag.double)
            appendU64(v.bitPattern)
        case .string(let s):
            if let index = strings[ExactString(string: s)] {
                try countReference(to: s)
                out.append(ArchiveFormat.Tag.stringRef)
                appendVarint(UInt64(index))
            } else {
                out.append(ArchiveFormat.Tag.string)
                try appendNewString(s)
            }
        case .data(let d):
            guard d.count <= limits.maxDataLength else {
                throw ArchiveError(.lengthLimit, "data of \(d.count) bytes, more than \(limits.maxDataLength)")
            }
            try checkSortKeyBudget(adding: d.count)
            out.append(ArchiveFormat.Tag.data)
            appendVarint(UInt64(d.count))
            out.append(contentsOf: d)
        case .date(let d):
            out.append(ArchiveFormat.Tag.date)
            appendU64(d.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let u):
            out.append(ArchiveFormat.Tag.uuid)
            withUnsafeBytes(of: u.uuid) { out.append(contentsOf: $0) }
        case .url(let u):
            if let p = ArchiveURL.problem(u) { throw ArchiveError(.invalidValue, p) }
            if let base = u.baseURL {
                out.append(ArchiveFormat.Tag.urlWithBase)
                try writeStringSlot(u.relativeString)
                try writeStringSlot(base.absoluteString)
            } else {
                out.append(ArchiveFormat.Tag.url)
                try writeStringSlot(u.relativeString)
            }
        case .array(let items):
            out.append(ArchiveFormat.Tag.array)
            appendVarint(UInt64(items.count))
            for i in items.indices.reversed() { stack.append(.item(item.item(i, items[i]), depth: depth + 1)) }
        case .dictionary(let d):
            out.append(ArchiveFormat.Tag.dictionary)
            appendVarint(UInt64(d.count))
            pushFields(d, of: item, depth: depth, stack: &stack)
        case .object(let o):
            out.append(ArchiveFormat.Tag.object)
            guard !o.className.isEmpty else { throw ArchiveError(.invalidValue, "empty class name") }
            try writeStringSlot(o.className)
            appendVarint(UInt64(o.fields.count))
            pushFields(o.fields, of: item, depth: depth, stack: &stack)
        case .anyKeyDictionary(let d):
            out.append(ArchiveFormat.Tag.anyKeyDictionary)
            appendVarint(UInt64(d.count))
            try countOrder(of: item)
            for e in ordered(item).entries.reversed() {
                stack.append(.item(e.value, depth: depth + 1))
                try pushElement(e.key, depth: depth + 1, stack: &stack)
            }
        case .set(let s):
            out.append(ArchiveFormat.Tag.set)
            appendVarint(UInt64(s.count))
            try countOrder(of: item)
            for e in ordered(item).elements.reversed() { try pushElement(e, depth: depth + 1, stack: &stack) }
        case .shared: break  // handled above
        }
    }

    /// A set element or any-key key: weighed against `ELEMENT_WEIGHT_MAX` as the reader weighs it (not inside
    /// a sort key, whose bytes count against `SORT_KEYS_MAX`).
    private mutating func pushElement(_ element: ArchiveOrderedValue, depth: Int, stack: inout [Task]) throws {
        if !isSortKey { try limits.addElementWeight(of: element.value, to: &elementWeight) }
        stack.append(.item(element, depth: depth))
    }

    /// A set or any-key dictionary in canonical order if sorted (its order is worked out: every one of a
    /// sorted writer's is, by ``ArchiveSortKeys/ordered(_:)`` or as a sorted archive was read), else in hash
    /// order.
    private func ordered(_ item: ArchiveOrderedValue) -> ArchiveOrderedValue {
        precondition(
            !sorted || item.parts != nil || item.elements.count + item.entries.count < 2, "order not worked out")
        return item
    }

    private func pushFields(_ d: [String: ArchiveValue], of item: ArchiveOrderedValue, depth: Int, stack: inout [Task])
    {
        var entries = d.map { (key: $0.key, value: $0.value) }
        if sorted { entries.sort { $0.key.utf8Precedes($1.key) } }
        for e in entries.reversed() {
            stack.append(.item(item.field(e.key, e.value), depth: depth + 1))
            stack.append(.key(e.key))
        }
    }

    private mutating func addExpanded(_ n: Int) throws {
        expanded += n  // both operands are at most maxExpandedValues: no overflow
        guard expanded <= limits.maxExpandedValues else {
            throw ArchiveError(.expansionLimit, "more than \(limits.maxExpandedValues) values once expanded")
        }
    }

    /// A string slot (§A5): `0` and a new string, or `index + 1` of an interned one.
    private mutating func writeStringSlot(_ s: String) throws {
        if let index = strings[ExactString(string: s)] {
            try countReference(to: s)
            appendVarint(UInt64(index) + 1)
        } else {
            appendVarint(0)
            try appendNewString(s)
        }
    }

    private mutating func appendNewString(_ s: String) throws {
        var s = s
        let count = s.utf8.count
        guard count <= limits.maxStringLength else {
            throw ArchiveError(.lengthLimit, "string of \(count) bytes, more than \(limits.maxStringLength)")
        }
        try limits.checkNonStarterRun(s, "string")
        try checkSortKeyBudget(adding: count)
        if !isSortKey { try limits.addStringUse(count, to: &stringUses) }
        appendVarint(UInt64(count))
        s.withUTF8 { out.append(contentsOf: $0) }
        strings[ExactString(string: s)] = strings.count
    }

    private mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    private mutating func appendU64(_ v: UInt64) {
        for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
    }
}
