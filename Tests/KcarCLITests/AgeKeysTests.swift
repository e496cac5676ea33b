import Foundation
import KcarCLI
import VaultFormat
import XCTest

/// Issue 13, item 10: age's X25519 keys. kcar's x25519 slots use the same curve and the same 32-byte keys as
/// age's X25519 recipients, so `age1...` recipients, recipients files (`-R`) and age identity files
/// (`AGE-SECRET-KEY-1...`, several `-i`) work with kcar; age's file format is not kcar's and is not read.
final class AgeKeysTests: XCTestCase {
    /// BIP-173's valid strings, and its invalid ones but the one over 90 characters (age, and kcar, have no
    /// length limit).
    static let validBech32 = [
        "A12UEL5L", "a12uel5l",
        "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
        "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
        "11" + String(repeating: "q", count: 82) + "c8247j",
        "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w", "?1ezyfcl"
    ]
    static let invalidBech32: [(String, String)] = [
        ("\u{20}1nwldj5", "HRP character out of range"), ("\u{7F}1axkwrx", "HRP character out of range"),
        ("\u{80}1eym55h", "HRP character out of range"), ("pzry9x0s0muk", "no separator"),
        ("1pzry9x0s0muk", "empty HRP"),
        ("x1b4n0q5v", "invalid data character"), ("li1dgmt3", "too short checksum"),
        ("de1lg7wt\u{FF}", "invalid checksum character"),
        ("A1G7SGD8", "checksum made with the upper-case HRP"), ("10a06t8", "empty HRP"), ("1qzzfhee", "empty HRP"),
        ("A12UeL5L", "mixed case")
    ]
    /// age identities and their recipients, each pair checked with age-keygen -y (age 1.1.1).
    static let agePairs = [
        (
            "AGE-SECRET-KEY-13W6UT6Z3H72N3YY9MXJMPPMN2K0KQGW863HPH258UCUXKLK3S3RQA32XH3",
            "age12v6newahxev3mukn7tmr2ycvu5wa0tzkf2yuwret3j8mjg49mggqnawwlu"
        ),
        (
            "AGE-SECRET-KEY-1XLS8V9YY2HKFFU3QWGHWC7CUTY9A08NSSZU8MAQHECDJC2E26EJQHS7AG7",
            "age18nv85p4lm076rfe5nmkpk8vq66u3eql09ruxalxlfsxu86dlyq0sfgykj4"
        )
    ]

    func testBech32VectorsOfBIP173() {
        for s in Self.validBech32 {
            guard let (hrp, data) = Bech32.decode(s) else { return XCTFail("\(s) is valid bech32") }
            if s.hasPrefix("abcdef") { XCTAssertEqual(Bech32.encode(hrp: hrp, data), s) }
            XCTAssertEqual(hrp, String(s.lowercased()[..<s.lowercased().lastIndex(of: "1")!]))
        }
        for (s, why) in Self.invalidBech32 { XCTAssertNil(Bech32.decode(s), "\(s): \(why)") }
    }

    func testAgeKeysDecodeToTheX25519KeysOfEachOther() throws {
        for (identity, recipient) in Self.agePairs {
            let sk = try XCTUnwrap(AgeKey.identity(Array(identity.utf8)))
            let pk = try XCTUnwrap(AgeKey.recipient(recipient))
            XCTAssertEqual(X25519.publicKey(secretKey: sk), pk)
            XCTAssertEqual(AgeKey.recipientString(pk), recipient)
            // age writes identities in upper case and recipients in lower case; the other case is refused.
            XCTAssertNil(AgeKey.identity(Array(identity.lowercased().utf8)))
            XCTAssertNil(AgeKey.recipient(recipient.uppercased()))
            // One changed character fails the checksum.
            var broken = Array(recipient)
            broken[10] = broken[10] == "q" ? "p" : "q"
            XCTAssertNil(AgeKey.recipient(String(broken)))
        }
        // The right encoding of the wrong thing: a recipient is not an identity, nor a short key a recipient.
        XCTAssertNil(AgeKey.identity(Array(Self.agePairs[0].1.utf8)))
        XCTAssertNil(AgeKey.recipient(Bech32.encode(hrp: "age", [UInt8](repeating: 1, count: 31))))
    }
}

