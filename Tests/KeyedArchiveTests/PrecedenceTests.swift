import Foundation
import KeyedArchive
import XCTest

/// Which error wins when several rules break at once, and how the limits count (SPEC.md Part 2 §A2, §A3,
/// §A5, §A7). Each test builds the exact bytes; `kca_reader.py` checks the same inputs in `check_archives.py`.
final class PrecedenceTests: XCTestCase {
    let unsorted: [UInt8] = [0x89, 0x4B, 0x43, 0x41, 0x01, 0x00]
    let sorted: [UInt8] = [0x89, 0x4B, 0x43, 0x41, 0x01, 0x01]

    /// The error reading `bytes` gives, or nil if they decode.
    func code(_ bytes: [UInt8], _ limits: ArchiveLimits = .default) -> ArchiveError.Code? {
        do {
            _ = try ArchiveSerialization.value(from: bytes, limits: limits)
            return nil
        } catch {
            return (error as? ArchiveError)?.code ?? ArchiveError.Code(rawValue: "not an ArchiveError: \(error)")
        }
    }

    func varint(_ n: UInt64) -> [UInt8] {
        var n = n
        var out: [UInt8] = []
        while n >= 0x80 {
            out.append(UInt8(n & 0x7F) | 0x80)
            n >>= 7
        }
        return out + [UInt8(n)]
    }

    // MARK: §A2 header

    func testShortHeaderIsTruncatedUnlessTheMagicDiffers() {
        XCTAssertEqual(code([0x89, 0x4B, 0x43, 0x41, 0x02]), .truncated)  // version byte not looked at
        XCTAssertEqual(code([0x89, 0x4B, 0x43, 0x41, 0x01]), .truncated)
        XCTAssertEqual(code([0x89, 0x4B, 0x43, 0x41]), .truncated)
        XCTAssertEqual(code([]), .truncated)
        XCTAssertEqual(code([0x89, 0x4B, 0x43, 0x42, 0x02]), .notAnArchive)
        XCTAssertEqual(code([0x00]), .notAnArchive)
        // Full header: version before flags; ARCHIVE_MAX before everything.
        XCTAssertEqual(code([0x89, 0x4B, 0x43, 0x41, 0x02, 0xFE]), .unsupportedVersion)
        XCTAssertEqual(code([0x89, 0x4B, 0x43, 0x41, 0x02], ArchiveLimits(maxBytes: 4)), .sizeLimit)
    }

    // MARK: §A3 lengths and counts

    func testLengthLimitBeforeTruncation() {
        let over = varint(16_777_217)  // 81 80 80 08
        XCTAssertEqual(over, [0x81, 0x80, 0x80, 0x08])
        XCTAssertEqual(code(unsorted + [0x06] + over), .lengthLimit)
        XCTAssertEqual(code(unsorted + [0x08] + over), .lengthLimit)
        XCTAssertEqual(code(unsorted + [0x0B, 0x00] + over), .lengthLimit)  // a string slot too
        XCTAssertEqual(code(unsorted + [0x06, 0x05, 0x61]), .truncated)
        XCTAssertEqual(code(unsorted + [0x08, 0x05, 0x61]), .truncated)
    }

    func testCountExceedsInputBeforeValueLimit() {
        XCTAssertEqual(code(unsorted + [0x0D] + varint(2_000_000)), .countExceedsInput)
        let small = ArchiveLimits(maxValues: 3)
        XCTAssertEqual(code(unsorted + [0x0D, 0x05, 0x00, 0x00], small), .countExceedsInput)
        XCTAssertEqual(code(unsorted + [0x0D, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00], small), .valueLimit)
    }

    /// The count check includes the container itself: items read so far (container included) + count.
    func testCountCheckIncludesTheContainer() {
        XCTAssertNil(code(unsorted + [0x0D, 0x02, 0x00, 0x00], ArchiveLimits(maxValues: 3)))
        XCTAssertEqual(code(unsorted + [0x0D, 0x02, 0x00, 0x00], ArchiveLimits(maxValues: 2)), .valueLimit)
        // Checked at the container, before its first element (an unknown tag) is read.
        XCTAssertEqual(code(unsorted + [0x0D, 0x02, 0xFF, 0x00], ArchiveLimits(maxValues: 2)), .valueLimit)
    }

