import Foundation
@testable import KeyedArchive
import XCTest

/// Issue 9: `SORT_KEYS_MAX` (SPEC.md Part 2 §A3) bounds the bytes of every sort key reading or writing one
/// archive computes: one shared data value referenced by every element of a set is in every element's sort
/// key (4 MB in 4,000 elements took 13-21 s to convert and 15.7 GB to show).
final class SortKeyBudgetTests: XCTestCase {
    func testSortKeysOfSharedDataAreCounted() throws {
        let bytes = ArchiveCrafting.sharedDataInSet(dataBytes: 1_000, elements: 60)
        let value = try ArchiveSerialization.value(from: bytes)
        // Each element's sort key: 0D 02 12 08 E8 07, 1,000 bytes, 03 zz.
        let small = ArchiveLimits(maxSortKeyBytes: 60 * 1_008 - 1)
        XCTAssertThrowsError(try ArchiveSerialization.value(from: bytes, limits: small)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .sortKeyLimit)
        }
        XCTAssertNoThrow(try ArchiveSerialization.value(from: bytes, limits: ArchiveLimits(maxSortKeyBytes: 60 * 1_008)))
        // The writer counts the same bytes, so it refuses what the reader would.
        XCTAssertThrowsError(try ArchiveSerialization.bytes(from: value, options: .deterministic, limits: small)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .sortKeyLimit)
        }
        XCTAssertEqual(try ArchiveSerialization.bytes(from: value, options: .deterministic), bytes)
    }

    /// Sort keys computed inside other sort keys count too: a set in a set element is sorted for its own
    /// writing and again inside the outer element's sort key; the reader counts the same 14 bytes.
    func testNestedSortKeysCount() throws {
        let inner = ArchiveValue.set([.int(1), .int(2)])  // keys 03 02, 03 04: 4 bytes
        let outer = ArchiveValue.set([inner])  // the element's key 10 02 03 02 03 04 (6), with 4 bytes inside
        let fits = ArchiveLimits(maxSortKeyBytes: 14), short = ArchiveLimits(maxSortKeyBytes: 13)
        let bytes = try ArchiveSerialization.bytes(from: outer, options: .deterministic, limits: fits)
        XCTAssertNoThrow(try ArchiveSerialization.value(from: bytes, limits: fits))
        XCTAssertThrowsError(try ArchiveSerialization.value(from: bytes, limits: short)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .sortKeyLimit)
        }
        XCTAssertThrowsError(try ArchiveSerialization.bytes(from: outer, options: .deterministic, limits: short)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .sortKeyLimit)
        }
    }

    /// The attack at its full size, refused by the default limit before the work is done.
    func testTheReportedArchiveIsRefused() {
        let bytes = ArchiveCrafting.sharedDataInSet(dataBytes: 4_000_000, elements: 63)
        XCTAssertThrowsError(try ArchiveSerialization.value(from: bytes)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .sortKeyLimit)
        }
    }
}
