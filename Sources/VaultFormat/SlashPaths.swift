/// Paths and item names split at `/` *bytes*, as the kernel reads them. Swift's `split(separator: "/")`,
/// `hasPrefix("/")` and `contains("/")` compare characters (grapheme clusters), and a `/` that a grapheme
/// joins to its neighbour is no character of its own: followed by a combining mark (`/\u{301}`) or preceded by
/// a prepended concatenation mark (`\u{0601}/`). A check made on characters then misses a separator, a
/// leading `/` or a `..` component that the kernel sees.
extension StringProtocol where UTF8View: BidirectionalCollection {
    /// The parts between `/` bytes.
    package func slashSeparated(maxSplits: Int = Int.max, omittingEmpty: Bool = false) -> [String] {
        // Collection.split's rules (maxSplits counts the parts kept), over the contiguous bytes: the generic
        // split over a String's UTF-8 view cost `extract` about 2 µs a name.
        precondition(maxSplits >= 0, "maxSplits must be at least 0")
        var copy = String(self)
        return copy.withUTF8 { b in
            var parts: [String] = []
            var start = 0
            func keep(_ end: Int) -> Bool {
                if start == end && omittingEmpty { return false }
                parts.append(String(decoding: UnsafeBufferPointer(rebasing: b[start..<end]), as: UTF8.self))
                return true
            }
            if maxSplits == 0 || b.isEmpty {
                _ = keep(b.count)
                return parts
            }
            var i = 0
            while i < b.count {
                if b[i] == 0x2F {
                    let kept = keep(i)
                    start = i + 1
                    if kept && parts.count == maxSplits { break }
                }
                i += 1
            }
            if start != b.count || !omittingEmpty { _ = keep(b.count) }
            return parts
        }
    }

    /// Whether the first byte is `/` (an absolute path).
    package var startsWithSlash: Bool { utf8.first == 0x2F }

    /// Whether the last byte is `/`.
    package var endsWithSlash: Bool { utf8.last == 0x2F }

    /// Whether a `/` byte is anywhere in it.
    package var containsSlash: Bool { utf8.contains(0x2F) }
}
