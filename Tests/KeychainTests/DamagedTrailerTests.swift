import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// Issue 22, point 8, in the keychain: a group whose vault's last trailer has a byte changed is damaged
/// (errSecDecode), never read at the commit before it (where an item the last commit deleted is back), with or
/// without a generation record to compare against; a trailer cut short (a crash) still reads at that commit.
final class DamagedTrailerKeychainTests: KeychainTestCase {
    func groupWithADeletion() throws -> [UInt8] {
        let s = try store(["a"])
        try s.add(attributes: attrs(["svce": .string("kept")]), value: [1], group: "a")
        try s.add(attributes: attrs(["svce": .string("deleted")]), value: [2], group: "a")
        XCTAssertEqual(try s.delete(.password(service: "deleted")), 1)
        s.close()
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.vaultPath("a"))))
    }

    func put(_ bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: dir.vaultPath("a"))) }

    func testADamagedLastTrailerIsDamageNotTheGenerationBefore() throws {
        let good = try groupWithADeletion()
        XCTAssertEqual(try Vault.inspect(path: dir.vaultPath("a")).header.formatVersion, 2)
        // Version 2 (a group's vault): a 128-byte trailer; a byte of its magic, fields and MAC each.
        for i in [0, 9, 30, 90, 127] {
            var b = good
            b[b.count - 128 + i] ^= 0x40
            try put(b)
            assertStatus(.decode, try store(["a"]).find(ItemQuery()))
            assertStatus(
                .decode, try store(["a"]).add(attributes: attrs(["svce": .string("new")]), value: [3], group: "a"))
            // Without a record to compare generations with, still damage (not the old generation, quietly).
            let blind = KeychainDirectory(path: dir.path, statePath: nil)
            try? FileManager.default.removeItem(atPath: dir.path + "/a.seen")
            XCTAssertThrowsError(try KeychainStore(directory: blind, accessGroups: ["a"]).find(ItemQuery())) { e in
                XCTAssertEqual((e as? KeychainError)?.status, .decode, "\(e)")
                XCTAssertTrue("\(e)".contains("damaged index"), "\(e)")
            }
            try put(good)
            try store(["a"]).acceptRollback(group: "a")
        }
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 1)
    }

    func testALastTrailerCutShortReadsTheCommitBefore() throws {
        let good = try groupWithADeletion()
        try put(Array(good.dropLast(40)))
        // Not damage: the commit before the delete, which the generation record (§K6) reports as older than
        // the one it saw, until accepted; then the deleted item is there, as it was before that commit.
        assertStatus(.rolledBack, try store(["a"]).find(ItemQuery()))
        try store(["a"]).acceptRollback(group: "a")
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 2)
    }
}
