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
        // Every error a vault throws names its file, those from inside a record too (issue 26).
        XCTAssertEqual(damaged?.path, path)
        XCTAssertTrue(
            damaged?.description.hasPrefix(path + ": damaged record") ?? false, "\(String(describing: damaged))")
    }

    /// `localizedDescription` (what a service logs) says what went wrong and where, not "error 1".
    func testTheLocalizedDescriptionNamesTheFileAndTheCode() throws {
        let path = dir + "/v.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)]) { _ in }
        let other = UnlockSecret.keyFile(SecureBytes(copying: Recipes.otherKeyFile))
        do {
            _ = try Vault.open(path: path, secret: other)
            XCTFail("opened with another key")
        } catch {
            XCTAssertEqual(error.localizedDescription, (error as? VaultError)?.description)
            XCTAssertTrue(error.localizedDescription.contains(path), error.localizedDescription)
            XCTAssertTrue(error.localizedDescription.contains("wrong passphrase or key"), error.localizedDescription)
        }
    }

    /// A failed system call carries its errno, so that a service tells a missing file from a full disk without
    /// reading the message.
    func testAFailedSystemCallCarriesItsErrno() throws {
        let missing = expectError(.io) { _ = try Vault.open(path: dir + "/none.kcv", secret: secret) }
        XCTAssertEqual(missing?.errnoCode, ENOENT)
        let denied = dir + "/sub"
        try FileManager.default.createDirectory(atPath: denied, withIntermediateDirectories: false)
        let inFolder = expectError(.io) { _ = try Vault.open(path: denied + "/x/v.kcv", secret: secret) }
        XCTAssertEqual(inFolder?.errnoCode, ENOENT)
        // Not from a system call: no errno.
        XCTAssertNil(VaultError(.io, "input grew while it was read").errnoCode)
    }

    /// A key of the wrong length is the caller's mistake, not a wrong key.
    func testAKeyOfTheWrongLengthIsAnInvalidArgument() throws {
        let path = dir + "/v.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)]) { _ in }
        for length in [0, 16, 31, 33, 64] {
            let short = UnlockSecret.keyFile(SecureBytes(copying: [UInt8](repeating: 1, count: length)))
            let e = expectError(.invalidArgument) { _ = try Vault.open(path: path, secret: short) }
            XCTAssertTrue(e?.context.contains("holds \(length)") ?? false, "\(String(describing: e))")
            XCTAssertEqual(e?.path, path)
        }
    }

    /// After another process rekeys the vault, an open instance learns that the file was replaced, not that its
    /// key is wrong: the key was right when it opened the file. Both formats.
    func testARekeyByAnotherProcessIsReplacedNotWrongKey() throws {
        for format in [NewVaultFormat.version1, .current()] {
            let path = dir + "/rekeyed.kcv"
            try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: format, overwrite: true) { tx in
                try tx.add(attributes: attrs("s", "a"), value: .bytes([1]))
            }
            let open = try Vault.open(path: path, secret: secret, mode: .write)
            let other = SecureBytes(copying: Recipes.otherKeyFile)
            try Vault.open(path: path, secret: secret, mode: .write).rekey(slots: [.keyFile(other)])
            let refreshed = expectError(.replaced) { try open.refresh() }
            XCTAssertEqual(refreshed?.path, path)
            _ = expectError(.replaced) {
                try open.commit { try $0.add(attributes: self.attrs("s", "b"), value: .bytes([2])) }
            }
            // Opened again with the new key, it is the same vault.
            XCTAssertEqual(try Vault.open(path: path, secret: .keyFile(other)).count, 1)
        }
    }
}
