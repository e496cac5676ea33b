import Foundation
import XCTest

/// Issue 22, points 2 and 8, on the built binary: `kcar git textconv` without a key prints different text for
/// different files (so `git diff` shows a changed vault), and a damaged last trailer is damage (exit 4), not an
/// interrupted write that `list` reads past.
final class TrustCLITests: XCTestCase {
    var dir = ""
    var key = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-trust-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: true)
        key = dir + "/team.key"
        XCTAssertEqual(try run(["keygen", key]).code, 0)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// The test's own HOME and folders, and no key unless one is given (`KCAR_KEY_FILE` empty is none).
    var environment: [String: String] {
        [
            "HOME": dir + "/home", "XDG_DATA_HOME": dir + "/data", "XDG_STATE_HOME": dir + "/state",
            "KCAR_KEYCHAIN": dir + "/kc", "KCAR_KEY_FILE": ""
        ]
    }

    @discardableResult
    func run(_ args: [String], env: [String: String] = [:]) throws -> ProcessResult {
        try KcarRunner(dir: dir, env: environment)(args, env: env, expect: nil)
    }

    @discardableResult
    func keyed(_ args: [String], expect: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws
        -> ProcessResult
    {
        try KcarRunner(dir: dir, env: environment, arguments: ["--key-file", key])(
            args, expect: expect, file: file, line: line)
    }

    /// A vault of format `version` holding svc/a and svc/b, then a commit that deletes svc/b.
    func vaultWithADeletion(_ name: String, version: Int) throws -> String {
        let src = dir + "/src-" + name
        try FileManager.default.createDirectory(atPath: src + "/svc", withIntermediateDirectories: true)
        for n in ["a", "b"] { try "value \(n)".write(toFile: src + "/svc/" + n, atomically: true, encoding: .utf8) }
        let path = dir + "/" + name
        try keyed(["pack", path, src, "-q", "--format", String(version)])
        try keyed(["delete", path, "svc/b"])
        return path
    }

    func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
    func put(_ path: String, _ b: [UInt8]) throws { try Data(b).write(to: URL(fileURLWithPath: path)) }
    func text(_ r: ProcessResult) -> String { r.out }
    /// The NAME column of `kcar list`.
    func names(_ r: ProcessResult) -> [String] {
        text(r).split(separator: "\n").dropFirst().compactMap { $0.split(separator: " ").last.map(String.init) }
    }

    // MARK: Point 2: git textconv without a key

    func testKeylessTextconvDiffersWhenTheFilesDiffer() throws {
        for version in [1, 2] {
            let a = try vaultWithADeletion("v\(version).kcv", version: version)
            let b = dir + "/copy-v\(version).kcv"
            try FileManager.default.copyItem(atPath: a, toPath: b)
            let ta = try run(["git", "textconv", a])
            let tb = try run(["git", "textconv", b])
            XCTAssertEqual(ta.code, 0, ta.output)
            XCTAssertEqual(ta.out, tb.out, "identical files, identical text")
            XCTAssertEqual(ta.out, try run(["git", "textconv", a]).out, "stable")
            let lines = text(ta).split(separator: "\n").map(String.init)
            XCTAssertEqual(lines.count, 2, text(ta))
            XCTAssertTrue(
                lines[0].hasPrefix("# kcar vault, format \(version)") && lines[0].contains("no key given"), lines[0])
            // The size, the digest b2sum prints, and what the last trailer says (the delete is generation 2).
            let digest = try XCTUnwrap(
                runProcess("/usr/bin/env", ["b2sum", "-l", "128", a], cwd: dir).out.split(separator: " ").first)
            XCTAssertEqual(
                lines[1],
                "# file: \(try bytes(a).count) bytes, b2sum -l 128: \(digest); last trailer (unauthenticated): generation 2, 1 item"
            )
            // One more commit in one copy: the texts differ, in the second line.
            try "new".write(toFile: dir + "/new.txt", atomically: true, encoding: .utf8)
            try keyed(["add", b, "svc/c", "--value-file", dir + "/new.txt"])
            let after = text(try run(["git", "textconv", b])).split(separator: "\n").map(String.init)
            XCTAssertEqual(after[0], lines[0])
            XCTAssertNotEqual(after[1], lines[1])
            XCTAssertTrue(after[1].hasSuffix("generation 3, 2 items"), after[1])
            // A change that keeps the size and the last trailer (a byte in the middle of the body) differs too.
            var same = try bytes(a)
            same[same.count / 2] ^= 1
            try put(b, same)
            XCTAssertNotEqual(try run(["git", "textconv", b]).out, ta.out)
        }
        // A file that is no vault: its size and digest still tell two apart.
        try "hello".write(toFile: dir + "/x.kcv", atomically: true, encoding: .utf8)
        try "hellp".write(toFile: dir + "/y.kcv", atomically: true, encoding: .utf8)
        let x = try run(["git", "textconv", dir + "/x.kcv"])
        let y = try run(["git", "textconv", dir + "/y.kcv"])
        XCTAssertEqual(x.code, 0)
        XCTAssertTrue(text(x).hasPrefix("# not a readable kcar vault"), text(x))
        XCTAssertNotEqual(x.out, y.out)
    }

    /// A real repository, no key anywhere: `git diff` of a vault changed by one commit is not empty.
    func testGitDiffWithoutAKeyShowsAChangedVault() throws {
        let repo = dir + "/repo"
        try FileManager.default.createDirectory(atPath: repo, withIntermediateDirectories: true)
        let bin = (CLITests.binary as NSString).deletingLastPathComponent
        var env = environment
        env["PATH"] = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        for (k, v) in ["NAME": "t", "EMAIL": "t@example.com"] {
            env["GIT_AUTHOR_" + k] = v
            env["GIT_COMMITTER_" + k] = v
        }
        func git(_ args: [String]) throws -> ProcessResult {
            let r = try runProcess("/usr/bin/env", ["git"] + args, env: env, cwd: repo)
            XCTAssertEqual(r.code, 0, "git \(args.joined(separator: " ")): \(r.out)\(r.err)")
            return r
        }
        _ = try git(["init", "-q"])
        XCTAssertEqual(try runProcess(CLITests.binary, ["git", "setup"], env: env, cwd: repo).code, 0)
        let vault = try vaultWithADeletion("v.kcv", version: 2)
        try FileManager.default.moveItem(atPath: vault, toPath: repo + "/v.kcv")
        _ = try git(["add", "."])
        _ = try git(["commit", "-qm", "vault"])
        try "new".write(toFile: dir + "/new.txt", atomically: true, encoding: .utf8)
        try keyed(["add", repo + "/v.kcv", "svc/c", "--value-file", dir + "/new.txt"])
        let diff = try git(["diff", "--", "v.kcv"]).out
        let changed = diff.split(separator: "\n").filter {
            ($0.hasPrefix("-#") || $0.hasPrefix("+#")) && !$0.hasPrefix("---") && !$0.hasPrefix("+++")
        }
        XCTAssertEqual(changed.count, 2, diff)
        XCTAssertTrue(changed.contains { $0.hasPrefix("-# file: ") && $0.hasSuffix("generation 2, 1 item") }, diff)
        XCTAssertTrue(changed.contains { $0.hasPrefix("+# file: ") && $0.hasSuffix("generation 3, 2 items") }, diff)
        // And with the key, the item itself.
        env["KCAR_KEY_FILE"] = key
        XCTAssertTrue(try git(["diff", "--", "v.kcv"]).out.contains("\n+genp svc/c "))
    }

    // MARK: Point 8: a damaged last trailer

    /// Every byte of the last trailer changed, in both format versions: `list` and `verify` exit 4 (damaged
    /// index), never 0 with the item the last commit deleted back; `recover` alone refuses it, and
    /// `recover --drop-damaged` goes back to the commit before, saying so.
    func testADamagedLastTrailerExits4AndIsDroppedOnlyOnRequest() throws {
        for (version, size) in [(1, 96), (2, 128)] {
            let path = try vaultWithADeletion("v\(version).kcv", version: version)
            let good = try bytes(path)
            XCTAssertEqual(names(try keyed(["list", path])), ["svc/a"])
            for i in 0..<size {
                var b = good
                b[b.count - size + i] ^= 0x04
                try put(path, b)
                let list = try keyed(["list", path], expect: 4)
                XCTAssertTrue(
                    list.err.contains("damaged index") && !text(list).contains("svc/b"), "byte \(i): \(list.output)")
                if i % 8 == 0 || i >= size - 2 {
                    XCTAssertTrue(try keyed(["verify", path], expect: 4).output.contains("damaged index"), "byte \(i)")
                }
            }
            let damaged = try bytes(path)
            XCTAssertTrue(try keyed(["recover", path], expect: 4).err.contains("--drop-damaged"))
            XCTAssertEqual(try bytes(path), damaged, "plain recover changes nothing")
            let drop = try keyed(["recover", path, "--drop-damaged"])
            XCTAssertTrue(
                drop.err.contains("dropped the last") && drop.err.contains("generation 1 is the last"), drop.err)
            XCTAssertEqual(
                names(try keyed(["list", path])), ["svc/a", "svc/b"], "the commit before the delete, on request")
            XCTAssertEqual(try keyed(["verify", path]).code, 0)
            XCTAssertTrue(try keyed(["recover", path, "--drop-damaged"]).err.contains("nothing to recover"))
        }
    }

    /// The same for a keychain group: every command refuses it (exit 4, not the commit before as a rollback),
    /// `recover --group G --drop-damaged` goes back, and the group then reads as rolled back until accepted.
    func testADamagedLastCommitOfAKeychainGroup() throws {
        for account in ["a", "b"] {
            let r = try runProcess(
                CLITests.binary, ["add", "--group", "g", "--service", "s", "--account", account], stdin: Data("v".utf8),
                env: environment, cwd: dir)
            XCTAssertEqual(r.code, 0, r.err)
        }
        XCTAssertEqual(try run(["delete", "--group", "g", "--service", "s", "--account", "b"]).code, 0)
        let path = dir + "/kc/g.kcv"
        var b = try bytes(path)
        b[b.count - 60] ^= 0x02
        try put(path, b)
        for args in [["find", "--group", "g"], ["list", "--group", "g"], ["recover", "--group", "g"]] {
            let r = try run(args)
            XCTAssertEqual(r.code, 4, "\(args): \(r.output)")
            XCTAssertTrue(r.err.contains("damaged index"), r.err)
        }
        let drop = try run(["recover", "--group", "g", "--drop-damaged"])
        XCTAssertEqual(drop.code, 0, drop.output)
        XCTAssertTrue(drop.err.contains("kcar groups --accept-rollback g"), drop.err)
        XCTAssertEqual(try run(["find", "--group", "g"]).code, 14)
        XCTAssertEqual(try run(["groups", "--accept-rollback", "g"]).code, 0)
        XCTAssertEqual(names(try run(["list", "--group", "g"])), ["s/a", "s/b"])
    }

    /// What a crash leaves (the file cut inside the last trailer) still reads the commit before, with a warning,
    /// and `verify` says incomplete commit (exit 5), as before.
    func testALastTrailerCutShortStillRecovers() throws {
        for (version, size) in [(1, 96), (2, 128)] {
            let path = try vaultWithADeletion("v\(version).kcv", version: version)
            let good = try bytes(path)
            for cut in [1, size / 2, size - 1] {
                try put(path, Array(good.dropLast(cut)))
                let list = try keyed(["list", path])
                XCTAssertEqual(names(list), ["svc/a", "svc/b"], "cut by \(cut)")
                XCTAssertTrue(list.err.contains("incomplete commit"), list.err)
                XCTAssertEqual(try keyed(["verify", path], expect: 5).code, 5)
            }
            XCTAssertEqual(try keyed(["recover", path]).code, 0)
            XCTAssertEqual(try keyed(["verify", path]).code, 0)
        }
    }
}
