import Foundation
import KcarKeychain
import XCTest

/// Issue 12, item 4: Apple's status constants with Apple's numbers and sentences, the reason behind a status,
/// and `localizedDescription`.
final class StatusTests: KeychainTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        SecItemConfiguration.use(try store(["com.yourApp"]))
    }

    func testApplesNumbersNamesAndSentences() {
        // SecBase.h (and MacTypes.h for noErr).
        let expected: [(OSStatus, OSStatus, String)] = [
            (noErr, 0, "errSecSuccess"), (errSecSuccess, 0, "errSecSuccess"),
            (errSecUnimplemented, -4, "errSecUnimplemented"),
            (errSecDiskFull, -34, "errSecDiskFull"), (errSecIO, -36, "errSecIO"), (errSecParam, -50, "errSecParam"),
            (errSecWrPerm, -61, "errSecWrPerm"), (errSecAllocate, -108, "errSecAllocate"),
            (errSecUserCanceled, -128, "errSecUserCanceled"), (errSecBadReq, -909, "errSecBadReq"),
            (errSecNotAvailable, -25291, "errSecNotAvailable"), (errSecReadOnly, -25292, "errSecReadOnly"),
            (errSecAuthFailed, -25293, "errSecAuthFailed"), (errSecNoSuchKeychain, -25294, "errSecNoSuchKeychain"),
            (errSecInvalidKeychain, -25295, "errSecInvalidKeychain"),
            (errSecDuplicateKeychain, -25296, "errSecDuplicateKeychain"),
            (errSecDuplicateItem, -25299, "errSecDuplicateItem"), (errSecItemNotFound, -25300, "errSecItemNotFound"),
            (errSecBufferTooSmall, -25301, "errSecBufferTooSmall"), (errSecDataTooLarge, -25302, "errSecDataTooLarge"),
            (errSecNoSuchAttr, -25303, "errSecNoSuchAttr"), (errSecInvalidItemRef, -25304, "errSecInvalidItemRef"),
            (errSecInvalidSearchRef, -25305, "errSecInvalidSearchRef"),
            (errSecNoSuchClass, -25306, "errSecNoSuchClass"),
            (errSecNoDefaultKeychain, -25307, "errSecNoDefaultKeychain"),
            (errSecInteractionNotAllowed, -25308, "errSecInteractionNotAllowed"),
            (errSecReadOnlyAttr, -25309, "errSecReadOnlyAttr"),
            (errSecWrongSecVersion, -25310, "errSecWrongSecVersion"),
            (errSecKeySizeNotAllowed, -25311, "errSecKeySizeNotAllowed"),
            (errSecNoStorageModule, -25312, "errSecNoStorageModule"),
            (errSecNoCertificateModule, -25313, "errSecNoCertificateModule"),
            (errSecNoPolicyModule, -25314, "errSecNoPolicyModule"),
            (errSecInteractionRequired, -25315, "errSecInteractionRequired"),
            (errSecDataNotAvailable, -25316, "errSecDataNotAvailable"),
            (errSecDataNotModifiable, -25317, "errSecDataNotModifiable"),
            (errSecCreateChainFailed, -25318, "errSecCreateChainFailed"),
            (errSecInvalidPrefsDomain, -25319, "errSecInvalidPrefsDomain"),
            (errSecInDarkWake, -25320, "errSecInDarkWake"), (errSecACLNotSimple, -25240, "errSecACLNotSimple"),
            (errSecPolicyNotFound, -25241, "errSecPolicyNotFound"),
            (errSecInvalidTrustSetting, -25242, "errSecInvalidTrustSetting"),
            (errSecNoAccessForItem, -25243, "errSecNoAccessForItem"),
            (errSecInvalidOwnerEdit, -25244, "errSecInvalidOwnerEdit"),
            (errSecTrustNotAvailable, -25245, "errSecTrustNotAvailable"),
            (errSecUnsupportedFormat, -25256, "errSecUnsupportedFormat"),
            (errSecUnknownFormat, -25257, "errSecUnknownFormat"), (errSecDecode, -26275, "errSecDecode"),
            (errSecMissingEntitlement, -34018, "errSecMissingEntitlement")
        ]
        for (constant, number, name) in expected {
            XCTAssertEqual(constant, number, name)
            XCTAssertEqual(KeychainStatus(rawValue: constant).name, name)
            XCTAssertFalse(SecCopyErrorMessageString(constant, nil)?.isEmpty ?? true, name)
        }
        XCTAssertEqual(
            SecCopyErrorMessageString(errSecItemNotFound, nil), "The specified item could not be found in the keychain."
        )
        XCTAssertEqual(
            SecCopyErrorMessageString(errSecParam, nil), "One or more parameters passed to a function were not valid.")
        XCTAssertEqual(
            SecCopyErrorMessageString(errSecMissingEntitlement, nil), "A required entitlement isn't present.")
        XCTAssertEqual(SecCopyErrorMessageString(errSecUserCanceled, nil), "User canceled the operation.")
        XCTAssertEqual(SecCopyErrorMessageString(-1, nil), "OSStatus -1")
        XCTAssertEqual(KeychainStatus.invalidKeychain, .rolledBack)
    }

    /// The detail behind an errSecParam is this thread's last result message; a success clears it.
    func testLastResultMessageSaysWhyPerThread() throws {
        let bad: [String: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrPort: 1, kSecValueData: Data()]
        XCTAssertEqual(SecItemAdd(bad as CFDictionary, nil), errSecParam)
        XCTAssertEqual(kcarLastResultMessage(), "port is not an attribute of genp items, nor a key this call takes")
        XCTAssertEqual(kcarLastError()?.status, .param)
        // Another thread's calls leave this thread's result alone.
        let done = expectation(description: "other thread")
        let t = Thread {
            XCTAssertNil(kcarLastResultMessage(), "a new thread has made no call")
            XCTAssertEqual(
                SecItemAdd([kSecClass: kSecClassGenericPassword, kSecValueData: Data()] as CFDictionary, nil),
                errSecSuccess)
            done.fulfill()
        }
        t.start()
        wait(for: [done], timeout: 30)
        XCTAssertEqual(kcarLastError()?.status, .param)
        let ok: [String: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrService: "s", kSecValueData: Data()]
        XCTAssertEqual(SecItemAdd(ok as CFDictionary, nil), errSecSuccess)
        XCTAssertNil(kcarLastResultMessage())
        // Apple's functions do not warn when their status is ignored; neither do kcar's.
        SecItemDelete([kSecClass: kSecClassGenericPassword] as CFDictionary)
    }

    func testLocalizedDescriptionIsUseful() {
        let e: Error = KeychainError(.itemNotFound, "no item matches")
        XCTAssertEqual(
            e.localizedDescription,
            "The specified item could not be found in the keychain: no item matches (errSecItemNotFound, -25300)")
        XCTAssertEqual("\(e)", "errSecItemNotFound (-25300): no item matches")
    }
}
