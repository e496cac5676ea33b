import FoundationEssentials
import VaultFormat

/// Apple's `OSStatus`: the result code of the SecItem functions.
public typealias OSStatus = Int32

/// A keychain result code, with Apple's `OSStatus` numbers so ported code can compare them
/// (`status == errSecItemNotFound`). An open set, as Apple's is: kcar returns the statuses documented in
/// SPEC.md Part 3; the others are defined, with Apple's messages, so that ported code compiles and prints
/// them as on Apple's platforms.
public struct KeychainStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's number for the status.
    public let rawValue: OSStatus
    /// The status of number `rawValue` (any number: the set is open).
    public init(rawValue: OSStatus) { self.rawValue = rawValue }

    /// No error (`errSecSuccess`, `noErr`).
    public static let success = KeychainStatus(rawValue: 0)
    /// A function or operation is not implemented (`errSecUnimplemented`).
    public static let unimplemented = KeychainStatus(rawValue: -4)
    /// Apple's `errSecDiskFull`: "The disk is full."
    public static let diskFull = KeychainStatus(rawValue: -34)
    /// An I/O error (`errSecIO`).
    public static let io = KeychainStatus(rawValue: -36)
    /// A parameter is not valid: an unknown key, a wrong type, a missing class (`errSecParam`); `kcarLastResultMessage()` says which.
    public static let param = KeychainStatus(rawValue: -50)
    /// Apple's `errSecWrPerm`: "Write permissions error."
    public static let wrPerm = KeychainStatus(rawValue: -61)
    /// Apple's `errSecAllocate`: "Failed to allocate memory."
    public static let allocate = KeychainStatus(rawValue: -108)
    /// Apple's `errSecUserCanceled`: "User canceled the operation."
    public static let userCanceled = KeychainStatus(rawValue: -128)
    /// Apple's `errSecBadReq`: "Bad parameter or invalid state for operation."
    public static let badReq = KeychainStatus(rawValue: -909)
    /// Apple's `errSecNotAvailable`: "No keychain is available. You may need to restart your computer."
    public static let notAvailable = KeychainStatus(rawValue: -25291)
    /// Apple's `errSecReadOnly`: "This keychain cannot be modified."
    public static let readOnly = KeychainStatus(rawValue: -25292)
    /// The group's key did not open its vault (`errSecAuthFailed`).
    public static let authFailed = KeychainStatus(rawValue: -25293)
    /// Apple's `errSecNoSuchKeychain`: "The specified keychain could not be found."
    public static let noSuchKeychain = KeychainStatus(rawValue: -25294)
    /// The vault was replaced by an older copy of itself (`errSecInvalidKeychain`; SPEC.md §K6).
    public static let rolledBack = KeychainStatus(rawValue: -25295)
    /// Apple's name for ``rolledBack``.
    public static let invalidKeychain = rolledBack
    /// Apple's `errSecDuplicateKeychain`: "A keychain with the same name already exists."
    public static let duplicateKeychain = KeychainStatus(rawValue: -25296)
    /// Apple's `errSecDuplicateCallback`: "The specified callback function is already installed."
    public static let duplicateCallback = KeychainStatus(rawValue: -25297)
    /// Apple's `errSecInvalidCallback`: "The specified callback function is not valid."
    public static let invalidCallback = KeychainStatus(rawValue: -25298)
    /// An item with the same primary key exists (`errSecDuplicateItem`).
    public static let duplicateItem = KeychainStatus(rawValue: -25299)
    /// No item matched (`errSecItemNotFound`).
    public static let itemNotFound = KeychainStatus(rawValue: -25300)
    /// Apple's `errSecBufferTooSmall`: "There is not enough memory available to use the specified item."
    public static let bufferTooSmall = KeychainStatus(rawValue: -25301)
    /// Apple's `errSecDataTooLarge`: "This item contains information which is too large or in a format that cannot be displayed."
    public static let dataTooLarge = KeychainStatus(rawValue: -25302)
    /// Apple's `errSecNoSuchAttr`: "The specified attribute does not exist."
    public static let noSuchAttr = KeychainStatus(rawValue: -25303)
    /// Apple's `errSecInvalidItemRef`: "The specified item is no longer valid. It may have been deleted from the keychain."
    public static let invalidItemRef = KeychainStatus(rawValue: -25304)
    /// Apple's `errSecInvalidSearchRef`: "Unable to search the current keychain."
    public static let invalidSearchRef = KeychainStatus(rawValue: -25305)
    /// Apple's `errSecNoSuchClass`: "The specified item does not appear to be a valid keychain item."
    public static let noSuchClass = KeychainStatus(rawValue: -25306)
    /// Apple's `errSecNoDefaultKeychain`: "A default keychain could not be found."
    public static let noDefaultKeychain = KeychainStatus(rawValue: -25307)
    /// Another process held the group's lock past the timeout (`errSecInteractionNotAllowed`).
    public static let interactionNotAllowed = KeychainStatus(rawValue: -25308)
    /// Apple's `errSecReadOnlyAttr`: "The specified attribute could not be modified."
    public static let readOnlyAttr = KeychainStatus(rawValue: -25309)
    /// Apple's `errSecWrongSecVersion`: "This keychain was created by a different version of the system software and cannot be opened."
    public static let wrongSecVersion = KeychainStatus(rawValue: -25310)
    /// Apple's `errSecKeySizeNotAllowed`: "This item specifies a key size which is too large."
    public static let keySizeNotAllowed = KeychainStatus(rawValue: -25311)
    /// Apple's `errSecNoStorageModule`: "A required component (data storage module) could not be loaded. You may need to restart your computer."
    public static let noStorageModule = KeychainStatus(rawValue: -25312)
    /// Apple's `errSecNoCertificateModule`: "A required component (certificate module) could not be loaded. You may need to restart your computer."
    public static let noCertificateModule = KeychainStatus(rawValue: -25313)
    /// Apple's `errSecNoPolicyModule`: "A required component (policy module) could not be loaded. You may need to restart your computer."
    public static let noPolicyModule = KeychainStatus(rawValue: -25314)
    /// Apple's `errSecInteractionRequired`: "User interaction is required, but is currently not allowed."
    public static let interactionRequired = KeychainStatus(rawValue: -25315)
    /// Apple's `errSecDataNotAvailable`: "The contents of this item cannot be retrieved."
    public static let dataNotAvailable = KeychainStatus(rawValue: -25316)
    /// Apple's `errSecDataNotModifiable`: "The contents of this item cannot be modified."
    public static let dataNotModifiable = KeychainStatus(rawValue: -25317)
    /// Apple's `errSecCreateChainFailed`: "One or more certificates required to validate this certificate cannot be found."
    public static let createChainFailed = KeychainStatus(rawValue: -25318)
    /// Apple's `errSecInvalidPrefsDomain`: "The specified preferences domain is not valid."
    public static let invalidPrefsDomain = KeychainStatus(rawValue: -25319)
    /// Apple's `errSecInDarkWake`: "In dark wake, no UI possible"
    public static let inDarkWake = KeychainStatus(rawValue: -25320)
    /// Apple's `errSecACLNotSimple`: "The specified access control list is not in standard (simple) form."
    public static let aclNotSimple = KeychainStatus(rawValue: -25240)
    /// Apple's `errSecPolicyNotFound`: "The specified policy cannot be found."
    public static let policyNotFound = KeychainStatus(rawValue: -25241)
    /// Apple's `errSecInvalidTrustSetting`: "The specified trust setting is invalid."
    public static let invalidTrustSetting = KeychainStatus(rawValue: -25242)
    /// Apple's `errSecNoAccessForItem`: "The specified item has no access control."
    public static let noAccessForItem = KeychainStatus(rawValue: -25243)
    /// Apple's `errSecInvalidOwnerEdit`: "Invalid attempt to change the owner of this item."
    public static let invalidOwnerEdit = KeychainStatus(rawValue: -25244)
    /// Apple's `errSecTrustNotAvailable`: "No trust results are available."
    public static let trustNotAvailable = KeychainStatus(rawValue: -25245)
    /// Apple's `errSecUnsupportedFormat`: "Import/Export format unsupported."
    public static let unsupportedFormat = KeychainStatus(rawValue: -25256)
    /// Apple's `errSecUnknownFormat`: "Unknown format in import."
    public static let unknownFormat = KeychainStatus(rawValue: -25257)
    /// Apple's `errSecKeyIsSensitive`: "Key material must be wrapped for export."
    public static let keyIsSensitive = KeychainStatus(rawValue: -25258)
    /// Apple's `errSecMultiplePrivKeys`: "An attempt was made to import multiple private keys."
    public static let multiplePrivKeys = KeychainStatus(rawValue: -25259)
    /// Apple's `errSecPassphraseRequired`: "Passphrase is required for import/export."
    public static let passphraseRequired = KeychainStatus(rawValue: -25260)
    /// Apple's `errSecInvalidPasswordRef`: "The password reference was invalid."
    public static let invalidPasswordRef = KeychainStatus(rawValue: -25261)
    /// Apple's `errSecInvalidTrustSettings`: "The Trust Settings Record was corrupted."
    public static let invalidTrustSettings = KeychainStatus(rawValue: -25262)
    /// Apple's `errSecNoTrustSettings`: "No Trust Settings were found."
    public static let noTrustSettings = KeychainStatus(rawValue: -25263)
    /// Apple's `errSecPkcs12VerifyFailure`: "MAC verification failed during PKCS12 import (wrong password?)"
    public static let pkcs12VerifyFailure = KeychainStatus(rawValue: -25264)
    /// Apple's `errSecNotSigner`: "A certificate was not signed by its proposed parent."
    public static let notSigner = KeychainStatus(rawValue: -26267)
    /// A vault or value could not be decoded: damaged, truncated, tampered (`errSecDecode`).
    public static let decode = KeychainStatus(rawValue: -26275)
    /// The access group is not in the process's list, or its key file cannot be read (`errSecMissingEntitlement`);
    /// also a keychain file kcar refuses to trust (``KeychainError/reason`` ``KeychainReason/unsafeFile``).
    public static let missingEntitlement = KeychainStatus(rawValue: -34018)

    /// Apple's constant name, e.g. `errSecItemNotFound`; `OSStatus` for a number Apple's SecBase.h does not name.
    public var name: String { KeychainStatus.known[rawValue]?.name ?? "OSStatus" }

    /// Apple's sentence for the status (the comment of SecBase.h that `SecCopyErrorMessageString` returns),
    /// e.g. "The specified item could not be found in the keychain."; `OSStatus N` for an unknown number.
    public var message: String { KeychainStatus.known[rawValue]?.message ?? "OSStatus \(rawValue)" }

    /// `errSecItemNotFound (-25300)`.
    public var description: String { "\(name) (\(rawValue))" }

    private static let known: [OSStatus: (name: String, message: String)] = {
        var out: [OSStatus: (name: String, message: String)] = [:]
        for (code, name, message) in table { out[code] = (name, message) }
        return out
    }()

    /// Apple's numbers, names and messages (SecBase.h).
    private static let table: [(OSStatus, String, String)] = [
        (0, "errSecSuccess", "No error."),
        (-4, "errSecUnimplemented", "Function or operation not implemented."),
        (-34, "errSecDiskFull", "The disk is full."),
        (-36, "errSecIO", "I/O error."),
        (-50, "errSecParam", "One or more parameters passed to a function were not valid."),
        (-61, "errSecWrPerm", "Write permissions error."),
        (-108, "errSecAllocate", "Failed to allocate memory."),
        (-128, "errSecUserCanceled", "User canceled the operation."),
        (-909, "errSecBadReq", "Bad parameter or invalid state for operation."),
        (-25291, "errSecNotAvailable", "No keychain is available. You may need to restart your computer."),
        (-25292, "errSecReadOnly", "This keychain cannot be modified."),
        (-25293, "errSecAuthFailed", "The user name or passphrase you entered is not correct."),
        (-25294, "errSecNoSuchKeychain", "The specified keychain could not be found."),
        (-25295, "errSecInvalidKeychain", "The specified keychain is not a valid keychain file."),
        (-25296, "errSecDuplicateKeychain", "A keychain with the same name already exists."),
        (-25297, "errSecDuplicateCallback", "The specified callback function is already installed."),
        (-25298, "errSecInvalidCallback", "The specified callback function is not valid."),
        (-25299, "errSecDuplicateItem", "The specified item already exists in the keychain."),
        (-25300, "errSecItemNotFound", "The specified item could not be found in the keychain."),
        (-25301, "errSecBufferTooSmall", "There is not enough memory available to use the specified item."),
        (
            -25302, "errSecDataTooLarge",
            "This item contains information which is too large or in a format that cannot be displayed."
        ),
        (-25303, "errSecNoSuchAttr", "The specified attribute does not exist."),
        (
            -25304, "errSecInvalidItemRef",
            "The specified item is no longer valid. It may have been deleted from the keychain."
        ),
        (-25305, "errSecInvalidSearchRef", "Unable to search the current keychain."),
        (-25306, "errSecNoSuchClass", "The specified item does not appear to be a valid keychain item."),
        (-25307, "errSecNoDefaultKeychain", "A default keychain could not be found."),
        (-25308, "errSecInteractionNotAllowed", "User interaction is not allowed."),
        (-25309, "errSecReadOnlyAttr", "The specified attribute could not be modified."),
        (
            -25310, "errSecWrongSecVersion",
            "This keychain was created by a different version of the system software and cannot be opened."
        ),
        (-25311, "errSecKeySizeNotAllowed", "This item specifies a key size which is too large."),
        (
            -25312, "errSecNoStorageModule",
            "A required component (data storage module) could not be loaded. You may need to restart your computer."
        ),
        (
            -25313, "errSecNoCertificateModule",
            "A required component (certificate module) could not be loaded. You may need to restart your computer."
        ),
        (
            -25314, "errSecNoPolicyModule",
            "A required component (policy module) could not be loaded. You may need to restart your computer."
        ),
        (-25315, "errSecInteractionRequired", "User interaction is required, but is currently not allowed."),
        (-25316, "errSecDataNotAvailable", "The contents of this item cannot be retrieved."),
        (-25317, "errSecDataNotModifiable", "The contents of this item cannot be modified."),
        (
            -25318, "errSecCreateChainFailed",
            "One or more certificates required to validate this certificate cannot be found."
        ),
        (-25319, "errSecInvalidPrefsDomain", "The specified preferences domain is not valid."),
        (-25320, "errSecInDarkWake", "In dark wake, no UI possible"),
        (-25240, "errSecACLNotSimple", "The specified access control list is not in standard (simple) form."),
        (-25241, "errSecPolicyNotFound", "The specified policy cannot be found."),
        (-25242, "errSecInvalidTrustSetting", "The specified trust setting is invalid."),
        (-25243, "errSecNoAccessForItem", "The specified item has no access control."),
        (-25244, "errSecInvalidOwnerEdit", "Invalid attempt to change the owner of this item."),
        (-25245, "errSecTrustNotAvailable", "No trust results are available."),
        (-25256, "errSecUnsupportedFormat", "Import/Export format unsupported."),
        (-25257, "errSecUnknownFormat", "Unknown format in import."),
        (-25258, "errSecKeyIsSensitive", "Key material must be wrapped for export."),
        (-25259, "errSecMultiplePrivKeys", "An attempt was made to import multiple private keys."),
        (-25260, "errSecPassphraseRequired", "Passphrase is required for import/export."),
        (-25261, "errSecInvalidPasswordRef", "The password reference was invalid."),
        (-25262, "errSecInvalidTrustSettings", "The Trust Settings Record was corrupted."),
        (-25263, "errSecNoTrustSettings", "No Trust Settings were found."),
        (-25264, "errSecPkcs12VerifyFailure", "MAC verification failed during PKCS12 import (wrong password?)"),
        (-26267, "errSecNotSigner", "A certificate was not signed by its proposed parent."),
        (-26275, "errSecDecode", "Unable to decode the provided data."),
        (-34018, "errSecMissingEntitlement", "A required entitlement isn't present.")
    ]
}

