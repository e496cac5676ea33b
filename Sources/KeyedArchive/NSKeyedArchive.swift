#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// NSKeyedArchiver interoperability: archives written by Apple's `NSKeyedArchiver` (binary or XML property
/// lists) import as ``ArchiveValue`` trees, and values export as binary archives `NSKeyedUnarchiver` reads.
///
/// Import maps the standard classes to value kinds (NSString, NSNumber, NSData, NSDate, NSArray, NSDictionary,
/// NSSet, NSOrderedSet as an array, NSUUID, NSURL, NSNull); any other class becomes an ``ArchiveObject`` with
/// its class name and fields. An object referenced from two places imports as one ``ArchiveShared`` box when
/// it is a container or object; scalars (strings, numbers, data, dates, UUIDs, URLs) have no identity and
/// import as plain values. Cycles are refused, and everything is bounded by ``ArchiveLimits``.
public enum NSKeyedArchive {
    /// The `$version` NSKeyedArchiver writes and this importer accepts.
    public static let archiverVersion: Int64 = 100_000

    /// Whether `bytes` look like a property list an archive could be in: the `bplist00` magic, or XML text
    /// starting (after an optional byte-order mark and white space) with `<?xml` or `<plist`.
    public static func isKeyedArchive(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: BinaryPlistReader.magic) || looksLikeXML(bytes)
    }

    static func looksLikeXML(_ bytes: [UInt8]) -> Bool {
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        rest = rest.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        return rest.starts(with: Array("<?xml".utf8)) || rest.starts(with: Array("<plist".utf8))
    }

    /// The property list in `bytes`, binary or XML.
    public static func propertyList(from bytes: [UInt8], limits: ArchiveLimits = .default) throws -> PropertyList {
        try limits.checkSize(bytes.count)
        if bytes.starts(with: BinaryPlistReader.magic) { return try PropertyList(binary: bytes, limits: limits) }
        if looksLikeXML(bytes) { return try PropertyList(xml: bytes, limits: limits) }
        throw ArchiveError(.notAPropertyList, at: 0, "neither bplist00 nor an XML plist")
    }

    /// The value an NSKeyedArchiver archive holds: the object under `$top`'s `root` key, or, when `$top` has
    /// other keys, a dictionary of every top-level key. Throws ``ArchiveError``.
    public static func importValue(from bytes: [UInt8], limits: ArchiveLimits = .default) throws -> ArchiveValue {
        try importValue(from: try propertyList(from: bytes, limits: limits), limits: limits)
    }

    /// The value an NSKeyedArchiver archive holds, from `Data`.
    public static func importValue(from data: Data, limits: ArchiveLimits = .default) throws -> ArchiveValue {
        try limits.checkSize(data.count)
        return try importValue(from: [UInt8](data), limits: limits)
    }

    /// The value of an archive already read as a property list.
    public static func importValue(from plist: PropertyList, limits: ArchiveLimits = .default) throws -> ArchiveValue {
        var importer = try NSKeyedImporter(plist, limits: limits)
        return try importer.run()
    }

    /// `value` as a binary NSKeyedArchiver archive, with the value under `$top`'s `root` key. Throws
    /// ``ArchiveError/Code/notExportable`` for an object whose class name is one of the standard classes
    /// import maps (it would come back as another kind) or whose field name starts with `$`, and the limit
    /// errors for values beyond `limits`.
    public static func exportValue(_ value: ArchiveValue, limits: ArchiveLimits = .default) throws -> [UInt8] {
        var exporter = NSKeyedExporter(limits: limits)
        return try exporter.archive(value)
    }

    /// The class names import maps to value kinds (reserved for export).
    static let standardClasses: Set<String> = [
        "NSString", "NSMutableString", "NSNumber", "NSData", "NSMutableData", "NSDate", "NSArray",
        "NSMutableArray", "NSDictionary", "NSMutableDictionary", "NSSet", "NSMutableSet", "NSOrderedSet",
        "NSMutableOrderedSet", "NSUUID", "NSURL", "NSNull"
    ]
}
