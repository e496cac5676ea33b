import Foundation
import KeyedArchive
import XCTest

/// `ArchiveValue(propertyList:)`: `Any` property lists, Swift's and Foundation's (SPEC.md Part 2 §A11).
final class PropertyListValueTests: XCTestCase {
    func testSwiftValues() throws {
        let date = Date(timeIntervalSinceReferenceDate: 12.5)
        let uuid = UUID()
        let url = try XCTUnwrap(URL(string: "https://example.com/a"))
        let plist: [String: Any] = [
            "s": "text", "b": true, "i": -3, "i8": Int8(-8), "u": UInt(7), "u64": UInt64.max, "d": 2.5, "f": Float(0.5),
            "data": Data([1, 2]), "date": date, "uuid": uuid, "url": url,
            "array": [1, "two", [3.0]] as [Any], "dict": ["k": false] as [String: Any],
            "nil": String?.none as Any, "some": String?.some("x") as Any,
            "ints": [Int: String](uniqueKeysWithValues: [(1, "one")]), "set": Set<AnyHashable>([1, "a"]),
            "value": ArchiveValue.uint(9)
        ]
        let v = try ArchiveValue(propertyList: plist)
        XCTAssertEqual(
            v,
            .dictionary([
                "s": .string("text"), "b": .bool(true), "i": .int(-3), "i8": .int(-8), "u": .uint(7),
                "u64": .uint(.max),
                "d": .double(2.5), "f": .double(0.5), "data": .data(Data([1, 2])), "date": .date(date),
                "uuid": .uuid(uuid),
                "url": .url(url), "array": .array([.int(1), .string("two"), .array([.double(3)])]),
                "dict": .dictionary(["k": .bool(false)]), "nil": .null, "some": .string("x"),
                "ints": .anyKeyDictionary([.int(1): .string("one")]), "set": .set([.int(1), .string("a")]),
                "value": .uint(9)
            ]))
        // The value archives and reads back as itself.
        XCTAssertEqual(try ArchiveSerialization.value(from: ArchiveSerialization.bytes(from: v)), v)
    }

    func testFoundationValues() throws {
        let plist: [Any] = [
            NSNumber(value: true), NSNumber(value: false), NSNumber(value: 1), NSNumber(value: Int8(-2)),
            NSNumber(value: UInt64.max), NSNumber(value: 2.5), NSString(string: "ns"),
            NSArray(array: [NSNumber(value: 1)]),
            NSDictionary(dictionary: ["k": NSString(string: "v")]), NSData(bytes: [7] as [UInt8], length: 1),
            NSDate(timeIntervalSinceReferenceDate: 3), NSNull(), NSSet(array: [NSString(string: "e")])
        ]
        XCTAssertEqual(
            try ArchiveValue(propertyList: plist),
            .array([
                .bool(true), .bool(false), .int(1), .int(-2), .uint(.max), .double(2.5), .string("ns"),
                .array([.int(1)]),
                .dictionary(["k": .string("v")]), .data(Data([7])), .date(Date(timeIntervalSinceReferenceDate: 3)),
                .null,
                .set([.string("e")])
            ]))
    }

    func testRefusals() throws {
        struct NotAPlist {}
        XCTAssertThrowsError(try ArchiveValue(propertyList: ["x": NotAPlist()])) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .invalidValue)
        }
        // Nesting is bounded. (Not tried with Foundation's containers: their `as? [Any]` bridging copies
        // every level at once, before kcar sees an element, and overflows the stack on an NSMutableArray
        // that contains itself.)
        var deep: Any = 1
        for _ in 0..<20 { deep = [deep] }
        XCTAssertNoThrow(try ArchiveValue(propertyList: deep, limits: ArchiveLimits(maxDepth: 21)))
        XCTAssertThrowsError(try ArchiveValue(propertyList: deep, limits: ArchiveLimits(maxDepth: 20))) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .depthLimit)
        }
        // A container used many times counts at every use: 2^30 values from 30 arrays of two are refused at
        // VALUES_MAX (here lowered; the default 1,000,000 takes a few seconds to reach).
        var shared: Any = [1, 2]
        for _ in 0..<30 { shared = [shared, shared] as [Any] }
        XCTAssertThrowsError(try ArchiveValue(propertyList: shared, limits: ArchiveLimits(maxValues: 100_000))) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .valueLimit)
        }
    }
}
