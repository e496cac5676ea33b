import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// ``Vault``'s public API over a version 2 file does what it does over version 1: the same items, values,
/// commits, rewrites and checks, with versions and history kept by the paged engine underneath.
final class VaultVersion2Tests: PagedTestCase {
    func makeVersion2(_ name: String, items n: Int) throws -> String {
        let path = dir + "/" + name
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema
        ) { tx in
            for i in 0..<n {
                try tx.add(attributes: attrs("s\(i % 7)", "a\(i)"), value: .bytes(Array("value \(i)".utf8)))
            }
        }
        return path
    }

    func values(_ v: Vault) throws -> [String: String] {
        var out: [String: String] = [:]
        for item in v.items {
            out[(item.service ?? "") + "/" + (item.account ?? "")] = String(decoding: try v.read(item), as: UTF8.self)
        }
        return out
    }

    func testCommitsReadBackThroughVaultAndPagedVault() throws {
        let path = try makeVersion2("v.kcv", items: 40)
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        XCTAssertEqual(v.header.formatVersion, 2)
        XCTAssertEqual(v.count, 40)
        XCTAssertEqual(try values(v)["s3/a3"], "value 3")
        let a3 = try XCTUnwrap(v.items.first { $0.account == "a3" })
        let a4 = try XCTUnwrap(v.items.first { $0.account == "a4" })
        let a5 = try XCTUnwrap(v.items.first { $0.account == "a5" })
        try v.commit { tx in
            try tx.update(a3.id, value: .bytes(Array("new 3".utf8)))
            try tx.update(a4.id, attributes: attrs("moved", "a4"))
            try tx.delete(a5.id)
            let added = try tx.add(attributes: attrs("x", "y"), value: .bytes([1, 2, 3]))
            try tx.update(added, value: .bytes([4]))
        }
        // This instance, a fresh one, and the paged engine agree.
        let expected = try values(v)
        XCTAssertEqual(expected["s3/a3"], "new 3")
        XCTAssertEqual(expected["moved/a4"], "value 4")
        XCTAssertNil(expected["s5/a5"])
        XCTAssertEqual(expected["x/y"], "\u{4}")
        XCTAssertEqual(v.count, 40)
        XCTAssertEqual(try values(Vault.open(path: path, secret: secret)), expected)
        let p = try PagedVault.open(path: path, secret: secret)
        XCTAssertEqual(p.count, 40)
        XCTAssertEqual(try p.history(of: a3.id).count, 1, "the replaced value is kept in history")
        XCTAssertEqual(try p.history(of: a5.id).last?.why, 3, "the deleted item is kept in history")
        XCTAssertTrue(v.verify().isIntact, "\(v.verify().problems)")
        // A stale handle is refused, as in version 1.
        XCTAssertThrowsError(try v.read(a3)) { XCTAssertEqual(($0 as? VaultError)?.code, .staleItem) }
    }

    func testRewritesKeepItemsAndVerify() throws {
        let path = try makeVersion2("v.kcv", items: 30)
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        for i in 0..<40 {
            let item = try XCTUnwrap(v.items.first { $0.account == "a\(i % 30)" })
            try v.commit { try $0.update(item.id, value: .bytes(Array("v\(i)".utf8))) }
        }
        let expected = try values(v)
        // Folds replaced pages, and history past `keep` dropped values: the same figure as verify's count.
        XCTAssertGreaterThan(v.deadBytes, 0)
        XCTAssertEqual(v.deadBytes, v.verify().deadBytes)
        try v.compact()
        XCTAssertEqual(v.deadBytes, 0)
        XCTAssertEqual(try values(v), expected)
        XCTAssertEqual(v.header.formatVersion, 2)
        XCTAssertTrue(v.verify().isIntact)
        let other = UnlockSecret.passphrase(SecureBytes(copying: Array("correct horse".utf8)))
        try v.changeSlots(remove: [], add: [.passphrase(SecureBytes(copying: Array("correct horse".utf8)), .minimum)])
        XCTAssertEqual(try values(Vault.open(path: path, secret: other)), expected)
        let newKey = SecureBytes(copying: [UInt8](repeating: 7, count: 32))
        try v.rekey(slots: [.keyFile(newKey)])
        XCTAssertEqual(try values(v), expected)
        XCTAssertEqual(try values(Vault.open(path: path, secret: .keyFile(newKey))), expected)
        XCTAssertThrowsError(try Vault.open(path: path, secret: secret))
        try v.commit { try $0.add(attributes: attrs("after", "rekey"), value: .bytes([9])) }
        XCTAssertEqual(try Vault.open(path: path, secret: .keyFile(newKey)).count, 31)
    }

    func testInstancesCatchUpWithEachOtherAndWithRewrites() throws {
        let path = try makeVersion2("v.kcv", items: 10)
        let a = try Vault.open(path: path, secret: secret, mode: .write)
        let b = try Vault.open(path: path, secret: secret, mode: .write)
        try a.commit { try $0.add(attributes: attrs("from", "a"), value: .bytes([1])) }
        try b.commit { try $0.add(attributes: attrs("from", "b"), value: .bytes([2])) }
        XCTAssertEqual(b.count, 12, "b caught up with a's commit before its own")
        try a.refresh()
        XCTAssertEqual(try values(a), try values(b))
        try b.compact()
        try a.refresh()
        XCTAssertEqual(try values(a), try values(b))
        try a.commit { try $0.add(attributes: attrs("from", "a2"), value: .bytes([3])) }
        try b.refresh()
        XCTAssertEqual(b.count, 13)
        XCTAssertTrue(b.verify().isIntact)
    }

    /// A version 1 instance open while another process upgrades the file commits into version 2.
    func testVersion1InstanceFollowsAnUpgrade() throws {
        let path = dir + "/v1.kcv"
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: .version1
        ) { tx in
            for i in 0..<5 { try tx.add(attributes: attrs("s", "a\(i)"), value: .bytes([UInt8(i)])) }
        }
        let old = try Vault.open(path: path, secret: secret, mode: .write)
        try Vault.open(path: path, secret: secret, mode: .write).upgrade(schema: schema, writerID: 5)
        try old.commit { try $0.add(attributes: attrs("s", "late"), value: .bytes([42])) }
        XCTAssertEqual(old.header.formatVersion, 2)
        let fresh = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(fresh.header.formatVersion, 2)
        XCTAssertEqual(fresh.count, 6)
        XCTAssertEqual(try values(fresh), try values(old))
        XCTAssertTrue(fresh.verify().isIntact)
    }

    func testCreateIsAtomic() throws {
        let path = dir + "/new.kcv"
        struct Refused: Error {}
        XCTAssertThrowsError(
            try Vault.create(
                path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema
            ) { tx in
                try tx.add(attributes: attrs("a", "b"), value: .bytes([1]))
                throw Refused()
            })
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "no temporary file left")
        _ = try makeVersion2("new.kcv", items: 3)
        XCTAssertThrowsError(
            try Vault.create(
                path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema
            ) { _ in }
        ) {
            XCTAssertEqual(($0 as? VaultError)?.code, .exists)
        }
        let v = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(v.count, 3)
        XCTAssertEqual(v.generation, 1, "one fold commit, as a version 1 vault's first checkpoint")
        XCTAssertTrue(v.verify().isIntact)
        XCTAssertEqual(try PagedVault.open(path: path, secret: secret).schema, schema)
    }

    func testFailedCommitLeavesTheFileAndTheItems() throws {
        let path = try makeVersion2("v.kcv", items: 5)
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        struct Refused: Error {}
        XCTAssertThrowsError(
            try v.commit { tx in
                try tx.add(attributes: attrs("n", "n"), value: .bytes([1]))
                throw Refused()
            })
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before)
        XCTAssertEqual(v.count, 5)
        XCTAssertEqual(v.items.count, 5)
    }
}
