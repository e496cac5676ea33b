import Foundation
import XCTest

/// A keychain group shared through real git (SPEC.md Part 3, §K9): two machines, each with its own HOME and
/// keychain, sync the group with a shared copy in one repository; git's merge driver finds the key in the
/// keychain (no variable set); ThisDeviceOnly items stay on their machine and never reach any git object.
final class GroupSyncCLITests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-groupsync-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// One machine's environment: its HOME (and with it its keychain), its state folder (writer id), git's
    /// identity, and kcar first on PATH for git's merge driver and diff.
    func machine(_ name: String) -> [String: String] {
        let bin = (CLITests.binary as NSString).deletingLastPathComponent
        return [
            "HOME": dir + "/home-" + name, "XDG_STATE_HOME": dir + "/state-" + name, "GIT_CONFIG_NOSYSTEM": "1",
            "PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": "\(name)@example.com", "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": "\(name)@example.com"
        ]
    }

    @discardableResult
    func kcar(_ m: String, _ args: [String], in cwd: String? = nil, stdin: String? = nil, expect: Int32? = 0) throws
        -> ProcessResult
    {
        try KcarRunner(dir: cwd ?? dir, env: machine(m))(args, stdin: stdin.map { Data($0.utf8) }, expect: expect)
    }

    @discardableResult
    func git(_ m: String, _ args: [String], in cwd: String, expect: Int32? = 0) throws -> ProcessResult {
        let r = try runProcess("/usr/bin/env", ["git"] + args, env: machine(m), cwd: cwd)
        if let expect { XCTAssertEqual(r.code, expect, "git \(args.joined(separator: " ")): \(r.out)\(r.err)") }
        return r
    }

    func add(_ m: String, _ service: String, _ account: String, _ value: String, deviceOnly: Bool = false) throws {
        try kcar(
            m,
            ["add", "--group", "team", "--service", service, "--account", account]
                + (deviceOnly ? ["--accessible", "when-unlocked-this-device-only"] : []), stdin: value + "\n")
    }

    /// The group's items on a machine: service/account -> value.
    func items(_ m: String) throws -> [String: String] {
        let r = try kcar(m, ["find", "--group", "team", "--json"])
        let list = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]])
        var out: [String: String] = [:]
        for i in list {
            let s = try XCTUnwrap(i["service"] as? String)
            let acct = try XCTUnwrap(i["account"] as? String)
            out["\(s)/\(acct)"] = try kcar(m, ["get", "--group", "team", "--service", s, "--account", acct]).out
        }
        return out
    }

    func testAGroupSharedThroughGitKeepsEachMachinesDeviceOnlyItems() throws {
        let bare = dir + "/origin.git"
        let a = dir + "/a"
        let b = dir + "/b"
        try git("A", ["init", "-q", "--bare", bare], in: dir)
        try git("A", ["clone", "-q", bare, a], in: dir)
        try kcar("A", ["git", "setup"], in: a)
        try add("A", "api", "alice", "a1")
        try add("A", "api", "shared", "s1")
        try add("A", "local", "me", "A-device-secret", deviceOnly: true)
        let first = try kcar("A", ["sync", "--group", "team", "team.kcv"], in: a)
        XCTAssertTrue(first.err.contains("1 ThisDeviceOnly item left out"), first.err)
        try git("A", ["add", "."], in: a)
        try git("A", ["commit", "-qm", "team secrets"], in: a)
        try git("A", ["push", "-q", "origin", "HEAD"], in: a)

        // B: a clone, the key passed on out of band, and a join.
        try git("B", ["clone", "-q", bare, b], in: dir)
        try kcar("B", ["git", "setup"], in: b)
        let key = dir + "/team.key"
        try FileManager.default.copyItem(atPath: dir + "/home-A/.local/share/kcar/team.key", toPath: key)
        let missing = try kcar("B", ["sync", "--group", "team", "team.kcv"], in: b, expect: 10)
        XCTAssertTrue(missing.err.contains("needs its key"), missing.err)
        let join = try kcar("B", ["sync", "--group", "team", "team.kcv", "--key-file", key], in: b)
        XCTAssertTrue(join.err.contains("joined group team"), join.err)
        XCTAssertEqual(try items("B"), ["api/alice": "a1", "api/shared": "s1"])
        try kcar("B", ["get", "--group", "team", "--service", "local", "--account", "me"], expect: 6)

        // Both change the group, sync and commit; B pushes first, A pulls (git merges the copies), syncs, pushes.
        try add("B", "local", "me", "B-device-secret", deviceOnly: true)
        try add("B", "api", "bob", "b1")
        try kcar("B", ["update", "--group", "team", "--service", "api", "--account", "shared"], stdin: "s-B\n")
        try kcar("B", ["sync", "--group", "team", "team.kcv"], in: b)
        try git("B", ["commit", "-qam", "bob"], in: b)
        try git("B", ["push", "-q", "origin", "HEAD"], in: b)
        usleep(2000)
        try kcar("A", ["update", "--group", "team", "--service", "api", "--account", "alice"], stdin: "a2\n")
        try add("A", "api", "carol", "c1")
        try kcar("A", ["delete", "--group", "team", "--service", "api", "--account", "shared"])
        try kcar("A", ["sync", "--group", "team", "team.kcv"], in: a)
        try git("A", ["commit", "-qam", "carol"], in: a)
        let pull = try git("A", ["pull", "-q", "--no-rebase", "origin", "HEAD"], in: a)
        XCTAssertTrue(
            pull.err.contains("kcar merge:"), "git ran kcar's driver, which found the key in A's keychain: \(pull.err)")
        XCTAssertTrue(
            pull.err.contains("kcar merge: team.kcv: conflict on api/shared: OURS's deletion (")
                && pull.err.contains("and won; THEIRS's version is kept: kcar restore team.kcv api/shared --version 1"),
            pull.err)
        try kcar("A", ["sync", "--group", "team", "team.kcv"], in: a)
        try git("A", ["commit", "-qam", "synced", "--allow-empty"], in: a)
        try git("A", ["push", "-q", "origin", "HEAD"], in: a)
        try git("B", ["pull", "-q", "--no-rebase", "origin", "HEAD"], in: b)
        let verbose = try kcar("B", ["sync", "--group", "team", "team.kcv", "-v"], in: b)
        XCTAssertTrue(
            verbose.err.contains("kcar sync: took api/carol (from team.kcv)")
                && verbose.err.contains("kcar sync: deleted api/shared (from team.kcv)"), verbose.err)

        // The deletion (A's, newer than B's update) wins; both machines hold the same shared items.
        let shared = ["api/alice": "a2", "api/bob": "b1", "api/carol": "c1"]
        var inA = try items("A")
        var inB = try items("B")
        XCTAssertEqual(inA.removeValue(forKey: "local/me"), "A-device-secret")
        XCTAssertEqual(inB.removeValue(forKey: "local/me"), "B-device-secret")
        XCTAssertEqual(inA, shared)
        XCTAssertEqual(inB, shared)
        // B's update of the item A deleted lost, and is kept in the copy's history.
        XCTAssertTrue(try kcar("A", ["history", "team.kcv", "api/shared"], in: a).out.contains("merged"))

        // No version of the shared copy in any commit holds a ThisDeviceOnly item, live or kept.
        let revs = try git("A", ["rev-list", "--all"], in: a).out.split(separator: "\n")
        XCTAssertGreaterThanOrEqual(revs.count, 4)
        for rev in revs {
            let blob = try git("A", ["show", "\(rev):team.kcv"], in: a, expect: nil)
            guard blob.code == 0 else { continue }
            let path = dir + "/blob.kcv"
            try blob.data.write(to: URL(fileURLWithPath: path))
            let text = try kcar("A", ["git", "textconv", path, "--values"]).out
            XCTAssertFalse(text.contains("device") || text.contains("local/me"), text)
            try kcar("A", ["history", path, "local/me"], expect: 6)
        }
        // git diff names the items a commit changed.
        let diff = try git("B", ["log", "-p", "-1", "--format=", "--first-parent", "HEAD", "--", "team.kcv"], in: b).out
        XCTAssertTrue(diff.contains("api/carol"), diff)
    }

    /// Errors name FILE, give the documented code, and change neither FILE nor the group.
    func testSyncErrorsNameTheFileAndChangeNothing() throws {
        try kcar("A", ["sync", "--group", "team", "none.kcv"], expect: 6)
        try add("A", "api", "alice", "a1")
        try add("A", "other", "x", "x1")
        try kcar("A", ["sync", "--group", "team", "team.kcv"])
        // Another group's copy, and a vault of another id under the name of this group's copy.
        try kcar("A", ["add", "--group", "other", "--service", "o", "--account", "o"], stdin: "o\n")
        try kcar("A", ["sync", "--group", "other", "other.kcv"])
        let team = try Data(contentsOf: URL(fileURLWithPath: dir + "/team.kcv"))
        let other = try Data(contentsOf: URL(fileURLWithPath: dir + "/other.kcv"))
        let wrongGroup = try kcar("A", ["sync", "--group", "team", "other.kcv"], expect: 2)
        XCTAssertTrue(wrongGroup.err.contains("other.kcv: holds group other, not team"), wrongGroup.err)
        // Joining with a key that does not open the copy: wrong key, nothing created.
        let key = dir + "/wrong.key"
        try kcar("B", ["keygen", key])
        let wrong = try kcar("B", ["sync", "--group", "team", "team.kcv", "--key-file", key], expect: 3)
        XCTAssertTrue(wrong.err.contains("team.kcv"), wrong.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/home-B/.local/share/kcar/team.key"))
        // A join under another group's name is refused.
        try FileManager.default.copyItem(
            atPath: dir + "/home-A/.local/share/kcar/other.key", toPath: dir + "/other.key")
        let misnamed = try kcar(
            "B", ["sync", "--group", "team", "other.kcv", "--key-file", dir + "/other.key"], expect: 2)
        XCTAssertTrue(misnamed.err.contains("holds group other"), misnamed.err)
        // A version 1 vault is not a shared copy.
        let teamKey = dir + "/home-A/.local/share/kcar/team.key"
        try kcar(
            "A",
            [
                "pack", "--format", "1", "v1.kcv", "--group", "team", "--keychain", dir + "/home-A/.local/share/kcar",
                "--key-file", teamKey
            ])
        let v1 = try kcar("A", ["sync", "--group", "team", "v1.kcv"], expect: 4)
        XCTAssertTrue(v1.err.contains("version 1"), v1.err)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/team.kcv")), team)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/other.kcv")), other)
        XCTAssertEqual(try items("A"), ["api/alice": "a1", "other/x": "x1"])
        // --pull only reads the copy (a read-only checkout; the mode does not stop root, so the bytes are what is checked).
        try add("A", "api", "new", "n1")
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: dir + "/team.kcv")
        let pull = try kcar("A", ["sync", "--group", "team", "team.kcv", "--pull"])
        XCTAssertTrue(pull.err.contains("0 items pulled (--pull"), pull.err)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/team.kcv")), team)
        try kcar("A", ["sync", "--group", "team", "missing.kcv", "--pull"], expect: 6)
    }

    /// The keychain-key lookup of merge, textconv and history (a shared copy opens with its group's key) uses
    /// only a group this process may use: with KCAR_ACCESS_GROUPS naming others (§K2), a copy of a group outside
    /// that list is not opened with the group's key, as `kcar get --group` would not read it.
    func testTheKeychainKeyLookupKeepsToTheProcesssGroups() throws {
        try add("A", "api", "alice", "a1")
        try kcar("A", ["sync", "--group", "team", "team.kcv"])
        XCTAssertTrue(try kcar("A", ["git", "textconv", "team.kcv"]).out.contains("api/alice"))
        var env = machine("A")
        env["KCAR_ACCESS_GROUPS"] = "ci"
        XCTAssertEqual(
            try runProcess(
                CLITests.binary, ["get", "--group", "team", "--service", "api", "--account", "alice"], env: env,
                cwd: dir
            ).code, 12,
            "the process may not use group team")
        let text = try runProcess(CLITests.binary, ["git", "textconv", "team.kcv"], env: env, cwd: dir)
        XCTAssertEqual(text.code, 0, text.err)
        XCTAssertFalse(text.out.contains("api/alice"), text.out)
        XCTAssertTrue(text.out.contains("no key given"), text.out)
        let history = try runProcess(CLITests.binary, ["history", "team.kcv", "api/alice"], env: env, cwd: dir)
        XCTAssertNotEqual(history.code, 0, history.out)
        XCTAssertFalse(history.out.contains("api/alice"), history.out)
    }

    /// A join is refused for what FILE is before a key is asked for: another group's copy is exit 2 (as the help
    /// page says) with or without a key, not exit 10; a group name that cannot be one is a usage error.
    func testAJoinNamesAnotherGroupsCopyWithoutAKey() throws {
        try add("A", "api", "alice", "a1")
        try kcar("A", ["sync", "--group", "team", "team.kcv"])
        let other = try kcar("B", ["sync", "--group", "nope", "team.kcv"], expect: 2)
        XCTAssertTrue(other.err.contains("team.kcv: holds group team, not nope"), other.err)
        try kcar("B", ["sync", "--group", "", "team.kcv"], expect: 2)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/home-B/.local/share/kcar"), "no keychain made")
    }

    /// FILE in the keychain's folder is refused: written there, a copy named team2.kcv made a group team2 without
    /// a key that no command could use; the group's own vault, directly or by a symlink, is no copy of it.
    func testACopyIsNeverWrittenIntoTheKeychain() throws {
        try add("A", "api", "alice", "a1")
        let keychain = dir + "/home-A/.local/share/kcar"
        try kcar("A", ["sync", "--group", "team", keychain + "/team2.kcv"], expect: 2)
        XCTAssertFalse(FileManager.default.fileExists(atPath: keychain + "/team2.kcv"))
        try kcar("A", ["sync", "--group", "team", keychain + "/team.kcv"], expect: 2)
        try FileManager.default.createSymbolicLink(
            atPath: dir + "/link.kcv", withDestinationPath: keychain + "/team.kcv")
        try kcar("A", ["sync", "--group", "team", "link.kcv"], expect: 2)
        try kcar("A", ["sync", "--group", "team", "team.kcv"])
    }
}
