import Foundation
import VaultFormat
import XCTest

/// Issue 11 from the command line: `kcar merge` (git's merge driver), `kcar upgrade`, `kcar git setup` and
/// `kcar git textconv`, `kcar history` and `kcar restore`, on version 2 vaults, and a real git repository
/// whose clones merge one vault.
final class GitMergeCLITests: XCTestCase {
    var dir = ""
    var key = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-gitmerge-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        key = dir + "/team.key"
        XCTAssertEqual(try run(["keygen", key]).code, 0)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// `kcar args` in the test's folder, the key given through KCAR_KEY_FILE (as git's driver gets it).
    @discardableResult
    func run(_ args: [String], env: [String: String] = [:], noTerminal: Bool = false) throws -> ProcessResult {
        try KcarRunner(dir: dir, env: ["XDG_STATE_HOME": dir + "/state"])(
            args, env: env, prefix: noTerminal ? ["/usr/bin/setsid", "-w"] : [], expect: nil)
    }

    func keyed(_ args: [String]) throws -> ProcessResult { try run(args, env: ["KCAR_KEY_FILE": key]) }

    /// A version 2 vault of a folder of `items` (service/account -> value), by `kcar pack` (version 2 by default;
    /// `kcar upgrade` then leaves it as it is).
    func makeVault(_ name: String, _ items: [String: String], key: String? = nil) throws -> String {
        let src = dir + "/src-\(name)"
        for (path, value) in items {
            let file = src + "/" + path
            try FileManager.default.createDirectory(
                atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try value.write(toFile: file, atomically: true, encoding: .utf8)
        }
        let vault = dir + "/" + name
        XCTAssertEqual(try run(["pack", vault, src, "--key-file", key ?? self.key, "-q"]).code, 0)
        let up = try run(["upgrade", vault, "--key-file", key ?? self.key])
        XCTAssertEqual(up.code, 0, up.output)
        return vault
    }

    func copy(_ from: String, _ to: String) throws -> String {
        let path = dir + "/" + to
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: from, toPath: path)
        return path
    }

    func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// The items of a vault as `kcar git textconv --values` prints them (its first line, which names the vault, left out).
    func items(_ path: String) throws -> [String] {
        let r = try keyed(["git", "textconv", path, "--values"])
        XCTAssertEqual(r.code, 0, r.output)
        return Array(r.out.split(separator: "\n").dropFirst().map(String.init))
    }

    func testMergeTakesEachSidesChangesAndKeepsTheLoserInHistory() throws {
        let base = try makeVault("base.kcv", ["svc/a": "a0", "svc/b": "b0", "svc/c": "c0", "svc/d": "d0"])
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        try V2Edit.set(ours, key: key, writer: 1, ["svc/a": "a-ours", "svc/c": "c-ours"])
        try V2Edit.set(
            theirs, key: key, writer: 2, ["svc/b": "b-theirs", "svc/c": "c-theirs", "svc/new": "n-theirs"],
            delete: ["svc/d"])
        let r = try keyed(["merge", base, ours, theirs])
        XCTAssertEqual(r.code, 0, r.output)
        XCTAssertTrue(
            r.err.contains("kcar merge: ") && r.err.contains("taken from THEIRS") && r.err.contains("1 conflict"), r.err
        )
        // The conflict names the item, the side that won and why, and the command that brings the loser back.
        let line = try XCTUnwrap(r.err.split(separator: "\n").first { $0.contains("conflict on svc/c") }, r.err)
        XCTAssertTrue(
            line.contains("THEIRS's change (") && line.contains("is newer than OURS's change (")
                && line.contains("and won"), String(line))
        XCTAssertTrue(line.hasSuffix("OURS's version is kept: kcar restore \(ours) svc/c --version 1"), String(line))
        let values = try V2Edit.values(ours, key: key)
        XCTAssertEqual(values, ["svc/a": "a-ours", "svc/b": "b-theirs", "svc/c": "c-theirs", "svc/new": "n-theirs"])
        // The losing change of svc/c (ours, older) is kept, as is what ours replaced.
        let h = try keyed(["history", ours, "svc/c"])
        XCTAssertEqual(h.code, 0, h.output)
        XCTAssertTrue(h.output.contains("merged") && h.output.contains("updated"), h.output)
        XCTAssertTrue(try keyed(["verify", ours]).output.contains("intact"))
        // Idempotent: merging again takes nothing; -q prints nothing.
        let again = try keyed(["merge", base, ours, theirs])
        XCTAssertTrue(again.err.contains("nothing to merge"), again.err)
        XCTAssertEqual(try keyed(["merge", "-q", base, ours, theirs]).err, "")
        XCTAssertEqual(try V2Edit.values(ours, key: key), values)
        // Commutative in its items: the other order gives the same values.
        let theirs2 = try copy(dir + "/theirs.kcv", "theirs2.kcv")
        XCTAssertEqual(try keyed(["merge", base, theirs2, dir + "/ours.kcv"]).code, 0)
        XCTAssertEqual(try V2Edit.values(theirs2, key: key), values)
    }

