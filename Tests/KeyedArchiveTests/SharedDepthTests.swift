import Crafting
import Foundation
import XCTest

@testable import KeyedArchive

/// Issue 9: `DEPTH_MAX` bounds the value an archive stands for, shared references expanded (SPEC.md Part 2
/// §A3), so no value read from an archive is deeper than 512 levels: printing, comparing, hashing and freeing
/// it cannot overflow the stack, and writing accepts exactly what reading accepts, in every hash order.
final class SharedDepthTests: XCTestCase {
    func code(_ bytes: [UInt8], _ limits: ArchiveLimits = .default) -> ArchiveError.Code? {
        do {
            _ = try ArchiveSerialization.value(from: bytes, limits: limits)
            return nil
        } catch {
            return (error as? ArchiveError)?.code
        }
    }

    /// d(i) stands for 2i + 2 levels, referenced from depth 4: d(254) reaches 512, d(255) 514.
    func testAChainOfDefinitionsIsBoundedByTheDepthOfWhatItStandsFor() throws {
        let deepest = try ArchiveSerialization.value(from: ArchiveCrafting.sharedChain(255))
        XCTAssertNil(code(ArchiveCrafting.sharedChain(255)))
        XCTAssertEqual(code(ArchiveCrafting.sharedChain(256)), .depthLimit)
        // 100 definitions of 500 levels each (100 KB): each item within 503 levels, the last one 50,000 deep.
        // Before issue 9 it was read, and printing, comparing or freeing it overflowed the stack.
        XCTAssertEqual(code(ArchiveCrafting.sharedChain(100, levels: 500)), .depthLimit)
        XCTAssertNil(code(ArchiveCrafting.sharedChain(2, levels: 500)))
        // The deepest accepted value compares, hashes, prints, writes and frees without trouble.
        let copy = try ArchiveSerialization.value(from: ArchiveCrafting.sharedChain(255))
        XCTAssertEqual(deepest, copy)
        XCTAssertEqual(deepest.hashValue, copy.hashValue)
        XCTAssertFalse(deepest.description.isEmpty)
        XCTAssertEqual(try ArchiveSerialization.bytes(from: deepest), ArchiveCrafting.sharedChain(255))
    }

    func testAMalformedArchiveAfterAChainReportsItsOwnError() {
        XCTAssertEqual(code(ArchiveCrafting.sharedChain(200, then: [0xFF])), .unknownTag)
        XCTAssertEqual(code(ArchiveCrafting.sharedChain(2, levels: 500, then: [0xFF])), .unknownTag)
        // Before issue 9: the error was thrown, and freeing the chain read so far overflowed the stack.
        XCTAssertEqual(code(ArchiveCrafting.sharedChain(100, levels: 500, then: [0xFF])), .depthLimit)
    }

    /// The writer applies the same rule: a chain of boxes built in memory is refused past 512 levels.
    func testTheWriterRefusesWhatTheReaderWould() throws {
        var box = ArchiveValue.null.makeShared()
        var items: [ArchiveValue] = [box]
        for _ in 1..<256 {
            box = ArchiveValue.array([box]).makeShared()
            items.append(box)
        }
        XCTAssertThrowsError(try ArchiveSerialization.bytes(from: .array(items))) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .depthLimit)
        }
        XCTAssertNoThrow(try ArchiveSerialization.bytes(from: .array(Array(items.dropLast()))))
    }

    /// Set elements referencing one deep definition: which element holds the definition depends on the write
    /// order (the set's hash order when unsorted), and its sort key (fresh tables) holds it too; sorted and
    /// unsorted writing, and reading, give the same answer at every height around the limit.
    func testSortKeysAndWriteOrderDoNotChangeTheAnswer() throws {
        for levels in 503...511 {
            var d: ArchiveValue = .null
            for _ in 0..<levels { d = .array([d]) }
            let box = d.makeShared()
            let value = ArchiveValue.set(Set((0..<5).map { ArchiveValue.array([box, .int(Int64($0))]) }))
            var answers: Set<Bool> = []
            for options in [ArchiveWritingOptions.deterministic, []] {
                do {
                    let bytes = try ArchiveSerialization.bytes(from: value, options: options)
                    XCTAssertEqual(try ArchiveSerialization.value(from: bytes), value)
                    answers.insert(true)
                } catch let e as ArchiveError {
                    XCTAssertEqual(e.code, .depthLimit)
                    answers.insert(false)
                }
            }
            XCTAssertEqual(answers.count, 1, "\(levels) levels: sorted and unsorted writing disagree")
            // Root set 1, element 2, box 3, then the levels of d and its null.
            XCTAssertEqual(answers.first, 4 + levels <= 512, "\(levels) levels")
        }
    }
}
