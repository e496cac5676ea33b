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

    /// `kcar args` in the test's folder with its HOME, `stdin` as its standard input, expecting exit `expect`.
    var kcar: KcarRunner { KcarRunner(dir: dir, env: ["HOME": dir + "/home"]) }

    func testAnAgeIdentityGivenAsAKeyFileIsToldToUseIdentity() throws {
        let id =
            "# created: 2026-12-03\n# public key: age1xyz\nAGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSXYZ00\n"
        try Data(id.utf8).write(to: URL(fileURLWithPath: dir + "/me.txt"))
        let r = try kcar(["pack", "v.kcv", "plain", "--key-file", "me.txt"], expect: 2)
        XCTAssertTrue(
            r.err.contains("me.txt is an age identity file, not a key file: give it with --identity me.txt"), r.err)
        XCTAssertFalse(r.err.contains("AGE-SECRET-KEY"), "the key is never echoed: \(r.err)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/v.kcv"))
        let other = try kcar(["pack", "v.kcv", "plain", "--key-file", "plain/svc/a"], expect: 2)
        XCTAssertTrue(other.err.contains("must hold exactly 32 bytes") && other.err.contains("--identity"), other.err)
        XCTAssertTrue(try kcar(["help"], expect: 0).out.contains("--identity FILE"))
    }

    func testPasswdInAScriptSaysTheNewPassphraseIsMissing() throws {
        try Data("old passphrase\n".utf8).write(to: URL(fileURLWithPath: dir + "/old"))
        _ = try kcar(
            ["pack", "v.kcv", "plain", "--passphrase-file", "old", "--kdf-memory", "8", "--kdf-passes", "1"], expect: 0)
        let r = try kcar(["passwd", "v.kcv", "--passphrase-file", "old"], expect: 10)
        XCTAssertTrue(r.err.contains("no new passphrase given") && r.err.contains("--new-passphrase-file"), r.err)
    }

    func testTheVersionLineNamesTheFormatsKcarReadsAndWrites() throws {
        XCTAssertEqual(
            try kcar(["--version"], expect: 0).out,
            "kcar 0.1 (vault formats 1 and 2 read; new vaults are format 2)\n")
    }

    /// The smaller habits of tar, 7z and age users (issue 22, point 14).
    func testTheSmallerHabits() throws {
        _ = try kcar(["keygen", "k.key"], expect: 0)
        _ = try kcar(["pack", "v.kcv", "plain", "--key-file", "k.key", "-q"], expect: 0)
        // pack over an existing vault says how to replace it.
        let again = try kcar(["pack", "v.kcv", "plain", "--key-file", "k.key"], expect: 7)
        XCTAssertTrue(again.err.contains("`kcar pack --force` replaces it"), again.err)
        // add VAULT takes -q as pack does.
        try Data("two".utf8).write(to: URL(fileURLWithPath: dir + "/plain/svc/b"))
        XCTAssertEqual(
            try kcar(["add", "v.kcv", "-C", "plain", "svc/b", "-q", "--key-file", "k.key"], expect: 0).output, "")
        // list takes names as tar tf and 7z l do.
        let one = try kcar(["list", "v.kcv", "svc/b", "--key-file", "k.key"], expect: 0).out
        XCTAssertTrue(one.hasSuffix("svc/b\n") && !one.contains("svc/a"), one)
        let both = try kcar(["list", "v.kcv", "svc", "--key-file", "k.key"], expect: 0).out
        XCTAssertTrue(both.contains("svc/a") && both.contains("svc/b"), both)
        _ = try kcar(["list", "v.kcv", "nope", "--key-file", "k.key"], expect: 6)
        // One item's value, in the singular.
        let deleted = try kcar(["delete", "v.kcv", "svc/b", "--key-file", "k.key"], expect: 0)
        XCTAssertTrue(deleted.err.contains("deleted 1 item from v.kcv; its value stays in the file"), deleted.err)
        // History times have one width: milliseconds always.
        let history = try kcar(["history", "v.kcv", "svc/a", "--key-file", "k.key"], expect: 0).out
        let current = try XCTUnwrap(history.split(separator: "\n").first { $0.hasPrefix("current") })
        XCTAssertNotNil(
            current.range(of: #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"#, options: .regularExpression), String(current))
        // keygen --x25519 prints and writes the public key as age spells a recipient.
        let pub = try kcar(["keygen", "x.key", "--x25519"], expect: 0).out
        XCTAssertTrue(pub.hasPrefix("age1") && pub.count == 63, pub)
        XCTAssertEqual(try String(contentsOfFile: dir + "/x.key.pub", encoding: .utf8), pub)
        _ = try kcar(["pack", "r.kcv", "plain", "--recipient", "x.key.pub", "-q"], expect: 0)
        _ = try kcar(["list", "r.kcv", "-i", "x.key"], expect: 0)
    }

    /// history, restore and upgrade take --group as every vault command does (issue 22, point 5).
    func testHistoryRestoreAndUpgradeTakeAGroup() throws {
        _ = try kcar(["add", "--group", "g", "--service", "api", "--account", "bob"], stdin: "first\n")
        _ = try kcar(["update", "--group", "g", "--service", "api", "--account", "bob"], stdin: "second\n")
        let h = try kcar(["history", "--group", "g", "api/bob"]).out
        XCTAssertTrue(h.contains("updated"), h)
        _ = try kcar(["restore", "--group", "g", "api/bob", "--version", "1", "-q"])
        XCTAssertEqual(
            try kcar(["get", "--group", "g", "--service", "api", "--account", "bob"]).out,
            "first")
        XCTAssertTrue(
            try kcar(["upgrade", "--group", "g"]).out.contains(
                "already vault format version 2"))
        // The group's record advanced with the restore: a read after it is no rollback.
        _ = try kcar(["find", "--group", "g"])
    }

    /// Errors that spoke only Apple say what to do (issue 22, point 9).
    func testKeychainErrorsSayWhatToDo() throws {
        _ = try kcar(
            ["add", "--group", "team", "--service", "api", "--account", "bob", "--attr", "level:int=3"], stdin: "x")
        let dup = try kcar(["add", "--group", "team", "--service", "api", "--account", "bob"], stdin: "y", expect: 11)
        XCTAssertTrue(
            dup.err.contains("errSecDuplicateItem") && dup.err.contains("`kcar update` with the same selectors"),
            dup.err)
        let typo = try kcar(["get", "--group", "teem", "--service", "api", "--account", "bob"], expect: 6)
        XCTAssertTrue(
            typo.err.contains("no access group teem in ") && typo.err.contains("(its groups: team)"), typo.err)
        let untyped = try kcar(["find", "--attr", "level=3"], expect: 6)
        XCTAssertTrue(untyped.err.contains("NAME:int=VALUE"), untyped.err)
        XCTAssertTrue(try kcar(["find", "--attr", "level:int=3"]).out.contains("api"))
    }

    /// `kcar get api/bob` is one word, as `pass show api/bob` (issue 22, point 9): SERVICE/ACCOUNT as list and
    /// history name items, percent-encoded alike; with the selectors it stands for as well, a usage error.
    func testGetTakesAnItemNameInOneWord() throws {
        _ = try kcar(["add", "--service", "api", "--account", "bob"], stdin: "bob's")
        _ = try kcar(["add", "--service", "api", "--account", "ci/deploy"], stdin: "deploy")
        _ = try kcar(["add", "--service", "a/b", "--account", "x"], stdin: "slash")
        XCTAssertEqual(try kcar(["get", "api/bob"]).out, "bob's")
        XCTAssertEqual(try kcar(["get", "api/ci/deploy"]).out, "deploy")
        XCTAssertEqual(try kcar(["get", "a%2Fb/x"]).out, "slash")
        XCTAssertEqual(try kcar(["get", "a%2Fb"]).out, "slash")
        _ = try kcar(["get", "api"], expect: 2)  // two items of service api
        _ = try kcar(["get", "api/nobody"], expect: 6)
        let twice = try kcar(["get", "api/bob", "--account", "bob"], expect: 2)
        XCTAssertTrue(twice.err.contains("names the item already"), twice.err)
        _ = try kcar(["get", "a%zz/b"], expect: 2)
    }

    /// delete, history and restore take the one-word name too (`kcar delete api/bob`): history and restore find
    /// the one group that holds the item, live or kept; a name two groups hold asks for --group; a vault file
    /// alone is still a vault that needs ITEM.
    func testDeleteHistoryAndRestoreTakeAnItemNameInOneWord() throws {
        _ = try kcar(["add", "--group", "g", "--service", "api", "--account", "bob"], stdin: "first")
        _ = try kcar(["add", "--group", "h", "--service", "db", "--account", "app"], stdin: "db")
        _ = try kcar(["update", "api/bob"], stdin: "second")
        _ = try kcar(["delete", "api/bob"])
        _ = try kcar(["get", "api/bob"], expect: 6)
        let h = try kcar(["history", "api/bob"]).out
        XCTAssertTrue(h.contains("current") && h.contains("deleted") && h.contains("updated"), h)
        _ = try kcar(["restore", "api/bob", "--version", "2", "-q"])
        XCTAssertEqual(try kcar(["get", "api/bob"]).out, "first")
        _ = try kcar(["history", "api/nobody"], expect: 6)
        _ = try kcar(["delete", "api/nobody"], expect: 6)
        // A service alone would delete every item of it: the word form refuses, --service says it.
        XCTAssertTrue(try kcar(["delete", "db"], expect: 2).err.contains("SERVICE/ACCOUNT"))
        XCTAssertEqual(try kcar(["get", "db/app"]).out, "db")
        _ = try kcar(["add", "--group", "h", "--service", "api", "--account", "bob"], stdin: "other")
        XCTAssertTrue(try kcar(["history", "api/bob"], expect: 2).err.contains("give --group G"))
        XCTAssertTrue(
            try kcar(["history", "--group", "h", "api/bob"]).out.contains("live"))
        try Data(repeating: 7, count: 32).write(to: URL(fileURLWithPath: dir + "/k.key"))
        chmod(dir + "/k.key", 0o600)
        _ = try kcar(["pack", "p.kcv", "plain", "--key-file", "k.key"])
        XCTAssertTrue(try kcar(["delete", "p.kcv", "--key-file", "k.key"], expect: 2).err.contains("VAULT ITEM"))
    }

    /// `add VAULT NAME --value-file -` makes the vault when there is none (as `tar rf` and `7z a`), with the
    /// secrets pack takes, KCAR_KEY_FILE included; without a secret nothing is left behind.
    func testAddMakesTheVaultItNames() throws {
        try Data(repeating: 7, count: 32).write(to: URL(fileURLWithPath: dir + "/k.key"))
        chmod(dir + "/k.key", 0o600)
        let env = ["HOME": dir + "/home", "KCAR_KEY_FILE": dir + "/k.key"]
        var r = try runKcar(
            ["add", "new.kcv", "api/bob", "--value-file", "-"], in: dir, stdin: Data("tok".utf8), env: env)
        XCTAssertEqual(r.code, 0, r.output)
        XCTAssertTrue(r.err.contains("a new vault"), r.err)
        r = try runKcar(["extract", "new.kcv", "--stdout", "api/bob"], in: dir, env: env)
        XCTAssertEqual(r.data, Data("tok".utf8), r.output)
        r = try runKcar(["pack", "p.kcv", "plain"], in: dir, env: env)
        XCTAssertEqual(r.code, 0, r.output)
        r = try runKcar(["list", "p.kcv", "--key-file", "k.key"], in: dir, env: ["HOME": dir + "/home"])
        XCTAssertTrue(r.output.contains("svc/a"), r.output)
        r = try runKcar(
            ["add", "none.kcv", "api/bob", "--value-file", "-"], in: dir, stdin: Data("tok".utf8),
            env: ["HOME": dir + "/home"])
        XCTAssertEqual(r.code, 10, r.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/none.kcv"))
    }

    /// `kcar generate` and `add --generate` (issue 22, point 9; pass generate): the alphabet and length asked for,
    /// every symbol reachable (12,800 draws miss one of 62 with probability e^-206), nothing added on a pipe; the
    /// value `add --generate` prints is the one stored, and nothing is printed when the add is refused.
    func testGeneratedPasswords() throws {
        let alnum = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        XCTAssertEqual(try kcar(["generate"]).data.count, 24)
        var seen = Set<UInt8>()
        for _ in 0..<100 {
            let p = try kcar(["generate", "--length", "128"]).data
            XCTAssertEqual(p.count, 128)
            XCTAssertTrue(Set(p).isSubset(of: alnum), String(decoding: p, as: UTF8.self))
            seen.formUnion(p)
        }
        XCTAssertEqual(seen, alnum)
        let s = try kcar(["generate", "--length", "4096", "--symbols"]).data
        XCTAssertEqual(s.count, 4096)
        XCTAssertTrue(s.allSatisfy { (0x21...0x7E).contains($0) })
        XCTAssertTrue(s.contains { !alnum.contains($0) })
        _ = try kcar(["generate", "--length", "7"], expect: 2)
        let stored = try kcar(["add", "--service", "db", "--account", "app", "--generate", "--length", "20"]).out
        XCTAssertEqual(stored.count, 20)
        XCTAssertEqual(try kcar(["get", "db/app"]).out, stored)
        XCTAssertTrue(try kcar(["add", "--service", "db", "--account", "app", "--generate"], expect: 11).out.isEmpty)
        _ = try kcar(["add", "--service", "db", "--account", "x", "--symbols"], expect: 2)
        // A credential rotated in one command: update NAME --generate, one item only.
        let rotated = try kcar(["update", "db/app", "--generate", "--length", "30"]).out
        XCTAssertEqual(rotated.count, 30)
        XCTAssertNotEqual(rotated, stored)
        XCTAssertEqual(try kcar(["get", "db/app"]).out, rotated)
        _ = try runKcar(
            ["add", "--service", "db", "--account", "b"], in: dir, stdin: Data("b".utf8), env: ["HOME": dir + "/home"])
        XCTAssertTrue(try kcar(["update", "db", "--generate"], expect: 2).out.isEmpty)
        XCTAssertEqual(try kcar(["get", "db/app"]).out, rotated)
        XCTAssertEqual(try kcar(["get", "db/b"]).data, Data("b".utf8))
    }

    /// `kcar edit` (issue 22, point 9; pass edit): the value in the user's editor through a private file that is
    /// gone afterwards, whatever the editor did; an editor's added final newline dropped; a failed editor or an
    /// item changed meanwhile leaves the item as it was.
    func testEditInTheUsersEditor() throws {
        let runtime = dir + "/runtime"
        XCTAssertEqual(mkdir(runtime, 0o700), 0)
        func run(_ args: [String], editor: String, expect: Int32 = 0) throws -> ProcessResult {
            let r = try self.kcar(
                args, env: ["XDG_RUNTIME_DIR": runtime, "EDITOR": editor, "VISUAL": ""], expect: expect)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: runtime), [], "left behind")
            return r
        }
        func script(_ name: String, _ body: String) throws -> String {
            let path = dir + "/" + name
            try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            XCTAssertEqual(chmod(path, 0o755), 0)
            return path
        }
        let kcar = CLITests.binary
        let home = dir + "/home"
        _ = try runKcar(
            ["add", "--service", "api", "--account", "bob"], in: dir, stdin: Data("old".utf8), env: ["HOME": home])
        func value() throws -> String {
            try runKcar(["get", "api/bob"], in: dir, env: ["HOME": home]).out
        }
        // The file holds the value, mode 0600; the editor's swap file goes too.
        let edit = try script(
            "ed",
            "[ \"$(cat \"$1\")\" = old ] || exit 3; [ \"$(stat -c %a \"$1\")\" = 600 ] || exit 4\n"
                + "echo swap > \"$(dirname \"$1\")/.value.swp\"; printf 'new\\n' > \"$1\"")
        XCTAssertTrue(try run(["edit", "api/bob"], editor: edit).err.contains("new value stored (3 bytes)"))
        XCTAssertEqual(try value(), "new")
        XCTAssertTrue(try run(["edit", "api/bob"], editor: "true").err.contains("unchanged"))
        _ = try run(["edit", "api/bob"], editor: "false", expect: 1)
        XCTAssertEqual(try value(), "new")
        let meanwhile = try script(
            "meanwhile",
            "printf 'other' | HOME=\(home) \(kcar) update --service api --account bob --value-file -; printf mine > \"$1\""
        )
        XCTAssertTrue(
            try run(["edit", "api/bob"], editor: meanwhile, expect: 1).err.contains("changed while it was edited"))
        XCTAssertEqual(try value(), "other")
        _ = try run(["edit", "api/nobody"], editor: "true", expect: 6)
    }

    /// `get --clip` (issue 22, point 9; pass -c), with stand-ins for wl-copy and wl-paste that keep the clipboard in
    /// a file: the value goes there, and is cleared after --clip-seconds only if it is still there; without a
    /// desktop session, a clear error.
    func testGetCopiesToTheClipboardAndClearsIt() throws {
        let tools = dir + "/tools"
        let clip = dir + "/clipboard"
        XCTAssertEqual(mkdir(tools, 0o700), 0)
        for (name, body) in [
            ("wl-copy", "if [ \"$1\" = --clear ]; then : > \(clip); else cat > \(clip); fi"),
            ("wl-paste", "cat \(clip)")
        ] {
            try ("#!/bin/sh\n" + body + "\n").write(toFile: tools + "/" + name, atomically: true, encoding: .utf8)
            XCTAssertEqual(chmod(tools + "/" + name, 0o755), 0)
        }
        let env = ["HOME": dir + "/home", "PATH": tools + ":/usr/bin:/bin", "WAYLAND_DISPLAY": "wayland-test"]
        func run(_ args: [String], stdin: String? = nil, env: [String: String] = env, expect: Int32 = 0) throws
            -> ProcessResult
        {
            try KcarRunner(dir: dir, env: env)(args, stdin: stdin.map { Data($0.utf8) }, expect: expect)
        }
        func clipboard() -> String { (try? String(contentsOfFile: clip, encoding: .utf8)) ?? "" }
        /// Waits (at most 20 s) for the clipboard to be `expected`.
        func eventually(_ expected: String) {
            for _ in 0..<200 where clipboard() != expected { usleep(100_000) }
            XCTAssertEqual(clipboard(), expected)
        }
        _ = try run(["add", "--service", "api", "--account", "bob"], stdin: "s3cr3t")
        let r = try run(["get", "api/bob", "--clip", "--clip-seconds", "1"])
        XCTAssertTrue(r.out.isEmpty)
        XCTAssertTrue(r.err.contains("to the clipboard; it is cleared in 1 s"), r.err)
        XCTAssertEqual(clipboard(), "s3cr3t")
        eventually("")
        // Something else copied meanwhile stays.
        _ = try run(["get", "api/bob", "--clip", "--clip-seconds", "1"])
        try "mine".write(toFile: clip, atomically: false, encoding: .utf8)
        sleep(2)
        XCTAssertEqual(clipboard(), "mine")
        let none = try run(["get", "api/bob", "--clip"], env: ["HOME": dir + "/home", "PATH": tools], expect: 1)
        XCTAssertTrue(none.err.contains("no clipboard"), none.err)
        _ = try run(["get", "api/bob", "--clip-seconds", "5"], expect: 2)
    }

    /// One base64 decoder, canonical: `--attr NAME:data=` and item files refuse a spelling whose left-over bits
    /// are set (`QR==` and `QUJ=` for `QQ==` and `QUI=`), which Foundation's decoder took, and accept the
    /// canonical one (SPEC §K7).
    func testBase64IsCanonicalEverywhere() throws {
        let add = ["add", "--group", "team", "--service", "api", "--account", "bob"]
        for bad in ["QR==", "QUJ=", "QQ", "Q Q=="] {
            let r = try kcar(add + ["--attr", "blob:data=\(bad)"], stdin: "x", expect: 2)
            XCTAssertTrue(r.err.contains("takes base64"), r.err)
        }
        _ = try kcar(add + ["--attr", "blob:data=QUI="], stdin: "x")
        XCTAssertTrue(
            try kcar(["find", "--attr", "blob:data=QUI="]).out.contains("api"))
        let item = { (v: String) in
            "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", "
                + "\"attributes\": {\"svce\": \"s\", \"acct\": \"a\"}, \"value\": \"\(v)\"}]}"
        }
        try item("QR==").write(toFile: dir + "/bad.json", atomically: true, encoding: .utf8)
        let refused = try runKcar(
            ["import", "--group", "other", "--items", "bad.json"], in: dir, env: ["HOME": dir + "/home"])
        XCTAssertNotEqual(refused.code, 0, refused.output)
        XCTAssertTrue(refused.err.contains("base64"), refused.err)
    }

    /// One person on one machine is one writer, across processes, in a keychain group and in a packed vault
    /// (issue 22, point 12), and history marks it.
    func testOneUserIsOneWriterAcrossProcesses() throws {
        func run(_ args: [String], stdin: String? = nil) throws -> String {
            try kcar(args, stdin: stdin.map { Data($0.utf8) }).out
        }
        func writers(_ history: String) -> Set<String> {
            Set(
                history.split(separator: "\n").dropFirst(2).map {
                    $0.split(separator: " ", omittingEmptySubsequences: true)[2...].prefix(2).joined(separator: " ")
                })
        }
        _ = try run(["add", "--group", "g", "--service", "api", "--account", "bob"], stdin: "1")
        _ = try run(["update", "--group", "g", "--service", "api", "--account", "bob"], stdin: "2")
        _ = try run(["update", "--group", "g", "--service", "api", "--account", "bob"], stdin: "3")
        let group = writers(try run(["history", "--group", "g", "api/bob"]))
        XCTAssertEqual(group.count, 1, "\(group)")
        XCTAssertTrue(group.first?.hasSuffix("(you)") == true, "\(group)")
        _ = try run(["keygen", "k.key"])
        _ = try run(["pack", "v.kcv", "plain", "--key-file", "k.key", "-q"])
        try Data("changed".utf8).write(to: URL(fileURLWithPath: dir + "/plain/svc/a"))
        _ = try run(["add", "v.kcv", "-C", "plain", "svc/a", "-q", "--key-file", "k.key"])
        XCTAssertEqual(writers(try run(["history", "v.kcv", "svc/a", "--key-file", "k.key"])), group)
    }

    /// A clone changes one secret of a packed vault from standard input, with no plaintext file; `kcar git setup`
    /// names untracked files a `git add .` would commit (issue 22, point 3).
    func testNoPlaintextTreeIsNeededInARepository() throws {
        _ = try kcar(["keygen", "k.key"], expect: 0)
        _ = try kcar(["pack", "v.kcv", "plain", "--key-file", "k.key", "-q"], expect: 0)
        let added = try runKcar(
            ["add", "v.kcv", "github.com/ci", "--value-file", "-", "--key-file", "k.key"], in: dir,
            stdin: Data("tok1\n".utf8), env: ["HOME": dir + "/home"])
        XCTAssertEqual(added.code, 0, added.output)
        XCTAssertTrue(added.err.contains("added github.com/ci in v.kcv"), added.err)
        let replaced = try runKcar(
            ["add", "v.kcv", "github.com/ci", "--value-file", "-", "--key-file", "k.key"], in: dir,
            stdin: Data("tok2".utf8), env: ["HOME": dir + "/home"])
        XCTAssertTrue(replaced.err.contains("replaced github.com/ci in v.kcv"), replaced.output)
        XCTAssertEqual(
            try kcar(["extract", "v.kcv", "--stdout", "github.com/ci", "--key-file", "k.key"], expect: 0).data,
            Data("tok2".utf8))
        let long = try kcar(["list", "v.kcv", "github.com/ci", "--long", "--key-file", "k.key"], expect: 0).out
        XCTAssertTrue(long.contains("-rw-------"), long)
        // A name without `/` is a top-level item (issue 22, point 4); a service alone names no item.
        _ = try kcar(["add", "v.kcv", "svc/", "--value-file", "-", "--key-file", "k.key"], expect: 2)
        _ = try kcar(["add", "v.kcv", "%/a/b", "--value-file", "-", "--key-file", "k.key"], expect: 2)
        // git setup in a repository holding a plaintext tree warns of it.
        XCTAssertEqual(
            try runProcess("/usr/bin/env", ["git", "init", "-q"], env: ["HOME": dir + "/home"], cwd: dir).code, 0)
        let setup = try kcar(["git", "setup"], expect: 0)
        XCTAssertTrue(
            setup.err.contains("untracked file") && setup.err.contains("plain/svc/a")
                && setup.err.contains(".gitignore"), setup.err)
        XCTAssertFalse(setup.err.contains("v.kcv,"), setup.err)
    }

    /// A pull whose merge driver fails (here: no key) names kcar and the vault and says how to finish; with the
    /// key, `git checkout -m FILE` runs the merge again (issue 22, point 11).
    func testAFailedPullSaysHowToFinish() throws {
        let bin = (CLITests.binary as NSString).deletingLastPathComponent
        let env = [
            "HOME": dir + "/home", "PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
            "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com", "KCAR_KEY_FILE": dir + "/k.key"
        ]
        @discardableResult
        func sh(_ args: [String], in cwd: String, env e: [String: String]? = nil, stdin: String? = nil) throws
            -> ProcessResult
        {
            let r = try runProcess("/usr/bin/env", args, stdin: stdin.map { Data($0.utf8) }, env: e ?? env, cwd: cwd)
            return r
        }
        _ = try kcar(["keygen", "k.key"], expect: 0)
        try sh(["git", "init", "-q", "--bare", "o.git"], in: dir)
        try sh(["git", "clone", "-q", "o.git", "a"], in: dir)
        let a = dir + "/a"
        let b = dir + "/b"
        try sh(["kcar", "pack", "v.kcv", "../plain", "-q", "--key-file", dir + "/k.key"], in: a)
        try sh(["kcar", "git", "setup"], in: a)
        try sh(["git", "add", "."], in: a)
        try sh(["git", "commit", "-qm", "init"], in: a)
        try sh(["git", "push", "-q", "origin", "HEAD"], in: a)
        try sh(["git", "clone", "-q", "o.git", "b"], in: dir)
        try sh(["kcar", "git", "setup"], in: b)
        try sh(["kcar", "add", "v.kcv", "s/x", "--value-file", "-", "-q"], in: b, stdin: "from b")
        try sh(["git", "commit", "-qam", "b"], in: b)
        try sh(["git", "push", "-q", "origin", "HEAD"], in: b)
        try sh(["kcar", "add", "v.kcv", "s/y", "--value-file", "-", "-q"], in: a, stdin: "from a")
        try sh(["git", "commit", "-qam", "a"], in: a)
        var noKey = env
        noKey["KCAR_KEY_FILE"] = nil
        let pull = try sh(["git", "pull", "-q", "--no-rebase", "origin", "HEAD"], in: a, env: noKey)
        XCTAssertTrue(
            pull.err.contains("merge of v.kcv (git's merge driver, kcar merge)")
                && pull.err.contains("`git checkout -m v.kcv` runs this merge again"), pull.err)
        let again = try sh(["git", "checkout", "-m", "v.kcv"], in: a)
        XCTAssertTrue(again.err.contains("kcar merge: v.kcv: 1 item taken from THEIRS"), again.err)
        try sh(["git", "add", "v.kcv"], in: a)
        XCTAssertEqual(try sh(["git", "commit", "-qm", "merged"], in: a).code, 0)
        let list = try sh(["kcar", "list", "v.kcv"], in: a).out
        XCTAssertTrue(list.contains("s/x") && list.contains("s/y"), list)
    }
}
