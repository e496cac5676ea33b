import Foundation
import XCTest

/// What a newcomer meets first (issue 22): secrets given the intuitive way get an answer that says what to do.
final class NewcomerTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-newcomer-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/plain/svc", withIntermediateDirectories: true)
        try Data("one".utf8).write(to: URL(fileURLWithPath: dir + "/plain/svc/a"))
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func kcar(_ args: [String], expect: Int32) throws -> KcarRun {
        let r = try runKcar(args, in: dir, env: ["HOME": dir + "/home"])
        XCTAssertEqual(r.code, expect, "kcar \(args.joined(separator: " ")): \(r.output)")
        return r
    }

    func testAnAgeIdentityGivenAsAKeyFileIsToldToUseIdentity() throws {
        let id = "# created: 2026-12-03\n# public key: age1xyz\nAGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSXYZ00\n"
        try Data(id.utf8).write(to: URL(fileURLWithPath: dir + "/me.txt"))
        let r = try kcar(["pack", "v.kcv", "plain", "--key-file", "me.txt"], expect: 2)
        XCTAssertTrue(r.err.contains("me.txt is an age identity file, not a key file: give it with --identity me.txt"), r.err)
        XCTAssertFalse(r.err.contains("AGE-SECRET-KEY"), "the key is never echoed: \(r.err)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/v.kcv"))
        let other = try kcar(["pack", "v.kcv", "plain", "--key-file", "plain/svc/a"], expect: 2)
        XCTAssertTrue(other.err.contains("must hold exactly 32 bytes") && other.err.contains("--identity"), other.err)
        XCTAssertTrue(String(decoding: try kcar(["help"], expect: 0).out, as: UTF8.self).contains("--identity FILE"))
    }

    func testPasswdInAScriptSaysTheNewPassphraseIsMissing() throws {
        try Data("old passphrase\n".utf8).write(to: URL(fileURLWithPath: dir + "/old"))
        _ = try kcar(["pack", "v.kcv", "plain", "--passphrase-file", "old", "--kdf-memory", "8", "--kdf-passes", "1"], expect: 0)
        let r = try kcar(["passwd", "v.kcv", "--passphrase-file", "old"], expect: 10)
        XCTAssertTrue(r.err.contains("no new passphrase given") && r.err.contains("--new-passphrase-file"), r.err)
    }

    func testTheVersionLineNamesTheFormatsKcarReadsAndWrites() throws {
        XCTAssertEqual(String(decoding: try kcar(["--version"], expect: 0).out, as: UTF8.self), "kcar 0.1 (vault formats 1 and 2 read; new vaults are format 2)\n")
    }
}
