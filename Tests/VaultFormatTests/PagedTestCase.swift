import FixtureRecipes
import Foundation
import VaultFormat
import XCTest

/// What the version 2 tests share: a fresh folder per test, the fixtures' key file, and a keychain-like
/// schema (`genp` keyed by `sync`, `svce`, `acct`; every user attribute indexed).
class PagedTestCase: XCTestCase {
    var dir = ""
    let secret = UnlockSecret.keyFile(SecureBytes(copying: Recipes.keyFile))
    let schema = PagedSchema(classes: ["genp": ClassSchema(keyAttributes: [("sync", .bool(false)), ("svce", .string("")), ("acct", .string(""))])],
                             indexed: ["@*"])

    override func setUp() {
        dir = NSTemporaryDirectory() + "kcar-paged-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }
}
