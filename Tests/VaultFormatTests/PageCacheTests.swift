import XCTest

@testable import VaultFormat

/// The page cache stays full and gives up its oldest page for each new one (first in, first out), bounded in
/// pages and in bytes.
final class PageCacheTests: XCTestCase {
    func ref(_ n: UInt64) -> PageRef { PageRef(id: ID128(hi: 0, lo: n), offset: n, length: 1, count: 0) }
    let page = Page(tree: .items, level: 0, content: .leaf([LeafEntry(key: [1])]))

    func testAFullCacheGivesUpItsOldestPage() {
        var cache = PageCache<Page>(capacity: 3, maxBytes: 1 << 20)
        for n: UInt64 in 1...3 { cache.insert(page, bytes: 10, at: ref(n)) }
        cache.insert(page, bytes: 10, at: ref(2))  // already there: nothing is given up
        XCTAssertNotNil(cache[ref(1)])
        for n: UInt64 in 4...5 { cache.insert(page, bytes: 10, at: ref(n)) }
        XCTAssertEqual((UInt64(1)...5).map { cache[ref($0)] != nil }, [false, false, true, true, true])
        for n: UInt64 in 6...9 { cache.insert(page, bytes: 10, at: ref(n)) }
        XCTAssertEqual((UInt64(1)...9).filter { cache[ref($0)] != nil }, [7, 8, 9])
        // Many more than the capacity: the oldest keys are dropped, the last three kept.
        for n: UInt64 in 10...5_000 { cache.insert(page, bytes: 10, at: ref(n)) }
        XCTAssertEqual((UInt64(1)...5_000).filter { cache[ref($0)] != nil }, [4_998, 4_999, 5_000])
    }

    func testLargePagesAreGivenUpByTheirBytes() {
        var cache = PageCache<Page>(capacity: 100, maxBytes: 1_000)
        for n: UInt64 in 1...10 { cache.insert(page, bytes: 100, at: ref(n)) }
        XCTAssertEqual((UInt64(1)...10).filter { cache[ref($0)] != nil }.count, 10)
        cache.insert(page, bytes: 450, at: ref(11))
        XCTAssertEqual((UInt64(1)...11).filter { cache[ref($0)] != nil }, [6, 7, 8, 9, 10, 11])
        // A page larger than the whole budget is not kept, and the others stay.
        cache.insert(page, bytes: 5_000, at: ref(12))
        XCTAssertEqual((UInt64(1)...12).filter { cache[ref($0)] != nil }, [6, 7, 8, 9, 10, 11])
    }
}
