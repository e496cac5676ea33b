import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// A fresh keychain directory per test, and a store over it with an explicit group list.
class KeychainTestCase: XCTestCase {
    var root: String!
    var dir: KeychainDirectory { KeychainDirectory(path: root + "/kc", statePath: root + "/state") }

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "kcar-keychain-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: root) }

    func store(_ groups: [String]? = ["app.shared", "app.private"]) throws -> KeychainStore {
        try KeychainStore(directory: dir, accessGroups: groups, lockTimeout: 5)
    }

    func attrs(_ pairs: [String: AttributeValue]) -> Attributes { Attributes(pairs) }

    func assertStatus<T>(
        _ expected: KeychainStatus, _ body: @autoclosure () throws -> T,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try body(), file: file, line: line) { e in
            XCTAssertEqual((e as? KeychainError)?.status, expected, "\(e)", file: file, line: line)
        }
    }

    func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
    }
}
