import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Issue 26: history, restore, merge and upgrade through the public API only (no `@testable`), as a program
/// that depends on the library uses them.
final class PublicVersioningTests: VaultTestCase {
    func item(_ service: String, _ account: String) -> Attributes {
        Attributes([AttributeName.service: .string(service), AttributeName.account: .string(account)])
    }

    func value(_ path: String, _ service: String, _ account: String) throws -> [UInt8]? {
        let v = try Vault.open(path: path, secret: secret, itemsOnDemand: true)
        return try v.items(class: .genericPassword, key: item(service, account)).first.map { try v.read($0) }
    }

    func testHistoryAndRestore() throws {
        let path = dir + "/v.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)]) { tx in
            try tx.add(attributes: item("db", "app"), value: .bytes(Array("one".utf8)))
        }
        for v in ["two", "three"] {
            try Vault.open(path: path, secret: secret, mode: .write).commit { tx in
                try tx.add(attributes: self.item("db", "app"), value: .bytes(Array(v.utf8)), ifKeyExists: .replace)
            }
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write, itemsOnDemand: true)
        let versioning = try XCTUnwrap(vault.versioning)
        let current = try XCTUnwrap(try vault.items(class: .genericPassword, key: item("db", "app")).first)
        let kept = try versioning.keptVersions(of: current.id)
        XCTAssertEqual(try kept.map { String(decoding: try versioning.read($0.item), as: UTF8.self) }, ["one", "two"])
        XCTAssertEqual(kept.map(\.reason), [.replaced, .replaced])
        XCTAssertLessThan(kept[0].version, kept[1].version)
        let now = try XCTUnwrap(try versioning.state(of: current))
        XCTAssertGreaterThan(now.version, kept[1].version)

