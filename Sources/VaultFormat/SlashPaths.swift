/// Paths and item names split at `/` *bytes*, as the kernel reads them. Swift's `split(separator: "/")`,
/// `hasPrefix("/")` and `contains("/")` compare characters (grapheme clusters), and a `/` that a grapheme
/// joins to its neighbour is no character of its own: followed by a combining mark (`/\u{301}`) or preceded by
/// a prepended concatenation mark (`\u{0601}/`). A check made on characters then misses a separator, a
/// leading `/` or a `..` component that the kernel sees.
extension StringProtocol where UTF8View: BidirectionalCollection {
    /// The parts between `/` bytes.
    package func slashSeparated(maxSplits: Int = Int.max, omittingEmpty: Bool = false) -> [String] {
        utf8.split(separator: 0x2F, maxSplits: maxSplits, omittingEmptySubsequences: omittingEmpty).map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    /// Whether the first byte is `/` (an absolute path).
    package var startsWithSlash: Bool { utf8.first == 0x2F }

    /// Whether the last byte is `/`.
    package var endsWithSlash: Bool { utf8.last == 0x2F }

    /// Whether a `/` byte is anywhere in it.
    package var containsSlash: Bool { utf8.contains(0x2F) }
}
