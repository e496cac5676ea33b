@testable import VaultFormat
import XCTest

/// `WriteOptions.solidMembers` caps the values that share a solid record; readers are unaffected.
final class SolidMembersTests: VaultTestCase {
    func testSolidRecordsHoldAtMostTheMembersAsked() throws {
        let path = dir + "/v.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], options: WriteOptions(solidMembers: 4)) { tx in
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
