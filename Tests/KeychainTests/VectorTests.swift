import Foundation
import VaultFormat
import XCTest

@testable import KcarKeychain

/// SPEC.md §K8's vectors are what the code computes.
final class VectorTests: XCTestCase {
    static let spec = try! String(
        contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("SPEC.md"), encoding: .utf8)

    func testSeenRecordVector() {
        let key = SecureBytes(copying: (0x20...0x3F).map { UInt8($0) })
        let record = SeenRecord(vaultID: (0..<16).map { UInt8($0) }, generation: 5).encode(key: key)
        XCTAssertEqual(record.count, 68)
        let hex = Hex.encode(record)
        XCTAssertTrue(Self.spec.contains(hex), "SPEC.md §K8 should hold \(hex)")
        XCTAssertEqual(SeenRecord.decode(record, key: key)?.generation, 5)
        var forged = record
        forged[30] ^= 1
        XCTAssertNil(SeenRecord.decode(forged, key: key))
    }

    func testStemVectors() {
        for (group, stem) in [
            ("TEAMID.com.example.shared", "TEAMID.com.example.shared"), (".hidden", "%2Ehidden"),
            ("a b/é", "a%20b%2F%C3%A9"),
            (
                String(repeating: "x", count: 201),
                "%%" + Hex.encode(Digest.blake2b(Array(String(repeating: "x", count: 201).utf8), outputBytes: 16))
            )
        ] {
            XCTAssertEqual(KeychainDirectory.stem(group), stem)
            XCTAssertTrue(Self.spec.contains("`\(stem)`"), "SPEC.md §K8 should list \(stem)")
        }
    }
}
