/// The named limits of vault format v1 (SPEC.md §3). Readers check them before doing the work they bound.
public enum Limits {
    /// `HEADER_MIN` (SPEC.md §3): the smallest header a reader accepts before it parses fields (the fixed part, checksum and MAC).
    public static let headerMin = 80
    /// `HEADER_MAX`: bytes of a header at most.
    public static let headerMax = 65_536
    /// `SLOTS_MAX`: key slots in a header, at least 1.
    public static let slotsMax = 32
    /// `GROUP_MAX`: bytes of UTF-8 of an access-group name, at least 1.
    public static let groupMax = 255
    /// `KDF_OPS_MIN`: the fewest Argon2id passes a passphrase slot may ask for.
    public static let kdfOpsMin: UInt32 = 1
    /// `KDF_OPS_MAX`: the most Argon2id passes a passphrase slot may ask for.
    public static let kdfOpsMax: UInt32 = 32
    /// `KDF_MEM_MIN`: the least Argon2id memory (KiB) a passphrase slot may ask for.
    public static let kdfMemMinKiB: UInt32 = 8_192
    /// `KDF_MEM_MAX`: the most Argon2id memory (KiB) a passphrase slot may ask for.
    public static let kdfMemMaxKiB: UInt32 = 1_048_576
    /// The Argon2id work of all passphrase slots of a header together (KiB x passes): one maximal slot.
    /// A wrong passphrase is tried on every passphrase slot, so this bounds what a header can make a reader spend.
    public static let kdfTotalMax: UInt64 = UInt64(kdfMemMaxKiB) * UInt64(kdfOpsMax)
    /// `CHUNK_SIZE`: plaintext bytes of every chunk of a record or index segment but the last.
    public static let chunkSize = 1_048_576
    /// `SOLID_MEMBER_MAX`: writers put values up to this size into shared (solid) records.
    public static let solidMemberMax = 131_072
    /// `SOLID_TARGET`: writers close a solid record once its values, or its member table, reach this size.
    public static let solidTarget = 262_144
    /// `MEMBERS_MAX`: members of one record.
    public static let membersMax = 65_536
    /// `INDEX_MAX`: plaintext bytes of one index segment.
    public static let indexMax = 268_435_456
    /// `ITEMS_MAX`: items in a vault.
    public static let itemsMax = 4_000_000
    /// `GENERATION_MAX` (SPEC.md §8): writers never write a greater generation; a vault at it or past it (a file
    /// no conforming writer made: 2^48 commits are not reached) takes no more commits, and its rewrite starts
    /// its generations again at 1.
    public static let generationMax: UInt64 = 1 << 48
    /// `ATTRS_MAX`: attributes of one item.
    public static let attrsMax = 256
    /// `ATTR_NAME_MAX`: bytes of an attribute name or a class, at least 1.
    public static let attrNameMax = 255
    /// `ATTR_VALUE_MAX`: bytes of a string or data attribute value.
    public static let attrValueMax = 65_536
    /// `CHAIN_MAX`: index segments of a chain (a checkpoint and the deltas after it).
    public static let chainMax = 64
    /// Plaintext bytes of all the index segments of one chain together (a checkpoint and its deltas): what
    /// opening a vault may inflate and parse in all, whatever the number of segments. Writers start a new
    /// checkpoint before a delta would pass it.
    public static let chainIndexMax = indexMax
    /// Operations (puts and deletes) of all the segments of one chain together: what opening a vault may
    /// decode in all. A checkpoint holds at most ``itemsMax``; writers keep the deltas after it below as many.
    public static let chainOpsMax = 2 * itemsMax
    /// Plaintext bytes of all the superseded index segments of a file that `verify` inflates and parses (the
    /// ones before the chain that opening reads): past it, it only authenticates them.
    public static let supersededIndexMax = 4 * chainIndexMax
    /// Trailer candidates (magic and fields consistent with their position) whose MAC fails that the search
    /// for the last commit tries before it gives up: an interrupted write leaves at most one (a torn trailer).
    public static let trailerProbesMax = 16
    /// `VALUE_MAX`: bytes of one item's value.
    public static let valueMax: UInt64 = 1 << 48
    /// Auto-compaction: after a commit, compact when dead bytes exceed this share of the body ...
    public static let compactDeadRatio = 0.5
    /// ... and this many bytes.
    public static let compactDeadMin: UInt64 = 1_048_576
}

/// Argon2id cost parameters of a passphrase slot.
public struct KDFParameters: Hashable, Sendable {
    /// Passes over the memory, ``Limits/kdfOpsMin`` to ``Limits/kdfOpsMax``.
    public var ops: UInt32
    /// Memory in KiB, ``Limits/kdfMemMinKiB`` to ``Limits/kdfMemMaxKiB``.
    public var memKiB: UInt32
    /// Parameters as given: a header that asks for more than the limits allow is refused when it is read.
    public init(ops: UInt32, memKiB: UInt32) {
        self.ops = ops
        self.memKiB = memKiB
    }
    /// libsodium's MODERATE: 3 passes over 256 MiB.
    public static let `default` = KDFParameters(ops: 3, memKiB: 262_144)
    /// The cheapest parameters the format allows (tests and fixtures only).
    public static let minimum = KDFParameters(ops: Limits.kdfOpsMin, memKiB: Limits.kdfMemMinKiB)

    /// Throws `code` unless both parameters are within the format's floors and caps.
    func check(_ code: VaultError.Code) throws {
        guard (Limits.kdfOpsMin...Limits.kdfOpsMax).contains(ops) else {
            throw VaultError(code, "KDF passes \(ops) outside \(Limits.kdfOpsMin)...\(Limits.kdfOpsMax)")
        }
        guard (Limits.kdfMemMinKiB...Limits.kdfMemMaxKiB).contains(memKiB) else {
            throw VaultError(
                code, "KDF memory \(memKiB) KiB outside \(Limits.kdfMemMinKiB)...\(Limits.kdfMemMaxKiB) KiB")
        }
    }
}
