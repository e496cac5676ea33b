/// Unicode's Stream-Safe Text Format (UAX #15 §13) bounds a run of non-starters at 30. Canonical equivalence
/// (Swift's `String` `==` and hashing) sorts each run of non-starters by combining class, which costs the square
/// of the run's length: 400 KB of combining marks took 45 s to compare. Wherever kcar compares untrusted
/// strings under canonical equivalence (archive keys, class names and set elements, plist keys, item-file
/// attribute names), it first refuses a string with a longer run (`NONSTARTER_RUN_MAX`, SPEC.md Part 2 §A3),
/// so that every comparison is linear.
public enum StreamSafe {
    /// `NONSTARTER_RUN_MAX`: the longest run of non-starters a compared string may hold.
    public static let maxNonStarterRun = 30

    /// The length of the longest run of consecutive non-starters in `s`, counted in scalars of its canonical
    /// decomposition's leading class: a scalar of canonical combining class other than 0 is a non-starter, and so
    /// are the three of class 0 whose decomposition begins with non-starters (U+0F73, U+0F75, U+0F81 each
    /// decompose into two). Linear in the string's length; stops early once `limit` is passed.
    public static func longestNonStarterRun(_ s: String, limit: Int = Int.max) -> Int {
        var run = 0, longest = 0
        for scalar in s.unicodeScalars {
            let v = scalar.value
            // Every scalar below U+0300 is a starter: the common case costs one compare.
            if v < 0x300 {
                run = 0
                continue
            }
            if v == 0x0F73 || v == 0x0F75 || v == 0x0F81 {
                run += 2
            } else if scalar.properties.canonicalCombiningClass != .notReordered {
                run += 1
            } else {
                run = 0
                continue
            }
            if run > longest {
                longest = run
                if longest > limit { return longest }
            }
        }
        return longest
    }

    /// Whether `s` may be compared under canonical equivalence in linear time (no run over ``maxNonStarterRun``).
    public static func isStreamSafe(_ s: String) -> Bool {
        longestNonStarterRun(s, limit: maxNonStarterRun) <= maxNonStarterRun
    }
}
