import Foundation
import KeyedArchive
import XCTest

/// Values through the binary format and back: every kind and its edges, sharing and distinctness.
final class RoundTripTests: XCTestCase {
    func roundTrip(
        _ value: ArchiveValue, options: ArchiveWritingOptions = [], file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> ArchiveValue {
        let bytes = try ArchiveSerialization.data(from: value, options: options)
        let back = try ArchiveSerialization.value(from: bytes)
        XCTAssertEqual(back, value, file: file, line: line)
        return back
    }

    func testEveryKindAndItsEdges() throws {
        for options: ArchiveWritingOptions in [[], .deterministic] {
            for case .array(let items) in [ArchiveFixtures.scalars] {
                for item in items { _ = try roundTrip(item, options: options) }
            }
            _ = try roundTrip(ArchiveFixtures.scalars, options: options)
            for g in ArchiveFixtures.golden { _ = try roundTrip(g.value, options: options) }
        }
    }

    func testNaNPayloadSignedZeroAndStringFormsSurvive() throws {
        let payload = Double(bitPattern: 0x7FF8_0000_0000_1234)
        let back = try roundTrip([.double(payload), .double(-0.0), "e\u{301}", "\u{e9}"])
        XCTAssertEqual(back[0]?.doubleValue?.bitPattern, 0x7FF8_0000_0000_1234)
        XCTAssertEqual(back[1]?.doubleValue?.sign, .minus)
        // Canonically equivalent strings keep their own bytes (interning is by bytes, not by String ==).
        XCTAssertEqual(Array(back[2]?.stringValue?.utf8 ?? "".utf8), [0x65, 0xCC, 0x81])
        XCTAssertEqual(Array(back[3]?.stringValue?.utf8 ?? "".utf8), [0xC3, 0xA9])
    }

    func testIntegerExtremesTakeMinimalVarints() throws {
        let cases: [(ArchiveValue, Int)] = [
            (.int(0), 1), (.int(-64), 1), (.int(64), 2), (.int(.max), 10),
            (.int(.min), 10), (.uint(127), 1), (.uint(128), 2), (.uint(.max), 10)
        ]
        for (value, varintSize) in cases {
            let bytes = try ArchiveSerialization.bytes(from: value)
            XCTAssertEqual(bytes.count, 6 + 1 + varintSize, "\(value)")
            XCTAssertEqual(try ArchiveSerialization.value(from: bytes), value)
        }
    }

    func testTrueOneAndOnePointZeroStayThreeValues() throws {
        let back = try roundTrip([true, 1, 1.0])
        XCTAssertEqual(back.arrayValue?.map(\.kind), [.bool, .int, .double])
    }

    func testSharedValueIsStoredOnceAndDecodesShared() throws {
        let big = ArchiveValue.string(String(repeating: "x", count: 1000)).makeShared()
        let once = try ArchiveSerialization.bytes(from: [big])
        let thrice = try ArchiveSerialization.bytes(from: [big, big, big])
        XCTAssertEqual(thrice.count, once.count + 4, "two more references of 2 bytes each")
        let back = try roundTrip([big, big, big])
        guard case .shared(let a)? = back[0], case .shared(let b)? = back[1], case .shared(let c)? = back[2] else {
            return XCTFail("not shared")
        }
        XCTAssert(a === b && b === c)
    }

    func testEqualButDistinctContainersStayDistinct() throws {
        let one = ArchiveValue.array([1, 2]).makeShared()
        let other = ArchiveValue.array([1, 2]).makeShared()
        let back = try roundTrip([one, other, one, [1, 2], [1, 2]])
        guard case .shared(let a)? = back[0], case .shared(let b)? = back[1], case .shared(let c)? = back[2] else {
            return XCTFail("not shared")
        }
        XCTAssertFalse(a === b)
        XCTAssert(a === c)
        XCTAssertEqual(back[3]?.kind, .array, "plain containers are not boxed")
    }

    func testDeterministicOutputDoesNotDependOnInsertionOrder() throws {
        var d1: [String: ArchiveValue] = [:]
        var d2: [String: ArchiveValue] = [:]
        var s1: Set<ArchiveValue> = []
        var s2: Set<ArchiveValue> = []
        d1.reserveCapacity(1000)
        for i in 0..<200 {
            d1["k\(i)"] = .int(Int64(i))
            s1.insert(.string("s\(i)"))
        }
        for i in (0..<200).reversed() {
            d2["k\(i)"] = .int(Int64(i))
            s2.insert(.string("s\(i)"))
        }
        let a = try ArchiveSerialization.bytes(from: [.dictionary(d1), .set(s1)], options: .deterministic)
        let b = try ArchiveSerialization.bytes(from: [.dictionary(d2), .set(s2)], options: .deterministic)
        XCTAssertEqual(a, b)
    }

    func testStringsAndKeysAreInterned() throws {
        let record: ArchiveValue = ["service": "example.com", "account": "alice"]
        let one = try ArchiveSerialization.bytes(from: [record])
        let hundred = try ArchiveSerialization.bytes(from: .array(Array(repeating: record, count: 100)))
        // Each repeat costs a dictionary header and four 1-2 byte references, never the strings again.
        XCTAssertLessThan(hundred.count - one.count, 99 * 12)
    }

    func testLargeFlatArrayIsLinear() throws {
        let value = ArchiveValue.array((0..<200_000).map { .int(Int64($0)) })
        let start = Date()
        _ = try roundTrip(value)
        XCTAssertLessThan(Date().timeIntervalSince(start), 10)
    }

    func testThousandDictionariesEncodeFast() throws {
        // NSKeyedArchiver on Linux takes about a minute here (quadratic dedup by equality).
        let value = ArchiveValue.array((0..<1000).map { ["id": .int(Int64($0)), "name": "user", "tags": ["a", "b"]] })
        let start = Date()
        _ = try roundTrip(value, options: .deterministic)
        XCTAssertLessThan(Date().timeIntervalSince(start), 10)  // quadratic would take about a minute
    }
}
