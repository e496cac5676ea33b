import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Issue 13, item 9, tar's habits: symbolic links stored (or followed with -h) and made again, but never one
/// that leads out of the output folder and never written through; empty folders kept; permission bits stored
/// and restored with -p only; files added to and items deleted from a packed vault in one commit.
final class TarHabitsTests: XCTestCase {
    var dir: String!
    var keyFile: String { CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path }
    let fm = FileManager.default

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-tar-\(UUID().uuidString)"
        try fm.createDirectory(atPath: dir + "/outside", withIntermediateDirectories: true)
        try Data("outside, untouched".utf8).write(to: URL(fileURLWithPath: dir + "/outside/file"))
    }

    override func tearDownWithError() throws {
        _ = try? runProcess("/bin/chmod", ["-R", "u+rwx", dir], cwd: "/")
        try? fm.removeItem(atPath: dir)
    }

    /// kcar as this class runs it (`KcarRunner`).
    var kcar: KcarRunner { KcarRunner(dir: dir, arguments: ["--key-file", keyFile]) }

    func write(_ path: String, _ text: String, mode: Int = 0o644) throws {
        let url = URL(fileURLWithPath: dir + "/" + path)
        try fm.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        XCTAssertEqual(chmod(url.path, mode_t(mode)), 0)
    }

    func link(_ path: String, to target: String) throws {
        try fm.createDirectory(
            atPath: (dir + "/" + path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: dir + "/" + path, withDestinationPath: target)
    }

    func text(_ path: String) -> String? {
        fm.contents(atPath: dir + "/" + path).map { String(decoding: $0, as: UTF8.self) }
    }

    func mode(_ path: String) -> Int {
        var st = stat()
        XCTAssertEqual(lstat(dir + "/" + path, &st), 0, path)
        return Int(st.st_mode & 0o7777)
    }

    func target(_ path: String) -> String? { try? fm.destinationOfSymbolicLink(atPath: dir + "/" + path) }

    func bytes(_ path: String) -> [UInt8] { Array(fm.contents(atPath: dir + "/" + path) ?? Data()) }

    /// A vault `v.kcv` of (service, account, attributes beyond those two, value) made with the library, as an
    /// attacker would make one.
    func vault(_ items: [(String, String, [String: AttributeValue], [UInt8])]) throws {
        try keyFileVault(dir + "/v.kcv", items)
    }

    func names(_ vault: String = "v.kcv") throws -> [String] {
        let list = try kcar(["list", vault, "--json"])
        return (try JSONSerialization.jsonObject(with: list.data) as! [[String: Any]]).map { $0["name"] as! String }
    }

    /// Nothing was created beside the output folders: `outside` is as setUp left it.
    func assertNothingOutside(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(
            regularFiles(dir + "/outside"), ["file": Array("outside, untouched".utf8)], file: file, line: line)
    }

    // MARK: Symbolic links

    func testLinksAreStoredAndMadeAgainInsideTheFolder() throws {
        try write("src/svc/a", "A")
        try write("src/svc/sub/b", "B")
        try link("src/svc/to-a", to: "a")
        try link("src/svc/sub/to-sub", to: "../sub")
        try link("src/svc/dangling", to: "nothing-here")
        try link("src/svc/absolute", to: dir + "/outside/file")
        try link("src/svc/climbs", to: "../../outside/file")
        let pack = try kcar(["pack", "v.kcv", "src", "-v"])
        XCTAssertEqual(
            pack.stdout, "svc/a\nsvc/absolute\nsvc/climbs\nsvc/dangling\nsvc/sub/b\nsvc/sub/to-sub\nsvc/to-a\n")
        let list = try kcar(["list", "v.kcv"]).stdout
        for line in [
            "svc/to-a -> a", "svc/sub/to-sub -> ../sub", "svc/dangling -> nothing-here",
            "svc/absolute -> \(dir!)/outside/file"
        ] {
            XCTAssertTrue(list.contains(line), list)
        }
        let json =
            try JSONSerialization.jsonObject(with: try kcar(["list", "v.kcv", "--json"]).data) as! [[String: Any]]
        let toA = json.first { $0["name"] as? String == "svc/to-a" }!
        XCTAssertEqual(toA["type"] as? String, "link")
        XCTAssertEqual(toA["target"] as? String, "a")
        XCTAssertEqual(toA["size"] as? Int, 0)

        // The links inside the folder are made (after the files); the two that lead out are named and skipped (exit 9).
        let x = try kcar(["extract", "v.kcv", "-C", "out", "-v"], expect: 9)
        XCTAssertEqual(x.stdout, "svc/a\nsvc/sub/b\nsvc/dangling\nsvc/sub/to-sub\nsvc/to-a\n")
        XCTAssertTrue(
            x.err.contains("skipped svc/absolute -> \(dir!)/outside/file: the link would lead out of out"), x.err)
        XCTAssertTrue(x.err.contains("skipped svc/climbs -> ../../outside/file"), x.err)
        XCTAssertEqual(target("out/svc/to-a"), "a")
        XCTAssertEqual(target("out/svc/sub/to-sub"), "../sub")
        XCTAssertEqual(target("out/svc/dangling"), "nothing-here")
        XCTAssertEqual(text("out/svc/to-a"), "A")
        XCTAssertNil(target("out/svc/absolute"))
        XCTAssertFalse(fm.fileExists(atPath: dir + "/out/svc/climbs"))

        // --unsafe-links makes them too (links only: nothing is written through them).
        try kcar(["extract", "v.kcv", "-C", "all", "--unsafe-links"])
        XCTAssertEqual(target("all/svc/absolute"), dir + "/outside/file")
        XCTAssertEqual(target("all/svc/climbs"), "../../outside/file")
        // Again with --force: every link is replaced by the vault's, nothing through them.
        try kcar(["extract", "v.kcv", "-C", "all", "--unsafe-links", "--force"])
        XCTAssertEqual(target("all/svc/to-a"), "a")
        // Without --force an existing link is an existing file (exit 7, nothing written).
        try kcar(["extract", "v.kcv", "-C", "all", "--unsafe-links"], expect: 7)
        assertNothingOutside()
    }

    func testDereferenceStoresWhatLinksPointAt() throws {
        try write("src/svc/a", "A", mode: 0o640)
        try write("elsewhere/inner/x", "X")
        try link("src/svc/to-a", to: "a")
        try link("src/svc/dir", to: dir + "/elsewhere")
        for flag in ["-h", "--dereference"] {
            try kcar(["pack", "v\(flag).kcv", "src", flag])
            XCTAssertEqual(try names("v\(flag).kcv"), ["svc/a", "svc/dir/inner/x", "svc/to-a"])
            XCTAssertEqual(try kcar(["extract", "v\(flag).kcv", "--stdout", "svc/to-a"]).data, Data("A".utf8))
            XCTAssertEqual(try kcar(["extract", "v\(flag).kcv", "--stdout", "svc/dir/inner/x"]).data, Data("X".utf8))
        }
        // A dangling link and a loop (a link to a folder above it) are named and skipped.
        try link("src/svc/gone", to: "nothing-here")
        try link("src/svc/loop", to: "..")
        try link("src/svc/dir2", to: "dir")  // the same folder again: listed once, however many links lead to it
        let r = try kcar(["pack", "w.kcv", "src", "-h"], expect: 9)
        XCTAssertTrue(
            r.err.contains("src/svc/dir2: a symbolic link to a folder already packed through another path"), r.err)
        XCTAssertTrue(r.err.contains("src/svc/gone: a symbolic link to nothing"), r.err)
        XCTAssertTrue(r.err.contains("src/svc/loop: a symbolic link to a folder above it"), r.err)
        XCTAssertEqual(try names("w.kcv"), ["svc/a", "svc/dir/inner/x", "svc/to-a"])
        // `kcar pack -h` alone is still help.
        XCTAssertTrue(try runKcar(["pack", "-h"], in: dir).stdout.contains("-h, --dereference"))
    }

    /// Vaults an attacker made: a link, then a file below it (tar's classic `a -> /etc`, `a/passwd`), links that
    /// climb out directly or through another link, and kcar attributes of the wrong type. Nothing is written
    /// outside the folder or through a link, whatever the order of the items.
    func testHostileLinksNeverLeadOutOrAreWrittenThrough() throws {
        let (link, mode, folder) = ("@kcar.link", "@kcar.mode", "@kcar.folder")
        // A link and a file below it: refused before anything is written (exit 7), whichever comes first, for a
        // link to outside (made only with --unsafe-links) as for one inside.
        for order in [false, true] {
            for (target, flags) in [
                (dir + "/outside", ["--unsafe-links"]), (dir + "/outside", ["--unsafe-links", "--force"]), (".", [])
            ] {
                var items: [(String, String, [String: AttributeValue], [UInt8])] = [
                    ("svc", "a", [link: .string(target)], []), ("svc", "a/file", [:], Array("owned".utf8))
                ]
                if order { items.reverse() }
                try vault(items)
                let r = try kcar(["extract", "v.kcv", "-C", "out"] + flags, expect: 7)
                XCTAssertTrue(r.err.contains("which another item needs as a folder"), r.err)
                XCTAssertFalse(fm.fileExists(atPath: dir + "/out/svc"))
            }
        }
        // Links that climb out: absolute, too many .., .. through a link made by the same vault (up -> .. is the
        // output folder itself; up/../outside is out's parent).
        try vault([
            ("svc", "up", [link: .string("..")], []),
            ("svc", "through", [link: .string("up/../outside")], []),
            ("svc", "deep/climb", [link: .string("../../..")], []),
            ("svc", "deep/ok", [link: .string("../../svc/./up")], []),
            ("svc", "abs", [link: .string("/etc")], []),
            ("svc", "zfile", [:], Array("fine".utf8))
        ])
        let r = try kcar(["extract", "v.kcv", "-C", "out"], expect: 9)
        for name in ["svc/through -> up/../outside", "svc/deep/climb -> ../../..", "svc/abs -> /etc"] {
            XCTAssertTrue(r.err.contains("skipped \(name)"), r.err)
        }
        XCTAssertEqual(target("out/svc/up"), "..")
        XCTAssertEqual(target("out/svc/deep/ok"), "../../svc/./up")
        XCTAssertEqual(text("out/svc/zfile"), "fine")
        for name in ["through", "deep/climb", "abs"] { XCTAssertNil(target("out/svc/" + name), name) }
        // A second vault writing below a link the first one made: the link is a folder on the way, refused (exit 8).
        try vault([("svc", "up/file", [:], Array("owned".utf8))])
        try kcar(["extract", "v.kcv", "-C", "out", "--force"], expect: 8)
        XCTAssertFalse(fm.fileExists(atPath: dir + "/out/file"))
        // Attributes of the wrong type: the item is named and skipped (exit 9), never taken for something else.
        try vault([
            ("svc", "l", [link: .integer(1)], []),
            ("svc", "m", [mode: .integer(0o10000)], [1]),
            ("svc", "f", [folder: .bool(false)], []),
            ("svc", "both", [folder: .bool(true), link: .string("x")], []),
            ("svc", "nul", [link: .string("a\u{0}b")], []),
            ("svc", "ok", [:], [2])
        ])
        let bad = try kcar(["extract", "v.kcv", "-C", "bad"], expect: 9)
        XCTAssertEqual(bad.err.components(separatedBy: "(SPEC.md §7.1)").count - 1, 5, bad.err)
        XCTAssertEqual(regularFiles(dir + "/bad"), ["svc/ok": [2]])
        assertNothingOutside()
    }

    // MARK: Modes and folders

    func testModesAreStoredAndRestoredOnlyWithP() throws {
        try write("src/svc/run", "#!/bin/sh\n", mode: 0o755)
        try write("src/svc/shared", "S", mode: 0o640)
        try write("src/svc/open", "O", mode: 0o777)
        try write("src/svc/setuid", "U", mode: 0o4755)
        try fm.createDirectory(atPath: dir + "/src/svc/empty", withIntermediateDirectories: true)
        XCTAssertEqual(chmod(dir + "/src/svc/empty", 0o750), 0)
        try kcar(["pack", "v.kcv", "src"])
        let long = try kcar(["list", "v.kcv", "-l"]).stdout
        for line in ["drwxr-x---     0", "-rwxrwxrwx     1", "-rwxr-xr-x     1", "-rw-r-----     1"] {
            XCTAssertTrue(long.contains(line), long)
        }
        XCTAssertTrue(long.hasPrefix("MODE        SIZE  MODIFIED (UTC)        NAME\n"), long)
        let json =
            try JSONSerialization.jsonObject(with: try kcar(["list", "v.kcv", "--json"]).data) as! [[String: Any]]
        XCTAssertEqual(
            Dictionary(uniqueKeysWithValues: json.map { ($0["name"] as! String, $0["mode"] as! String) }),
            ["svc/empty/": "0750", "svc/open": "0777", "svc/run": "0755", "svc/setuid": "0755", "svc/shared": "0640"])
        // By default: 0600, 0700 for what its owner could run, folders 0700.
        try kcar(["extract", "v.kcv", "-C", "out"])
        XCTAssertEqual(
            ["run", "shared", "open", "setuid", "empty"].map { mode("out/svc/" + $0) },
            [0o700, 0o600, 0o700, 0o700, 0o700])
        // -p: the stored bits exactly, whatever the umask; never setuid.
        for flag in ["-p", "--preserve-permissions"] {
            try kcar(["extract", "v.kcv", "-C", "p" + flag, flag])
            XCTAssertEqual(
                ["run", "shared", "open", "setuid", "empty"].map { mode("p\(flag)/svc/" + $0) },
                [0o755, 0o640, 0o777, 0o755, 0o750])
        }
    }

    func testEmptyFoldersAreKept() throws {
        try write("src/svc/file", "F")
        try fm.createDirectory(atPath: dir + "/src/svc/a/b/c", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: dir + "/src/empty-service", withIntermediateDirectories: true)
        try write("src/svc/only-excluded/x.tmp", "T")
        let pack = try kcar(["pack", "v.kcv", "src", "--exclude", "*.tmp", "-v"])
        XCTAssertEqual(pack.stdout, "empty-service/\nsvc/a/b/c/\nsvc/file\nsvc/only-excluded/\n")
        XCTAssertTrue(try kcar(["list", "v.kcv"]).stdout.contains("svc/a/b/c/\n"))
        let old = Date(timeIntervalSince1970: 1_600_000_000)
        try fm.setAttributes([.modificationDate: old], ofItemAtPath: dir + "/src/svc/a/b/c")
        try kcar(["pack", "v.kcv", "src", "--exclude", "*.tmp", "--force"])
        let x = try kcar(["extract", "v.kcv", "-C", "out", "-v"])
        XCTAssertEqual(x.stdout, "empty-service/\nsvc/a/b/c/\nsvc/only-excluded/\nsvc/file\n")
        for folder in ["empty-service", "svc/a/b/c", "svc/only-excluded"] {
            XCTAssertEqual(try fm.contentsOfDirectory(atPath: dir + "/out/" + folder), [], folder)
        }
        let mtime = try fm.attributesOfItem(atPath: dir + "/out/svc/a/b/c")[.modificationDate] as! Date
        XCTAssertEqual(mtime.timeIntervalSince1970, 1_600_000_000, accuracy: 0.001)
        // A folder name selects the folder and what is below it; an existing folder is no conflict.
        try kcar(["extract", "v.kcv", "-C", "out", "svc/a/"])
        XCTAssertEqual(try kcar(["delete", "v.kcv", "svc/a", "--dry-run"]).stdout, "svc/a/b/c/\n")
    }

    /// A vault packed before kinds and modes were (the golden fixture): listed and extracted exactly as before.
    func testOlderVaultsListAndExtractAsBefore() throws {
        let fixture = CLITests.repo.appendingPathComponent("Fixtures/vault/one-item.kcv").path
        XCTAssertEqual(
            try kcar(["list", fixture]).stdout,
            "SIZE  MODIFIED (UTC)        NAME\n   7  2026-01-01T00:00:00Z  example.com/alice\n")
        XCTAssertEqual(
            try kcar(["list", fixture, "--json"]).out,
            "[{\"id\": \"aab454576b7c5833eb0bf982a1bb4587\", \"class\": \"genp\", \"service\": \"example.com\", \"account\": \"alice\", "
                + "\"name\": \"example.com/alice\", \"size\": 7, \"modified\": \"2026-01-01T00:00:00Z\", \"attributes\": {\"acct\": "
                + "\"alice\", \"mdat\": {\"$date\": \"2026-01-01T00:00:00Z\"}, \"svce\": \"example.com\"}}]\n")
        XCTAssertTrue(
            try kcar(["list", fixture, "-l"]).stdout.contains(
                "-?????????     7  2026-01-01T00:00:00Z  example.com/alice"))
        for flag in [[], ["-p"]] {
            try kcar(["extract", fixture, "-C", "out\(flag.count)"] + flag)
            XCTAssertEqual(mode("out\(flag.count)/example.com/alice"), 0o600)
        }
    }

    // MARK: add and delete on a packed vault

    func testAddAndDeleteChangeAPackedVaultInOneCommit() throws {
        try write("src/svc/a", "old")
        try write("src/svc/keep", "K")
        try kcar(["pack", "v.kcv", "src"])
        try write("more/svc/a", "new", mode: 0o700)
        try write("more/svc/sub/b", "B")
        try write("more/other/c", "C")
        try write("more/other/skip.tmp", "T")
        try link("more/other/l", to: "c")
        let add = try kcar(["add", "v.kcv", "-C", "more", "svc", "./other/", "--exclude", "*.tmp", "-v"])
        XCTAssertEqual(add.stdout, "other/c\nother/l\nsvc/a\nsvc/sub/b\n")
        XCTAssertTrue(add.err.contains("added 3 items to v.kcv, replaced 1 item"), add.err)
        XCTAssertEqual(try names(), ["other/c", "other/l", "svc/a", "svc/keep", "svc/sub/b"])
        XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", "svc/a"]).data, Data("new".utf8))
        XCTAssertTrue(try kcar(["list", "v.kcv", "-l"]).stdout.contains("-rwx------     3"))
        try kcar(["verify", "v.kcv"])

        // Refused before anything changes, the vault byte for byte as it was.
        let before = bytes("v.kcv")
        try write("clash/svc/keep/below", "X")
        let refusals: [([String], Int32, String)] = [
            (["add", "v.kcv", "-C", "more", "svc/missing"], 8, "no such file or folder"),
            (["add", "v.kcv", "-C", "clash", "svc/keep/below"], 7, "another item needs as a folder"),
            (["add", "v.kcv", "/etc/passwd"], 2, "not absolute"),
            (["add", "v.kcv", "-C", "more", "svc/../../x"], 2, "cannot contain .."),
            (["add", "-", "-C", "more", "svc"], 2, "changes a vault file in place"),
            (["add", "v.kcv", "-"], 2, "PATH - (standard input) is not a file to add"),
            (["add", "v.kcv"], 2, "give the files or folders"),
            (["add", "v.kcv", "-C", "more", "svc", "--service", "s"], 2, "--service is for the keychain's add"),
            (["add", "nothing.kcv", "-C", "more", "svc"], 8, "nothing.kcv"),
            (["delete", "v.kcv", "svc/a", "no/such"], 6, "no item named no/such"),
            (["delete", "v.kcv"], 2, "name the items to delete"),
            (["delete", "v.kcv", "svc/a", "--all"], 2, "--all is for the keychain's delete")
        ]
        for (args, code, message) in refusals {
            let r = try kcar(args, expect: code)
            XCTAssertTrue(r.err.contains(message), "\(args): \(r.err)")
            XCTAssertTrue(bytes("v.kcv") == before, "\(args) changed the vault")
        }
        XCTAssertTrue(
            try runKcar(["delete", "--service", "s", "--key-file", keyFile], in: dir).err.contains(
                "--key-file is for `kcar delete VAULT"))

        // delete: items by name, a service or folder name for everything below it; --dry-run changes nothing.
        let dry = try kcar(["delete", "v.kcv", "other", "--dry-run"])
        XCTAssertEqual(dry.stdout, "other/c\nother/l\n")
        XCTAssertTrue(bytes("v.kcv") == before)
        let del = try kcar(["delete", "v.kcv", "other", "svc/sub/", "-v"])
        XCTAssertEqual(del.stdout, "other/c\nother/l\nsvc/sub/b\n")
        XCTAssertTrue(del.err.contains("deleted 3 items from v.kcv"), del.err)
        XCTAssertEqual(try names(), ["svc/a", "svc/keep"])
        try kcar(["verify", "v.kcv"])
    }

    /// A commit that fails on a full disk (a small tmpfs; needs root, skips otherwise) is an I/O error (exit 8)
    /// that leaves the vault byte for byte as it was.
    func testAddOnAFullDiskLeavesTheVaultAsItWas() throws {
        let m = try scratchMount(at: dir + "/mnt", size: "512k")
        try write("src/svc/a", "A")
        try kcar(["pack", "mnt/v.kcv", "src"])
        let before = bytes("mnt/v.kcv")
        try fm.createDirectory(atPath: dir + "/big/svc", withIntermediateDirectories: true)
        try Data(Recipes.noise(1_000_000, seed: 3)).write(to: URL(fileURLWithPath: dir + "/big/svc/huge"))
        let r = try kcar(["add", "mnt/v.kcv", "-C", "big", "svc"], expect: 8)
        XCTAssertTrue(r.err.contains("No space left on device"), r.err)
        XCTAssertTrue(bytes("mnt/v.kcv") == before, "the vault changed")
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: m.path), ["v.kcv"])
        try kcar(["verify", "mnt/v.kcv"])
        XCTAssertEqual(try names("mnt/v.kcv"), ["svc/a"])
    }
}

extension ProcessResult {
    /// Standard output as text.
    var stdout: String { out }
}
