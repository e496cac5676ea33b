import KeyedArchive
import XCTest

final class KeyedArchivePlaceholderTests: XCTestCase {
    func testModuleLinks() { _ = KeyedArchive.self }
}
