import Foundation
import TestSupport
import VaultFormat
import XCTest

/// A temporary folder per test, the fixtures' key file, and attributes for service/account items.
class VaultTestCase: XCTestCase {
    var dir: String!
    let key = SecureBytes(copying: Recipes.keyFile)
    var secret: UnlockSecret { .keyFile(key) }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func attrs(_ s: String, _ a: String) -> Attributes {
        var x = Attributes()
        x[AttributeName.service] = .string(s)
        x[AttributeName.account] = .string(a)
        return x
    }
}
