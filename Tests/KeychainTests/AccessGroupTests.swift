import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// Access groups, the directory's files and modes, rollback (SPEC.md §K1, §K2, §K6).
final class AccessGroupTests: KeychainTestCase {
    func testGroupsAreCreatedOnFirstAddWithPrivateModes() throws {
        let s = try store()
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.path))
        try s.add(attributes: attrs(["svce": .string("a")]), value: [1])  // to the first group of the list
        XCTAssertEqual(mode(dir.path), 0o700)
        XCTAssertEqual(mode(dir.vaultPath("app.shared")), 0o600)
        XCTAssertEqual(mode(dir.keyPath("app.shared")), 0o600)
        XCTAssertEqual(mode(dir.path + "/app.shared.seen"), 0o600)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir.keyPath("app.shared"))).count, 32)
        XCTAssertFalse(dir.exists("app.private"))
        XCTAssertEqual(try dir.groups(), ["app.shared"])
        XCTAssertEqual(try s.groupCounts().map { "\($0.group)=\($0.count)" }, ["app.shared=1"])
    }

    func testGroupNamesUnsafeAsFileNamesAreEncoded() {
        XCTAssertEqual(KeychainDirectory.stem("TEAM.com.example"), "TEAM.com.example")
        XCTAssertEqual(KeychainDirectory.stem("../etc/passwd"), "%2E.%2Fetc%2Fpasswd")
        XCTAssertEqual(KeychainDirectory.stem(".hidden"), "%2Ehidden")
        XCTAssertEqual(KeychainDirectory.stem("a b%é"), "a%20b%25%C3%A9")
        let long = String(repeating: "/", count: 100)
        XCTAssertTrue(KeychainDirectory.stem(long).hasPrefix("%%"))
        XCTAssertEqual(KeychainDirectory.stem(long).count, 34)
    }

    func testUnsafeAndLongGroupNamesRoundTrip() throws {
        let odd = ["../up", "with space/and:colon", String(repeating: "é", count: 120)]
        let s = try store(odd)
        for g in odd { try s.add(attributes: attrs(["svce": .string(g)]), value: [1], group: g) }
        XCTAssertEqual(Set(try dir.groups()), Set(odd))
        let implicit = try store(nil)
        XCTAssertEqual(try implicit.find(ItemQuery()).count, 3)
        XCTAssertFalse(FileManager.default.fileExists(atPath: root + "/up.kcv"))
    }

    func testAccessGroupRules() throws {
        let writer = try store(["a", "b"])
        try writer.add(attributes: attrs(["svce": .string("in-a")]), value: [1])
        try writer.add(attributes: attrs(["svce": .string("in-b")]), value: [2], group: "b")
        // Search without a group spans the list, in list order.
        XCTAssertEqual(try writer.find(ItemQuery()).map(\.group), ["a", "b"])
        // A process entitled to b only sees b; naming a is a missing entitlement.
        let onlyB = try store(["b"])
        XCTAssertEqual(try onlyB.find(ItemQuery()).map(\.group), ["b"])
        assertStatus(.missingEntitlement, try onlyB.find(ItemQuery(group: "a")))
        assertStatus(
            .missingEntitlement, try onlyB.add(attributes: attrs(["svce": .string("x")]), value: [], group: "a"))
        assertStatus(.missingEntitlement, try onlyB.delete(ItemQuery(group: "a")))
        // The implicit list (every readable key) finds both; an add without a group goes to the default
        // group, the program's name (SPEC.md §K2.1), or to the one the owner recorded.
        let implicit = try store(nil)
        XCTAssertEqual(try implicit.accessGroups(), ["a", "b"])
        let program = try XCTUnwrap(KeychainStore.programGroup)
        XCTAssertEqual(try implicit.add(attributes: attrs(["svce": .string("x")]), value: []).group, program)
        try dir.setDefaultGroup("d")
        XCTAssertEqual(try implicit.add(attributes: attrs(["svce": .string("x")]), value: []).group, "d")
        XCTAssertEqual(try writer.defaultGroup(), "a", "an explicit list comes first")
        try implicit.add(attributes: attrs(["svce": .string("x")]), value: [], group: "c")
        // A group whose key file is gone (or unreadable) is not entitled.
        try FileManager.default.removeItem(atPath: dir.keyPath("b"))
        XCTAssertEqual(try store(nil).accessGroups(), ["a", "c", "d", program])
        assertStatus(.missingEntitlement, try store(["b"]).find(ItemQuery()))
        assertStatus(.param, try KeychainStore.parseGroupList("a,,b"))
    }

    func testAVaultCopiedUnderAnotherGroupsNameIsRefused() throws {
        let s = try store(["a", "b"])
        try s.add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        try s.add(attributes: attrs(["svce": .string("y")]), value: [1], group: "b")
        s.close()
        try FileManager.default.removeItem(atPath: dir.vaultPath("b"))
        try FileManager.default.copyItem(atPath: dir.vaultPath("a"), toPath: dir.vaultPath("b"))
        try FileManager.default.removeItem(atPath: dir.keyPath("b"))
        try FileManager.default.copyItem(atPath: dir.keyPath("a"), toPath: dir.keyPath("b"))
        assertStatus(.decode, try s.find(ItemQuery(group: "b")))
    }

    func testRollbackIsReportedUntilAccepted() throws {
        let s = try store()
        try s.add(attributes: attrs(["svce": .string("old")]), value: [1])
        let backup = root + "/backup.kcv"
        try FileManager.default.copyItem(atPath: dir.vaultPath("app.shared"), toPath: backup)
        try s.add(attributes: attrs(["svce": .string("revoked")]), value: [2])
        try s.delete(.password(service: "old"))
        // Replace the vault by its older copy: this store and a fresh one (another process) both refuse it.
        try FileManager.default.removeItem(atPath: dir.vaultPath("app.shared"))
        try FileManager.default.copyItem(atPath: backup, toPath: dir.vaultPath("app.shared"))
        assertStatus(.rolledBack, try s.find(ItemQuery()))
        let other = try store()
        assertStatus(.rolledBack, try other.find(ItemQuery()))
        assertStatus(.rolledBack, try other.add(attributes: attrs(["svce": .string("x")]), value: []))
        try other.acceptRollback(group: "app.shared")
        XCTAssertEqual(try other.find(ItemQuery()).compactMap { $0.attributes.string("svce") }, ["old"])
        // A forged record (no key) is not taken for the group's own: it is refused until accepted.
        try Data(repeating: 0xFF, count: 68).write(to: URL(fileURLWithPath: dir.path + "/app.shared.seen"))
        assertStatus(.rolledBack, try store().find(ItemQuery()))
        try store().acceptRollback(group: "app.shared")
        XCTAssertEqual(try store().find(ItemQuery()).count, 1)
    }

    func testLockTimeoutIsItsOwnStatus() throws {
        let s = try store()
        try s.add(attributes: attrs(["svce": .string("a")]), value: [1])
        let fd = open(dir.vaultPath("app.shared"), O_RDONLY)
        defer { close(fd) }
        XCTAssertEqual(flock(fd, LOCK_EX), 0)
        let impatient = try KeychainStore(directory: dir, accessGroups: ["app.shared"], lockTimeout: 0.2)
        assertStatus(.interactionNotAllowed, try impatient.add(attributes: attrs(["svce": .string("b")]), value: [2]))
        assertStatus(.interactionNotAllowed, try impatient.find(ItemQuery()))
        flock(fd, LOCK_UN)
        XCTAssertEqual(try impatient.find(ItemQuery()).count, 1)
    }
}
