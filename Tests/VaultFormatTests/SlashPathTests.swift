import TestSupport
import XCTest

@testable import VaultFormat

/// `slashSeparated` splits at `/` bytes by the rules of `Collection.split` (maxSplits, empty parts), over the
/// string's contiguous UTF-8 instead of the generic split of its UTF-8 view.
final class SlashPathTests: XCTestCase {
    func testSlashSeparatedSplitsAsCollectionSplitDoesOnSeededStrings() {
        var rng = SplitMix64(state: 0x51A5)
        // `/` alone, doubled, at the ends, and beside a combining mark or a multi-byte character.
        let pieces = ["a", "/", "//", "é", "\u{301}", "\u{0601}", ".", "名", ""]
        for _ in 0..<4000 {
            let s = (0..<rng.below(10)).map { _ in pieces[rng.below(pieces.count)] }.joined()
            let sub = s.dropFirst(rng.below(3))
            for maxSplits in [0, 1, 2, 5, Int.max] {
                for omitting in [false, true] {
                    func expected(_ t: some StringProtocol) -> [String] {
                        t.utf8.split(separator: 0x2F, maxSplits: maxSplits, omittingEmptySubsequences: omitting).map {
                            String(decoding: $0, as: UTF8.self)
                        }
                    }
                    XCTAssertEqual(s.slashSeparated(maxSplits: maxSplits, omittingEmpty: omitting), expected(s), s)
                    XCTAssertEqual(
                        sub.slashSeparated(maxSplits: maxSplits, omittingEmpty: omitting), expected(sub), String(sub))
                }
            }
        }
    }
}
