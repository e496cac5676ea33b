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
    /// `pack` wrote the vault but skipped inputs it cannot store (symlinks, devices, ...), each reported.
    public static let skipped = ExitCode(rawValue: 9)
    /// No secret was given and there is no terminal to ask on.
    public static let noSecret = ExitCode(rawValue: 10)

    static func of(_ code: VaultError.Code) -> ExitCode {
        switch code {
        case .wrongKey: return .wrongKey
        case .notAVault, .unsupportedVersion, .damagedHeader, .tamperedHeader, .truncated, .damagedIndex, .damagedRecord:
            return .damaged
        case .incompleteCommit: return .incompleteCommit
        case .itemNotFound: return .notFound
        case .exists: return .exists
        case .io: return .io
        case .invalidArgument: return .usage
        default: return .failure
        }
    }
}

/// An error that ends a command: a message for standard error and an exit code.
struct CLIError: Error {
    let code: ExitCode
    let message: String
    init(_ code: ExitCode, _ message: String) {
        self.code = code
        self.message = message
    }

    static func usage(_ m: String) -> CLIError { CLIError(.usage, m) }
}
