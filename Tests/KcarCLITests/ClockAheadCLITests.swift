import Foundation
import VaultFormat
import XCTest

/// SPEC.md Part 4, V5.1, as users meet it: a copy whose versions run more than a day ahead is refused the same
/// way wherever a copy is taken (`merge`, `sync --pull`, a join), exit 16, naming the file, nothing written;
/// `compact --rewind-clock` makes it mergeable again.
final class ClockAheadCLITests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-clock-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func env(_ m: String) -> [String: String] { ["HOME": dir + "/home-" + m, "XDG_STATE_HOME": dir + "/state-" + m] }

    @discardableResult
    func kcar(_ m: String, _ args: [String], stdin: String? = nil, expect: Int32 = 0) throws -> ProcessResult {
        try KcarRunner(dir: dir, env: env(m))(args, stdin: stdin.map { Data($0.utf8) }, expect: expect)
    }

    /// A commit to the copy at `path` made as if on a machine whose clock runs ten years ahead.
    func changeTenYearsAhead(_ path: String, key: String) throws {
        let v = try PagedVault.open(
            path: path, secret: .keyFile(SecureBytes(copying: Array(try Data(contentsOf: URL(fileURLWithPath: key))))),
            mode: .write)
        let later = HybridClock.nowMilliseconds() + 3650 * 86_400_000
        try v.commit(now: { later }) { tx in
            _ = try tx.add(attributes: Attributes(["svce": .string("late"), "acct": .string("x")]), value: [1])
        }
    }

    func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: dir + "/" + path)) }

    func testAPackedCopyAheadIsRefusedByMergeAndRewound() throws {
        try FileManager.default.createDirectory(atPath: dir + "/plain/svc", withIntermediateDirectories: true)
        try Data("one".utf8).write(to: URL(fileURLWithPath: dir + "/plain/svc/a"))
        try kcar("A", ["keygen", "k.key"])
        try kcar("A", ["pack", "v.kcv", "plain", "--key-file", "k.key"])
        try FileManager.default.copyItem(atPath: dir + "/v.kcv", toPath: dir + "/theirs.kcv")
        try changeTenYearsAhead(dir + "/theirs.kcv", key: dir + "/k.key")
        let before = try bytes("v.kcv")
        let refused = try kcar("A", ["merge", "--into", "v.kcv", "theirs.kcv", "--key-file", "k.key"], expect: 16)
        XCTAssertTrue(refused.err.contains("THEIRS (theirs.kcv)"), refused.err)
        XCTAssertTrue(refused.err.contains("10 years ahead") || refused.err.contains("9 years ahead"), refused.err)
        XCTAssertTrue(refused.err.contains("--rewind-clock"), refused.err)
        XCTAssertEqual(try bytes("v.kcv"), before, "a refused merge wrote nothing")
        try kcar("A", ["compact", "theirs.kcv", "--rewind-clock", "--key-file", "k.key"])
        try kcar("A", ["merge", "--into", "v.kcv", "theirs.kcv", "--key-file", "k.key"])
        XCTAssertTrue(try kcar("A", ["list", "v.kcv", "--key-file", "k.key"]).out.contains("late"))
        // The vault it went into stays writable.
        try kcar("A", ["delete", "v.kcv", "svc/a", "--key-file", "k.key"])
    }

    func testAGroupsCopyAheadIsRefusedBySyncAndByAJoin() throws {
        try kcar("A", ["add", "--group", "team", "--service", "api", "--account", "a"], stdin: "v1\n")
        try kcar("A", ["sync", "--group", "team", "copy.kcv"])
        let key = dir + "/home-A/.local/share/kcar/team.key"
        try changeTenYearsAhead(dir + "/copy.kcv", key: key)
        let copy = try bytes("copy.kcv")
        for args in [["--pull"], []] {
            let r = try kcar("A", ["sync", "--group", "team", "copy.kcv"] + args, expect: 16)
            XCTAssertTrue(r.err.contains("copy.kcv") && r.err.contains("ahead of this machine's clock"), r.err)
        }
        XCTAssertEqual(try bytes("copy.kcv"), copy)
        XCTAssertFalse(try kcar("A", ["find", "--group", "team"]).out.contains("late"))
        // A join takes the copy whole: refused before the group exists.
        let join = try kcar("B", ["sync", "--group", "team", "copy.kcv", "--key-file", key], expect: 16)
        XCTAssertTrue(join.err.contains("ahead of this machine's clock"), join.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/home-B/.local/share/kcar/team.kcv"))
        // Rewound, it syncs.
        try kcar("A", ["compact", "copy.kcv", "--rewind-clock", "--key-file", key])
        try kcar("A", ["sync", "--group", "team", "copy.kcv", "--pull"])
        XCTAssertTrue(try kcar("A", ["find", "--group", "team"]).out.contains("late"))
    }
}