/// Apple's `noErr` (MacTypes.h), the same as ``errSecSuccess``.
public let noErr: OSStatus = 0
/// Apple's `errSecSuccess`: ``KeychainStatus/success``'s number.
public let errSecSuccess: OSStatus = KeychainStatus.success.rawValue
/// Apple's `errSecUnimplemented`: ``KeychainStatus/unimplemented``'s number.
public let errSecUnimplemented: OSStatus = KeychainStatus.unimplemented.rawValue
/// Apple's `errSecDiskFull`: ``KeychainStatus/diskFull``'s number.
public let errSecDiskFull: OSStatus = KeychainStatus.diskFull.rawValue
/// Apple's `errSecIO`: ``KeychainStatus/io``'s number.
public let errSecIO: OSStatus = KeychainStatus.io.rawValue
/// Apple's `errSecParam`: ``KeychainStatus/param``'s number.
public let errSecParam: OSStatus = KeychainStatus.param.rawValue
/// Apple's `errSecWrPerm`: ``KeychainStatus/wrPerm``'s number.
public let errSecWrPerm: OSStatus = KeychainStatus.wrPerm.rawValue
/// Apple's `errSecAllocate`: ``KeychainStatus/allocate``'s number.
public let errSecAllocate: OSStatus = KeychainStatus.allocate.rawValue
/// Apple's `errSecUserCanceled`: ``KeychainStatus/userCanceled``'s number.
public let errSecUserCanceled: OSStatus = KeychainStatus.userCanceled.rawValue
/// Apple's `errSecBadReq`: ``KeychainStatus/badReq``'s number.
public let errSecBadReq: OSStatus = KeychainStatus.badReq.rawValue
/// Apple's `errSecNotAvailable`: ``KeychainStatus/notAvailable``'s number.
public let errSecNotAvailable: OSStatus = KeychainStatus.notAvailable.rawValue
/// Apple's `errSecReadOnly`: ``KeychainStatus/readOnly``'s number.
public let errSecReadOnly: OSStatus = KeychainStatus.readOnly.rawValue
/// Apple's `errSecAuthFailed`: ``KeychainStatus/authFailed``'s number.
public let errSecAuthFailed: OSStatus = KeychainStatus.authFailed.rawValue
/// Apple's `errSecNoSuchKeychain`: ``KeychainStatus/noSuchKeychain``'s number.
public let errSecNoSuchKeychain: OSStatus = KeychainStatus.noSuchKeychain.rawValue
/// Apple's `errSecInvalidKeychain`: ``KeychainStatus/rolledBack``'s number.
public let errSecInvalidKeychain: OSStatus = KeychainStatus.rolledBack.rawValue
/// Apple's `errSecDuplicateKeychain`: ``KeychainStatus/duplicateKeychain``'s number.
public let errSecDuplicateKeychain: OSStatus = KeychainStatus.duplicateKeychain.rawValue
/// Apple's `errSecDuplicateCallback`: ``KeychainStatus/duplicateCallback``'s number.
public let errSecDuplicateCallback: OSStatus = KeychainStatus.duplicateCallback.rawValue
/// Apple's `errSecInvalidCallback`: ``KeychainStatus/invalidCallback``'s number.
public let errSecInvalidCallback: OSStatus = KeychainStatus.invalidCallback.rawValue
/// Apple's `errSecDuplicateItem`: ``KeychainStatus/duplicateItem``'s number.
public let errSecDuplicateItem: OSStatus = KeychainStatus.duplicateItem.rawValue
/// Apple's `errSecItemNotFound`: ``KeychainStatus/itemNotFound``'s number.
public let errSecItemNotFound: OSStatus = KeychainStatus.itemNotFound.rawValue
/// Apple's `errSecBufferTooSmall`: ``KeychainStatus/bufferTooSmall``'s number.
public let errSecBufferTooSmall: OSStatus = KeychainStatus.bufferTooSmall.rawValue
/// Apple's `errSecDataTooLarge`: ``KeychainStatus/dataTooLarge``'s number.
public let errSecDataTooLarge: OSStatus = KeychainStatus.dataTooLarge.rawValue
/// Apple's `errSecNoSuchAttr`: ``KeychainStatus/noSuchAttr``'s number.
public let errSecNoSuchAttr: OSStatus = KeychainStatus.noSuchAttr.rawValue
/// Apple's `errSecInvalidItemRef`: ``KeychainStatus/invalidItemRef``'s number.
public let errSecInvalidItemRef: OSStatus = KeychainStatus.invalidItemRef.rawValue
/// Apple's `errSecInvalidSearchRef`: ``KeychainStatus/invalidSearchRef``'s number.
public let errSecInvalidSearchRef: OSStatus = KeychainStatus.invalidSearchRef.rawValue
/// Apple's `errSecNoSuchClass`: ``KeychainStatus/noSuchClass``'s number.
public let errSecNoSuchClass: OSStatus = KeychainStatus.noSuchClass.rawValue
/// Apple's `errSecNoDefaultKeychain`: ``KeychainStatus/noDefaultKeychain``'s number.
public let errSecNoDefaultKeychain: OSStatus = KeychainStatus.noDefaultKeychain.rawValue
/// Apple's `errSecInteractionNotAllowed`: ``KeychainStatus/interactionNotAllowed``'s number.
public let errSecInteractionNotAllowed: OSStatus = KeychainStatus.interactionNotAllowed.rawValue
/// Apple's `errSecReadOnlyAttr`: ``KeychainStatus/readOnlyAttr``'s number.
public let errSecReadOnlyAttr: OSStatus = KeychainStatus.readOnlyAttr.rawValue
/// Apple's `errSecWrongSecVersion`: ``KeychainStatus/wrongSecVersion``'s number.
public let errSecWrongSecVersion: OSStatus = KeychainStatus.wrongSecVersion.rawValue
/// Apple's `errSecKeySizeNotAllowed`: ``KeychainStatus/keySizeNotAllowed``'s number.
public let errSecKeySizeNotAllowed: OSStatus = KeychainStatus.keySizeNotAllowed.rawValue
/// Apple's `errSecNoStorageModule`: ``KeychainStatus/noStorageModule``'s number.
public let errSecNoStorageModule: OSStatus = KeychainStatus.noStorageModule.rawValue
/// Apple's `errSecNoCertificateModule`: ``KeychainStatus/noCertificateModule``'s number.
public let errSecNoCertificateModule: OSStatus = KeychainStatus.noCertificateModule.rawValue
/// Apple's `errSecNoPolicyModule`: ``KeychainStatus/noPolicyModule``'s number.
public let errSecNoPolicyModule: OSStatus = KeychainStatus.noPolicyModule.rawValue
/// Apple's `errSecInteractionRequired`: ``KeychainStatus/interactionRequired``'s number.
public let errSecInteractionRequired: OSStatus = KeychainStatus.interactionRequired.rawValue
/// Apple's `errSecDataNotAvailable`: ``KeychainStatus/dataNotAvailable``'s number.
public let errSecDataNotAvailable: OSStatus = KeychainStatus.dataNotAvailable.rawValue
/// Apple's `errSecDataNotModifiable`: ``KeychainStatus/dataNotModifiable``'s number.
public let errSecDataNotModifiable: OSStatus = KeychainStatus.dataNotModifiable.rawValue
/// Apple's `errSecCreateChainFailed`: ``KeychainStatus/createChainFailed``'s number.
public let errSecCreateChainFailed: OSStatus = KeychainStatus.createChainFailed.rawValue
/// Apple's `errSecInvalidPrefsDomain`: ``KeychainStatus/invalidPrefsDomain``'s number.
public let errSecInvalidPrefsDomain: OSStatus = KeychainStatus.invalidPrefsDomain.rawValue
/// Apple's `errSecInDarkWake`: ``KeychainStatus/inDarkWake``'s number.
public let errSecInDarkWake: OSStatus = KeychainStatus.inDarkWake.rawValue
/// Apple's `errSecACLNotSimple`: ``KeychainStatus/aclNotSimple``'s number.
public let errSecACLNotSimple: OSStatus = KeychainStatus.aclNotSimple.rawValue
/// Apple's `errSecPolicyNotFound`: ``KeychainStatus/policyNotFound``'s number.
public let errSecPolicyNotFound: OSStatus = KeychainStatus.policyNotFound.rawValue
/// Apple's `errSecInvalidTrustSetting`: ``KeychainStatus/invalidTrustSetting``'s number.
public let errSecInvalidTrustSetting: OSStatus = KeychainStatus.invalidTrustSetting.rawValue
/// Apple's `errSecNoAccessForItem`: ``KeychainStatus/noAccessForItem``'s number.
public let errSecNoAccessForItem: OSStatus = KeychainStatus.noAccessForItem.rawValue
/// Apple's `errSecInvalidOwnerEdit`: ``KeychainStatus/invalidOwnerEdit``'s number.
public let errSecInvalidOwnerEdit: OSStatus = KeychainStatus.invalidOwnerEdit.rawValue
/// Apple's `errSecTrustNotAvailable`: ``KeychainStatus/trustNotAvailable``'s number.
public let errSecTrustNotAvailable: OSStatus = KeychainStatus.trustNotAvailable.rawValue
/// Apple's `errSecUnsupportedFormat`: ``KeychainStatus/unsupportedFormat``'s number.
public let errSecUnsupportedFormat: OSStatus = KeychainStatus.unsupportedFormat.rawValue
/// Apple's `errSecUnknownFormat`: ``KeychainStatus/unknownFormat``'s number.
public let errSecUnknownFormat: OSStatus = KeychainStatus.unknownFormat.rawValue
/// Apple's `errSecKeyIsSensitive`: ``KeychainStatus/keyIsSensitive``'s number.
public let errSecKeyIsSensitive: OSStatus = KeychainStatus.keyIsSensitive.rawValue
/// Apple's `errSecMultiplePrivKeys`: ``KeychainStatus/multiplePrivKeys``'s number.
public let errSecMultiplePrivKeys: OSStatus = KeychainStatus.multiplePrivKeys.rawValue
/// Apple's `errSecPassphraseRequired`: ``KeychainStatus/passphraseRequired``'s number.
public let errSecPassphraseRequired: OSStatus = KeychainStatus.passphraseRequired.rawValue
/// Apple's `errSecInvalidPasswordRef`: ``KeychainStatus/invalidPasswordRef``'s number.
public let errSecInvalidPasswordRef: OSStatus = KeychainStatus.invalidPasswordRef.rawValue
/// Apple's `errSecInvalidTrustSettings`: ``KeychainStatus/invalidTrustSettings``'s number.
public let errSecInvalidTrustSettings: OSStatus = KeychainStatus.invalidTrustSettings.rawValue
/// Apple's `errSecNoTrustSettings`: ``KeychainStatus/noTrustSettings``'s number.
public let errSecNoTrustSettings: OSStatus = KeychainStatus.noTrustSettings.rawValue
/// Apple's `errSecPkcs12VerifyFailure`: ``KeychainStatus/pkcs12VerifyFailure``'s number.
public let errSecPkcs12VerifyFailure: OSStatus = KeychainStatus.pkcs12VerifyFailure.rawValue
/// Apple's `errSecNotSigner`: ``KeychainStatus/notSigner``'s number.
public let errSecNotSigner: OSStatus = KeychainStatus.notSigner.rawValue
/// Apple's `errSecDecode`: ``KeychainStatus/decode``'s number.
public let errSecDecode: OSStatus = KeychainStatus.decode.rawValue
/// Apple's `errSecMissingEntitlement`: ``KeychainStatus/missingEntitlement``'s number.
public let errSecMissingEntitlement: OSStatus = KeychainStatus.missingEntitlement.rawValue

