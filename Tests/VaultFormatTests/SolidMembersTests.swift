import XCTest

@testable import VaultFormat

/// `WriteOptions.solidMembers` caps the values that share a solid record; readers are unaffected.
final class SolidMembersTests: VaultTestCase {
    func testSolidRecordsHoldAtMostTheMembersAsked() throws {
        let path = dir + "/v.kcv"
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(key)], format: .version1, options: WriteOptions(solidMembers: 4)
        ) { tx in
            for i in 0..<10 { try tx.add(attributes: attrs("s", "\(i)"), value: .bytes([UInt8(i)])) }
        }
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        XCTAssertEqual(Set(v.items.map(\.location.recordID)).count, 3)
        try v.commit(options: WriteOptions(solidMembers: 1)) { tx in
            for i in 10..<13 { try tx.add(attributes: attrs("s", "\(i)"), value: .bytes([UInt8(i)])) }
        }
        XCTAssertEqual(Set(v.items.map(\.location.recordID)).count, 6)
        for item in v.items { XCTAssertEqual(try v.read(item), [UInt8(item.account!)!]) }
        XCTAssertTrue(v.verify().isIntact)
    }
}

/// A value that compresses to almost nothing is still streamed by extract and verify: whether a record is
/// decoded whole is decided by the size of its values, not by its stored size.
final class CompressibleRecordTests: VaultTestCase {
    func testAHighlyCompressibleValueIsStreamed() throws {
        let path = dir + "/z.kcv"
        let size = 9 << 20
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("s", "zeros"), value: .bytes([UInt8](repeating: 0, count: size)))
        }
        let v = try Vault.open(path: path, secret: secret)
        let item = v.items[0]
        XCTAssertLessThan(item.location.length, 1 << 20, "stored small")
        XCTAssertTrue(Vault.isStreamed([[item]]))
        var calls = 0
        var total = 0
        try v.readValues(
            of: [item], begin: { _, _ in },
            bytes: {
                calls += 1
                total += $0.count
            }, end: { _ in })
        XCTAssertEqual(total, size)
        XCTAssertGreaterThan(calls, 1, "handed out chunk by chunk, not decoded whole")
        XCTAssertTrue(v.verify().isIntact)
    }
}
