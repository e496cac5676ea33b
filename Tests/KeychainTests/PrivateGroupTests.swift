import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// A member's private group in a keychain shared on purpose (SPEC.md §K1.2): a group whose key only its
/// owner reads is that owner's, whoever else can read the key. The tests run as root in group `users`;
/// "another member" is uid 65534 (files chowned to it). The two-user attack is in KcarCLITests'
/// SharedKeychainCLITests.
final class PrivateGroupTests: KeychainTestCase {
    let other: uid_t = 65534

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard getuid() == 0, getgrnam("users") != nil else { throw XCTSkip("needs root and group users") }
        try dir.create(sharedGroup: "users")
    }

    func assertReason(
        _ reason: KeychainReason?, _ status: KeychainStatus, _ body: @autoclosure () throws -> some Any,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try body(), file: file, line: line) { e in
            XCTAssertEqual((e as? KeychainError)?.status, status, "\(e)", file: file, line: line)
            XCTAssertEqual((e as? KeychainError)?.reason, reason, "\(e)", file: file, line: line)
        }
    }

    /// This process's private group `g` (all three files 0600, as K1.2 says to make one).
    func makePrivate(_ g: String) throws {
        try store([g]).add(attributes: attrs(["svce": .string("s")]), value: [1], group: g)
        for f in [dir.keyPath(g), dir.vaultPath(g), dir.path + "/\(g).seen"] { XCTAssertEqual(chmod(f, 0o600), 0) }
    }

    func testTheSharedFolderIsSticky() throws {
        var st = stat()
        XCTAssertEqual(stat(dir.path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o7777, 0o3770)
        XCTAssertEqual(chmod(dir.path, 0o2770), 0)
        assertReason(.unsafeFile, .missingEntitlement, try dir.groups())
        // The owner's fix: init again (or chmod +t).
        try dir.create(sharedGroup: "users")
        XCTAssertEqual(stat(dir.path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o7777, 0o3770)
    }

    func testTheOwnersWritesKeepAPrivateGroupPrivate() throws {
        try makePrivate("g")
        let s = try store(["g"])
        for i in 0..<3 { try s.add(attributes: attrs(["svce": .string("t\(i)")]), value: [UInt8(i)], group: "g") }
        try s.withVault(group: "g", write: true) { try $0.compact() }
        try s.finishVaultCommand(group: "g")
        for f in [dir.keyPath("g"), dir.vaultPath("g"), dir.path + "/g.seen"] { XCTAssertEqual(mode(f), 0o600, f) }
        XCTAssertEqual(try store(["g"]).find(ItemQuery()).count, 4)
    }

    func testAPrivateGroupsFilesMustBeItsOwners() throws {
        try makePrivate("g")
        // Writable by the others: refused until the owner takes it back.
        XCTAssertEqual(chmod(dir.vaultPath("g"), 0o660), 0)
        assertReason(.unsafeFile, .missingEntitlement, try store(["g"]).find(ItemQuery()))
        XCTAssertEqual(chmod(dir.vaultPath("g"), 0o600), 0)
        XCTAssertEqual(chmod(dir.path + "/g.seen", 0o660), 0)
        assertReason(.unsafeFile, .missingEntitlement, try store(["g"]).find(ItemQuery()))
        XCTAssertEqual(chmod(dir.path + "/g.seen", 0o600), 0)
        // Another member's file under its name: refused, never used.
        XCTAssertEqual(chown(dir.path + "/g.seen", other, gid_t.max), 0)
        assertReason(.unsafeFile, .missingEntitlement, try store(["g"]).find(ItemQuery()))
        XCTAssertEqual(chown(dir.path + "/g.seen", 0, gid_t.max), 0)
        XCTAssertEqual(chown(dir.vaultPath("g"), other, gid_t.max), 0)
        assertReason(.unsafeFile, .missingEntitlement, try store(["g"]).find(ItemQuery()))
        XCTAssertEqual(chown(dir.vaultPath("g"), 0, gid_t.max), 0)
        XCTAssertEqual(try store(["g"]).find(ItemQuery()).count, 1)
    }

    func testAnotherMembersPrivateGroupIsNotThisProcesss() throws {
        try makePrivate("theirs")
        try store(["mine"]).add(attributes: attrs(["svce": .string("s")]), value: [2], group: "mine")
        for f in [dir.keyPath("theirs"), dir.vaultPath("theirs"), dir.path + "/theirs.seen"] {
            XCTAssertEqual(chown(f, other, gid_t.max), 0)
        }
        // Root can read the key, but the group is the other member's: not in the implicit list, and refused by name.
        XCTAssertEqual(try store(nil).accessGroups(), ["mine"])
        XCTAssertEqual(try store(nil).find(ItemQuery()).map(\.group), ["mine"])
        assertReason(nil, .missingEntitlement, try store(["theirs"]).find(ItemQuery()))
        assertReason(
            nil, .missingEntitlement,
            try store(nil).add(attributes: attrs(["svce": .string("x")]), value: [3], group: "theirs"))
        // Shared again (its key readable by the group), it is every member's.
        XCTAssertEqual(chmod(dir.keyPath("theirs"), 0o640), 0)
        XCTAssertEqual(chmod(dir.vaultPath("theirs"), 0o660), 0)
        XCTAssertEqual(chmod(dir.path + "/theirs.seen", 0o660), 0)
        XCTAssertEqual(try store(nil).accessGroups(), ["mine", "theirs"])
    }
}
