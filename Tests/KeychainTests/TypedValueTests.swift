import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// Typed values in the keychain API: bytes as bytes, literal attribute values, dates as `Date`, service and account on items.
final class TypedValueTests: KeychainTestCase {
    func testBytesAreStoredRawLikeData() throws {
        let k = Keychain(service: "s", accessGroup: "app.shared", store: try store())
        let bytes: [UInt8] = [0, 1, 2, 0xFF]
        try k.set(bytes, forKey: "raw")
        XCTAssertEqual(try k.getData("raw"), Data(bytes), "the bytes themselves, not an archive of an array")
        XCTAssertEqual(try k.get([UInt8].self, forKey: "raw"), bytes)
    }

    func testLiteralsDatesAndItemProperties() throws {
        let k = Keychain(service: "s", accessGroup: "app.shared", store: try store())
        let when = Date(timeIntervalSince1970: 1_764_633_600.5)
        try k.setString(
            "v", forKey: "bob", attributes: ["category": "admin", "level": 3, "active": true, "when": .date(when)])
        XCTAssertEqual(try k.keys(where: ["category": "admin", "level": 3, "active": true]), ["bob"])
        XCTAssertEqual(try k.keys(where: ["when": .date(when)]), ["bob"])
        let item = try XCTUnwrap(try k.allItems().first)
        XCTAssertEqual(item.service, "s")
        XCTAssertEqual(item.account, "bob")
        XCTAssertEqual(item.userAttributes["when"]?.dateValue, when)
        let created = try XCTUnwrap(item.creationDate)
        XCTAssertLessThan(abs(created.timeIntervalSinceNow), 3600)
        XCTAssertEqual(item.modificationDate, created)
    }

    func testSetReplacesOrKeepsUserAttributes() throws {
        let k = Keychain(service: "s", accessGroup: "app.shared", store: try store())
        try k.setString("v1", forKey: "bob", attributes: ["category": "admin", "level": 3])
        try k.setString("v2", forKey: "bob", attributes: ["level": 4])
        XCTAssertEqual(try k.allItems().first?.userAttributes, ["category": "admin", "level": 4], "merged by default")
        try k.set("v3", forKey: "bob", attributes: ["team": "ops"], replacingAttributes: true)
        XCTAssertEqual(try k.allItems().first?.userAttributes, ["team": "ops"], "exactly those given")
        try k.setString("v4", forKey: "bob", replacingAttributes: true)
        XCTAssertEqual(try k.allItems().first?.userAttributes, [:], "[:] removes them all")
        XCTAssertEqual(try k.getString("bob"), "v4")
        XCTAssertEqual(try k.allItems().first?.service, "s", "Apple's attributes stay")
    }

    func testArchiveValueSpellings() {
        XCTAssertEqual(AttributeValue.int(3), .integer(3))
        XCTAssertEqual(AttributeValue.data(Data([1, 2])), .data([1, 2]))
        XCTAssertEqual(AttributeValue.int(3).intValue, 3)
        XCTAssertEqual(AttributeValue.string("a").stringValue, "a")
        XCTAssertEqual(AttributeValue.bool(true).boolValue, true)
        XCTAssertEqual(AttributeValue.data(Data([7])).dataValue, Data([7]))
        XCTAssertNil(AttributeValue.string("a").intValue)
        let literal: AttributeValue = .data([1, 2])  // an array literal stays the stored case's [UInt8]
        XCTAssertEqual(literal.dataValue, Data([1, 2]))
    }
}
