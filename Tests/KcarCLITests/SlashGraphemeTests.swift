import Foundation
import XCTest

@testable import KcarCLI
@testable import VaultFormat

/// A `/` that a grapheme joins to a neighbour (a prepended concatenation mark before it, U+0601; a combining
/// mark after it, U+0301) is no `/` character to Swift's `split`, `hasPrefix` and `contains`, but is a separator
/// to the kernel. `fuzz-index` found an item whose printed name did not select it
/// (`Fixtures/fuzz/index/crash-prepended-mark-hides-a-slash.bin`: service `a\u{0601}`, account `a6`); the same
/// blindness let a link target climb out of extract's folder and a `-C` path start at the root. Names and
/// paths are now split at `/` bytes.
final class SlashGraphemeTests: XCTestCase {
    func item(_ service: String, _ account: String) -> Item {
        Item(
            id: ItemID([UInt8](repeating: 7, count: 16)), itemClass: .genericPassword,
            attributes: Attributes([AttributeName.service: .string(service), AttributeName.account: .string(account)]),
            size: 0,
            location: RecordLocation(
                recordID: ID128(hi: 0, lo: 0), offset: 0, length: 0, member: 0, dataOffset: 0))
    }

    func testNamesParseBackToTheirServiceAndAccount() throws {
        for (service, account) in [
            ("a\u{0601}", "a6"), ("svc", "x\u{0601}/y"), ("svc", "x/\u{301}y"), ("s/\u{301}", "a"), ("\u{0601}", "b")
        ] {
            let name = ItemPath.name(item(service, account))
            let parsed = try XCTUnwrap(ItemPath.parse(name), name)
            XCTAssertEqual(Array(parsed.service.utf8), Array(service.utf8), name)
            XCTAssertEqual(parsed.account.map { Array($0.utf8) }, Array(account.utf8), name)
        }
        // The account's components are the kernel's: extract writes x\u{0601}/y as a folder and a file.
        XCTAssertEqual(ItemPath.components(service: "svc", account: "x\u{0601}/y").count, 3)
        XCTAssertEqual(ItemPath.components(service: "svc", account: "x/\u{301}y").count, 3)
    }

    /// The finding itself: every item of the segment is selected by the name `list` prints for it.
    func testTheFuzzFindingsItemsAreSelectedByTheirNames() throws {
        let url = CLITests.repo.appendingPathComponent("Fixtures/fuzz/index/crash-prepended-mark-hides-a-slash.bin")
        var items: [Item] = []
        for checkpoint in [true, false] {
            try? IndexCodec.forEach([UInt8](try Data(contentsOf: url)), checkpoint: checkpoint) {
                if case .put(let item) = $0 { items.append(item) }
            }
        }
        XCTAssertTrue(items.contains { $0.service == "a\u{0601}" }, "the segment holds the item it was found with")
        for item in items {
            let name = ItemPath.name(item)
            let parsed = try XCTUnwrap(ItemPath.parse(name), name)
            XCTAssertEqual(Array(parsed.service.utf8), Array((item.service ?? "").utf8), name)
            XCTAssertEqual(parsed.account.map { Array($0.utf8) }, item.account.map { Array($0.utf8) }, name)
        }
    }

    func testLinkTargetsThatClimbOutAreRefused() {
        // A top-level link (no folder above it) may not climb at all; one in svc/ may climb once.
        XCTAssertFalse(PackedKind.isContained("../\u{301}x", at: ["link"]), "climbs out, then names \\u{301}x")
        XCTAssertFalse(PackedKind.isContained("/\u{301}etc", at: ["svc", "link"]), "absolute")
        XCTAssertFalse(PackedKind.isContained("a\u{0601}/../../x", at: ["svc", "link"]), "descends, then climbs")
        XCTAssertTrue(PackedKind.isContained("../\u{301}x", at: ["svc", "link"]), "climbs to the folder, stays")
        XCTAssertTrue(PackedKind.isContained("x\u{0601}/y", at: ["link"]))
    }

    func testPathsBelowTheFolderCannotLeaveIt() {
        for path in ["/\u{301}etc/passwd", "../\u{301}x", "a/../\u{301}b/..", "\u{0601}/../.."] {
            XCTAssertThrowsError(try VaultEdit.components(path), path)
        }
        XCTAssertEqual(try VaultEdit.components("a\u{0601}/b"), ["a\u{0601}", "b"])
    }
}