/// The same, through the built binary, with keys from the real age-keygen when it is installed.
extension KeychainCLITests {
    func ageKeygen(_ path: String) throws -> String? {
        guard
            let tool = ["/usr/bin/age-keygen", "/usr/local/bin/age-keygen"].first(
                where: FileManager.default.isExecutableFile)
        else {
            return nil
        }
        let r = try runProcess(tool, ["-o", path], cwd: dir)
        XCTAssertEqual(r.code, 0, r.err)
        return try runProcess(tool, ["-y", path], cwd: dir).out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testAgeRecipientsRecipientsFilesAndIdentities() throws {
        try FileManager.default.createDirectory(atPath: dir + "/src/svc", withIntermediateDirectories: true)
        try Data("value".utf8).write(to: URL(fileURLWithPath: dir + "/src/svc/a"))
        // Alice's key from age-keygen when there is one, else the vector (checked with age-keygen -y).
        var alice = AgeKeysTests.agePairs[0].1
        if let made = try ageKeygen(dir + "/alice.txt") {
            alice = made
        } else {
            try Data("# created: vector\n# public key: \(alice)\n\(AgeKeysTests.agePairs[0].0)\n".utf8)
                .write(to: URL(fileURLWithPath: dir + "/alice.txt"))
        }
        XCTAssertTrue(alice.hasPrefix("age1"))
        try Data("\(AgeKeysTests.agePairs[1].0)\n".utf8).write(to: URL(fileURLWithPath: dir + "/bob.txt"))
        try kcar(["keygen", "carol", "--x25519"])
        try kcar(["keygen", "k"])

        // An age1 recipient given directly.
        try kcar(["pack", "a.kcv", "src", "-r", alice])
        XCTAssertEqual(try kcar(["extract", "a.kcv", "--stdout", "svc/a", "-i", dir + "/alice.txt"]).out, "value")
        try kcar(["list", "a.kcv", "-i", dir + "/bob.txt"], expect: 3)

        // A recipients file as age reads one: comments, blank lines, age1 and hex recipients.
        let carol = try String(contentsOfFile: dir + "/carol.pub", encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        try Data(
            "# the team\n\(alice)\n\n  \(AgeKeysTests.agePairs[1].1)  \n# carol, kcar keygen --x25519\n\(carol)\n".utf8
        )
        .write(to: URL(fileURLWithPath: dir + "/team.txt"))
        try kcar(["pack", "t.kcv", "src", "-R", "team.txt"])
        XCTAssertEqual(try kcar(["info", "t.kcv"]).out.components(separatedBy: "x25519").count - 1, 3)
        for identity in ["alice.txt", "bob.txt", "carol"] {
            XCTAssertEqual(try kcar(["extract", "t.kcv", "--stdout", "svc/a", "-i", identity]).out, "value", identity)
        }
        // Several identities: tried in turn, the wrong ones first.
        XCTAssertEqual(
            try kcar(["extract", "a.kcv", "--stdout", "svc/a", "-i", "k", "-i", "bob.txt", "-i", "alice.txt"]).out,
            "value")
        // An identity file holding several keys: each is tried.
        try Data(
            (try String(contentsOfFile: dir + "/bob.txt", encoding: .utf8)
                + (try String(contentsOfFile: dir + "/alice.txt", encoding: .utf8))).utf8
        ).write(to: URL(fileURLWithPath: dir + "/both.txt"))
        try kcar(["list", "a.kcv", "-i", "both.txt"])

        // passwd adds age recipients to an existing vault.
        try kcar(["pack", "k.kcv", "src", "--key-file", "k"])
        try kcar(["passwd", "k.kcv", "--key-file", "k", "--add-recipient", alice, "--add-recipients-file", "team.txt"])
        try kcar(["list", "k.kcv", "-i", "alice.txt"])
        try kcar(["list", "k.kcv", "-i", "carol"])

        // What is not an X25519 recipient or identity is refused with the line that is wrong.
        try Data("age1xyz\n".utf8).write(to: URL(fileURLWithPath: dir + "/bad.txt"))
        XCTAssertTrue(try kcar(["pack", "b.kcv", "src", "-R", "bad.txt"], expect: 2).err.contains("bad.txt, line 1"))
        try Data("# fine\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG\n".utf8).write(
            to: URL(fileURLWithPath: dir + "/ssh.txt"))
        XCTAssertTrue(try kcar(["pack", "b.kcv", "src", "-R", "ssh.txt"], expect: 2).err.contains("ssh.txt, line 2"))
        XCTAssertTrue(try kcar(["list", "a.kcv", "-i", "team.txt"], expect: 2).err.contains("team.txt, line 2"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/b.kcv"))
        // A damaged identity line is named by its number; no line of the file is echoed.
        let secret = AgeKeysTests.agePairs[1].0
        try Data("\(secret)\n\(secret.dropLast())\n".utf8).write(to: URL(fileURLWithPath: dir + "/damaged.txt"))
        let damaged = try kcar(["list", "a.kcv", "-i", "damaged.txt"], expect: 2)
        XCTAssertTrue(damaged.err.contains("damaged.txt, line 2"), damaged.err)
        XCTAssertFalse(damaged.err.contains(String(secret.dropFirst(16).prefix(20))), damaged.err)
    }
}