    /// A merge killed (SIGKILL) at any point leaves OURS with its own items or with the merged ones, never a
    /// mix, and a kcar that opens it afterwards works on its last complete commit.
    func testAMergeKilledAnywhereLeavesOursAsItWasOrMerged() throws {
        var items: [String: String] = [:]
        for i in 0..<300 { items["svc\(i % 7)/acct\(i)"] = String(repeating: "v\(i)", count: 50) }
        let base = try makeVault("base.kcv", items)
        let theirs = try copy(base, "theirs.kcv")
        let oursStart = try copy(base, "ours-start.kcv")
        var changes: [String: String] = [:]
        for i in stride(from: 0, to: 300, by: 3) {
            changes["svc\(i % 7)/acct\(i)"] = String(repeating: "t\(i)", count: 80)
        }
        try V2Edit.set(theirs, key: key, writer: 2, changes)
        let before = try V2Edit.values(oursStart, key: key)
        let merged = before.merging(changes) { _, t in t }
        var outcomes = Set<Bool>()
        for delay in stride(from: 0, to: 60_000, by: 4_000) {
            let ours = try copy(oursStart, "ours.kcv")
            let p = kcarProcess(
                ["merge", base, ours, theirs], cwd: dir, env: ["KCAR_KEY_FILE": key, "XDG_STATE_HOME": dir + "/state"])
            try p.run()
            usleep(useconds_t(delay))
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let now = try V2Edit.values(ours, key: key)
            XCTAssertTrue(now == before || now == merged, "killed after \(delay) us: a mix of both")
            outcomes.insert(now == merged)
            // The next merge completes it.
            XCTAssertEqual(try keyed(["merge", "-q", base, ours, theirs]).code, 0)
            XCTAssertEqual(try V2Edit.values(ours, key: key), merged)
        }
        XCTAssertTrue(outcomes.contains(false), "no kill landed before the merge's commit")
    }

    func testEmptyBaseAndIntoMergeFromTheRecordedVersions() throws {
        let base = try makeVault("base.kcv", ["svc/a": "a0", "svc/b": "b0"])
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        try V2Edit.set(ours, key: key, writer: 1, ["svc/a": "a1"])
        try V2Edit.set(theirs, key: key, writer: 2, ["svc/b": "b1"])
        try Data().write(to: URL(fileURLWithPath: dir + "/empty"))
        let into = try copy(ours, "into.kcv")
        let r = try keyed(["merge", dir + "/empty", ours, theirs])
        XCTAssertEqual(r.code, 0, r.output)
        XCTAssertEqual(try V2Edit.values(ours, key: key), ["svc/a": "a1", "svc/b": "b1"])
        let i = try keyed(["merge", "--into", into, theirs])
        XCTAssertEqual(i.code, 0, i.output)
        XCTAssertEqual(try V2Edit.values(into, key: key), ["svc/a": "a1", "svc/b": "b1"])
    }

