import XCTest

@testable import VaultFormat

/// The page cache stays full and gives up its oldest page for each new one (first in, first out).
final class PageCacheTests: XCTestCase {
    func testAFullCacheGivesUpItsOldestPage() {
        func ref(_ n: UInt64) -> PageRef { PageRef(id: ID128(hi: 0, lo: n), offset: n, length: 1, count: 0) }
        let page = Page(tree: .items, level: 0, content: .leaf([LeafEntry(key: [1])]))
        var cache = PageCache(capacity: 3)
        for n: UInt64 in 1...3 { cache[ref(n)] = page }
        cache[ref(2)] = page  // already there: nothing is given up
        XCTAssertNotNil(cache[ref(1)])
        for n: UInt64 in 4...5 { cache[ref(n)] = page }
        XCTAssertEqual((UInt64(1)...5).map { cache[ref($0)] != nil }, [false, false, true, true, true])
        for n: UInt64 in 6...9 { cache[ref(n)] = page }
        XCTAssertEqual((UInt64(1)...9).filter { cache[ref($0)] != nil }, [7, 8, 9])
    }
}
