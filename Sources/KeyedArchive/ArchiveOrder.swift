/// A value with the canonical order (SPEC.md Part 2 §A6) of each set and any-key dictionary in it worked out
/// once. Ordering a set computes the sort key of each element, and a sort key writes the element in canonical
/// order, sets inside it included: ordered again from scratch at every level, sets nested in set elements
/// cost twice per level (a 99-byte archive of 22 such levels took 7 million sort keys, 9.8 s, to print). Here
/// every set's order is computed once, from its elements' orders, and a sort key writes what is already in
/// order. The sort keys still count against `SORT_KEYS_MAX` as §A3 says, nested ones at every level (each
/// set keeps what ordering it cost), so what an archive or a writer accepts does not change, only the work.
public struct ArchiveOrderedValue: Sendable {
    /// The value itself.
    public let value: ArchiveValue
    /// The order inside the value; nil when there is nothing to order in it (no non-empty set or any-key
    /// dictionary), or when it is written in no particular order.
    let parts: Parts?

    indirect enum Parts: Sendable {
        /// An array: the items with something to order in them, by index.
        case items([Int: ArchiveOrderedValue])
        /// A dictionary or an object: the fields with something to order in them, by name.
        case fields([String: ArchiveOrderedValue])
        /// A set: every element, in ascending sort-key order, and the sort-key bytes ordering them counted.
        case elements([ArchiveOrderedValue], cost: Int)
        /// An any-key dictionary: every entry, in ascending sort-key order of the keys, and what that counted.
        case entries([(key: ArchiveOrderedValue, value: ArchiveOrderedValue)], cost: Int)
        /// A shared box: its contents.
        case contents(ArchiveOrderedValue)
    }

    /// A value whose order is not worked out: its sets and any-key dictionaries come in their hash order.
    public init(unordered value: ArchiveValue) {
        self.value = value
        parts = nil
    }

    init(_ value: ArchiveValue, _ parts: Parts?) {
        self.value = value
        self.parts = parts
    }

    /// `.shared(box)` holding `contents`.
    init(shared value: ArchiveValue, contents: ArchiveOrderedValue) {
        self.init(value, contents.parts == nil ? nil : .contents(contents))
    }

    /// The item at `index` of an array, which is `item`.
    func item(_ index: Int, _ item: ArchiveValue) -> ArchiveOrderedValue {
        guard case .items(let some) = parts, let o = some[index] else { return ArchiveOrderedValue(unordered: item) }
        return o
    }

    /// The field `name` of a dictionary or object, whose value is `value`.
    func field(_ name: String, _ value: ArchiveValue) -> ArchiveOrderedValue {
        guard case .fields(let some) = parts, let o = some[name] else { return ArchiveOrderedValue(unordered: value) }
        return o
    }

    /// The contents of a shared box; any other value itself.
    public var contents: ArchiveOrderedValue {
        if case .contents(let o) = parts { return o }
        if case .shared(let box) = value { return ArchiveOrderedValue(unordered: box.value) }
        return self
    }

    /// An array's items, in order (empty for any other value).
    public var items: [ArchiveOrderedValue] {
        guard case .array(let a) = value else { return [] }
        return a.indices.map { item($0, a[$0]) }
    }

    /// The fields of a dictionary or object in ascending order of their UTF-8 bytes (empty for any other value).
    public var fields: [(key: String, value: ArchiveOrderedValue)] {
        let d: [String: ArchiveValue]
        switch value {
        case .dictionary(let x): d = x
        case .object(let o): d = o.fields
        default: return []
        }
        return d.sorted { $0.key.utf8Precedes($1.key) }.map { ($0.key, field($0.key, $0.value)) }
    }

    /// A set's elements: in ascending sort-key order once the order is worked out, else in hash order.
    public var elements: [ArchiveOrderedValue] {
        if case .elements(let e, _) = parts { return e }
        guard case .set(let s) = value else { return [] }
        return s.map { ArchiveOrderedValue(unordered: $0) }
    }

