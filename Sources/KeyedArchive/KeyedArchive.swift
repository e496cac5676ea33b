/// The format version of the keyed archiver, under the name it had before it moved to
/// ``ArchiveSerialization/formatVersion``: a type named after its module made `KeyedArchive.X` ambiguous
/// (the module or the type) and the module's documentation page collide with the type's.
@available(*, deprecated, message: "use ArchiveSerialization.formatVersion")
public enum KeyedArchive {
    /// The format version this module writes and reads (SPEC.md Part 2 §A2).
    public static let formatVersion: UInt8 = ArchiveSerialization.formatVersion
}
