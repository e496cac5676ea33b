import Foundation
import XCTest

/// Issue 13, item 8: rekey keeps every slot it can wrap again and never drops one silently; passwd tries
/// every secret given; update and delete have --dry-run and count; pack --group reads KCAR_KEYCHAIN; a
/// rolled-back group does not stop groups and find for the others.
extension KeychainCLITests {
    var kdf: [String] { ["--kdf-memory", "8", "--kdf-passes", "1"] }

    func slots(_ vault: String, _ secret: [String]) throws -> [String] {
        try kcar(["info", vault] + secret).out.split(separator: "\n").filter { $0.hasPrefix("slot ") }
            .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) }
    }

    func testRekeyKeepsTheSlotsWhoseSecretsAreGivenAndRefusesToDropOthersSilently() throws {
        try kcar(["keygen", "k"])
        try kcar(["keygen", "x", "--x25519"])
        try FileManager.default.createDirectory(atPath: dir + "/src/svc", withIntermediateDirectories: true)
        try Data("value".utf8).write(to: URL(fileURLWithPath: dir + "/src/svc/a"))
        try Data("pw\n".utf8).write(to: URL(fileURLWithPath: dir + "/pw"))
        try kcar(["pack", "v.kcv", "src", "--key-file", "k", "--passphrase-file", "pw", "--recipient", "x.pub"] + kdf)
        let before = try Data(contentsOf: URL(fileURLWithPath: dir + "/v.kcv"))

        // Only the key file given: the passphrase and X25519 slots would be lost, so nothing is written.
        let refused = try kcar(["rekey", "v.kcv", "--key-file", "k"], expect: 2)
        XCTAssertTrue(refused.err.contains("slot 1 (x25519), slot 2 (passphrase)"), refused.err)
        XCTAssertTrue(refused.err.contains("--drop-slots"), refused.err)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/v.kcv")), before)

        // Every secret given: all three slots kept under the new key, each still opens it.
        let kept = try kcar(["rekey", "v.kcv", "--key-file", "k", "--passphrase-file", "pw", "-i", "x"])
        XCTAssertTrue(kept.err.contains("1 item re-sealed; 3 key slots"), kept.err)
        XCTAssertNotEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/v.kcv")), before)
        XCTAssertEqual(try slots("v.kcv", []), ["key file", "x25519", "passphrase (Argon2id, 8 MiB, 1 pass)"])
        for secret in [["--key-file", "k"], ["--passphrase-file", "pw"], ["--identity", "x"]] {
            XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", "svc/a"] + secret).out, "value", "\(secret)")
        }
        // An added key file already kept is not a second slot.
        try kcar(["rekey", "v.kcv", "--key-file", "k", "--passphrase-file", "pw", "-i", "x", "--add-key-file", "k"])
        XCTAssertEqual(try slots("v.kcv", []).count, 3)

        // --drop-slots drops what cannot be kept, and names it.
        let dropped = try kcar(["rekey", "v.kcv", "--key-file", "k", "--drop-slots"])
        XCTAssertTrue(dropped.err.contains("dropping slot 1 (x25519), slot 2 (passphrase)"), dropped.err)
        XCTAssertEqual(try slots("v.kcv", []), ["key file"])
        try kcar(["list", "v.kcv", "--passphrase-file", "pw"], expect: 3)
        try kcar(["list", "v.kcv", "-i", "x"], expect: 3)

        // The help page says what rekey keeps.
        XCTAssertTrue(try kcar(["rekey", "--help"]).out.contains("--drop-slots"))
    }

    func testPasswdTriesBothTheKeyFileAndThePassphrase() throws {
        try kcar(["keygen", "k"])
        try kcar(["keygen", "other"])
        try FileManager.default.createDirectory(atPath: dir + "/src/svc", withIntermediateDirectories: true)
        try Data("value".utf8).write(to: URL(fileURLWithPath: dir + "/src/svc/a"))
        try Data("pw".utf8).write(to: URL(fileURLWithPath: dir + "/pw"))
        try kcar(["pack", "v.kcv", "src", "--passphrase-file", "pw"] + kdf)
        // The key file does not open it; the passphrase does, and the key file is added.
        try kcar(["passwd", "v.kcv", "--key-file", "other", "--passphrase-file", "pw", "--add-key-file", "k"])
        XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", "svc/a", "--key-file", "k"]).out, "value")
        // Neither opens it: wrong key (exit 3).
        try Data("nope".utf8).write(to: URL(fileURLWithPath: dir + "/bad"))
        try kcar(["list", "v.kcv", "--key-file", "other", "--passphrase-file", "bad"], expect: 3)
    }

    func testUpdateAndDeleteDryRunChangeNothingAndCount() throws {
        try kcar(["add", "--group", "g1", "--service", "api", "--account", "a"], stdin: "1")
        try kcar(["add", "--group", "g2", "--service", "api", "--account", "b"], stdin: "2")
        let vaults = try [kc + "/g1.kcv", kc + "/g2.kcv"].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }

        let u = try kcar(["update", "--service", "api", "--set-label", "L", "--dry-run"])
        XCTAssertEqual(findRows(u.out), ["g1 genp api a", "g2 genp api b"])
        XCTAssertTrue(u.err.contains("would update 2 items (--dry-run: nothing changed)"), u.err)
        let d = try kcar(["delete", "--service", "api", "--account", "b", "--dry-run"])
        XCTAssertEqual(findRows(d.out), ["g2 genp api b"])
        XCTAssertTrue(d.err.contains("would delete 1 item (--dry-run"), d.err)
        try kcar(["delete", "--service", "nothing", "--dry-run"], expect: 6)
        XCTAssertEqual(
            try [kc + "/g1.kcv", kc + "/g2.kcv"].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }, vaults)

        XCTAssertTrue(try kcar(["update", "--service", "api", "--set-label", "L"]).err.contains("updated 2 items"))
        XCTAssertTrue(try kcar(["delete", "--service", "api", "--account", "b"]).err.contains("deleted 1 item\n"))
    }

    func testPackGroupReadsTheKeychainOfKCAR_KEYCHAIN() throws {
        try kcar(["keygen", "k"])
        try kcar(["add", "--group", "personal", "--service", "api", "--account", "me"], stdin: "tok")
        // No --keychain: the keychain is KCAR_KEYCHAIN's, as for every keychain command.
        XCTAssertTrue(
            try kcar(["pack", "out.kcv", "--group", "personal", "--key-file", "k"]).err.contains(
                "packed 1 item into out.kcv"))
        XCTAssertEqual(try kcar(["extract", "out.kcv", "--stdout", "api/me", "--key-file", "k"]).out, "tok")
    }

    func testARolledBackGroupDoesNotHideTheOthersFromGroupsAndFind() throws {
        try kcar(["add", "--group", "good", "--service", "s", "--account", "a"], stdin: "1")
        try kcar(["add", "--group", "old", "--service", "s", "--account", "b"], stdin: "2")
        try FileManager.default.copyItem(atPath: kc + "/old.kcv", toPath: dir + "/old.kcv")
        try kcar(["add", "--group", "old", "--service", "t"], stdin: "3")
        unlink(kc + "/old.kcv")
        try FileManager.default.copyItem(atPath: dir + "/old.kcv", toPath: kc + "/old.kcv")
        // The other group is still listed, and the rolled-back one named on standard error with its exit code.
        let g = try kcar(["groups"], expect: 14)
        XCTAssertEqual(g.out, "ITEMS  GROUP\n    1  good\n")
        XCTAssertTrue(g.err.contains("skipped group old"), g.err)
        let f = try kcar(["find"], expect: 14)
        XCTAssertEqual(findRows(f.out), ["good genp s a"])
        XCTAssertEqual(try kcar(["get", "--service", "s", "--account", "a"], expect: 14).out, "1")
    }
}
