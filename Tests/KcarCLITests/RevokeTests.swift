import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Issue 9, item 5: removing a slot is not revocation, `passwd --revoke` is. Proven by splicing a header
/// saved before the removal onto the file after it, as someone who kept a copy of the old header would.
final class RevokeTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-revoke-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(Recipes.keyFile).write(to: URL(fileURLWithPath: dir + "/k1"))
        try Data((0..<32).map { UInt8($0) ^ 0x5A }).write(to: URL(fileURLWithPath: dir + "/k2"))
        try Data("correct horse".utf8).write(to: URL(fileURLWithPath: dir + "/p"))
        try Vault.create(
            path: dir + "/v.kcv", group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            format: .version1
        ) {
            tx in
            var a = Attributes()
            a[AttributeName.service] = .string("s")
            a[AttributeName.account] = .string("a")
            try tx.add(attributes: a, value: .bytes(Array("secret".utf8)))
        }
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// kcar as this class runs it (`KcarRunner`).
    var kcar: KcarRunner { KcarRunner(dir: dir) }

    var vault: [UInt8] { get throws { Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/v.kcv"))) } }

    /// `old`'s header followed by the current file's body.
    func splice(oldHeaderOf old: [UInt8]) throws {
        func headerLength(_ b: [UInt8]) -> Int { (0..<4).reduce(0) { $0 | Int(b[12 + $1]) << (8 * $1) } }
        let now = try vault
        let spliced = Array(old[0..<headerLength(old)]) + Array(now[headerLength(now)...])
        try Data(spliced).write(to: URL(fileURLWithPath: dir + "/spliced.kcv"))
    }

    func testRemovalAloneLeavesOldHeadersWorkingAndSaysSo() throws {
        try kcar(["passwd", "v.kcv", "--key-file", "k1", "--add-key-file", "k2"])
        let old = try vault
        let r = try kcar(["passwd", "v.kcv", "--key-file", "k1", "--remove-slot", "1"])
        XCTAssertTrue(r.err.contains("--revoke"), r.err)
        try kcar(["list", "v.kcv", "--key-file", "k2"], expect: 3)
        try splice(oldHeaderOf: old)
        // What plain removal does not do (documented): the old header still opens the file with the removed key.
        XCTAssertTrue(
            try kcar(["extract", "spliced.kcv", "--key-file", "k2", "--stdout", "s/a"]).output.contains("secret"))
    }

    func testRevokeRekeysSoAnOldHeaderOpensNothing() throws {
        try kcar(["passwd", "v.kcv", "--key-file", "k1", "--add-key-file", "k2"])
        let old = try vault
        let r = try kcar(["passwd", "v.kcv", "--key-file", "k1", "--remove-slot", "1", "--revoke"])
        XCTAssertTrue(r.err.contains("new vault key"), r.err)
        try splice(oldHeaderOf: old)
        let spliced = try kcar(["list", "spliced.kcv", "--key-file", "k2"], expect: 4)
        XCTAssertFalse(spliced.output.contains("s/a"))
        try kcar(["extract", "v.kcv", "--key-file", "k1", "--stdout", "s/a"])
        try kcar(["list", "v.kcv", "--key-file", "k2"], expect: 3)
    }

    /// A kept slot needs its secret to be carried to the new key: refused before anything is written, unless
    /// given again (a key file that opens it is recognised).
    func testRevokeRefusesToDropASlotItCannotCarry() throws {
        try kcar(["passwd", "v.kcv", "--key-file", "k1", "--add-key-file", "k2"])
        try kcar([
            "passwd", "v.kcv", "--key-file", "k1", "--add-passphrase", "--new-passphrase-file", "p", "--kdf-memory",
            "8", "--kdf-passes", "1"
        ])
        let before = try vault
        let r = try kcar(["passwd", "v.kcv", "--key-file", "k1", "--remove-slot", "1", "--revoke"], expect: 2)
        XCTAssertTrue(r.err.contains("slot 2 (passphrase)"), r.err)
        XCTAssertEqual(try vault, before)
        // Slot 1 (k2) is kept when k2 is given again; slot 2 is removed and not re-added.
        try kcar(["passwd", "v.kcv", "--key-file", "k1", "--remove-slot", "2", "--add-key-file", "k2", "--revoke"])
        try kcar(["list", "v.kcv", "--key-file", "k2"])
    }

    /// A passphrase change with --revoke: the old passphrase no longer opens the file through an old header.
    func testPassphraseChangeWithRevoke() throws {
        try Data("old passphrase".utf8).write(to: URL(fileURLWithPath: dir + "/p1"))
        try Data("new passphrase".utf8).write(to: URL(fileURLWithPath: dir + "/p2"))
        let kdf = ["--kdf-memory", "8", "--kdf-passes", "1"]
        try kcar(["passwd", "v.kcv", "--key-file", "k1", "--add-passphrase", "--new-passphrase-file", "p1"] + kdf)
        let old = try vault
        let plain = try kcar(["passwd", "v.kcv", "--passphrase-file", "p1", "--new-passphrase-file", "p2"] + kdf)
        XCTAssertTrue(plain.err.contains("--revoke"), plain.err)
        try splice(oldHeaderOf: old)
        try kcar(["list", "spliced.kcv", "--passphrase-file", "p1"])  // plain change: the old header still opens it
        let before = try vault
        // Without other slots to keep it is `passwd --revoke`; here slot 0 (k1) stays, so the change is spelled out.
        let r = try kcar(
            ["passwd", "v.kcv", "--passphrase-file", "p2", "--new-passphrase-file", "p1", "--revoke"] + kdf, expect: 2)
        XCTAssertTrue(r.err.contains("slot 0 (key file)"), r.err)
        try kcar(
            [
                "passwd", "v.kcv", "--key-file", "k1", "--remove-slot", "1", "--add-passphrase",
                "--new-passphrase-file", "p1", "--revoke"
            ] + kdf)
        try kcar(["list", "v.kcv", "--passphrase-file", "p1"])
        try kcar(["list", "v.kcv", "--key-file", "k1"])
        try splice(oldHeaderOf: before)
        try kcar(["list", "spliced.kcv", "--passphrase-file", "p2"], expect: 4)
    }
}