    func testMergeErrorsNameTheSideAndLeaveOursByteForByte() throws {
        let base = try makeVault("base.kcv", ["svc/a": "a0"])
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        try V2Edit.set(theirs, key: key, writer: 2, ["svc/a": "a1"])
        let other = try makeVault("other.kcv", ["svc/a": "a0"])
        let otherKey = dir + "/other.key"
        XCTAssertEqual(try run(["keygen", otherKey]).code, 0)
        let foreign = try makeVault("foreign.kcv", ["svc/a": "a0"], key: otherKey)
        let whole = try bytes(theirs)
        let truncated = dir + "/truncated.kcv"
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: truncated))
        let future = dir + "/future.kcv"
        var f = whole
        f[8] = 3  // the header's version (u16 after the 8-byte magic)
        try f.write(to: URL(fileURLWithPath: future))
        let v1 = dir + "/v1.kcv"
        XCTAssertEqual(try run(["pack", v1, dir + "/src-base.kcv", "--key-file", key, "-q", "--format", "1"]).code, 0)
        let before = try bytes(ours)
        let cases: [(args: [String], code: Int32, side: String, says: String)] = [
            ([base, ours, other], 2, "THEIRS", "another vault"),
            ([other, ours, theirs], 2, "BASE", "another vault"),
            ([foreign, ours, theirs], 3, "BASE", "wrong passphrase or key"),
            ([base, ours, truncated], 4, "THEIRS", "truncated"),
            ([base, ours, future], 4, "THEIRS", "unsupported version"),
            ([base, ours, v1], 4, "THEIRS", "kcar upgrade"),
            ([base, ours, dir + "/missing.kcv"], 8, "THEIRS", "cannot open vault")
        ]
        for c in cases {
            let r = try keyed(["merge"] + c.args)
            XCTAssertEqual(r.code, c.code, "\(c): \(r.output)")
            XCTAssertTrue(r.err.hasPrefix("kcar: \(c.side) ("), "\(c): \(r.err)")
            XCTAssertTrue(r.err.contains(c.says), "\(c): \(r.err)")
            XCTAssertEqual(try bytes(ours), before, "\(c): OURS changed")
        }
        // OURS itself damaged, and no key at all (no terminal to ask on).
        let damagedOurs = try copy(truncated, "damaged-ours.kcv")
        let d = try keyed(["merge", base, damagedOurs, theirs])
        XCTAssertEqual(d.code, 4, d.output)
        XCTAssertTrue(d.err.hasPrefix("kcar: OURS ("), d.err)
        let none = try run(["merge", base, ours, theirs], noTerminal: true)
        XCTAssertEqual(none.code, 10, none.output)
        XCTAssertTrue(none.err.contains("KCAR_KEY_FILE"), none.err)
        XCTAssertEqual(try bytes(ours), before)
    }

    func testUpgradeMakesVersion2AndLeavesVersion2Alone() throws {
        let src = dir + "/src"
        try FileManager.default.createDirectory(atPath: src + "/svc", withIntermediateDirectories: true)
        try "x".write(toFile: src + "/svc/a", atomically: true, encoding: .utf8)
        let v = dir + "/v.kcv"
        XCTAssertEqual(try run(["pack", v, src, "--key-file", key, "-q", "--format", "1"]).code, 0)
        let up = try run(["upgrade", v, "--key-file", key])
        XCTAssertEqual(up.code, 0, up.output)
        XCTAssertTrue(up.output.contains("upgraded to vault format version 2 (1 item)"), up.output)
        XCTAssertTrue(try run(["info", v]).output.contains("version:    2"))
        let before = try bytes(v)
        let again = try run(["upgrade", v, "--key-file", key])
        XCTAssertEqual(again.code, 0)
        XCTAssertTrue(again.output.contains("already vault format version 2"), again.output)
        XCTAssertEqual(try bytes(v), before)
    }

    func testTextconvIsStableAndShowsExactlyTheChangedItem() throws {
        var many: [String: String] = [:]
        for i in 0..<50 { many["svc\(i % 5)/acct\(i)"] = "value \(i)" }
        let v = try makeVault("v.kcv", many)
        let first = try keyed(["git", "textconv", v])
        let second = try keyed(["git", "textconv", v])
        XCTAssertEqual(first.code, 0)
        XCTAssertEqual(first.out, second.out)
        let before = first.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(before.count, 51)
        XCTAssertEqual(before.dropFirst().sorted(), Array(before.dropFirst()), "in the vault's order")
        XCTAssertFalse(before.joined().contains("value 7"), "no values without --values")
        try V2Edit.set(v, key: key, writer: 3, ["svc2/acct7": "changed"])
        let after = try keyed(["git", "textconv", v]).out.split(separator: "\n").map(
            String.init)
        let removed = Set(before).subtracting(after)
        let added = Set(after).subtracting(before)
        XCTAssertEqual(removed.count, 1)
        XCTAssertEqual(added.count, 1)
        XCTAssertTrue(added.first!.hasPrefix("genp svc2/acct7 size=7 version="), added.first!)
        XCTAssertTrue(try items(v).contains { $0.hasSuffix("value=\"changed\"") })
        // Without a usable key: a line naming the vault and one describing the file (size, digest, last
        // trailer: issue 22, point 2), exit 0 (git diff goes on).
        for r in [
            try run(["git", "textconv", v]),
            try run(["git", "textconv", v], env: ["KCAR_KEY_FILE": dir + "/missing.key"])
        ] {
            XCTAssertEqual(r.code, 0, r.output)
            let lines = r.out.split(separator: "\n")
            XCTAssertEqual(lines.count, 2, r.output)
            XCTAssertTrue(lines[0].hasPrefix("# kcar vault, format 2"), r.output)
            XCTAssertTrue(lines[1].hasPrefix("# file: "), r.output)
        }
        let notVault = dir + "/not.kcv"
        try "hello".write(toFile: notVault, atomically: true, encoding: .utf8)
        let nv = try keyed(["git", "textconv", notVault])
        XCTAssertEqual(nv.code, 0)
        XCTAssertTrue(nv.out.hasPrefix("# not a readable kcar vault"), nv.output)
    }

    func testHistoryAndRestoreBringBackUpdatedAndDeletedValues() throws {
        let v = try makeVault("v.kcv", ["svc/a": "one", "svc/b": "bee"])
        try V2Edit.set(v, key: key, writer: 1, ["svc/a": "two"])
        try V2Edit.set(v, key: key, writer: 1, ["svc/a": "three"])
        let h = try keyed(["history", v, "svc/a"])
        XCTAssertEqual(h.code, 0, h.output)
        let lines = h.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 5, h.output)  // name, header, current, 2 kept
        XCTAssertTrue(lines[2].hasPrefix("current") && lines[3].hasPrefix("1") && lines[4].hasPrefix("2"), h.output)
        XCTAssertTrue(lines[3].contains("updated"), h.output)
        let r = try keyed(["restore", v, "svc/a", "--version", "2"])
        XCTAssertEqual(r.code, 0, r.output)
        XCTAssertEqual(try V2Edit.values(v, key: key)["svc/a"], "one")
        XCTAssertEqual(try keyed(["restore", v, "svc/a", "--version", "9"]).code, 6)
        XCTAssertEqual(try keyed(["history", v, "svc/none"]).code, 6)
        // A deleted item is found by name and comes back under its id.
        let id = try V2Edit.id(v, key: key, "svc/b")
        try V2Edit.set(v, key: key, writer: 1, [:], delete: ["svc/b"])
        let dh = try keyed(["history", v, "svc/b"])
        XCTAssertEqual(dh.code, 0, dh.output)
        XCTAssertTrue(dh.output.contains("deleted"), dh.output)
        XCTAssertEqual(try keyed(["restore", v, "svc/b", "--version", "1"]).code, 0)
        XCTAssertEqual(try V2Edit.values(v, key: key)["svc/b"], "bee")
        XCTAssertEqual(try V2Edit.id(v, key: key, "svc/b"), id)
        XCTAssertEqual(try keyed(["history", v, "%id/\(id)"]).code, 0)
        XCTAssertTrue(try keyed(["verify", v]).output.contains("intact"))
        // A version 1 vault keeps no history: said so.
        XCTAssertEqual(
            try run(["pack", dir + "/v1.kcv", dir + "/src-v.kcv", "--key-file", key, "-q", "--format", "1"]).code, 0)
        let v1 = try keyed(["history", dir + "/v1.kcv", "svc/a"])
        XCTAssertEqual(v1.code, 4)
        XCTAssertTrue(v1.err.contains("kcar upgrade"), v1.err)
    }

    // MARK: git

    /// git in `cwd`; `state`, if given, is the XDG_STATE_HOME of that clone's kcar (its writer id).
    func git(_ args: [String], in cwd: String, expect: Int32? = 0, state: String? = nil) throws -> ProcessResult {
        var env = gitEnvironment
        if let state { env["XDG_STATE_HOME"] = state }
        let r = try runProcess("/usr/bin/env", ["git"] + args, env: env, cwd: cwd)
        if let expect { XCTAssertEqual(r.code, expect, "git \(args.joined(separator: " ")): \(r.out)\(r.err)") }
        return r
    }

    /// git with this test's HOME (no user config), kcar first on PATH and the key in KCAR_KEY_FILE.
    var gitEnvironment: [String: String] {
        let bin = (CLITests.binary as NSString).deletingLastPathComponent
        return [
            "HOME": dir + "/home", "GIT_CONFIG_NOSYSTEM": "1",
            "PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            "KCAR_KEY_FILE": key, "XDG_STATE_HOME": dir + "/state", "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"
        ]
    }

    func testGitSetupIsIdempotentAndKeepsOtherLines() throws {
        let repo = dir + "/repo"
        try FileManager.default.createDirectory(atPath: repo, withIntermediateDirectories: true)
        let outside = try runProcess(CLITests.binary, ["git", "setup"], env: gitEnvironment, cwd: repo)
        XCTAssertEqual(outside.code, 2, outside.err)
        XCTAssertTrue(outside.err.contains("not in a git repository"), outside.err)
        _ = try git(["init", "-q"], in: repo)
        try "*.png binary".write(toFile: repo + "/.gitattributes", atomically: true, encoding: .utf8)
        for _ in 0..<2 {
            let r = try runProcess(CLITests.binary, ["git", "setup"], env: gitEnvironment, cwd: repo)
            XCTAssertEqual(r.code, 0, r.err)
            XCTAssertTrue(r.out.contains("merge.kcar.driver"), r.out)
        }
        XCTAssertEqual(
            try String(contentsOfFile: repo + "/.gitattributes", encoding: .utf8),
            "*.png binary\n*.kcv merge=kcar diff=kcar\n")
        XCTAssertEqual(try git(["config", "merge.kcar.driver"], in: repo).out, "kcar merge %O %A %B --name %P\n")
        XCTAssertEqual(try git(["config", "diff.kcar.textconv"], in: repo).out, "kcar git textconv\n")
        XCTAssertFalse(
            try String(contentsOfFile: repo + "/.git/config", encoding: .utf8).contains(key), "no key in the config")
    }

    /// Two clones of a bare repository change one vault (different items, and one item on both), push and
    /// pull: git runs `kcar merge`, both clones end with the same items, and `git diff` names the item.
    func testTwoClonesMergeThroughRealGit() throws {
        let bare = dir + "/origin.git"
        let a = dir + "/a"
        let b = dir + "/b"
        _ = try git(["init", "-q", "--bare", bare], in: dir)
        _ = try git(["clone", "-q", bare, a], in: dir)
        for c in [a] { try setUpClone(c) }
        let src = dir + "/src"
        for (p, v) in ["svc/x": "x0", "svc/y": "y0", "svc/z": "z0"] {
            try FileManager.default.createDirectory(
                atPath: src + "/" + (p as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try v.write(toFile: src + "/" + p, atomically: true, encoding: .utf8)
        }
        XCTAssertEqual(try run(["pack", a + "/team.kcv", src, "--key-file", key, "-q"]).code, 0)
        _ = try git(["add", "."], in: a)
        _ = try git(["commit", "-qm", "vault"], in: a)
        _ = try git(["push", "-q", "origin", "HEAD"], in: a)
        _ = try git(["clone", "-q", bare, b], in: dir)
        try setUpClone(b)
        try V2Edit.set(a + "/team.kcv", key: key, writer: 0xA, ["svc/x": "x-from-a", "svc/y": "y-from-a"])
        // B changes its copy as a user does, with kcar add (the version 2 file as it is).
        let srcB = dir + "/src-b"
        for (p, v) in ["svc/z": "z-from-b", "svc/y": "y-from-b"] {
            try FileManager.default.createDirectory(atPath: srcB + "/svc", withIntermediateDirectories: true)
            try v.write(toFile: srcB + "/" + p, atomically: true, encoding: .utf8)
        }
        let add = try keyed(["add", b + "/team.kcv", "-C", srcB, "svc/z", "svc/y"])
        XCTAssertEqual(add.code, 0, add.output)
        _ = try git(["commit", "-qam", "a"], in: a)
        _ = try git(["commit", "-qam", "b"], in: b)
        _ = try git(["push", "-q", "origin", "HEAD"], in: a)
        let pull = try git(["pull", "-q", "--no-rebase", "origin", "HEAD"], in: b)
        XCTAssertTrue(pull.err.contains("kcar merge:"), pull.err)
        // The driver names the vault by its path in the repository (%P), never git's temporary file, and the conflict
        // on svc/y (both sides changed it) with the command that brings the losing version back.
        XCTAssertFalse(pull.err.contains(".merge_file"), pull.err)
        XCTAssertTrue(pull.err.contains("kcar merge: team.kcv: conflict on svc/y: "), pull.err)
        XCTAssertTrue(pull.err.contains("is kept: kcar restore team.kcv svc/y --version 1"), pull.err)
        _ = try git(["push", "-q", "origin", "HEAD"], in: b)
        _ = try git(["pull", "-q", "--no-rebase", "origin", "HEAD"], in: a)
        let inA = try V2Edit.values(a + "/team.kcv", key: key)
        let inB = try V2Edit.values(b + "/team.kcv", key: key)
        XCTAssertEqual(inA, inB)
        XCTAssertEqual(inA, ["svc/x": "x-from-a", "svc/y": "y-from-b", "svc/z": "z-from-b"])
        // git diff, through the textconv: the merge brought A's change of svc/x into B.
        let diff = try git(["diff", "HEAD^2", "HEAD", "--", "team.kcv"], in: b).out
        let changed = diff.split(separator: "\n").filter { $0.hasPrefix("+genp") || $0.hasPrefix("-genp") }
        XCTAssertTrue(changed.contains { $0.hasPrefix("+genp svc/z ") }, diff)
        XCTAssertFalse(changed.contains { $0.contains("svc/x") }, diff)
        let log = try git(["log", "-p", "-1", "--format=", "HEAD^2", "--", "team.kcv"], in: b).out
        XCTAssertTrue(log.contains("+genp svc/x "), log)
        XCTAssertTrue(try keyed(["verify", a + "/team.kcv"]).output.contains("intact"))
    }

    func setUpClone(_ c: String) throws {
        let r = try runProcess(CLITests.binary, ["git", "setup"], env: gitEnvironment, cwd: c)
        XCTAssertEqual(r.code, 0, r.err)
        if !FileManager.default.fileExists(atPath: c + "/.gitattributes") { return }
        _ = try git(["add", ".gitattributes"], in: c)
    }
}

/// Changes a version 2 vault in process, as another writer would (kcar's own item commands write version 1
/// until they learn version 2).
enum V2Edit {
    static func open(_ path: String, key: String, writer: UInt64? = nil) throws -> PagedVault {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: key)))
        return try PagedVault.open(
            path: path, secret: .keyFile(SecureBytes(copying: bytes)), mode: writer == nil ? .read : .write,
            writerID: writer)
    }

    /// The live item named `name` (service/account), looked up by the key attributes of the vault's schema.
    static func item(_ v: PagedVault, _ name: String) throws -> Item? {
        let parts = name.split(separator: "/", maxSplits: 1).map(String.init)
        // The class's key attributes in the vault's schema (pack's: sync, service, account).
        let values: [AttributeValue] = (v.schema.classes["genp"]?.keyAttributes ?? []).map { k in
            k.name == "svce" ? .string(parts[0]) : k.name == "acct" ? .string(parts[1]) : k.defaultValue
        }
        return try v.items(class: .genericPassword, keyValues: values).first
    }

    /// Sets the values of `values` (service/account -> value: an update, or an add) and deletes `delete`, in one commit.
    static func set(_ path: String, key: String, writer: UInt64, _ values: [String: String], delete: [String] = [])
        throws
    {
        let v = try open(path, key: key, writer: writer)
        try v.commit { tx in
            for (name, value) in values.sorted(by: { $0.key < $1.key }) {
                if let it = try item(v, name) {
                    try tx.update(it, value: Array(value.utf8))
                } else {
                    let parts = name.split(separator: "/", maxSplits: 1).map(String.init)
                    try tx.add(
                        attributes: Attributes(["svce": .string(parts[0]), "acct": .string(parts[1])]),
                        value: Array(value.utf8))
                }
            }
            for name in delete { if let it = try item(v, name) { try tx.delete(it) } }
        }
    }

    /// service/account -> value of every live item.
    static func values(_ path: String, key: String) throws -> [String: String] {
        let v = try open(path, key: key)
        var out: [String: String] = [:]
        try v.forEachItem { item in
            out["\(item.service ?? "")/\(item.account ?? "")"] = String(decoding: try v.read(item), as: UTF8.self)
            return true
        }
        return out
    }

    static func id(_ path: String, key: String, _ name: String) throws -> String {
        try item(try open(path, key: key), name).map { "\($0.id)" } ?? ""
    }
}
