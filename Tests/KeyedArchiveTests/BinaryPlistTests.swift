import Foundation
import KeyedArchive
import XCTest

/// The `bplist00` reader and writer: every type round-trips, Foundation reads what the writer writes and the
/// reader reads what Foundation writes.
final class BinaryPlistTests: XCTestCase {
    static var sample: PropertyList {
        .dictionary([
            "null": .null, "bools": .array([.bool(true), .bool(false)]),
            "ints": .array([
                .int(0), .int(255), .int(256), .int(65_535), .int(65_536), .int(Int64(UInt32.max)),
                .int(Int64(UInt32.max) + 1), .int(-1), .int(.min), .int(.max)
            ]),
            "uint": .uint(.max), "reals": .array([.real(-0.0), .real(.infinity), .real(1.5)]), "date": .date(12.5),
            "data": .data(Data((0..<300).map { UInt8($0 & 0xFF) })), "ascii": "hello", "utf16": "ünïcødé 名前 🔑",
            "empty": "", "uids": .array([.uid(0), .uid(255), .uid(256), .uid(70_000), .uid(UInt64(UInt32.max) + 1)]),
            "set": .set([.int(1), "a"]), "long": .array((0..<20).map { .int(Int64($0)) }),
            "nested": .dictionary(["a": .array([.dictionary([:]), .array([])])])
        ])
    }

    func testEveryTypeRoundTrips() throws {
        let bytes = Self.sample.binaryBytes()
        XCTAssertEqual(try PropertyList(binary: bytes), Self.sample)
        XCTAssertEqual(Self.sample.binaryBytes(), bytes, "the writer is deterministic")
    }

    func testFoundationReadsTheWriterAndTheReaderReadsFoundation() throws {
        let plist: PropertyList = .dictionary([
            "s": "text", "u": "ünï 🔑", "i": .int(-5), "big": .int(1 << 40), "r": .real(2.25), "b": .bool(true),
            "d": .data(Data([1, 2, 3])), "a": .array(["x", .int(7)]), "when": .date(1_000)
        ])
        let object = try PropertyListSerialization.propertyList(from: Data(plist.binaryBytes()), format: nil)
        guard let d = object as? [String: Any] else { return XCTFail("\(object)") }
        XCTAssertEqual(d["s"] as? String, "text")
        XCTAssertEqual(d["u"] as? String, "ünï 🔑")
        XCTAssertEqual((d["i"] as? NSNumber)?.int64Value, -5)
        XCTAssertEqual((d["big"] as? NSNumber)?.int64Value, 1 << 40)
        XCTAssertEqual((d["r"] as? NSNumber)?.doubleValue, 2.25)
        XCTAssertEqual(d["d"] as? Data, Data([1, 2, 3]))
        XCTAssertEqual(d["when"] as? Date, Date(timeIntervalSinceReferenceDate: 1_000))
        XCTAssertEqual((d["a"] as? [Any])?.count, 2)

        let foundation = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        XCTAssertEqual(try PropertyList(binary: [UInt8](foundation)), plist)
    }

    func testFloat32RealsAndLongCounts() throws {
        // A 4-byte real (0x22), written by other writers though not by this one.
        let bytes = NSKeyedFixtures.bplist([[0x22, 0x3F, 0xC0, 0x00, 0x00]])
        XCTAssertEqual(try PropertyList(binary: bytes), .real(1.5))
        // A long count whose int is wider than needed is still a valid count.
        let wide = NSKeyedFixtures.bplist([[0x5F, 0x12, 0, 0, 0, 2, 0x61, 0x62]])
        XCTAssertEqual(try PropertyList(binary: wide), "ab")
    }

    func testLimitsAreCheckedBeforeTheWork() {
        let data = PropertyList.data(Data(count: 100)).binaryBytes()
        assertArchiveError(.lengthLimit) { try PropertyList(binary: data, limits: ArchiveLimits(maxDataLength: 99)) }
        let string = PropertyList.string(String(repeating: "a", count: 100)).binaryBytes()
        assertArchiveError(.lengthLimit) {
            try PropertyList(binary: string, limits: ArchiveLimits(maxStringLength: 99))
        }
        assertArchiveError(.sizeLimit) { try PropertyList(binary: data, limits: ArchiveLimits(maxBytes: 100)) }
        let many = PropertyList.array((0..<50).map { .int(Int64($0)) }).binaryBytes()
        assertArchiveError(.valueLimit) { try PropertyList(binary: many, limits: ArchiveLimits(maxValues: 50)) }
    }

    func testEveryPrefixFails() {
        let bytes = Self.sample.binaryBytes()
        for n in 0..<bytes.count {
            XCTAssertThrowsError(try PropertyList(binary: Array(bytes[..<n]))) { XCTAssert($0 is ArchiveError) }
        }
    }
}
