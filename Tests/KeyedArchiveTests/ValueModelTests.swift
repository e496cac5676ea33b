import Foundation
import KeyedArchive
import XCTest

/// The value model: literals, kinds that never merge, equality by bits, identity only through shared boxes.
final class ValueModelTests: XCTestCase {
    func testLiteralsBuildTheExpectedCases() {
        let v: ArchiveValue = ["name": "kcar", "n": 3, "pi": 3.5, "ok": true, "none": nil, "list": [1, "two"]]
        XCTAssertEqual(v["name"], .string("kcar"))
        XCTAssertEqual(v["n"], .int(3))
        XCTAssertEqual(v["pi"], .double(3.5))
        XCTAssertEqual(v["ok"], .bool(true))
        XCTAssertEqual(v["none"], .null)
        XCTAssertEqual(v["list"]?[1]?.stringValue, "two")
        XCTAssertNil(v["missing"])
    }

    func testKindsNeverMerge() {
        let values: [ArchiveValue] = [true, 1, .uint(1), 1.0, "1", .date(Date(timeIntervalSinceReferenceDate: 1))]
        XCTAssertEqual(Set(values).count, values.count)
        for (i, a) in values.enumerated() {
            for (j, b) in values.enumerated() where i != j { XCTAssertNotEqual(a, b) }
        }
    }

    func testDoublesCompareByBits() {
        XCTAssertEqual(ArchiveValue.double(.nan), .double(.nan))
        XCTAssertNotEqual(ArchiveValue.double(0.0), .double(-0.0))
        XCTAssertEqual(Set<ArchiveValue>([.double(.nan), .double(.nan)]).count, 1)
        XCTAssertNotEqual(
            ArchiveValue.date(Date(timeIntervalSinceReferenceDate: 0)),
            .date(Date(timeIntervalSinceReferenceDate: -0.0)))
    }

    func testSharedBoxesCompareByContentsButKeepIdentity() {
        let a = ArchiveShared(["x": 1])
        let b = ArchiveShared(["x": 1])
        XCTAssertEqual(ArchiveValue.shared(a), .shared(b))
        XCTAssertFalse(a === b)
        XCTAssertNotEqual(ArchiveValue.shared(a), ["x": 1], "a box is not its contents")
        XCTAssertEqual(ArchiveValue.shared(a).unshared, ["x": 1])
        XCTAssertEqual(ArchiveValue.shared(a)["x"], 1, "accessors look through boxes")
    }

    /// `ArchiveValue` is Codable itself: through JSON (a coder that knows nothing of it) and back.
    func testValueIsCodableThroughJSON() throws {
        let value: ArchiveValue = [
            "s": "text", "i": .int(-5), "u": .uint(.max), "d": 2.5, "b": false, "n": nil,
            "data": .data(Data([1, 2, 3])), "date": .date(Date(timeIntervalSinceReferenceDate: 12.25)),
            "uuid": .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))),
            "url": .url(URL(string: "a/b", relativeTo: URL(string: "https://example.com/x/"))!),
            "any": .anyKeyDictionary([1: "one", "k": [true]]), "set": .set([1, 2]),
            "obj": .object("Point", ["x": 1, "y": 2]), "shared": ArchiveValue.string("boxed").makeShared()
        ]
        let json = try JSONEncoder().encode(value)
        XCTAssertEqual(try JSONDecoder().decode(ArchiveValue.self, from: json), value)
    }
}