    /// An any-key dictionary's entries: in ascending sort-key order of the keys once the order is worked out,
    /// else in hash order.
    public var entries: [(key: ArchiveOrderedValue, value: ArchiveOrderedValue)] {
        if case .entries(let e, _) = parts { return e }
        guard case .anyKeyDictionary(let d) = value else { return [] }
        return d.map { (ArchiveOrderedValue(unordered: $0.key), ArchiveOrderedValue(unordered: $0.value)) }
    }

    /// The sort-key bytes ordering this set or any-key dictionary counted (0 for anything else): what a sort
    /// key that holds it counts again (§A3).
    var orderCost: Int {
        switch parts {
        case .elements(_, let cost)?, .entries(_, let cost)?: cost
        default: 0
        }
    }
}

/// Sort keys (SPEC.md Part 2 §A6) computed against one `SORT_KEYS_MAX` budget (§A3): the reader or writer of
/// one archive, or a printer of one value, computes all of its sort keys with one instance, so that the bytes
/// they add up to, nested ones included, stay within ``ArchiveLimits/maxSortKeyBytes``.
public final class ArchiveSortKeys {
    let limits: ArchiveLimits
    /// Bytes left; a sort key being written counts against it as it grows.
    var remaining: Int
    /// Sort keys written so far: one per element or key ordered, never more (the tests count them).
    private(set) var written = 0
    /// The sort-key bytes counted so far, as §A3 counts them.
    var counted: Int { limits.maxSortKeyBytes - remaining }

    /// A counter of sort-key bytes under `limits` (``ArchiveLimits/maxSortKeyBytes``).
    public init(limits: ArchiveLimits = .default) {
        self.limits = limits
        remaining = limits.maxSortKeyBytes
    }

    /// The sort key of `value`. Throws *sort key limit exceeded* once the sort keys of this instance, this one
    /// and those computed for the sets inside it included, pass the budget.
    public func key(of value: ArchiveValue) throws -> [UInt8] {
        try write(ordered(value), countingOrders: false)
    }

    /// `items` in ascending sort-key order of their values: the canonical order of set elements and any-key
    /// entries. Each item's sort key is computed as ``key(of:)`` computes it; the writer, the reader and the
    /// printer order a whole value with ``ordered(_:)`` instead, each set once.
    public func sorted<T>(_ items: [T], by value: (T) -> ArchiveValue) throws -> [T] {
        let keys = try items.map { try key(of: value($0)) }
        return zip(keys, items).sorted { [UInt8].precedes($0.0, $1.0) }.map(\.1)
    }

    /// The sort key of a set element or any-key key whose inner order is worked out, and the bytes it counted:
    /// its own, and again those of ordering each set inside it (as if it ordered them from scratch, §A3).
    func elementKey(of value: ArchiveOrderedValue) throws -> (key: [UInt8], cost: Int) {
        let before = remaining
        let key = try write(value, countingOrders: true)
        return (key, before - remaining)
    }

    /// Writes a sort key. `countingOrders`: each set inside counts what ordering it cost, again (its order was
    /// worked out, and counted, before).
    private func write(_ value: ArchiveOrderedValue, countingOrders: Bool) throws -> [UInt8] {
        written += 1
        var writer = ArchiveWriter(
            sorted: true, limits: limits, sortKeys: self, isSortKey: true, countsOrders: countingOrders)
        try writer.write(value)
        remaining -= writer.out.count + writer.referencedBytes  // within it: checked as they grew
        return writer.out
    }