/// Why an operation failed, where Apple's status alone does not say (an open set).
public struct KeychainReason: RawRepresentable, Hashable, Sendable {
    /// The reason's name.
    public let rawValue: String
    /// A reason by its name (the ones below are those kcar gives).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A keychain folder or group file kcar refuses to trust (SPEC.md §K1): owned by another user, writable
    /// by others, a key readable by others, a symbolic link, or not a regular file. The status is
    /// ``KeychainStatus/missingEntitlement``: the group may not be used; `kcar` exits 15.
    public static let unsafeFile = KeychainReason(rawValue: "unsafeFile")
    /// A ``GroupTransaction`` used after its closure returned (status ``KeychainStatus/param``).
    public static let transactionEnded = KeychainReason(rawValue: "transactionEnded")
}

/// A failed keychain operation: its status and what went wrong, never a secret.
public struct KeychainError: Error, LocalizedError, Hashable, Sendable, CustomStringConvertible {
    /// Apple's status for the failure: what ported code compares (`status == errSecItemNotFound`).
    public let status: KeychainStatus
    /// What went wrong, in words (never a secret).
    public let message: String
    /// What the status does not say, when there is more (nil for most errors).
    public let reason: KeychainReason?

    /// An error of `status` saying `message`, with `reason` when the status alone does not say enough.
    public init(_ status: KeychainStatus, _ message: String, reason: KeychainReason? = nil) {
        self.status = status
        self.message = message
        self.reason = reason
    }

