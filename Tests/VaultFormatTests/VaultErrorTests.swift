import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// What a caller learns from a ``VaultError`` without reading its message: the code, and the file (and merge
/// side) as fields; two errors are equal when their codes are.
final class VaultErrorTests: VaultTestCase {
    func testErrorsAreEqualByCode() {
        XCTAssertEqual(VaultError(.wrongKey, "one"), VaultError(.wrongKey, "another"))
        XCTAssertNotEqual(VaultError(.wrongKey, "same"), VaultError(.truncated, "same"))
        XCTAssertEqual(Set([VaultError(.io, "a"), VaultError(.io, path: "/x", "b")]).count, 1)
    }

    func testErrorsAboutAFileCarryItsPath() throws {
        let path = dir + "/v.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("s", "a"), value: .bytes([1]))
        }
        let other = UnlockSecret.keyFile(SecureBytes(copying: Recipes.otherKeyFile))
        let wrong = expectError(.wrongKey) { _ = try Vault.open(path: path, secret: other) }
        XCTAssertEqual(wrong?.path, path)
        XCTAssertTrue(wrong?.context.contains(path) ?? false, "the message names it too")

        let missing = expectError(.io) { _ = try Vault.open(path: dir + "/none.kcv", secret: secret) }
        XCTAssertEqual(missing?.path, dir + "/none.kcv")

        // Cut inside its header: the error names the file that ends early.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(100).write(to: URL(fileURLWithPath: dir + "/cut.kcv"))
        let cut = expectError(.truncated) { _ = try Vault.open(path: dir + "/cut.kcv", secret: secret) }
        XCTAssertEqual(cut?.path, dir + "/cut.kcv")
        XCTAssertTrue(cut?.description.hasPrefix(dir + "/cut.kcv: truncated") ?? false, "\(String(describing: cut))")

        // An error found inside a record names no file: the caller knows which vault it was reading.
        XCTAssertNil(VaultError(.damagedRecord, "s/a: bad block").path)
    }

    func testErrorsAboutAnItemCarryItsID() throws {
        let path = dir + "/v.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("s", "a"), value: .bytes(Array(repeating: 7, count: 100)))
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        let item = try XCTUnwrap(vault.items.first)
        let unknown = ItemID([UInt8](repeating: 3, count: 16))
        let notFound = expectError(.itemNotFound) { try vault.commit { try $0.delete(unknown) } }
        XCTAssertEqual(notFound?.item, unknown)

        // A byte of the item's record flipped: reading it fails, naming the item.
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[vault.headerLength + Int(item.location.offset) + 20] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reopened = try Vault.open(path: path, secret: secret)
        let damaged = expectError(.damagedRecord) { _ = try reopened.read(reopened.items[0]) }
        XCTAssertEqual(damaged?.item, item.id)
        XCTAssertNil(damaged?.path)
    }
}