    /// An any-key dictionary's count stands for `count` items against VALUES_MAX (not 2 × count); a dictionary's
    /// and an object's for `count` too (key slots are not items).
    func testAnyKeyDictionaryCountStandsForCountItems() {
        let limits = ArchiveLimits(maxValues: 4)
        // 1 + 2 ≤ 4 passes at the container (1 + 4 would not): the unknown tag of the first key is met first.
        XCTAssertEqual(code(unsorted + [0x0F, 0x02, 0xFF, 0x00, 0x00, 0x00], limits), .unknownTag)
        // The fifth item still breaks VALUES_MAX, before its tag is read.
        XCTAssertEqual(code(unsorted + [0x0F, 0x02, 0x00, 0x01, 0x02, 0xFF], limits), .valueLimit)
        XCTAssertNil(code(unsorted + [0x0F, 0x02, 0x00, 0x01, 0x02, 0x03, 0x02], ArchiveLimits(maxValues: 5)))
        // Dictionary: 2 entries = 3 items with the container.
        XCTAssertNil(
            code(
                unsorted + [0x0E, 0x02, 0x00, 0x01, 0x61, 0x00, 0x00, 0x01, 0x62, 0x00],
                ArchiveLimits(maxValues: 3)))
    }

    // MARK: §A3 expansion

    /// A reference adds E(def) to the expansion total, not 1 + E(def).
    func testReferenceAddsTheExpandedSizeOfItsDefinition() {
        // array 1 + definition (1 + null 1 = E 2) + reference 2 = 5.
        let bytes = unsorted + [0x0D, 0x02, 0x12, 0x00, 0x13, 0x00]
        XCTAssertNil(code(bytes, ArchiveLimits(maxExpandedValues: 5)))
        XCTAssertEqual(code(bytes, ArchiveLimits(maxExpandedValues: 4)), .expansionLimit)
        // shared.kca stands for 16 (1 + 4 + 4 + 3 + 4).
        let shared = ArchiveFixtures.golden.first { $0.name == "shared.kca" }!
        let file = try! ArchiveSerialization.bytes(from: shared.value, options: .deterministic)
        XCTAssertNil(code(file, ArchiveLimits(maxExpandedValues: 16)))
        XCTAssertEqual(code(file, ArchiveLimits(maxExpandedValues: 15)), .expansionLimit)
    }

    /// Every item but a reference adds 1 right after its tag is read, before the tag or payload is checked.
    func testExpansionCountedBeforeTheTagIsChecked() {
        XCTAssertEqual(code(unsorted + [0x0D, 0x01, 0xFF], ArchiveLimits(maxExpandedValues: 1)), .expansionLimit)
        XCTAssertEqual(code(unsorted + [0x0D, 0x01, 0xFF], ArchiveLimits(maxExpandedValues: 2)), .unknownTag)
        // A reference: index, then bad reference / cycle, then its E(def).
        XCTAssertEqual(
            code(unsorted + [0x0D, 0x02, 0x12, 0x00, 0x13, 0x01], ArchiveLimits(maxExpandedValues: 3)),
            .badReference)
        XCTAssertEqual(code(unsorted + [0x12, 0x13, 0x01]), .badReference)
        XCTAssertEqual(code(unsorted + [0x12, 0x13, 0x00]), .cycle)
    }

    // MARK: §A5.5 / §A6 duplicate and order

    /// In a sorted archive the order check comes first: equal keys (by bytes) are out of order.
    func testEqualKeysInASortedArchiveAreNonCanonical() {
        let byReference: [UInt8] = [0x0E, 0x02, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x00]
        XCTAssertEqual(code(sorted + byReference), .nonCanonical)
        XCTAssertEqual(code(unsorted + byReference), .duplicateKey)
        let fields: [UInt8] = [0x11, 0x00, 0x01, 0x43, 0x02, 0x00, 0x01, 0x6B, 0x00, 0x02, 0x00]
        XCTAssertEqual(code(sorted + fields), .nonCanonical)
        XCTAssertEqual(code(unsorted + fields), .duplicateKey)
        // Set elements and any-key keys: equal sort keys.
        XCTAssertEqual(code(sorted + [0x10, 0x02, 0x00, 0x00]), .nonCanonical)
        XCTAssertEqual(code(unsorted + [0x10, 0x02, 0x00, 0x00]), .duplicateKey)
        XCTAssertEqual(code(sorted + [0x0F, 0x02, 0x00, 0x00, 0x00, 0x00]), .nonCanonical)
        XCTAssertEqual(code(unsorted + [0x0F, 0x02, 0x00, 0x00, 0x00, 0x00]), .duplicateKey)
    }

