import Foundation
import KeyedArchive
import XCTest

/// Hostile and malformed archives fail fast with a specific error; limits hold on both sides.
final class HostileInputTests: XCTestCase {
    let header: [UInt8] = [0x89, 0x4B, 0x43, 0x41, 0x01, 0x00]

    func expect(
        _ code: ArchiveError.Code, _ bytes: [UInt8], limits: ArchiveLimits = .default,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let start = Date()
        XCTAssertThrowsError(try ArchiveSerialization.value(from: bytes, limits: limits), file: file, line: line) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, code, "\($0)", file: file, line: line)
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, file: file, line: line)  // a hang guard, not a speed test
    }

    func testDeepNestingOfEveryContainerFailsAtTheDepthLimit() {
        // (first level, every other level): keys and class names are defined once, then referenced.
        let openers: [([UInt8], [UInt8])] = [
            ([0x0D, 0x01], [0x0D, 0x01]), ([0x10, 0x01], [0x10, 0x01]), ([0x12], [0x12]),
            ([0x0E, 0x01, 0x00, 0x00], [0x0E, 0x01, 0x01]), ([0x0F, 0x01, 0x00], [0x0F, 0x01, 0x00]),
            ([0x11, 0x00, 0x01, 0x43, 0x01, 0x00, 0x00], [0x11, 0x01, 0x01, 0x02])
        ]
        for (first, rest) in openers {
            var bytes = header + first
            for _ in 0..<25_000 { bytes += rest }
            expect(.depthLimit, bytes + [0x00])
        }
    }

    func testDepthLimitIsExact() throws {
        var value: ArchiveValue = nil
        for _ in 0..<511 { value = [value] }
        let bytes = try ArchiveSerialization.bytes(from: value)  // 512 levels: allowed
        XCTAssertEqual(try ArchiveSerialization.value(from: bytes), value)
        XCTAssertThrowsError(try ArchiveSerialization.bytes(from: [value])) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .depthLimit)
        }
        expect(.depthLimit, Array(header) + [0x0D, 0x01] + bytes.dropFirst(6))
    }

    func testReferenceBombStopsAtTheExpansionBudget() {
        var bytes = header + [0x0D, 41, 0x12, 0x00]
        for k in 0..<40 { bytes += [0x12, 0x0D, 0x02, 0x13, UInt8(k), 0x13, UInt8(k)] }
        XCTAssertLessThan(bytes.count, 700)
        expect(.expansionLimit, bytes)
        expect(.expansionLimit, bytes, limits: ArchiveLimits(maxExpandedValues: 1_000))
    }

    func testWriterRefusesWhatTheReaderWouldRefuse() {
        var v = ArchiveValue.null.makeShared()
        for _ in 0..<40 { v = ArchiveValue.array([v, v]).makeShared() }
        XCTAssertThrowsError(try ArchiveSerialization.bytes(from: v)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .expansionLimit)
        }
        let small = ArchiveLimits(maxValues: 10, maxStringLength: 3, maxDataLength: 2)
        let cases: [(ArchiveValue, ArchiveError.Code)] = [
            (.array(Array(repeating: nil, count: 10)), .valueLimit), ("abcd", .lengthLimit),
            (.data(Data([1, 2, 3])), .lengthLimit), (.object("", [:]), .invalidValue)
        ]
        for (value, code) in cases {
            XCTAssertThrowsError(try ArchiveSerialization.bytes(from: value, limits: small)) {
                XCTAssertEqual(($0 as? ArchiveError)?.code, code, "\(value)")
            }
        }
    }

    func testCountsAreCheckedAgainstTheInput() {
        expect(.countExceedsInput, header + [0x0D, 0x05, 0x00, 0x00, 0x00, 0x00])  // 5 items, 4 bytes
        expect(.countExceedsInput, header + [0x0E, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00])  // 3 entries, 5 bytes
        expect(.truncated, header + [0x06, 0x05, 0x61])
        expect(.truncated, header + [0x08, 0x05, 0x61])
        expect(.valueLimit, header + [0x0D, 0x05, 0, 0, 0, 0, 0], limits: ArchiveLimits(maxValues: 5))
        expect(.sizeLimit, header + [0x08, 0x04, 1, 2, 3, 4], limits: ArchiveLimits(maxBytes: 10))
        expect(.lengthLimit, header + [0x08, 0x04, 1, 2, 3, 4], limits: ArchiveLimits(maxDataLength: 3))
    }

    func testReferencesMustPointBackwards() {
        expect(.badReference, header + [0x0D, 0x02, 0x07, 0x00, 0x06, 0x01, 0x61])  // reference before definition
        expect(.badReference, header + [0x0D, 0x02, 0x12, 0x00, 0x13, 0x01])
        expect(.badReference, header + [0x07] + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
        expect(.cycle, header + [0x12, 0x12, 0x13, 0x00])
        expect(.cycle, header + [0x12, 0x0E, 0x01, 0x00, 0x01, 0x6B, 0x13, 0x00])
    }

    func testEveryUndefinedTagIsRejected() {
        for tag in 0x14...0xFF { expect(.unknownTag, header + [UInt8(tag)]) }
    }

    func testNonMinimalVarintsAreRejectedEverywhere() {
        expect(.nonMinimalVarint, header + [0x03, 0x80, 0x00])  // int
        expect(.nonMinimalVarint, header + [0x0D, 0x80, 0x00])  // count
        expect(.nonMinimalVarint, header + [0x06, 0x81, 0x00, 0x61])  // length
        expect(.nonMinimalVarint, header + [0x0E, 0x01, 0x80, 0x00, 0x00, 0x00])  // key slot
    }
}
