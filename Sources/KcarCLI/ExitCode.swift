import KcarKeychain
import VaultFormat

/// The exit codes of `kcar`, one per kind of failure (the README's table).
public struct ExitCode: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let success = ExitCode(rawValue: 0)
    /// An unexpected internal failure.
    public static let failure = ExitCode(rawValue: 1)
    public static let usage = ExitCode(rawValue: 2)
    public static let wrongKey = ExitCode(rawValue: 3)
    /// Not a vault, unsupported version, damaged or tampered header, truncated, damaged index or record.
    public static let damaged = ExitCode(rawValue: 4)
    public static let incompleteCommit = ExitCode(rawValue: 5)
    public static let notFound = ExitCode(rawValue: 6)
    public static let exists = ExitCode(rawValue: 7)
    public static let io = ExitCode(rawValue: 8)
    /// `pack` or `add` wrote the vault but skipped inputs it cannot store (devices, FIFOs, ...), or `extract` skipped
    /// items it cannot name or write safely (a link leading out of its folder), each reported.
    public static let skipped = ExitCode(rawValue: 9)
    /// No secret was given and there is no terminal to ask on.
    public static let noSecret = ExitCode(rawValue: 10)
    /// An item with the same primary key exists in the group (errSecDuplicateItem).
    public static let duplicateItem = ExitCode(rawValue: 11)
    /// The access group is outside the process's list, or its key file cannot be read (errSecMissingEntitlement).
    public static let missingEntitlement = ExitCode(rawValue: 12)
    /// Another process held the vault's lock past the timeout (errSecInteractionNotAllowed).
    public static let lockTimeout = ExitCode(rawValue: 13)
    /// The group's vault was replaced by an older copy of itself (errSecInvalidKeychain).
    public static let rolledBack = ExitCode(rawValue: 14)
    /// A file or folder kcar refuses to trust or use: wrong owner, writable by others, a symlink, or not a
    /// regular file (a FIFO, a device) where a vault, key or keychain file must be.
    public static let unsafeFile = ExitCode(rawValue: 15)
    /// A copy to merge, sync or join holds versions more than a day ahead of this machine's clock (SPEC.md
    /// Part 4, V5.1): refused, nothing written.
    public static let clockAhead = ExitCode(rawValue: 16)

    static func of(_ code: VaultError.Code) -> ExitCode {
        switch code {
        // A vault rekeyed or replaced under an open instance: open it again, with the key that opens it now.
        case .wrongKey, .replaced: return .wrongKey
        case .notAVault, .unsupportedVersion, .damagedHeader, .tamperedHeader, .truncated, .damagedIndex,
            .damagedRecord:
            return .damaged
        case .incompleteCommit: return .incompleteCommit
        // A stale handle names an item that, as given, is no longer in the vault.
        case .itemNotFound, .staleItem: return .notFound
        case .exists: return .exists
        case .io: return .io
        case .lockTimeout: return .lockTimeout
        case .invalidArgument: return .usage
        case .unsafeFile: return .unsafeFile
        case .clockAhead: return .clockAhead
        default: return .failure
        }
    }
}

extension ExitCode {
    static func of(_ status: KeychainStatus) -> ExitCode {
        switch status {
        case .param, .notAvailable: return .usage
        case .authFailed: return .wrongKey
        case .decode: return .damaged
        case .itemNotFound: return .notFound
        case .io: return .io
        case .duplicateItem: return .duplicateItem
        case .missingEntitlement: return .missingEntitlement
        case .interactionNotAllowed: return .lockTimeout
        case .rolledBack: return .rolledBack
        default: return .failure
        }
    }
}

/// An error that ends a command: a message for standard error and an exit code.
struct CLIError: Error {
    let code: ExitCode
    let message: String
    /// The file the message already names (as given on the command line), so that a caller that names the file
    /// its errors are about (merge's sides, sync's shared copy) does not name it twice.
    let file: String?
    init(_ code: ExitCode, _ message: String, file: String? = nil) {
        self.code = code
        self.message = message
        self.file = file
    }

    static func usage(_ m: String) -> CLIError { CLIError(.usage, m) }
}
