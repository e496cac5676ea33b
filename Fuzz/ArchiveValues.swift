// Helpers of the targets that build archive values (archive, plist).
import KeyedArchive

/// Whether the tree `v` stands for (shared boxes expanded) has at most `budget` values: the round trips and
/// the printer are linear in it, and the reader allows 10 million.
func isSmall(_ v: ArchiveValue, _ budget: Int = 50_000) -> Bool {
    var stack = [v]
    var n = 0
    while let x = stack.popLast() {
        n += 1
        if n > budget { return false }
        switch x {
        case .array(let a): stack += a
        case .dictionary(let d): stack += d.values
        case .anyKeyDictionary(let d):
            stack += d.keys
            stack += d.values
        case .set(let s): stack += s
        case .object(let o): stack += o.fields.values
        case .shared(let b): stack.append(b.value)
        default: break
        }
    }
    return true
}

/// Checks the invariants issue 9 added for every value a reader returns: no deeper than `DEPTH_MAX` with
/// shared boxes expanded (so printing, comparing and freeing it cannot overflow the stack), every string
/// Stream-Safe, and its JSON within `SHOW_OUTPUT_MAX`, counted before printing. Call on small values only.
func checkBounded(_ v: ArchiveValue) {
    var stack: [(ArchiveValue, Int)] = [(v, 1)]
    while let (x, depth) = stack.popLast() {
        precondition(depth <= ArchiveLimits.default.maxDepth, "a value read is deeper than DEPTH_MAX")
        func strings(_ s: String...) {
            for t in s { precondition(StreamSafe.isStreamSafe(t), "a string read is not Stream-Safe") }
        }
        switch x {
        case .string(let s): strings(s)
        case .array(let a): stack += a.map { ($0, depth + 1) }
        case .dictionary(let d):
            d.keys.forEach { strings($0) }
            stack += d.values.map { ($0, depth + 1) }
        case .anyKeyDictionary(let d): stack += (Array(d.keys) + Array(d.values)).map { ($0, depth + 1) }
        case .set(let s): stack += s.map { ($0, depth + 1) }
        case .object(let o):
            strings(o.className)
            o.fields.keys.forEach { strings($0) }
            stack += o.fields.values.map { ($0, depth + 1) }
        case .shared(let b): stack.append((b.value, depth + 1))
        default: break
        }
    }
}
