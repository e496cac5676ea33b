import Foundation
import Synchronization
import XCTest

/// `kcar init | add | get | find | update | delete | groups | import` and the keychain forms of the vault
/// commands, run as the built binary (SPEC.md Part 3).
final class KeychainCLITests: XCTestCase {
    var dir: String!
    var kc: String { dir + "/kc" }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-kc-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    var kcar: KcarRunner {
        KcarRunner(dir: dir, env: ["KCAR_KEYCHAIN": kc, "KCAR_ACCESS_GROUPS": "", "XDG_STATE_HOME": dir + "/state"])
    }

    func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
    }

    func testItemLifecycle() throws {
        XCTAssertEqual(try kcar(["init"]).out, kc + "\n")
        XCTAssertEqual(mode(kc), 0o700)
        try kcar(
            ["add", "--group", "app", "--service", "api", "--account", "bob", "--label", "Bob's token"], stdin: "s3cr3t"
        )
        XCTAssertEqual(mode(kc + "/app.key"), 0o600)
        XCTAssertEqual(mode(kc + "/app.kcv"), 0o600)
        let dup = try kcar(
            ["add", "--group", "app", "--service", "api", "--account", "bob", "--label", "other"], stdin: "x",
            expect: 11)
        XCTAssertTrue(dup.err.contains("errSecDuplicateItem (-25299)"), dup.err)
        XCTAssertFalse(dup.err.contains("s3cr3t") || dup.err.contains("x\n"))
        try kcar(
            [
                "add", "--group", "app", "--service", "api", "--account", "carol", "--attr", "tier:int=2",
                "--attr", "kSecAttrComment=ops"
            ], stdin: "pw2")
        XCTAssertEqual(try kcar(["get", "--service", "api", "--account", "bob"]).out, "s3cr3t")
        try kcar(["get", "--service", "api"], expect: 2)  // two match: ambiguous
        try kcar(["get", "--service", "api", "--account", "nobody"], expect: 6)
        // find: attributes only, JSON as list --json plus the group.
        let json = try kcar(["find", "--attr", "tier:int=2", "--json"]).data
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: json) as? [[String: Any]])
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows[0]["group"] as? String, "app")
        XCTAssertEqual(rows[0]["account"] as? String, "carol")
        let attrs = try XCTUnwrap(rows[0]["attributes"] as? [String: Any])
        XCTAssertEqual(attrs["@tier"] as? Int, 2)
        XCTAssertEqual(attrs["icmt"] as? String, "ops")
        try kcar(["find", "--attr", "tier=2"], expect: 6)  // a string "2" is not the integer 2
        try kcar(["find", "--service", "API"], expect: 6)
        XCTAssertTrue(try kcar(["find", "--service", "API", "--ignore-case"]).out.contains("carol"))
        // update: every match; the value from --value-file.
        try kcar(["update", "--service", "api", "--set-label", "L"])
        try Data("new".utf8).write(to: URL(fileURLWithPath: dir + "/v"))
        try kcar(["update", "--service", "api", "--account", "bob", "--value-file", dir + "/v"])
        XCTAssertEqual(try kcar(["get", "--service", "api", "--account", "bob"]).out, "new")
        try kcar(["update", "--service", "api", "--account", "bob", "--set-attr", "kSecAttrAccount=carol"], expect: 11)
        try kcar(["update", "--service", "api", "--set-attr", "kSecAttrServer=x"], expect: 2)
        try kcar(["update", "--service", "none", "--set-label", "x"], expect: 6)
        try kcar(["update", "--service", "api"], expect: 2)  // nothing to change
        XCTAssertEqual(try kcar(["groups"]).out, "ITEMS  GROUP\n    2  app\n")
        try kcar(["delete"], expect: 2)  // no selection without --all
        try kcar(["delete", "--service", "api"])
        try kcar(["delete", "--service", "api"], expect: 6)
        // Internet passwords, by their own key.
        try kcar(
            [
                "add", "--group", "app", "--class", "inet", "--server", "example.com", "--port", "443", "--protocol",
                "htps",
                "--account", "bob"
            ], stdin: "pw")
        try kcar(
            [
                "add", "--group", "app", "--class", "inet", "--server", "example.com", "--port", "443", "--protocol",
                "htps",
                "--account", "bob", "--label", "differs only outside the key"
            ], stdin: "pw", expect: 11)
        try kcar(
            [
                "add", "--group", "app", "--class", "inet", "--server", "example.com", "--port", "8443", "--protocol",
                "htps",
                "--account", "bob"
            ], stdin: "pw")
        XCTAssertEqual(
            try kcar(["find", "--class", "inet", "--server", "example.com"]).out.split(separator: "\n").count, 3)
        try kcar(["add", "--group", "app", "--class", "blob"], stdin: "", expect: 2)
    }

    func testAccessGroupsAndVaultCommands() throws {
        try kcar(["add", "--group", "a", "--service", "s1"], stdin: "one")
        try kcar(["add", "--group", "b", "--service", "s2"], stdin: "two")
        XCTAssertEqual(try kcar(["find", "--json"]).out.components(separatedBy: "\"group\"").count - 1, 2)
        // No list: every readable group is searched; add without a group goes to the default group, the
        // program's name (SPEC.md §K2.1, issue 12).
        try kcar(["add", "--service", "x"], stdin: "x")
        XCTAssertEqual(try kcar(["get", "--group", "kcar", "--service", "x"]).out, "x")
        try kcar(["delete", "--group", "kcar", "--service", "x"])
        // With a list: add goes to the first group; others are out of reach.
        let onlyB = ["KCAR_ACCESS_GROUPS": "b"]
        try kcar(["add", "--service", "s3"], stdin: "three", env: onlyB)
        XCTAssertEqual(try kcar(["groups"], env: onlyB).out, "ITEMS  GROUP\n    2  b\n")
        try kcar(["get", "--group", "a", "--service", "s1"], env: onlyB, expect: 12)
        try kcar(["list", "--group", "a"], env: onlyB, expect: 12)
        try kcar(["get", "--groups", "a,b", "--group", "a", "--service", "s1"], env: onlyB)
        // The vault commands find a group's vault and key themselves.
        XCTAssertEqual(try kcar(["list", "--group", "b"]).out.split(separator: "\n").count, 3)  // header and two items
        XCTAssertTrue(try kcar(["verify", "--group", "b"]).out.contains("intact"))
        try kcar(["info", "--group", "b", "--json"])
        try kcar(["compact", "--group", "b"])
        try Data("correct horse".utf8).write(to: URL(fileURLWithPath: dir + "/pp"))
        try kcar([
            "passwd", "--group", "b", "--add-passphrase", "--new-passphrase-file", dir + "/pp", "--kdf-memory", "8",
            "--kdf-passes", "1"
        ])
        XCTAssertEqual(try kcar(["get", "--service", "s3"]).out, "three", "the key file still opens the group")
        try kcar(["list", kc + "/b.kcv", "--passphrase-file", dir + "/pp"])
        try kcar(["list", "--group", "nope"], expect: 6)
    }

    func testAKeyFileTheProcessCannotReadIsAMissingEntitlement() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            getgrnam("nogroup") != nil
        else {
            throw XCTSkip("needs root, setpriv and group nogroup to run kcar as another user")
        }
        // A keychain shared on purpose with nogroup (SPEC.md §K1): its members read the keys of mode 0640.
        try kcar(["init", "--shared-group", "nogroup"])
        try kcar(["add", "--group", "open", "--service", "s"], stdin: "readable")
        try kcar(["add", "--group", "closed", "--service", "s"], stdin: "secret")
        XCTAssertEqual(mode(kc), 0o3770)
        XCTAssertEqual(mode(kc + "/open.key"), 0o640)
        XCTAssertEqual(mode(kc + "/open.kcv"), 0o660)
        chmod(dir, 0o755)
        chmod(kc + "/closed.key", 0o600)
        let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        let groups = try kcar(["groups"], prefix: nobody)
        XCTAssertEqual(groups.out, "ITEMS  GROUP\n    1  open\n")
        XCTAssertEqual(try kcar(["get", "--service", "s"], prefix: nobody).out, "readable")
        // A member adds a group of its own, and compacts it: the files keep the group's modes. Another
        // member's vault it cannot replace in the sticky folder (SPEC.md §K1.2).
        try kcar(["add", "--group", "theirs", "--service", "t"], stdin: "t", prefix: nobody)
        try kcar(["compact", "--group", "theirs"], prefix: nobody)
        XCTAssertEqual(mode(kc + "/theirs.kcv"), 0o660)
        XCTAssertTrue(try kcar(["compact", "--group", "open"], prefix: nobody, expect: 8).err.contains("sticky"))
        XCTAssertEqual(try kcar(["get", "--group", "theirs", "--service", "t"]).out, "t")
        let denied = try kcar(["get", "--group", "closed", "--service", "s"], prefix: nobody, expect: 12)
        XCTAssertTrue(denied.err.contains("Permission denied"), denied.err)
        try kcar(["list", "--group", "closed"], prefix: nobody, expect: 12)
        // A key readable by every user is not a way to share: refused.
        chmod(kc + "/open.key", 0o644)
        XCTAssertTrue(
            try kcar(["get", "--group", "open", "--service", "s"], prefix: nobody, expect: 15).err.contains(
                "readable by every user"))
    }

    func testAUserPrivateGroupMayWriteTheFoldersAbove() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            getpwuid(65534)?.pointee.pw_gid == 65534, getgrgid(65534)?.pointee.gr_mem.pointee == nil
        else {
            throw XCTSkip("needs root, setpriv and nobody's private group 65534 to run kcar as another user")
        }
        // umask 002 with user private groups leaves ~/.local/share mode 0775: only its owner can write it.
        let home = dir + "/home"
        try FileManager.default.createDirectory(atPath: home + "/.local/share", withIntermediateDirectories: true)
        for d in [home, home + "/.local", home + "/.local/share"] {
            chown(d, 65534, 65534)
            chmod(d, 0o775)
        }
        chmod(dir, 0o755)
        let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        let env = ["KCAR_KEYCHAIN": home + "/.local/share/kcar", "XDG_STATE_HOME": home + "/.local/state"]
        try kcar(["add", "--group", "g", "--service", "s"], stdin: "v", env: env, prefix: nobody)
        XCTAssertEqual(try kcar(["get", "--service", "s"], env: env, prefix: nobody).out, "v")
        // Writable by a group with other members (users, 100): refused.
        chown(home + "/.local", 65534, 100)
        let refused = try kcar(["get", "--service", "s"], env: env, prefix: nobody, expect: 15)
        XCTAssertTrue(
            refused.err.contains("\(home)/.local: a folder above the keychain is writable by others"), refused.err)
        // In the CLI's words, with the command that fixes it (issue 22, point 10).
        XCTAssertTrue(
            refused.err.hasPrefix("kcar: unsafe file ") && refused.err.contains("`chmod go-w \(home)/.local` fixes it"),
            refused.err)
    }

    func testUnsafeKeychainFilesExit15() throws {
        try kcar(["add", "--group", "mine", "--service", "api"], stdin: "own")
        chmod(kc, 0o1777)
        let open = try kcar(["find"], expect: 15)
        XCTAssertTrue(open.err.contains("unsafe file \(kc): writable by every user"), open.err)
        try kcar(["add", "--group", "mine", "--service", "x"], stdin: "x", expect: 15)
        try kcar(["list", "--group", "mine"], expect: 15)
        chmod(kc, 0o700)
        // A group planted by another user (key 0644, their vault): skipped and named; its items never answer.
        try kcar(["keygen", dir + "/their.key"])
        try kcar([
            "pack", kc + "/aaa.kcv", "--items", writeItems("api", "theirs"), "--key-file", dir + "/their.key",
            "--group", "aaa"
        ])
        try FileManager.default.copyItem(atPath: dir + "/their.key", toPath: kc + "/aaa.key")
        chmod(kc + "/aaa.key", 0o644)
        for f in ["aaa.key", "aaa.kcv"] { chown(kc + "/" + f, 65534, 65534) }
        let got = try kcar(["get", "--service", "api"], expect: 15)
        XCTAssertEqual(got.out, "own")
        XCTAssertTrue(got.err.contains("skipped group aaa: unsafe file \(kc)/aaa.key"), got.err)
        try kcar(["find", "--service", "api"], expect: 15)
        try kcar(["groups"], expect: 15)
        try kcar(["add", "--group", "aaa", "--service", "new"], stdin: "secret", expect: 15)
        for f in ["aaa.key", "aaa.kcv"] { unlink(kc + "/" + f) }
        // A FIFO where the key is: refused at once, not waited on.
        unlink(kc + "/mine.key")
        mkfifo(kc + "/mine.key", 0o600)
        XCTAssertTrue(try kcar(["get", "--group", "mine", "--service", "api"], expect: 15).err.contains("a FIFO"))
        try kcar(["info", "--group", "mine"], expect: 15)
    }

    /// An item file of one generic password (for planting a group with `pack --items`).
    func writeItems(_ service: String, _ value: String) throws -> String {
        let path = dir + "/items-\(service).json"
        let doc =
            "{\"format\": \"kcar-items\", \"version\": 1, \"group\": \"aaa\", \"items\": [{\"class\": \"genp\", "
            + "\"attributes\": {\"svce\": \"\(service)\"}, \"value\": \"\(Data(value.utf8).base64EncodedString())\"}]}"
        try Data(doc.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The generation a group's record holds (SPEC.md §K6).
    func seenGeneration(_ group: String) throws -> UInt64 {
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: kc + "/\(group).seen")))
        return (0..<8).reduce(0) { $0 | UInt64(b[28 + $1]) << (8 * UInt64($1)) }
    }

    func vaultGeneration(_ group: String) throws -> UInt64 {
        let info = try kcar(["info", "--group", group]).out
        let line = try XCTUnwrap(info.split(separator: "\n").first { $0.hasPrefix("generation:") })
        return try XCTUnwrap(UInt64(line.split(separator: " ").last.map(String.init) ?? ""))
    }

    func testDeviceOnlyItemsStayUnlessAsked() throws {
        try kcar(["add", "--group", "g", "--service", "s", "--account", "portable"], stdin: "p")
        try kcar(
            [
                "add", "--group", "g", "--service", "s", "--account", "local", "--accessible",
                "when-unlocked-this-device-only"
            ], stdin: "l")
        let export = try kcar(["extract", "--group", "g", "--items", dir + "/items.json"], expect: 9)
        XCTAssertTrue(export.err.contains("ThisDeviceOnly"))
        XCTAssertEqual(mode(dir + "/items.json"), 0o600)
        let doc = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/items.json")))
                as? [String: Any])
        XCTAssertEqual(doc["format"] as? String, "kcar-items")
        let items = try XCTUnwrap(doc["items"] as? [[String: Any]])
        XCTAssertEqual(items.map { $0["account"] as? String }, ["portable"])
        XCTAssertEqual(items[0]["value"] as? String, "cA==")
        try kcar(["extract", "--group", "g", "-C", dir + "/out"], expect: 9)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/out/s/portable"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out/s/local"))
        try kcar(["extract", "--group", "g", "--items", dir + "/all.json", "--include-device-only"])
        // pack from the keychain leaves it out too; the item file round-trips through pack and import.
        try kcar(["keygen", dir + "/k"])
        try kcar(["pack", dir + "/p.kcv", "--keychain", kc, "--group", "g", "--key-file", dir + "/k"], expect: 9)
        XCTAssertFalse(try kcar(["list", dir + "/p.kcv", "--key-file", dir + "/k"]).out.contains("local"))
        try kcar(["pack", dir + "/all.kcv", "--items", dir + "/all.json", "--key-file", dir + "/k", "--group", "g"])
        XCTAssertTrue(try kcar(["list", dir + "/all.kcv", "--key-file", dir + "/k"]).out.contains("s/local"))
        try kcar(["import", "--group", "copy", "--items", dir + "/all.json"])
        XCTAssertEqual(try kcar(["get", "--group", "copy", "--service", "s", "--account", "local"]).out, "l")
        try kcar(["import", "--group", "copy", "--items", dir + "/all.json"], expect: 11)  // all or nothing
        try Data("{\"format\": \"other\"}".utf8).write(to: URL(fileURLWithPath: dir + "/bad.json"))
        try kcar(["import", "--group", "copy", "--items", dir + "/bad.json"], expect: 4)
    }

    /// The item-file reader streams (issue 10): a file of several read-aheads (escapes and values cut by the
    /// reads) imports whole, and an error after its last item, or in the middle, imports nothing; a file with
    /// a fault is reported as invalid even when an item before the fault is a duplicate.
    func testImportStreamsAndAddsAllOrNothing() throws {
        let value = String(repeating: "QUJD", count: 300)  // 900 bytes, base64
        let items = (0..<600).map { i in
            "{\"class\": \"genp\", \"attributes\": {\"svce\": \"s\\u00e9\\n\", \"acct\": \"a\(i)\"}, \"value\": \"\(value)\"}"
        }
        let head = "{\"format\": \"kcar-items\", \"version\": 1, \"items\": ["
        let tail = "]}"
        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: dir + "/" + name))
        }
        try write("late.json", head + items.joined(separator: ",") + tail + " x")
        try write(
            "middle.json",
            head + items[..<300].joined(separator: ",") + ",{\"class\": 1}," + items[300...].joined(separator: ",")
                + tail)
        try write("good.json", head + items.joined(separator: ",") + tail)
        try kcar(["add", "--group", "g", "--service", "other"], stdin: "1")
        XCTAssertTrue(
            try kcar(["import", "--group", "g", "--items", dir + "/late.json"], expect: 4).err.contains(
                "after the document"))
        try kcar(["import", "--group", "g", "--items", dir + "/middle.json"], expect: 4)
        // A duplicate before the file's fault: the file is reported invalid, as when it was checked whole first.
        try write("duplicate.json", head + ([items[0]] + items).joined(separator: ",") + tail + " x")
        XCTAssertTrue(
            try kcar(["import", "--group", "g", "--items", dir + "/duplicate.json"], expect: 4).err.contains(
                "after the document"))
        try kcar(["find", "--group", "g", "--service", "s\u{E9}\n"], expect: 6)
        XCTAssertTrue(
            try kcar(["import", "--group", "g", "--items", dir + "/good.json"]).err.contains("imported 600 items"))
        XCTAssertEqual(
            try kcar(["get", "--group", "g", "--service", "s\u{E9}\n", "--account", "a599"]).out,
            String(repeating: "ABC", count: 300))
    }

    func testRollbackIsReported() throws {
        try kcar(["add", "--group", "g", "--service", "old"], stdin: "1")
        try FileManager.default.copyItem(atPath: kc + "/g.kcv", toPath: dir + "/backup.kcv")
        try FileManager.default.copyItem(atPath: kc + "/g.seen", toPath: dir + "/backup.seen")
        try kcar(["add", "--group", "g", "--service", "new"], stdin: "2")
        try kcar(["delete", "--group", "g", "--service", "old"])
        try FileManager.default.removeItem(atPath: kc + "/g.kcv")
        try FileManager.default.copyItem(atPath: dir + "/backup.kcv", toPath: kc + "/g.kcv")
        let rolledBack = try Data(contentsOf: URL(fileURLWithPath: kc + "/g.kcv"))
        XCTAssertTrue(try kcar(["find", "--group", "g"], expect: 14).err.contains("older copy"))
        // Every command that opens the group checks first, and none re-seals or rewrites the old copy.
        try Data("pw".utf8).write(to: URL(fileURLWithPath: dir + "/pp"))
        for command in [
            ["rekey"], ["compact"], ["info"], ["verify"], ["list"], ["extract", "-C", dir + "/out"], ["recover"],
            [
                "passwd", "--add-passphrase", "--new-passphrase-file", dir + "/pp", "--kdf-memory", "8", "--kdf-passes",
                "1"
            ]
        ] {
            try kcar(command + ["--group", "g"], expect: 14)
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: kc + "/g.kcv")), rolledBack)
        try kcar(["get", "--service", "old"], expect: 14)
        // Deleting the record does not help: the vault is past its first commit (even for a user who keeps no
        // copy of the record).
        unlink(kc + "/g.seen")
        try kcar(["get", "--service", "old"], expect: 14)
        let fresh = ["XDG_STATE_HOME": dir + "/fresh"]
        XCTAssertTrue(
            try kcar(["get", "--service", "old"], env: fresh, expect: 14).err.contains("no generation record"))
        try kcar(["groups", "--accept-rollback", "g"])
        try kcar(["find", "--group", "g", "--service", "old"])
        // The vault and its record restored together (one consistent older copy of both): this user's own
        // copy of the record (XDG_STATE_HOME) saw more; a user without one cannot tell (SPEC.md §K6).
        try kcar(["add", "--group", "g", "--service", "newer"], stdin: "3")
        unlink(kc + "/g.kcv")
        unlink(kc + "/g.seen")
        try FileManager.default.copyItem(atPath: dir + "/backup.kcv", toPath: kc + "/g.kcv")
        try FileManager.default.copyItem(atPath: dir + "/backup.seen", toPath: kc + "/g.seen")
        XCTAssertTrue(try kcar(["find", "--group", "g"], expect: 14).err.contains("this user saw"))
        try kcar(["find", "--group", "g", "--service", "old"], env: ["XDG_STATE_HOME": dir + "/other-user"])
    }

    func testVaultCommandsOnAGroupAdvanceItsRecord() throws {
        try kcar(["add", "--group", "g", "--service", "a"], stdin: "1")
        try kcar(["add", "--group", "g", "--service", "b"], stdin: "2")
        try kcar(["delete", "--group", "g", "--service", "a"])
        for command in [["compact"], ["rekey"]] {
            let before = try seenGeneration("g")
            try kcar(command + ["--group", "g"])
            let after = try vaultGeneration("g")
            XCTAssertGreaterThan(after, before, "\(command)")
            XCTAssertEqual(try seenGeneration("g"), after, "\(command) advances g.seen")
        }
        // A killed writer's temporary record is removed by the next one; none is left.
        try Data().write(to: URL(fileURLWithPath: kc + "/.g.seen.00112233aabb.tmp"))
        try kcar(["add", "--group", "g", "--service", "c"], stdin: "3")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: kc).filter { $0.hasSuffix(".tmp") }, [])
    }

    func testImportNSKeyedArchive() throws {
        let golden = CLITests.repo.appendingPathComponent("Fixtures/archive").path
        let kca = try XCTUnwrap(
            try FileManager.default.contentsOfDirectory(atPath: golden).sorted().first { $0.hasSuffix(".kca") })
        try kcar(["archive", "convert", golden + "/" + kca, dir + "/ns.plist", "--to", "nskeyed"])
        try kcar(["archive", "convert", dir + "/ns.plist", dir + "/back.kca", "--to", "kcar", "--deterministic"])
        try kcar(["import", "--nskeyed", dir + "/ns.plist", "--group", "g", "--service", "legacy", "--account", "prefs"]
        )
        let stored = try kcar(["get", "--service", "legacy", "--account", "prefs"]).data
        XCTAssertEqual(stored, try Data(contentsOf: URL(fileURLWithPath: dir + "/back.kca")))
        try kcar(["import", "--nskeyed", dir + "/back.kca", "--group", "g", "--service", "x"], expect: 2)
    }

    func testConcurrentProcessesLoseNoItem() throws {
        // The group does not exist yet: the first adds race to create its key file and vault.
        let count = 24
        let failures = Mutex<[String]>([])
        let (kc, dir) = (kc, dir!)
        DispatchQueue.concurrentPerform(iterations: count) { i in
            let r = try? runProcess(
                CLITests.binary, ["add", "--group", "g", "--service", "p", "--account", "\(i)"],
                stdin: Data("v\(i)".utf8), env: ["KCAR_KEYCHAIN": kc, "XDG_STATE_HOME": dir + "/state"], cwd: dir)
            if r?.code != 0 { failures.withLock { $0.append("\(i): \(r?.err ?? "did not run")") } }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let rows = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: try kcar(["find", "--service", "p", "--json"]).data)
                as? [[String: Any]])
        XCTAssertEqual(Set(rows.compactMap { $0["account"] as? String }), Set((0..<count).map { "\($0)" }))
        try kcar(["verify", "--group", "g"])
    }
}

