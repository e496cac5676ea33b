#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How ``ArchiveSerialization`` writes.
public struct ArchiveWritingOptions: OptionSet, Hashable, Sendable {
    /// The options as bits.
    public let rawValue: Int
    /// Options from their bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Canonical order (SPEC.md Part 2 §A6): dictionary keys and object fields sorted by their UTF-8 bytes,
    /// set elements and any-key entries by their sort keys. The same value then gives the same bytes in
    /// every process; readers check the order of an archive written this way.
    public static let deterministic = ArchiveWritingOptions(rawValue: 1 << 0)
}

/// Converts between ``ArchiveValue`` trees and archive bytes (SPEC.md Part 2), like `JSONSerialization`.
/// Neither direction recurses on the stack: nesting costs heap memory only, up to ``ArchiveLimits/maxDepth``.
public enum ArchiveSerialization {
    /// The format version this module writes and reads (SPEC.md Part 2 §A2).
    public static let formatVersion: UInt8 = 1

    /// The archive of `value`. Throws ``ArchiveError`` if the value breaks a limit (the archive would not be
    /// readable with the same limits).
    public static func data(
        from value: ArchiveValue, options: ArchiveWritingOptions = [], limits: ArchiveLimits = .default
    ) throws -> Data {
        Data(try bytes(from: value, options: options, limits: limits))
    }

    /// The archive of `value`, as bytes.
    public static func bytes(
        from value: ArchiveValue, options: ArchiveWritingOptions = [], limits: ArchiveLimits = .default
    ) throws -> [UInt8] {
        let sorted = options.contains(.deterministic)
        var writer = ArchiveWriter(sorted: sorted, limits: limits)
        writer.out = ArchiveFormat.magic + [ArchiveSerialization.formatVersion, sorted ? ArchiveFormat.flagSorted : 0]
        try writer.write(value)
        try limits.checkSize(writer.out.count)
        return writer.out
    }

    /// The value an archive holds. Throws ``ArchiveError`` on anything but one canonical archive within the
    /// limits.
    public static func value(from data: Data, limits: ArchiveLimits = .default) throws -> ArchiveValue {
        try limits.checkSize(data.count)
        return try value(from: [UInt8](data), limits: limits)
    }

    /// The value an archive holds, from bytes.
    public static func value(from bytes: [UInt8], limits: ArchiveLimits = .default) throws -> ArchiveValue {
        var reader = ArchiveReader(bytes: bytes, limits: limits)
        return try reader.readArchive()
    }

    /// The sort key of a value (SPEC.md Part 2 §A6): its item encoding with fresh string and shared tables.
    /// Set elements and any-key entries are written in ascending sort-key order in a deterministic archive.
    /// Throws *sort key limit exceeded* if it and the sort keys computed for it pass
    /// ``ArchiveLimits/maxSortKeyBytes``.
    public static func sortKey(of value: ArchiveValue, limits: ArchiveLimits = .default) throws -> [UInt8] {
        try ArchiveSortKeys(limits: limits).key(of: value)
    }
}
