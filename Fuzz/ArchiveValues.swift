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
        case .anyKeyDictionary(let d): stack += d.keys; stack += d.values
        case .set(let s): stack += s
        case .object(let o): stack += o.fields.values
        case .shared(let b): stack.append(b.value)
        default: break
        }
    }
    return true
}