        try versioning.restore(kept[0])
        XCTAssertEqual(try value(path, "db", "app"), Array("one".utf8))
        let after = try XCTUnwrap(Vault.open(path: path, secret: secret).versioning)
        XCTAssertEqual(
            try after.keptVersions(of: current.id).map { String(decoding: try after.read($0.item), as: UTF8.self) },
            ["one", "two", "three"], "the version restored over is kept in turn")
    }

    /// Two copies of one vault change different items and one item both: merged either way, they hold the
    /// same items, and the losing version is in history.
    func testTwoCopiesMerge() throws {
        let base = dir + "/base.kcv"
        try Vault.create(path: base, group: "g", slots: [.keyFile(key)]) { tx in
            try tx.add(attributes: item("db", "shared"), value: .bytes([0]))
        }
        let ours = dir + "/ours.kcv"
        let theirs = dir + "/theirs.kcv"
        try FileManager.default.copyItem(atPath: base, toPath: ours)
        try FileManager.default.copyItem(atPath: base, toPath: theirs)
        try Vault.open(path: ours, secret: secret, mode: .write).commit { tx in
            try tx.add(attributes: self.item("db", "mine"), value: .bytes([1]))
            try tx.add(attributes: self.item("db", "shared"), value: .bytes([2]), ifKeyExists: .replace)
        }
        usleep(5_000)  // theirs's change to the shared item is the later one
        try Vault.open(path: theirs, secret: secret, mode: .write).commit { tx in
            try tx.add(attributes: self.item("db", "yours"), value: .bytes([3]))
            try tx.add(attributes: self.item("db", "shared"), value: .bytes([4]), ifKeyExists: .replace)
        }
        func versioning(_ path: String, write: Bool = false) throws -> Versioning {
            try XCTUnwrap(Vault.open(path: path, secret: secret, mode: write ? .write : .read).versioning)
        }
        let report = try versioning(ours, write: true).merge(
            base: try versioning(base), theirs: try versioning(theirs), listingTaken: true)
        XCTAssertEqual(report.conflicts, 1)
        XCTAssertEqual(report.conflictDetails.first?.winner, .theirs, "theirs changed it later")
        XCTAssertEqual(report.takenItems.compactMap { $0.item?.account }.sorted(), ["shared", "yours"])
        XCTAssertEqual(try value(ours, "db", "mine"), [1])
        XCTAssertEqual(try value(ours, "db", "yours"), [3])
        XCTAssertEqual(try value(ours, "db", "shared"), [4])
        let merged = try versioning(ours)
        let shared = try XCTUnwrap(
            try Vault.open(path: ours, secret: secret).items(
                class: .genericPassword, key: item("db", "shared")
            ).first)
        XCTAssertEqual(try merged.keptVersions(of: shared.id).map(\.reason).last, .lostMerge)
        // The other way round: the same items.
        _ = try versioning(theirs, write: true).merge(base: try versioning(base), theirs: try versioning(ours))
        for account in ["mine", "yours", "shared"] {
            XCTAssertEqual(try value(theirs, "db", account), try value(ours, "db", account), account)
        }
    }

    /// The vault a ``Versioning`` was taken from follows a merge, a restore and a drop of history made through
    /// it, as it follows its own commit: its items (held, not on demand) are the new commit's, and reading one
    /// the merge brought in works (it threw "stale item" while the vault still held the items from before).
    func testTheVaultFollowsChangesMadeThroughItsVersioning() throws {
        let ours = dir + "/ours.kcv"
        let theirs = dir + "/theirs.kcv"
        try Vault.create(path: ours, group: "g", slots: [.keyFile(key)]) { tx in
            try tx.add(attributes: item("db", "app"), value: .bytes([1]))
        }
        try FileManager.default.copyItem(atPath: ours, toPath: theirs)
        try Vault.open(path: theirs, secret: secret, mode: .write).commit { tx in
            try tx.add(attributes: self.item("db", "yours"), value: .bytes([3]))
        }
        let vault = try Vault.open(path: ours, secret: secret, mode: .write)
        try vault.commit { tx in
            try tx.add(attributes: self.item("db", "app"), value: .bytes([2]), ifKeyExists: .replace)
        }
        let versioning = try XCTUnwrap(vault.versioning)
        _ = try versioning.merge(
            base: nil, theirs: try XCTUnwrap(Vault.open(path: theirs, secret: secret).versioning))
        XCTAssertEqual(vault.items.compactMap(\.account).sorted(), ["app", "yours"])
        let yours = try XCTUnwrap(try vault.items(class: .genericPassword, key: item("db", "yours")).first)
        XCTAssertEqual(try vault.read(yours), [3])

        let app = try XCTUnwrap(try vault.items(class: .genericPassword, key: item("db", "app")).first)
        try versioning.restore(try XCTUnwrap(try versioning.keptVersions(of: app.id).first))
        let restored = try XCTUnwrap(vault.item(app.id))
        XCTAssertEqual(try vault.read(restored), [1])

        try versioning.dropHistory(of: [app.id])
        XCTAssertEqual(try versioning.keptVersions(of: app.id), [])
        XCTAssertEqual(try vault.read(try XCTUnwrap(vault.item(app.id))), [1])
        XCTAssertEqual(vault.generation, try Vault.open(path: ours, secret: secret).generation)
    }

    func testUpgradeKeepsItemsAndKeysAndGivesVersions() throws {
        let path = dir + "/old.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            for i in 0..<20 { try tx.add(attributes: item("db", "a\(i)"), value: .bytes([UInt8(i)])) }
        }
        let old = try Vault.open(path: path, secret: secret, mode: .write)
        XCTAssertNil(old.versioning)
        try old.upgrade()
        // The instance is version 2 at once, and its next commit goes to the upgraded vault.
        XCTAssertEqual(old.formatVersion, 2)
        XCTAssertNotNil(old.versioning)
        XCTAssertEqual(old.count, 20)
        try old.commit { try $0.add(attributes: self.item("db", "late"), value: .bytes([1])) }
        XCTAssertEqual(old.formatVersion, 2)
        let new = try Vault.open(path: path, secret: secret, mode: .write)
        XCTAssertEqual(new.formatVersion, 2)
        XCTAssertEqual(new.count, 21)
        XCTAssertTrue(new.verify().isIntact)
        XCTAssertEqual(try value(path, "db", "a7"), [7])
        XCTAssertNotNil(new.versioning)
        XCTAssertThrowsError(try new.upgrade()) { XCTAssertEqual(($0 as? VaultError)?.code, .invalidArgument) }
    }
}
