/// The named limits of SPEC.md Part 2 §A3, checked by the writer and the reader before the work they bound.
/// The defaults are safe for untrusted input; a caller may lower them, or raise them for trusted archives.
public struct ArchiveLimits: Hashable, Sendable {
    /// `DEPTH_MAX`: nesting depth; the root item is at depth 1.
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

    public init(
        maxDepth: Int = 512, maxValues: Int = 1_000_000, maxExpandedValues: Int = 10_000_000,
        maxBytes: Int = 67_108_864, maxStringLength: Int = 16_777_216, maxDataLength: Int = 16_777_216
    ) {
        self.maxDepth = maxDepth
        self.maxValues = maxValues
        self.maxExpandedValues = maxExpandedValues
        self.maxBytes = maxBytes
        self.maxStringLength = maxStringLength
        self.maxDataLength = maxDataLength
    }

    /// Throws unless `count` bytes are within ``maxBytes`` (checked before any parsing or after writing).
    func checkSize(_ count: Int) throws {
        guard count <= maxBytes else { throw ArchiveError(.sizeLimit, "\(count) bytes, more than \(maxBytes)") }
    }

    /// The defaults of SPEC.md Part 2 §A3.
    public static let `default` = ArchiveLimits()
}