extension KeychainCLITests {
    func testSynchronizableSelectorAndTheGroupKeySlot() throws {
        try kcar(["add", "--group", "g", "--service", "s", "--account", "a"], stdin: "local")
        try kcar(["add", "--group", "g", "--service", "s", "--account", "a", "--synchronizable"], stdin: "synced")
        try kcar(["get", "--service", "s", "--account", "a"], expect: 2)  // both match without a sync selector
        XCTAssertEqual(
            try kcar(["get", "--service", "s", "--account", "a", "--attr", "kSecAttrSynchronizable=true"]).out, "synced"
        )
        try kcar(["delete", "--service", "s", "--account", "a", "--attr", "kSecAttrSynchronizable=true"])
        XCTAssertEqual(try kcar(["get", "--service", "s", "--account", "a"]).out, "local")
        // The key-file slot the keychain opens a group with cannot be removed.
        try kcar(["passwd", "--group", "g", "--remove-slot", "0"], expect: 2)
        try Data("pw".utf8).write(to: URL(fileURLWithPath: dir + "/pp"))
        try kcar(["rekey", "--group", "g", "--passphrase-file", dir + "/pp"], expect: 3)  // no passphrase slot yet
        try kcar(["rekey", "--group", "g"])
        XCTAssertEqual(try kcar(["get", "--service", "s", "--account", "a"]).out, "local")
    }
}
