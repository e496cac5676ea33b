/// The named limits of SPEC.md Part 2 §A3, checked by the writer and the reader before the work they bound.
/// The defaults are safe for untrusted input; a caller may lower them, or raise them for trusted archives.
public struct ArchiveLimits: Hashable, Sendable {
    /// `DEPTH_MAX`: nesting depth of the value an archive stands for, references expanded: the root item is at
    /// depth 1, and a shared reference reaches as deep below its own depth as the definition it names.
    public var maxDepth: Int
    /// `VALUES_MAX`: items stored in an archive (a reference counts one).
    public var maxValues: Int
    /// `EXPANSION_MAX`: items the archive stands for once every shared reference is expanded.
    public var maxExpandedValues: Int
    /// `ARCHIVE_MAX`: bytes of a whole archive.
    public var maxBytes: Int
    /// `STRING_MAX`: bytes of UTF-8 in one string (values, keys, class names, URLs).
    public var maxStringLength: Int
    /// `DATA_MAX`: bytes of one data value.
    public var maxDataLength: Int
    /// `NONSTARTER_RUN_MAX`: the longest run of non-starters in the canonical decomposition of one string
    /// (``StreamSafe``), so that comparing strings under canonical equivalence stays linear.
    public var maxNonStarterRun: Int
    /// `SORT_KEYS_MAX`: bytes of all the sort keys reading or writing one sorted archive computes, those
    /// computed inside other sort keys included (SPEC.md Part 2 §A3, §A6).
    public var maxSortKeyBytes: Int
    /// `STRING_USES_MAX`: bytes of strings counted at every use, a string reference as the string it names:
    /// each use of a string may hash or compare all of it (a 4 MB key shared by 2,000 dictionaries took 103 s).
    public var maxStringUseBytes: Int
    /// `ELEMENT_WEIGHT_MAX`: the weight of all set elements and any-key dictionary keys (each value in one
    /// counts 1 and its bytes of text and data, a shared box 1), a nested one again at every level: what
    /// hashing them costs (505 nested sets around a million values took 77 s).
    public var maxElementWeight: Int

    /// Limits as given; each defaults to the value SPEC.md Part 2 §A3 names (``default``).
    public init(
        maxDepth: Int = 512, maxValues: Int = 1_000_000, maxExpandedValues: Int = 10_000_000,
        maxBytes: Int = 67_108_864, maxStringLength: Int = 16_777_216, maxDataLength: Int = 16_777_216,
        maxNonStarterRun: Int = StreamSafe.maxNonStarterRun, maxSortKeyBytes: Int = 67_108_864,
        maxStringUseBytes: Int = 67_108_864, maxElementWeight: Int = 33_554_432
    ) {
        self.maxDepth = maxDepth
        self.maxValues = maxValues
        self.maxExpandedValues = maxExpandedValues
        self.maxBytes = maxBytes
        self.maxStringLength = maxStringLength
        self.maxDataLength = maxDataLength
        self.maxNonStarterRun = maxNonStarterRun
        self.maxSortKeyBytes = maxSortKeyBytes
        self.maxStringUseBytes = maxStringUseBytes
        self.maxElementWeight = maxElementWeight
    }

    /// Throws unless `count` bytes are within ``maxBytes`` (checked before any parsing or after writing).
    func checkSize(_ count: Int) throws {
        guard count <= maxBytes else { throw ArchiveError(.sizeLimit, "\(count) bytes, more than \(maxBytes)") }
    }

    /// Throws unless `s` is Stream-Safe within ``maxNonStarterRun`` (checked before it is compared or hashed).
    func checkNonStarterRun(_ s: String, at offset: Int? = nil, _ what: String) throws {
        let run = StreamSafe.longestNonStarterRun(s, limit: maxNonStarterRun)
        guard run <= maxNonStarterRun else {
            throw ArchiveError(
                .nonStarterRunLimit, at: offset, "\(what) with more than \(maxNonStarterRun) non-starters in a row")
        }
    }

    /// Adds one use of a string of `bytes` bytes to `total`; throws once it passes ``maxStringUseBytes``.
    func addStringUse(_ bytes: Int, to total: inout Int, at offset: Int? = nil) throws {
        total += bytes  // each at most maxStringLength, the total at most maxStringUseBytes: no overflow
        guard total <= maxStringUseBytes else {
            throw ArchiveError(
                .expansionLimit, at: offset, "strings of more than \(maxStringUseBytes) bytes counted at every use")
        }
    }

    /// Adds the weight of a set element or any-key key (SPEC.md Part 2 §A3) to `total`; throws once it passes
    /// ``maxElementWeight``. The walk stops there, so it costs at most what the limit allows.
    func addElementWeight(of value: ArchiveValue, to total: inout Int, at offset: Int? = nil) throws {
        var stack = [value]
        while let v = stack.popLast() {
            total += Self.ownWeight(of: v)
            switch v {
            case .array(let a): stack += a
            case .dictionary(let d):
                for (k, x) in d {
                    total += k.utf8.count
                    stack.append(x)
                }
            case .anyKeyDictionary(let d):
                stack += d.keys
                stack += d.values
            case .set(let s): stack += s
            case .object(let o):
                for (k, x) in o.fields {
                    total += k.utf8.count
                    stack.append(x)
                }
            default: break  // a shared box counts 1: its contents are hashed once, when it is made
            }
            try checkElementWeight(total, at: offset)
        }
    }

    /// Adds `weight`, the weight of a set element or any-key key known already (the reader adds up each value's
    /// as it reads it), to `total`; throws once it passes ``maxElementWeight``.
    func addElementWeight(_ weight: Int, to total: inout Int, at offset: Int? = nil) throws {
        total += weight  // each at most the input's bytes and items: no overflow
        try checkElementWeight(total, at: offset)
    }

    private func checkElementWeight(_ total: Int, at offset: Int?) throws {
        guard total <= maxElementWeight else {
            throw ArchiveError(
                .expansionLimit, at: offset, "set elements and keys weighing more than \(maxElementWeight)")
        }
    }

    /// What a value weighs without the values inside it (§A3): 1, and the bytes of a string, a data value, a
    /// URL's strings or an object's class name (a dictionary's keys and an object's field names are added
    /// with the values they hold).
    static func ownWeight(of value: ArchiveValue) -> Int {
        switch value {
        case .string(let s): 1 + s.utf8.count
        case .data(let d): 1 + d.count
        case .url(let u): 1 + u.relativeString.utf8.count + (u.baseURL?.absoluteString.utf8.count ?? 0)
        case .object(let o): 1 + o.className.utf8.count
        default: 1
        }
    }

    /// The defaults of SPEC.md Part 2 §A3.
    public static let `default` = ArchiveLimits()
}
