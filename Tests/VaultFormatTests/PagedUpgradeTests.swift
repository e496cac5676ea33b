import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Version 1 vaults rewritten as version 2 (SPEC.md Part 4, V1): every golden vault of Fixtures/vault keeps
/// its items, values, slots and vault id; the file becomes unreadable to a version 1 reader; and a failed
/// upgrade leaves the version 1 file as it was.
final class PagedUpgradeTests: PagedTestCase {
    func copyFixture(_ name: String) throws -> String {
        let path = dir + "/" + name
        try FileManager.default.copyItem(atPath: FixtureTests.fixture(name), toPath: path)
        return path
    }

    struct Snapshot: Hashable {
        let id: ItemID
        let itemClass: String
        let attributes: Attributes
        let value: [UInt8]
    }

    func testGoldenVaultsUpgradeWithEveryItemAndSlot() throws {
        for g in Recipes.goldens {
            let path = try copyFixture("\(g.name).kcv")
            let v1 = try Vault.open(path: path, secret: g.secret, mode: .write)
            let before = Set(
                try v1.items.map {
                    Snapshot(
                        id: $0.id, itemClass: $0.itemClass.rawValue, attributes: $0.attributes, value: try v1.read($0))
                })
            let vaultID = v1.header.vaultID
            try v1.upgrade(schema: schema, writerID: 0x0102_0304_0506_0708)
            XCTAssertEqual(try Vault.inspect(path: path).header.formatVersion, 2, g.name)
            // Vault reads the upgraded file with the same items.
            let reread = try Vault.open(path: path, secret: g.secret)
            XCTAssertEqual(reread.header.formatVersion, 2, g.name)
            XCTAssertEqual(
                Set(
                    try reread.items.map {
                        Snapshot(
                            id: $0.id, itemClass: $0.itemClass.rawValue, attributes: $0.attributes,
                            value: try reread.read($0))
                    }),
                before, g.name)

            let v2 = try PagedVault.open(path: path, secret: g.secret, mode: .write)
            XCTAssertEqual(v2.header.vaultID, vaultID)
            XCTAssertEqual(v2.header.slots.count, v1.header.slots.count)
            XCTAssertEqual(try v2.verifyIndex(), before.count, g.name)
            var after = Set<Snapshot>()
            try v2.forEachItem { item in
                after.insert(
                    Snapshot(
                        id: item.id, itemClass: item.itemClass.rawValue, attributes: item.attributes,
                        value: try v2.read(item)))
                XCTAssertEqual(try v2.version(of: item)?.writer, 0x0102_0304_0506_0708)
                // Found again by its primary key, one range read.
                let found = try v2.items(
                    class: item.itemClass,
                    keyValues: [
                        .bool(false), item.attributes["svce"] ?? .string(""), item.attributes["acct"] ?? .string("")
                    ])
                XCTAssertTrue(found.contains { $0.id == item.id }, "\(g.name): \(item.displayName) by its primary key")
                return true
            }
            XCTAssertEqual(after, before, g.name)
            // The upgraded file takes commits.
            try v2.commit { tx in
                _ = try tx.add(
                    attributes: Attributes(["svce": .string("after"), "acct": .string("upgrade")]), value: [7])
            }
            let reopened = try PagedVault.open(path: path, secret: g.secret)
            XCTAssertEqual(
                try reopened.items(
                    class: .genericPassword, keyValues: [.bool(false), .string("after"), .string("upgrade")]
                ).count, 1)
            XCTAssertEqual(try reopened.verifyIndex(), before.count + 1)
        }
    }

    /// A record that fails to authenticate stops the upgrade: the version 1 file is unchanged, and no
    /// temporary file is left.
    func testAFailedUpgradeLeavesTheVersion1File() throws {
        let path = dir + "/damaged.kcv"
        try FileManager.default.copyItem(
            atPath: FixtureTests.root.appendingPathComponent("Fixtures/vault/malformed/record-flipped.kcv").path,
            toPath: path)
        let original = try Recipes.read(path)
        let v1 = try Vault.open(path: path, secret: Recipes.keySecret, mode: .write)
        XCTAssertThrowsError(try v1.upgrade(schema: schema, writerID: 1)) {
            XCTAssertEqual(($0 as? VaultError)?.code, .damagedRecord)
        }
        XCTAssertEqual(try Recipes.read(path), original)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["damaged.kcv"])
    }
}