    /// A file kcar refuses to trust: `path` and why (SPEC.md §K1).
    static func unsafe(_ path: String, _ why: String) -> KeychainError {
        KeychainError(.missingEntitlement, "unsafe file \(path): \(why)", reason: .unsafeFile)
    }

    /// The status's name and number, then the message: `errSecItemNotFound (-25300): no item matches`.
    public var description: String { "\(status.name) (\(status.rawValue)): \(message)" }

    /// Apple's sentence for the status, then what went wrong, then the status: "The specified item could not
    /// be found in the keychain: no item matches (errSecItemNotFound, -25300)", which `localizedDescription`
    /// returns.
    public var errorDescription: String? {
        var sentence = status.message
        if sentence.hasSuffix(".") { sentence.removeLast() }
        return "\(sentence): \(message) (\(status.name), \(status.rawValue))"
    }

    /// Converts a vault error at the module's edge.
    static func from(_ error: Error) -> KeychainError {
        if let k = error as? KeychainError { return k }
        guard let v = error as? VaultError else { return KeychainError(.io, "\(error)") }
        switch v.code {
        case .wrongKey, .replaced: return KeychainError(.authFailed, v.description)
        case .notAVault, .unsupportedVersion, .damagedHeader, .tamperedHeader, .truncated, .incompleteCommit,
            .damagedIndex, .damagedRecord:
            return KeychainError(.decode, v.description)
        case .itemNotFound: return KeychainError(.itemNotFound, v.description)
        // Two items of one commit with one key, which the commit refused (an import in bulk): the error names an
        // item. A file that exists (a staging file left over, a race to create a group) stays an I/O error.
        case .exists where v.item != nil: return KeychainError(.duplicateItem, v.context)
        case .lockTimeout: return KeychainError(.interactionNotAllowed, v.description)
        case .invalidArgument: return KeychainError(.param, v.description)
        case .unsafeFile: return KeychainError(.missingEntitlement, v.description, reason: .unsafeFile)
        default: return KeychainError(.io, v.description)
        }
    }
}