    /// Canonically equivalent keys with different bytes: ascending bytes pass the order check and are
    /// duplicates; descending bytes are out of order.
    func testCanonicallyEqualKeysInASortedArchive() {
        let decomposed: [UInt8] = [0x00, 0x03, 0x65, 0xCC, 0x81, 0x00]  // slot "e\u{301}", null
        let precomposed: [UInt8] = [0x00, 0x02, 0xC3, 0xA9, 0x00]  // slot "é", null
        XCTAssertEqual(code(sorted + [0x0E, 0x02] + decomposed + precomposed), .duplicateKey)
        XCTAssertEqual(code(sorted + [0x0E, 0x02] + precomposed + decomposed), .nonCanonical)
        // Set: sort keys 06 02 c3 a9 < 06 03 65 cc 81.
        XCTAssertEqual(code(sorted + [0x10, 0x02, 0x06, 0x02, 0xC3, 0xA9, 0x06, 0x03, 0x65, 0xCC, 0x81]), .duplicateKey)
        XCTAssertEqual(code(sorted + [0x10, 0x02, 0x06, 0x03, 0x65, 0xCC, 0x81, 0x06, 0x02, 0xC3, 0xA9]), .nonCanonical)
    }

    // MARK: §A7 order of the checks before an item

    /// DEPTH_MAX and VALUES_MAX are checked before the item's tag is read: running out of input where an item
    /// is due at depth 513 is a depth error, not a truncation.
    func testDepthCheckedBeforeTheTag() {
        let arrays = [UInt8](repeating: 0, count: 511).flatMap { _ -> [UInt8] in [0x0D, 0x01] }
        // dictionary at depth 512 with its key read, its value (depth 513) missing
        XCTAssertEqual(code(unsorted + arrays + [0x0E, 0x01, 0x00, 0x01, 0x61]), .depthLimit)
        // 512 arrays, then a string tag whose length is missing
        XCTAssertEqual(code(unsorted + arrays + [0x0D, 0x01, 0x06]), .depthLimit)
        // ... but an entry's key slot is read before the depth check of its value.
        XCTAssertEqual(code(unsorted + arrays + [0x0E, 0x01, 0x00, 0x05, 0x61]), .truncated)
        // 511 arrays, then a string tag whose length is missing: depth 512 is allowed.
        XCTAssertEqual(code(unsorted + arrays + [0x06]), .truncated)
    }

    func testValueLimitCheckedBeforeTheTag() {
        // two shared definitions, a third item due with no input left
        XCTAssertEqual(code(unsorted + [0x12, 0x12], ArchiveLimits(maxValues: 2)), .valueLimit)
        XCTAssertEqual(code(unsorted + [0x12, 0x12], ArchiveLimits(maxValues: 3)), .truncated)
    }

    /// An object: class name slot, then the empty-name check, then the count.
    func testObjectHeaderOrder() {
        XCTAssertEqual(code(unsorted + [0x11, 0x00, 0x00, 0x09]), .invalidValue)
        XCTAssertEqual(code(unsorted + [0x11, 0x00, 0x01, 0x43, 0x09]), .countExceedsInput)
    }

    /// §A9: the empty.kca vector, item by item.
    func testEmptyVectorTable() throws {
        let bytes: [UInt8] =
            sorted + [
                0x0D, 0x07, 0x0D, 0x00, 0x0E, 0x00, 0x0F, 0x00, 0x10, 0x00, 0x06, 0x00,
                0x08, 0x00, 0x11, 0x00, 0x05, 0x45, 0x6D, 0x70, 0x74, 0x79, 0x00
            ]
        let empty = ArchiveFixtures.golden.first { $0.name == "empty.kca" }!
        XCTAssertEqual(try ArchiveSerialization.bytes(from: empty.value, options: .deterministic), bytes)
        XCTAssertEqual(try ArchiveSerialization.value(from: bytes), empty.value)
    }
}
