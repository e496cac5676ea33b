import Crafting
import Foundation
import XCTest

@testable import KeyedArchive

/// Issue 9: a binary plist's objects are read once per offset, and objects may not overlap, so what a
/// reader builds is bounded by the input's size, not by its offset table (a 2 MB plist whose table pointed
/// many entries at the same bytes took 1.86 GiB; a 10 MB one aborted).
final class PlistOffsetTests: XCTestCase {
    func testEntriesAtOneOffsetAreOneObject() throws {
        let plist = try PropertyList(binary: ArchiveCrafting.aliasedPlist(dataBytes: 1_000, aliases: 500))
        guard case .array(let items) = plist else { return XCTFail("not an array") }
        XCTAssertEqual(items.count, 500)
        XCTAssert(items.allSatisfy { $0 == .data(Data(repeating: 0x5A, count: 1_000)) })
    }

    func testOverlappingObjectsAreRefused() {
        // A data object of 10 bytes whose first payload byte is read as a second object (data of 4 bytes).
        let outer: [UInt8] = [0x4A, 0x44] + [UInt8](repeating: 1, count: 9)
        let array: [UInt8] = [0xA2, 0, 1]
        var bytes = ArchiveCrafting.binaryPlist(objects: [outer, array], table: [0, 0, 1], top: 2, refSize: 1)
        XCTAssertNoThrow(try PropertyList(binary: bytes), "two entries at one offset are one object")
        // Point entry 1 at offset 9, inside the data.
        let tableStart = 8 + outer.count + array.count
        bytes[tableStart + 4 + 3] = 9
        XCTAssertThrowsError(try PropertyList(binary: bytes)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .invalidPlistOffset)
        }
    }

    /// The attack at full size: a 12 MB file whose 999,999 table entries all point at one 4 MB data object is
    /// read as that one object (before issue 9: 999,999 copies, 4 TB).
    func testTheReportedPlistIsBounded() throws {
        let bytes = ArchiveCrafting.aliasedPlist(dataBytes: 4_000_000, aliases: 999_999)
        let plist = try PropertyList(binary: bytes)
        guard case .array(let items) = plist else { return XCTFail("not an array") }
        XCTAssertEqual(items.count, 999_999)
    }
}
