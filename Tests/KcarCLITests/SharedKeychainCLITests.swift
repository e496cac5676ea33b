import Foundation
import XCTest

/// What one member of a keychain shared on purpose (`kcar init --shared-group T`, SPEC.md §K1.2) can do to
/// another member's groups: two Unix users of one group T (`users`), run as the built binary. Needs root (to
/// run kcar as other users with setpriv) and group `users`; skipped otherwise.
final class SharedKeychainCLITests: XCTestCase {
    var dir: String!
    var kc: String { dir + "/kc" }
    /// The group's name and gid.
    var team = ("users", gid_t(0))
    /// V, whose private group M goes after, and M, another member of T. Neither is the folder's owner (root).
    let victim: uid_t = 64_101, mallory: uid_t = 64_102

    override func setUpWithError() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            let gid = getgrnam(team.0)?.pointee.gr_gid
        else {
            throw XCTSkip("needs root, setpriv and group users to run kcar as two members of one Unix group")
        }
        team.1 = gid
        dir = NSTemporaryDirectory() + "kcar-share-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chmod(dir, 0o755)
        for uid in [victim, mallory] {
            let own = dir + "/state-\(uid)"
            try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
            chown(own, uid, uid)
            chmod(own, 0o700)
        }
    }

    override func tearDownWithError() throws { if let dir { try? FileManager.default.removeItem(atPath: dir) } }

    /// Runs kcar as root (the folder's owner), or as `uid` (a member of T, with its own state folder).
    @discardableResult
    func kcar(
        _ args: [String], as uid: uid_t? = nil, stdin: String? = nil, keychain: String? = nil, expect: Int32? = 0,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProcessResult {
        var env = [
            "KCAR_KEYCHAIN": keychain ?? kc, "KCAR_ACCESS_GROUPS": "", "XDG_STATE_HOME": dir + "/state-\(uid ?? 0)"
        ]
        env["HOME"] = dir
        return try KcarRunner(dir: dir, env: env)(
            args, stdin: stdin.map { Data($0.utf8) }, prefix: member(uid), expect: expect, file: file, line: line)
    }

    /// Runs a system command (`/bin/mv`, `/bin/chmod`) as `uid`, a member of T.
    @discardableResult
    func shell(_ command: String, _ args: [String], as uid: uid_t) throws -> ProcessResult {
        try runProcess(command, args, cwd: dir, prefix: member(uid))
    }

    private func member(_ uid: uid_t?) -> [String] {
        guard let uid else { return [] }
        return ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--groups=\(team.1)"]
    }

    func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
    }

    /// V's group `g` made private as SPEC.md §K1.2 says: every file of it 0600.
    func makePrivateGroup(_ g: String) throws {
        try kcar(["add", "--group", g, "--service", "s1"], as: victim, stdin: "first")
        let closed = try shell("/bin/chmod", ["600", "\(kc)/\(g).key", "\(kc)/\(g).kcv", "\(kc)/\(g).seen"], as: victim)
        XCTAssertEqual(closed.code, 0, closed.err)
    }

    // MARK: The takeover of issue 21

    /// M moves V's private group aside and plants its own under the name: the sticky folder refuses the
    /// move, so V's next add goes to V's own vault and M reads nothing.
    func testAMemberCannotMoveAnotherMembersGroupAside() throws {
        try kcar(["init", "--shared-group", team.0])
        XCTAssertEqual(mode(kc), 0o3770, "setgid and restricted deletion (sticky)")
        try makePrivateGroup("g")
        for f in ["g.kcv", "g.key", "g.seen"] {
            let moved = try shell("/bin/mv", ["\(kc)/\(f)", "\(kc)/.aside-\(f)"], as: mallory)
            XCTAssertNotEqual(moved.code, 0, "M moved V's \(f) aside")
            XCTAssertTrue(moved.err.contains("Operation not permitted"), moved.err)
        }
        // M cannot take the name either: V's key is V's alone.
        try kcar(["add", "--group", "g", "--service", "s2"], as: mallory, stdin: "planted", expect: 12)
        try kcar(["add", "--group", "g", "--service", "s2"], as: victim, stdin: "secret2")
        XCTAssertEqual(try kcar(["get", "--group", "g", "--service", "s2"], as: victim).out, "secret2")
        let theirs = try kcar(["get", "--service", "s2"], as: mallory, expect: nil)
        XCTAssertFalse(theirs.out.contains("secret2"))
        XCTAssertNotEqual(theirs.code, 0)
        // The files are V's, 0600: M can neither read nor write them.
        for f in ["g.kcv", "g.key", "g.seen"] {
            XCTAssertEqual(mode("\(kc)/\(f)"), 0o600, f)
            XCTAssertNotEqual(try shell("/bin/cat", ["\(kc)/\(f)"], as: mallory).code, 0, f)
        }
    }

    /// The same takeover in a keychain shared before the sticky bit was required (mode 2770): M's move
    /// succeeds there, so kcar refuses the whole keychain, naming the command that fixes it, and V's add
    /// writes nothing M can read.
    func testAKeychainSharedWithoutTheStickyBitIsRefused() throws {
        try kcar(["init", "--shared-group", team.0])
        try makePrivateGroup("g")
        chmod(kc, 0o2770)  // as `kcar init --shared-group` made it before keychain v1.4
        for f in ["g.kcv", "g.key", "g.seen"] {
            XCTAssertEqual(try shell("/bin/mv", ["\(kc)/\(f)", "\(kc)/.aside-\(f)"], as: mallory).code, 0)
        }
        // M's own group of the same name, made in M's own keychain and moved in (key, vault and the record
        // that goes with them), its key readable by T.
        let mine = dir + "/state-\(mallory)/own"
        let mineKey = dir + "/state-\(mallory)/m.key"
        try kcar(["add", "--group", "g", "--service", "decoy"], as: mallory, stdin: "decoy", keychain: mine)
        XCTAssertEqual(try shell("/bin/cp", ["\(mine)/g.key", mineKey], as: mallory).code, 0)
        XCTAssertEqual(
            try shell("/bin/chgrp", [team.0, "\(mine)/g.key", "\(mine)/g.kcv", "\(mine)/g.seen"], as: mallory).code, 0)
        XCTAssertEqual(try shell("/bin/chmod", ["640", "\(mine)/g.key"], as: mallory).code, 0)
        XCTAssertEqual(try shell("/bin/chmod", ["660", "\(mine)/g.kcv", "\(mine)/g.seen"], as: mallory).code, 0)
        for f in ["g.key", "g.kcv", "g.seen"] {
            XCTAssertEqual(try shell("/bin/mv", ["\(mine)/\(f)", "\(kc)/\(f)"], as: mallory).code, 0)
        }

        let refused = try kcar(["add", "--group", "g", "--service", "s2"], as: victim, stdin: "secret2", expect: 15)
        XCTAssertTrue(refused.err.contains("chmod +t \(kc)"), refused.err)
        XCTAssertTrue(refused.err.contains("sticky"), refused.err)
        try kcar(["get", "--group", "g", "--service", "decoy"], as: mallory, expect: 15)
        // What M planted holds nothing of V's.
        let listed = try kcar(["list", "\(kc)/g.kcv", "--key-file", mineKey])
        XCTAssertEqual(listed.out.split(separator: "\n").count, 2, "M's decoy alone: \(listed.out)")
        // The owner's fix (either way) makes the keychain usable again; M's files stay M's.
        try kcar(["init", "--shared-group", team.0])
        XCTAssertEqual(mode(kc), 0o3770)
    }

    // MARK: Private groups belong to their key's owner

    /// A group whose key no one else can read is its owner's: its vault and record must be the owner's and
    /// writable by no one else, and no other process (root's included) uses it.
    func testAPrivateGroupsFilesMustBeItsOwners() throws {
        try kcar(["init", "--shared-group", team.0])
        try kcar(["add", "--group", "g", "--service", "s1"], as: victim, stdin: "first")
        // Only the key made private: the vault and record could still be written by every member.
        XCTAssertEqual(try shell("/bin/chmod", ["600", "\(kc)/g.key"], as: victim).code, 0)
        let open = try kcar(["get", "--group", "g", "--service", "s1"], as: victim, expect: 15)
        XCTAssertTrue(open.err.contains("`chmod 600 \(kc)/g.kcv \(kc)/g.seen`"), open.err)
        XCTAssertEqual(try shell("/bin/chmod", ["600", "\(kc)/g.kcv", "\(kc)/g.seen"], as: victim).code, 0)
        XCTAssertEqual(try kcar(["get", "--group", "g", "--service", "s1"], as: victim).out, "first")
        // A commit and a rewrite by the owner keep the files private.
        try kcar(["add", "--group", "g", "--service", "s2"], as: victim, stdin: "second")
        try kcar(["compact", "--group", "g"], as: victim)
        for f in ["g.kcv", "g.key", "g.seen"] { XCTAssertEqual(mode("\(kc)/\(f)"), 0o600, f) }
        // Another user's process (root, who can read the key) is not entitled to it.
        let root = try kcar(["get", "--group", "g", "--service", "s1"], expect: 12)
        XCTAssertTrue(root.err.contains("private to uid \(victim)"), root.err)
        XCTAssertFalse(try kcar(["groups"]).out.contains(" g\n"))
        // A vault that is not the key owner's (here given away by root) is refused by the owner.
        chown("\(kc)/g.kcv", mallory, gid_t.max)
        chmod("\(kc)/g.kcv", 0o644)
        let given = try kcar(["get", "--group", "g", "--service", "s1"], as: victim, expect: 15)
        XCTAssertTrue(given.err.contains("owned by uid \(mallory)"), given.err)
    }

    /// A name V has not used yet is free for anyone (SPEC.md §K1.2): a record M plants there leaves V's
    /// group refused, never served.
    func testAFilePlantedUnderAPrivateGroupsNameIsRefused() throws {
        try kcar(["init", "--shared-group", team.0])
        try makePrivateGroup("g")
        XCTAssertEqual(try shell("/bin/mv", ["\(kc)/g.seen", "\(kc)/x"], as: victim).code, 0)
        XCTAssertEqual(try shell("/bin/sh", ["-c", "umask 007; printf junk > \(kc)/g.seen"], as: mallory).code, 0)
        let planted = try kcar(["get", "--group", "g", "--service", "s1"], as: victim, expect: 15)
        XCTAssertTrue(planted.err.contains("\(kc)/g.seen"), planted.err)
        XCTAssertTrue(planted.err.contains("owned by uid \(mallory)"), planted.err)
    }

    // MARK: Shared groups in a sticky folder

    /// In a sticky folder a member cannot replace a file another member owns: a rewrite (compaction, rekey)
    /// of a shared group is its vault owner's, or the folder owner's, and fails clearly for anyone else;
    /// commits, and the generation record, still work for every member.
    func testOnlyAVaultsOwnerRewritesItInAStickyFolder() throws {
        try kcar(["init", "--shared-group", team.0])
        try kcar(["add", "--group", "team", "--service", "a"], as: mallory, stdin: "a")
        try kcar(["add", "--group", "team", "--service", "b"], as: victim, stdin: "b")
        try kcar(["add", "--group", "team", "--service", "c"], as: victim, stdin: "c")
        let seen = [UInt8](try Data(contentsOf: URL(fileURLWithPath: kc + "/team.seen")))
        XCTAssertEqual(
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(seen[28 + $1]) << (8 * UInt64($1)) }, 4,
            "V's commits advance the record M's process wrote")
        let refused = try kcar(["compact", "--group", "team"], as: victim, expect: 8)
        XCTAssertTrue(refused.err.contains("sticky"), refused.err)
        XCTAssertEqual(try kcar(["get", "--group", "team", "--service", "c"], as: mallory).out, "c")
        try kcar(["compact", "--group", "team"], as: mallory)
        try kcar(["compact", "--group", "team"])
        XCTAssertEqual(mode(kc + "/team.kcv"), 0o660)
        XCTAssertEqual(try kcar(["get", "--group", "team", "--service", "b"], as: victim).out, "b")
    }
}
