import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Copying values out of a solid record that cannot be copied whole (a dead member, or the device-only rule of
/// SPEC.md Part 3 §K9) decodes the record once, not once per value (issue 21): compaction, a sync's filtered
/// rewrite, a merge and the upgrade of a version 1 file each open at most a few times the bytes of their input.
/// Before, each value inflated its record again from its start: n members cost n times the record. The tests
/// count the plaintext bytes opened (``DecodeWork``), not time.
final class LinearCostTests: PagedTestCase {
    /// Members of the solid record the tests make: one record (its table and values stay under SOLID_TARGET).
    let members = 3_000
    /// The item made own (ThisDeviceOnly) where a test asks for one: live, not among the deleted.
    var ownIndex: Int { members / 2 + 1 }

    /// The plaintext bytes `body` opens, and the size of the file at `path` before it ran.
    func opened(reading path: String, _ body: () throws -> Void) throws -> (opened: UInt64, fileBytes: UInt64) {
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64)
        let before = DecodeWork.openedBytes.load(ordering: .relaxed)
        try body()
        return (DecodeWork.openedBytes.load(ordering: .relaxed) &- before, size)
    }

    /// Work linear in the input: at most `factor` times the file's bytes (a record's plaintext is a little
    /// more than its bytes on disk; a page may open to 16 times its own, V2).
    func assertLinear(_ r: (opened: UInt64, fileBytes: UInt64), factor: UInt64 = 24, _ what: String, line: UInt = #line)
    {
        XCTAssertLessThanOrEqual(
            r.opened, factor * r.fileBytes, "\(what): opened \(r.opened) bytes for a file of \(r.fileBytes)", line: line
        )
    }

    /// A vault whose items share one solid record, every tenth of them deleted (dead members), unless `dead`
    /// is false. Values are 8 bytes, distinct.
    /// `copying`: a vault to start from (a copy of it), else a new one.
    func solidVault(_ name: String, dead: Bool = true, own: Bool = false, copying base: String? = nil) throws -> String
    {
        let path = dir + "/" + name
        if let base {
            try FileManager.default.copyItem(atPath: base, toPath: path)
        } else {
            try PagedVault.create(
                path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
        }
        let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 1)
        try v.commit(autoCompact: false) { tx in
            for i in 0..<members {
                var a = attrs("s", "a\(i)")
                if own, i == ownIndex { a["pdmn"] = .string("aku") }
                _ = try tx.add(attributes: a, value: Array(String(format: "v%07d", i).utf8))
            }
        }
        if dead {
            try v.commit(autoCompact: false) { tx in
                for i in stride(from: 0, to: members, by: 10) { try tx.delete(try item(v, "s", "a\(i)")) }
            }
        }
        return path
    }

    /// The live values by account, each record read once.
    func values(_ path: String) throws -> [String: [UInt8]] {
        let v = try PagedVault.open(path: path, secret: secret)
        var items: [Item] = []
        try v.forEachItem {
            items.append($0)
            return true
        }
        var out: [String: [UInt8]] = [:]
        var value: [UInt8] = []
        try v.readValues(
            of: items, begin: { _ in value = [] }, bytes: { value.append(contentsOf: $0) },
            end: { out[$0.account ?? ""] = value })
        return out
    }

    func testCompactionDecodesAPartlyDeadRecordOnce() throws {
        let path = try solidVault("c.kcv")
        let expected = try values(path)
        let r = try opened(reading: path) {
            try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 1).compact(
                retention: Retention(keep: 0))
        }
        assertLinear(r, "compact")
        XCTAssertEqual(try values(path), expected)
        XCTAssertEqual(expected.count, members - members / 10)
    }

    func testFilteredCopyDecodesEachRecordOnce() throws {
        let path = try solidVault("s.kcv", dead: false, own: true)
        let copy = dir + "/shared.kcv"
        let r = try opened(reading: path) {
            try PagedVault.open(path: path, secret: secret).writeCopy(
                to: copy, keeping: { $0.attributes["pdmn"] == nil })
        }
        assertLinear(r, "writeCopy")
        var expected = try values(path)
        expected["a\(ownIndex)"] = nil
        XCTAssertEqual(try values(copy), expected)
    }

    func testMergeSplitsARecordWithAnOwnMemberInOnePass() throws {
        let ours = dir + "/ours.kcv"
        try PagedVault.create(
            path: ours, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
        let theirs = try solidVault("theirs.kcv", own: true, copying: ours)
        let policy = MergePolicy(isOwn: { $0.attributes["pdmn"] == .string("aku") })
        let r = try opened(reading: theirs) {
            let o = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 9)
            let report = try o.merge(base: nil, theirs: PagedVault.open(path: theirs, secret: secret), policy: policy)
            XCTAssertEqual(report.taken, members - 1)  // the live items and tombstones but the own one
        }
        assertLinear(r, "merge --into")
        var expected = try values(theirs)
        expected["a\(ownIndex)"] = nil
        XCTAssertEqual(try values(ours), expected)
    }

    func testUpgradeOfAPartlyDeadVersion1RecordDecodesItOnce() throws {
        let path = dir + "/v1.kcv"
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            format: .version1, options: WriteOptions(autoCompact: false)
        ) { tx in
            for i in 0..<members {
                try tx.add(attributes: attrs("s", "a\(i)"), value: .bytes(Array(String(format: "v%07d", i).utf8)))
            }
        }
        let v1 = try Vault.open(path: path, secret: secret, mode: .write)
        try v1.commit(options: WriteOptions(autoCompact: false)) { tx in
            for item in v1.items where item.account.map({ Int($0.dropFirst())! % 10 == 0 }) ?? false {
                try tx.delete(item.id)
            }
        }
        let r = try opened(reading: path) {
            try Vault.open(path: path, secret: secret, mode: .write).upgrade(schema: schema, writerID: 5)
        }
        assertLinear(r, "upgrade")
        XCTAssertEqual(try values(path).count, members - members / 10)
    }
}
