/// The named limits of vault format v1 (SPEC.md §3). Readers check them before doing the work they bound.
public enum Limits {
    public static let headerMin = 80
    public static let headerMax = 65_536
    public static let slotsMax = 32
    public static let groupMax = 255
    public static let kdfOpsMin: UInt32 = 1
    public static let kdfOpsMax: UInt32 = 32
    public static let kdfMemMinKiB: UInt32 = 8_192
    public static let kdfMemMaxKiB: UInt32 = 1_048_576
    /// The Argon2id work of all passphrase slots of a header together (KiB x passes): one maximal slot.
    /// A wrong passphrase is tried on every passphrase slot, so this bounds what a header can make a reader spend.
    public static let kdfTotalMax: UInt64 = UInt64(kdfMemMaxKiB) * UInt64(kdfOpsMax)
    public static let chunkSize = 1_048_576
    public static let solidMemberMax = 131_072
    public static let solidTarget = 262_144
    public static let membersMax = 65_536
    public static let indexMax = 268_435_456
    public static let itemsMax = 4_000_000
    /// `GENERATION_MAX` (SPEC.md §8): writers never write a greater generation; a vault at it or past it (a file
    /// no conforming writer made: 2^48 commits are not reached) takes no more commits, and its rewrite starts
    /// its generations again at 1.
    public static let generationMax: UInt64 = 1 << 48
    public static let attrsMax = 256
    public static let attrNameMax = 255
    public static let attrValueMax = 65_536
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
    public static let valueMax: UInt64 = 1 << 48
    /// Auto-compaction: after a commit, compact when dead bytes exceed this share of the body ...
    public static let compactDeadRatio = 0.5
    /// ... and this many bytes.
    public static let compactDeadMin: UInt64 = 1_048_576
}

/// Argon2id cost parameters of a passphrase slot.
public struct KDFParameters: Hashable, Sendable {
    public var ops: UInt32
    public var memKiB: UInt32
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