    /// `value` with the order of every set and any-key dictionary in it worked out, bottom up, each once: a
    /// shared box once however often it is used. Its sort keys count against this budget. Walks the value with
    /// an explicit stack, at most ``ArchiveLimits/maxDepth`` deep and over at most
    /// ``ArchiveLimits/maxValues`` items (a reference counts 1), as a writer would.
    public func ordered(_ root: ArchiveValue) throws -> ArchiveOrderedValue {
        var boxes: [ObjectIdentifier: ArchiveOrderedValue] = [:]
        var stack: [OrderFrame] = []
        var items = 0
        var next = root
        while true {
            // Enter `next`: a leaf, a box already met, or an empty container is done at once.
            var done: ArchiveOrderedValue
            items += 1
            guard items <= limits.maxValues else {
                throw ArchiveError(.valueLimit, "more than \(limits.maxValues) items")
            }
            guard stack.count < limits.maxDepth else { throw ArchiveError(.depthLimit, "depth \(stack.count + 1)") }
            if case .shared(let box) = next, let o = boxes[ObjectIdentifier(box)] {
                done = o
            } else if let frame = OrderFrame(next) {
                stack.append(frame)
                next = frame.children[0]
                continue
            } else {
                done = ArchiveOrderedValue(unordered: next)
            }
            // Hand it to the open containers, closing each one it completes.
            while let top = stack.indices.last {
                stack[top].add(done)
                if stack[top].next < stack[top].children.count { break }
                let frame = stack.removeLast()
                done = try frame.finish(self)
                if case .shared(let box) = frame.value { boxes[ObjectIdentifier(box)] = done }
            }
            guard let top = stack.last else { return done }
            next = top.children[top.next]
        }
    }
}

/// A container whose order ``ArchiveSortKeys/ordered(_:)`` is working out.
private struct OrderFrame {
    let value: ArchiveValue
    /// The items inside, in the order they are visited (an any-key dictionary's keys and values in turn).
    let children: [ArchiveValue]
    /// A dictionary's or object's field names, one per child.
    var names: [String] = []
    var next = 0
    /// A set's or any-key dictionary's children, all of them; any other's, those with something to order.
    var all: [ArchiveOrderedValue] = []
    var some: [Int: ArchiveOrderedValue] = [:]

    /// nil for a value with no items inside.
    init?(_ value: ArchiveValue) {
        self.value = value
        switch value {
        case .shared(let box): children = [box.value]
        case .array(let a): children = a
        case .set(let s): children = Array(s)
        case .dictionary(let d):
            children = Array(d.values)
            names = Array(d.keys)
        case .object(let o):
            children = Array(o.fields.values)
            names = Array(o.fields.keys)
        case .anyKeyDictionary(let d): children = d.flatMap { [$0.key, $0.value] }
        default: return nil
        }
        if children.isEmpty { return nil }
    }

    mutating func add(_ child: ArchiveOrderedValue) {
        switch value {
        case .set, .anyKeyDictionary: all.append(child)
        default: if child.parts != nil { some[next] = child }
        }
        next += 1
    }

    func finish(_ sortKeys: ArchiveSortKeys) throws -> ArchiveOrderedValue {
        switch value {
        case .shared:
            return ArchiveOrderedValue(shared: value, contents: some[0] ?? ArchiveOrderedValue(unordered: children[0]))
        case .array: return ArchiveOrderedValue(value, some.isEmpty ? nil : .items(some))
        case .dictionary, .object:
            return ArchiveOrderedValue(
                value,
                some.isEmpty ? nil : .fields(Dictionary(uniqueKeysWithValues: some.map { (names[$0.key], $0.value) })))
        case .set:
            let (sorted, cost) = try Self.sort(all, by: { $0 }, sortKeys)
            return ArchiveOrderedValue(value, .elements(sorted, cost: cost))
        default:
            let entries = stride(from: 0, to: all.count, by: 2).map { (key: all[$0], value: all[$0 + 1]) }
            let (sorted, cost) = try Self.sort(entries, by: \.key, sortKeys)
            return ArchiveOrderedValue(value, .entries(sorted, cost: cost))
        }
    }

    /// `items` in ascending sort-key order, and the sort-key bytes that counted.
    static func sort<T>(_ items: [T], by key: (T) -> ArchiveOrderedValue, _ sortKeys: ArchiveSortKeys) throws -> (
        [T], Int
    ) {
        var cost = 0
        let keyed = try items.map { item in
            let k = try sortKeys.elementKey(of: key(item))
            cost += k.cost
            return (k.key, item)
        }
        return (keyed.sorted { [UInt8].precedes($0.0, $1.0) }.map(\.1), cost)
    }
}
