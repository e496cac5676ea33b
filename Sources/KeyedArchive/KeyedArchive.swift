/// Heterogeneous values <-> archive bytes: the keyed archiver that replaces NSKeyedArchiver.
///
/// Layers, top to bottom: ``ArchiveEncoder`` / ``ArchiveDecoder`` (Codable) -> ``ArchiveValue`` (the value
/// tree) -> ``ArchiveSerialization`` (the binary format of SPEC.md Part 2, written and read without recursion).
public enum KeyedArchive {
    /// The format version this module writes and reads (SPEC.md Part 2 §A2).
    public static let formatVersion: UInt8 = 1
}
