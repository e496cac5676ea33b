import Foundation
import TestSupport
import VaultFormat
import XCTest

/// The library example of README.md, as written there (with a real key and a temporary folder).
final class ReadmeExampleTests: XCTestCase {
    func testReadmeExample() throws {
        let dir = NSTemporaryDirectory() + "kcar-readme-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/app.kcv"
        let keyPath = dir + "/app.key"
        XCTAssertTrue(FileManager.default.createFile(atPath: keyPath, contents: Data(Recipes.keyFile)))

        let key = try SecureBytes.keyFile(atPath: keyPath)  // 32 bytes, as `kcar keygen app.key` writes them
        try Vault.create(path: path, group: "com.example.shared", slots: [.keyFile(key)]) { tx in
            var attributes = Attributes()
            attributes[AttributeName.service] = .string("example.com")
            attributes[AttributeName.account] = .string("alice")
            try tx.add(class: .genericPassword, attributes: attributes, value: .bytes(Array("hunter2".utf8)))
        }

        let vault = try Vault.open(path: path, secret: .keyFile(key), mode: .write)
        let alice = vault.items.first { $0.account == "alice" }!
        XCTAssertEqual(String(decoding: try vault.read(alice), as: UTF8.self), "hunter2")
        try vault.commit { tx in try tx.update(alice.id, value: .bytes(Array("correct horse".utf8))) }
        XCTAssertTrue(vault.verify().isIntact)
        XCTAssertEqual(try vault.read(vault.item(alice.id)!), Array("correct horse".utf8))
        XCTAssertEqual(vault.formatVersion, 2)

        // Find one item without reading the others (docs/library.md).
        let reader = try Vault.open(path: path, secret: .keyFile(key), itemsOnDemand: true)
        var wanted = Attributes()
        wanted[AttributeName.service] = .string("example.com")
        wanted[AttributeName.account] = .string("alice")
        let found = try XCTUnwrap(try reader.itemIndex?.items(class: .genericPassword, key: wanted).first)
        XCTAssertEqual(String(decoding: try reader.read(found), as: UTF8.self), "correct horse")
    }
}
