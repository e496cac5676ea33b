import Foundation
import XCTest

/// A version 2 vault keeps earlier versions of its items (SPEC.md Part 4, V8): a plain delete and compact leave a
/// deleted value in the file as the item's last version, and `delete --purge`, `history --clear` and `compact
/// --history 0` are what take it out. Values are 200 KB of random bytes, so the file's size tells whether one is
/// still in it.
final class RetentionCLITests: XCTestCase {
    var dir = ""
    let big = 200_000

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-retention-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/src/svc", withIntermediateDirectories: true)
        XCTAssertEqual(try kcar(["keygen", "k.key"]).code, 0)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// kcar as this class runs it (`KcarRunner`).
    var kcar: KcarRunner { KcarRunner(dir: dir, env: ["HOME": dir + "/home", "XDG_STATE_HOME": dir + "/state"]) }

    func write(_ name: String, seed: UInt8) throws {
        var g = SystemRandomNumberGenerator()
        let bytes = (0..<big).map { _ in UInt8.random(in: 0...255, using: &g) ^ seed }
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/src/svc/" + name))
    }

    func size(_ path: String = "v.kcv") throws -> Int {
        try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: dir + "/" + path)[.size] as? Int)
    }

    let key = ["--key-file", "k.key"]

    func testDeletedAndReplacedValuesLeaveTheFileOnlyWhenAsked() throws {
        try write("a", seed: 1)
        try write("b", seed: 2)
        try kcar(["pack", "v.kcv", "src"] + key)
        try write("a", seed: 3)
        try kcar(["add", "v.kcv", "-C", "src", "svc/a"] + key)
        let del = try kcar(["delete", "v.kcv", "svc/b"] + key)
        XCTAssertTrue(del.err.contains("as a kept version (kcar history) for 90 days: --purge removes it now"), del.err)
        try kcar(["compact", "v.kcv"] + key)
        XCTAssertGreaterThan(try size(), 3 * big, "a plain compaction keeps a's old value and b's, as kept versions")
        // history --clear: a's old value leaves the file.
        let clear = try kcar(["history", "v.kcv", "svc/a", "--clear"] + key)
        XCTAssertTrue(clear.out.contains("svc/a: 1 kept version dropped"), clear.out)
        XCTAssertLessThan(try size(), 3 * big)
        XCTAssertGreaterThan(try size(), 2 * big)
        XCTAssertTrue(try kcar(["history", "v.kcv", "svc/a"] + key).out.contains("no kept versions"))
        // compact --history 0: b's kept version goes, and the rule stays for later deletions.
        let rule = try kcar(["compact", "v.kcv", "--history", "0"] + key)
        XCTAssertTrue(rule.err.contains("history: none kept"), rule.err)
        XCTAssertLessThan(try size(), 2 * big)
        try kcar(["history", "v.kcv", "svc/b"] + key, expect: 6)
        try write("c", seed: 4)
        try kcar(["add", "v.kcv", "-C", "src", "svc/c"] + key)
        try kcar(["delete", "v.kcv", "svc/c"] + key)
        try kcar(["compact", "v.kcv"] + key)
        XCTAssertLessThan(try size(), 2 * big, "with --history 0 a compaction drops a deleted value")
        XCTAssertEqual(try kcar(["verify", "v.kcv"] + key).code, 0)
        // Out of range, and a version 1 vault, which keeps no history.
        try kcar(["compact", "v.kcv", "--history", "1001"] + key, expect: 2)
        try kcar(["pack", "--format", "1", "v1.kcv", "src"] + key)
        try kcar(["compact", "v1.kcv", "--history", "3"] + key, expect: 2)
    }

    func testDeletePurgeInAVaultAndInTheKeychain() throws {
        try write("a", seed: 1)
        try write("b", seed: 2)
        try kcar(["pack", "v.kcv", "src"] + key)
        let purge = try kcar(["delete", "v.kcv", "svc/b", "--purge"] + key)
        XCTAssertTrue(purge.err.contains("have left the file"), purge.err)
        XCTAssertLessThan(try size(), 2 * big)
        try kcar(["history", "v.kcv", "svc/b"] + key, expect: 6)
        // The deletion itself is remembered (a tombstone), so a copy that still holds b does not bring it back.
        XCTAssertTrue(try kcar(["list", "v.kcv"] + key).out.contains("svc/a"))

        for (account, seed) in [("one", UInt8(5)), ("two", 6)] {
            try write(account, seed: seed)
            try kcar([
                "add", "--group", "g", "--service", "s", "--account", account, "--value-file", "src/svc/" + account
            ])
        }
        try kcar(["update", "--group", "g", "--service", "s", "--account", "one", "--value-file", "src/svc/two"])
        try kcar(["delete", "--group", "g", "--service", "s", "--account", "one", "--purge"])
        XCTAssertLessThan(
            try size("home/.local/share/kcar/g.kcv"), 2 * big, "one's two values have left the group's file")
        try kcar(["get", "--group", "g", "--service", "s", "--account", "two"])
        XCTAssertEqual(try kcar(["verify", "--group", "g"]).code, 0)
    }
}
