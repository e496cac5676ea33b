import VaultFormat

/// Apple's `OSStatus`: the result code of the SecItem functions.
public typealias OSStatus = Int32

/// A keychain result code, with Apple's `OSStatus` numbers so ported code can compare them
/// (`status == errSecItemNotFound`). An open set, as Apple's is.
public struct KeychainStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: OSStatus
    public init(rawValue: OSStatus) { self.rawValue = rawValue }

    public static let success = KeychainStatus(rawValue: 0)
    /// A function or operation is not implemented (`errSecUnimplemented`).
    public static let unimplemented = KeychainStatus(rawValue: -4)
    /// An I/O error (`errSecIO`).
    public static let io = KeychainStatus(rawValue: -36)
    /// A parameter is not valid: an unknown key, a wrong type, a missing class (`errSecParam`).
    public static let param = KeychainStatus(rawValue: -50)
    /// The group's key did not open its vault (`errSecAuthFailed`).
    public static let authFailed = KeychainStatus(rawValue: -25293)
    /// The vault was replaced by an older copy of itself (`errSecInvalidKeychain`; SPEC.md §K6).
    public static let rolledBack = KeychainStatus(rawValue: -25295)
    /// An item with the same primary key exists (`errSecDuplicateItem`).
    public static let duplicateItem = KeychainStatus(rawValue: -25299)
    /// No item matched (`errSecItemNotFound`).
    public static let itemNotFound = KeychainStatus(rawValue: -25300)
    /// Another process held the group's lock past the timeout (`errSecInteractionNotAllowed`).
    public static let interactionNotAllowed = KeychainStatus(rawValue: -25308)
    /// A vault or value could not be decoded: damaged, truncated, tampered (`errSecDecode`).
    public static let decode = KeychainStatus(rawValue: -26275)
    /// The access group is not in the process's list, or its key file cannot be read (`errSecMissingEntitlement`);
    /// also a keychain file kcar refuses to trust (``KeychainError/reason`` ``KeychainReason/unsafeFile``).
    public static let missingEntitlement = KeychainStatus(rawValue: -34018)

    /// Apple's constant name, e.g. `errSecItemNotFound`.
    public var name: String {
        switch self {
        case .success: return "errSecSuccess"
        case .unimplemented: return "errSecUnimplemented"
        case .io: return "errSecIO"
        case .param: return "errSecParam"
        case .authFailed: return "errSecAuthFailed"
        case .rolledBack: return "errSecInvalidKeychain"
        case .duplicateItem: return "errSecDuplicateItem"
        case .itemNotFound: return "errSecItemNotFound"
        case .interactionNotAllowed: return "errSecInteractionNotAllowed"
        case .decode: return "errSecDecode"
        case .missingEntitlement: return "errSecMissingEntitlement"
        default: return "OSStatus"
        }
    }

    /// `errSecItemNotFound (-25300)`.
    public var description: String { "\(name) (\(rawValue))" }
}

public let errSecSuccess: OSStatus = KeychainStatus.success.rawValue
public let errSecUnimplemented: OSStatus = KeychainStatus.unimplemented.rawValue
public let errSecIO: OSStatus = KeychainStatus.io.rawValue
public let errSecParam: OSStatus = KeychainStatus.param.rawValue
public let errSecAuthFailed: OSStatus = KeychainStatus.authFailed.rawValue
public let errSecInvalidKeychain: OSStatus = KeychainStatus.rolledBack.rawValue
public let errSecDuplicateItem: OSStatus = KeychainStatus.duplicateItem.rawValue
public let errSecItemNotFound: OSStatus = KeychainStatus.itemNotFound.rawValue
public let errSecInteractionNotAllowed: OSStatus = KeychainStatus.interactionNotAllowed.rawValue
public let errSecDecode: OSStatus = KeychainStatus.decode.rawValue
public let errSecMissingEntitlement: OSStatus = KeychainStatus.missingEntitlement.rawValue

/// Why an operation failed, where Apple's status alone does not say (an open set).
public struct KeychainReason: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A keychain folder or group file kcar refuses to trust (SPEC.md §K1): owned by another user, writable
    /// by others, a key readable by others, a symbolic link, or not a regular file. The status is
    /// ``KeychainStatus/missingEntitlement``: the group may not be used; `kcar` exits 15.
    public static let unsafeFile = KeychainReason(rawValue: "unsafeFile")
    /// A ``GroupTransaction`` used after its closure returned (status ``KeychainStatus/param``).
    public static let transactionEnded = KeychainReason(rawValue: "transactionEnded")
}

/// A failed keychain operation: its status and what went wrong, never a secret.
public struct KeychainError: Error, Hashable, Sendable, CustomStringConvertible {
    public let status: KeychainStatus
    public let message: String
    /// What the status does not say, when there is more (nil for most errors).
    public let reason: KeychainReason?

    public init(_ status: KeychainStatus, _ message: String, reason: KeychainReason? = nil) {
        self.status = status
        self.message = message
        self.reason = reason
    }

    /// A file kcar refuses to trust: `path` and why (SPEC.md §K1).
    static func unsafe(_ path: String, _ why: String) -> KeychainError {
        KeychainError(.missingEntitlement, "unsafe file \(path): \(why)", reason: .unsafeFile)
    }

    public var description: String { "\(status.name) (\(status.rawValue)): \(message)" }

    /// Converts a vault error at the module's edge.
    static func from(_ error: Error) -> KeychainError {
        if let k = error as? KeychainError { return k }
        guard let v = error as? VaultError else { return KeychainError(.io, "\(error)") }
        switch v.code {
        case .wrongKey: return KeychainError(.authFailed, v.description)
        case .notAVault, .unsupportedVersion, .damagedHeader, .tamperedHeader, .truncated, .incompleteCommit,
             .damagedIndex, .damagedRecord:
            return KeychainError(.decode, v.description)
        case .itemNotFound: return KeychainError(.itemNotFound, v.description)
        case .lockTimeout: return KeychainError(.interactionNotAllowed, v.description)
        case .invalidArgument: return KeychainError(.param, v.description)
        case .unsafeFile: return KeychainError(.missingEntitlement, v.description, reason: .unsafeFile)
        default: return KeychainError(.io, v.description)
        }
    }
}
