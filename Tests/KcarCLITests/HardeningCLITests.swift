import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Issue 9 ("Hardening, round 2"), the command's file handling: FIFOs and other non-regular files, control
/// characters from files, verify without a secret, keygen's pair, item files, interrupted writers, and
/// inputs swapped while pack reads them. Each test fails on the code before the fix (main at 9e72f60).
final class HardeningCLITests: XCTestCase {
    var dir: String!
    var keyFile: String { CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-h9-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// Runs kcar under `timeout`: a command that blocks (the bug these tests catch) fails instead of hanging
    /// the suite. The guard is generous; the commands end in milliseconds.
    /// kcar as this class runs it (`KcarRunner`).
    var kcar: KcarRunner { KcarRunner(dir: dir, timeout: 60) }

    func path(_ name: String) -> String { dir + "/" + name }

    func makeVault(_ name: String = "v.kcv", group: String = "g", items: [(ItemClass, [String: String], [UInt8])])
        throws
    {
        try Vault.create(
            path: path(name), group: group, slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: .version1,
            overwrite: true
        ) { tx in
            for (c, attrs, v) in items {
                var a = Attributes()
                for (k, value) in attrs { a[k] = .string(value) }
                try tx.add(class: c, attributes: a, value: .bytes(v))
            }
        }
    }

    // MARK: item 7

    /// A FIFO where a vault, key file or passphrase file must be: refused at once (exit 15, naming the path),
    /// never waited on. Before, each of these blocked forever (open waited for a writer).
    func testFIFOsAreRefusedNotWaitedOn() throws {
        try makeVault(items: [(.genericPassword, ["svce": "s", "acct": "a"], [1])])
        for name in ["fifo.kcv", "fifo.key", "fifo.pass"] { XCTAssertEqual(mkfifo(path(name), 0o600), 0) }
        for command in [
            ["list", "fifo.kcv", "--key-file", keyFile], ["info", "fifo.kcv"], ["verify", "fifo.kcv", "--no-key"],
            ["extract", "fifo.kcv", "-C", "out", "--key-file", keyFile]
        ] {
            let r = try kcar(command, expect: 15)
            XCTAssertTrue((r.out + r.err).contains("fifo.kcv is a FIFO"), r.out + r.err)
        }
        XCTAssertTrue(try kcar(["list", "v.kcv", "--key-file", "fifo.key"], expect: 15).err.contains("fifo.key"))
        XCTAssertTrue(
            try kcar(["list", "v.kcv", "--passphrase-file", "fifo.pass"], expect: 15).err.contains("fifo.pass"))
        XCTAssertEqual(mkfifo(path("fifo.pub"), 0o600), 0)
        XCTAssertTrue(
            try kcar(["pack", "r.kcv", "--items", try itemFile([]), "--recipient", "fifo.pub"], expect: 15).err
                .contains("fifo.pub"))
        // A device is no key file either; a folder is no vault.
        try kcar(["list", "v.kcv", "--key-file", "/dev/zero"], expect: 15)
        try FileManager.default.createDirectory(atPath: path("folder.kcv"), withIntermediateDirectories: false)
        try kcar(["list", "folder.kcv", "--key-file", keyFile], expect: 15)
        // An anonymous pipe stays a fine passphrase file (`<(...)` is /dev/fd/N, a pipe).
        let pass = "pipe-passphrase"
        try Data(pass.utf8).write(to: URL(fileURLWithPath: path("pass.txt")))
        try kcar(
            [
                "pack", "p.kcv", "--items", try itemFile([]), "--passphrase-file", path("pass.txt"), "--kdf-memory",
                "8", "--kdf-passes", "1"
            ],
            expect: 0)
        try kcar(["list", "p.kcv", "--passphrase-file", "/dev/stdin"], stdin: Data(pass.utf8), expect: 0)
        // A symlink given on the command line is followed, as tar follows it; its target is what is checked.
        try FileManager.default.createSymbolicLink(atPath: path("link.kcv"), withDestinationPath: "v.kcv")
        try kcar(["list", "link.kcv", "--key-file", keyFile], expect: 0)
        try FileManager.default.createSymbolicLink(atPath: path("link-fifo.kcv"), withDestinationPath: "fifo.kcv")
        try kcar(["list", "link-fifo.kcv", "--key-file", keyFile], expect: 15)
    }

    // MARK: item 9

    /// Control characters from a file (a header's group, an item's class, an error quoting file data) reach
    /// the terminal escaped: no ESC, BEL or newline from the file is printed raw by info, list or verify.
    func testControlCharactersFromFilesAreEscaped() throws {
        let group = "g\u{1B}]0;owned\u{07}\u{1B}[2J\n\u{9B}31m\u{202E}"
        try makeVault(group: group, items: [(ItemClass(rawValue: "x\u{1B}[31m"), ["svce": "s", "acct": "a"], [1])])
        for command in [
            ["info", "v.kcv"], ["info", "v.kcv", "--key-file", keyFile], ["list", "v.kcv", "--key-file", keyFile]
        ] {
            let r = try kcar(command, expect: 0)
            for raw in ["\u{1B}", "\u{07}", "\u{9B}", "\u{202E}"] {
                XCTAssertFalse(r.out.contains(raw) || r.err.contains(raw), "\(command): \(r.out.debugDescription)")
            }
        }
        let info = try kcar(["info", "v.kcv"], expect: 0)
        XCTAssertTrue(info.out.contains("group:      g\\x1B]0;owned\\x07\\x1B[2J\\x0A\\x9B31m\\u{202E}"), info.out)
        XCTAssertTrue(try kcar(["list", "v.kcv", "--key-file", keyFile], expect: 0).out.contains("[x\\x1B[31m]"))
        // JSON keeps its own escaping.
        let json = try kcar(["info", "v.kcv", "--json"], expect: 0)
        XCTAssertTrue(json.out.contains("\\u001b]0;owned\\u0007\\u001b[2J\\n\\u009b31m\\u202e"), json.out)
    }

    // MARK: item 13

    /// keygen --x25519 writes both files or neither: an existing FILE.pub is refused before FILE is written.
    func testKeygenWritesBothOrNeither() throws {
        try Data("old\n".utf8).write(to: URL(fileURLWithPath: path("id.pub")))
        try kcar(["keygen", "id", "--x25519"], expect: 7)
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: path("id")), "the secret key was written without its .pub")
        XCTAssertEqual(try String(contentsOfFile: path("id.pub"), encoding: .utf8), "old\n")
        try kcar(["keygen", "id", "--x25519", "--force"], expect: 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path("id"))).count, 32)
        XCTAssertEqual(try String(contentsOfFile: path("id.pub"), encoding: .utf8).count, 63)
        try FileManager.default.removeItem(atPath: path("id.pub"))
        try kcar(["keygen", "id", "--x25519"], expect: 7)  // FILE exists: nothing written
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("id.pub")))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".tmp") }, [])
    }

    // MARK: item 14 and item files (2, 3)

    /// An item file of (class, attributes JSON, value) entries; returns its path.
    func itemFile(_ items: [(String, String, [UInt8])], name: String = "items.json") throws -> String {
        let entries = items.map { c, attrs, v in
            "{\"class\": \"\(c)\", \"attributes\": \(attrs), \"value\": \"\(Data(v).base64EncodedString())\"}"
        }
        let text = "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [" + entries.joined(separator: ",\n") + "]}"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path(name)))
        return path(name)
    }

    /// extract --items reads each record once, in one pass, and streams the file: 20,000 items sharing solid
    /// records (45 s before, quadratic in the members of a record) come out in well under the guard, and the
    /// file reads back to the same items.
    func testExtractItemsIsLinearAndRoundTrips() throws {
        let n = 20_000
        try Vault.create(
            path: path("v.kcv"), group: "g\u{1B}", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            format: .version1, overwrite: true
        ) { tx in
            for i in 0..<n {
                var a = Attributes()
                a["svce"] = .string("svc")
                a["acct"] = .string("item\(i)")
                a["@n"] = .string(i % 7 == 0 ? "e\u{301}\u{1}\"\\" : "x")
                try tx.add(
                    attributes: a,
                    value: .bytes(Array("value \(i) ".utf8) + [UInt8](repeating: UInt8(i & 0xFF), count: i % 5)))
            }
        }
        let started = Date()
        try kcar(["extract", "v.kcv", "--items", "out.json", "--key-file", keyFile], expect: 0)
        // hang guard (45 s before)
        XCTAssertLessThan(Date().timeIntervalSince(started), 30, "extract --items of \(n) items")
        let doc =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path("out.json"))))
            as! [String: Any]
        XCTAssertEqual(doc["group"] as? String, "g\u{1B}")
        let items = doc["items"] as! [[String: Any]]
        XCTAssertEqual(items.count, n)
        var seen = Set<String>()
        for item in items {
            let attrs = item["attributes"] as! [String: Any]
            let account = attrs["acct"] as! String
            let i = Int(account.dropFirst(4))!
            let value = Data(base64Encoded: item["value"] as! String)!
            XCTAssertEqual(Array(value), Array("value \(i) ".utf8) + [UInt8](repeating: UInt8(i & 0xFF), count: i % 5))
            seen.insert(account)
        }
        XCTAssertEqual(seen.count, n)
        // Read back by pack --items, and to standard output the same bytes as to a file.
        try kcar(["pack", "back.kcv", "--items", "out.json", "--key-file", keyFile], expect: 0)
        let listed = try kcar(["list", "back.kcv", "--json", "--key-file", keyFile], expect: 0)
        XCTAssertEqual((try JSONSerialization.jsonObject(with: listed.data) as! [Any]).count, n)
        let stdout = try kcar(["extract", "v.kcv", "--items", "-", "--key-file", keyFile], expect: 0)
        XCTAssertEqual(stdout.data, try Data(contentsOf: URL(fileURLWithPath: path("out.json"))))
        try kcar(["extract", "v.kcv", "--items", "out.json", "--key-file", keyFile], expect: 7)
    }

    /// The item-file reader: the SPEC §K7 shape with unknown members skipped (nested, with fractions and
    /// nulls), duplicate members keeping the first, escapes decoded; and refusals, each exit 4 naming the
    /// problem: runs of combining marks past the Stream-Safe bound (quadratic to compare before), too many
    /// items, malformed JSON and values.
    func testItemFileReader() throws {
        let good = """
            {"format": "kcar-items", "version": 1, "group": "x", "extra": [[{"a": [1.5e3, null, true, {"b": "c"}]}], -0.5],
             "items": [{"id": "ignored", "class": "genp", "size": 3.5, "attributes": {"svce": "s\\u00e9\\n", "acct": "a\\ud83d\\ude00",
              "port": -443, "sync": false, "mdat": {"$date": "2026-11-30T12:00:00.5Z"}, "gena": {"$data": "AAE="}, "acct": "second"},
              "value": "c2VjcmV0", "value": "aWdub3JlZA=="}]}
            """
        try Data(good.utf8).write(to: URL(fileURLWithPath: path("good.json")))
        try kcar(["pack", "g.kcv", "--items", "good.json", "--key-file", keyFile], expect: 0)
        let list = try kcar(["list", "g.kcv", "--json", "--key-file", keyFile], expect: 0)
        let item = (try JSONSerialization.jsonObject(with: list.data) as! [[String: Any]])[0]
        let attrs = item["attributes"] as! [String: Any]
        XCTAssertEqual(attrs["svce"] as? String, "s\u{E9}\n")
        XCTAssertEqual(attrs["acct"] as? String, "a\u{1F600}")
        XCTAssertEqual(attrs["port"] as? Int, -443)
        XCTAssertEqual(item["modified"] as? String, "2026-11-30T12:00:00.5Z")
        XCTAssertEqual(
            try kcar(["extract", "g.kcv", "--stdout", "s\u{E9}%0A/a\u{1F600}", "--key-file", keyFile], expect: 0).out,
            "secret")

        let marks = String(repeating: "\u{301}", count: 31)
        let bad: [(String, String)] = [
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", \"attributes\": {\"a\(marks)\": \"x\"}, \"value\": \"\"}]}",
                "Stream-Safe"
            ),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", \"attributes\": {\"a\": \"x\(marks)\"}, \"value\": \"\"}]}",
                "Stream-Safe"
            ),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"g\(marks)\", \"value\": \"\"}]}",
                "Stream-Safe"
            ),
            ("{\"format\": \"kcar-items\", \"version\": 2, \"items\": []}", "version"),
            ("{\"format\": \"kcar-items\", \"version\": 1, \"items\": []} x", "after the document"),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", \"attributes\": {\"a\": 1.5}, \"value\": \"\"}]}",
                "not an integer"
            ),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", \"attributes\": {\"a\": 9223372036854775808}, \"value\": \"\"}]}",
                "64-bit"
            ),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", \"attributes\": {\"a\": null}, \"value\": \"\"}]}",
                "malformed number"
            ),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", \"value\": \"AAE\"}]}",
                "base64"
            ),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", \"value\": \"\\ud800\"}]}",
                "surrogate"
            ),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", \"attributes\": {\"d\": {\"$date\": \"x\", \"y\": 1}}, \"value\": \"\"}]}",
                "$date"
            ),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"x\": " + String(repeating: "[", count: 100)
                    + String(repeating: "]", count: 100) + ", \"items\": []}", "nested"
            ),
            (
                "{\"format\": \"kcar-items\", \"version\": 1, \"items\": ["
                    + Array(repeating: "{\"class\": \"genp\", \"value\": \"\"}", count: 100_001).joined(separator: ",")
                    + "]}", "more than 100000 items"
            )
        ]
        for (n, (text, problem)) in bad.enumerated() {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path("bad\(n).json")))
            let r = try kcar(["pack", "b\(n).kcv", "--items", "bad\(n).json", "--key-file", keyFile], expect: 4)
            XCTAssertTrue(r.err.contains(problem), "case \(n): \(r.err)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: path("b\(n).kcv")))
        }
        // An item file must be a regular file: a FIFO is refused, not waited on.
        XCTAssertEqual(mkfifo(path("fifo.json"), 0o600), 0)
        try kcar(["pack", "f.kcv", "--items", "fifo.json", "--key-file", keyFile], expect: 15)
    }

    // MARK: items 6 and 11: a running command, paused at a point by the debug seam

    /// A kcar process started in the background with `KCAR_DEBUG_PAUSE=point:marker`, and the moment it
    /// reached the point (the marker exists); its standard error goes to `errors` if given.
    func start(_ args: [String], pause point: String, errors: Pipe? = nil) throws -> (Process, marker: String) {
        let marker = path(".pause-\(point)")
        try? FileManager.default.removeItem(atPath: marker)  // a marker left by an earlier, killed run
        let p = kcarProcess(args, cwd: dir, env: ["KCAR_DEBUG_PAUSE": "\(point):\(marker)"])
        if let errors { p.standardError = errors }
        try p.run()
        var waited = 0
        while !FileManager.default.fileExists(atPath: marker) {
            guard p.isRunning, waited < 6000 else {
                p.terminate()
                XCTFail("kcar \(args) never reached \(point)")
                throw XCTSkip("seam not reached")
            }
            usleep(10_000)
            waited += 1
        }
        return (p, marker)
    }

    /// Waits for `p`, killing it after a generous hang guard (the old pack blocked forever on a FIFO).
    func finish(_ p: Process, file: StaticString = #filePath, line: UInt = #line) {
        var waited = 0
        while p.isRunning, waited < 6000 {
            usleep(10_000)
            waited += 1
        }
        if p.isRunning {
            XCTFail("kcar still running after 60 s: killed", file: file, line: line)
            kill(p.processIdentifier, SIGKILL)
        }
        p.waitUntilExit()
    }

    /// pack lists, then reads: a folder swapped for a symlink to a secret folder, a file swapped for a FIFO
    /// and a file replaced by another between the two are skipped and reported (exit 9), never followed,
    /// waited on or packed. Before, pack followed the swapped folder (root packed /etc/shadow this way) and
    /// blocked forever on the FIFO.
    func testPackRefusesInputsSwappedAfterTheListing() throws {
        try FileManager.default.createDirectory(atPath: path("src/svc/dir"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: path("secret"), withIntermediateDirectories: true)
        try Data("listed".utf8).write(to: URL(fileURLWithPath: path("src/svc/dir/file")))
        try Data("TOPSECRET".utf8).write(to: URL(fileURLWithPath: path("secret/file")))
        try Data("fine".utf8).write(to: URL(fileURLWithPath: path("src/svc/a")))
        try Data("to be a fifo".utf8).write(to: URL(fileURLWithPath: path("src/svc/b")))
        try Data("first".utf8).write(to: URL(fileURLWithPath: path("src/svc/c")))
        let (p, marker) = try start(["pack", "v.kcv", "src", "--key-file", keyFile], pause: "pack-listed")
        try FileManager.default.moveItem(atPath: path("src/svc/dir"), toPath: path("dir.old"))
        try FileManager.default.createSymbolicLink(atPath: path("src/svc/dir"), withDestinationPath: path("secret"))
        try FileManager.default.removeItem(atPath: path("src/svc/b"))
        XCTAssertEqual(mkfifo(path("src/svc/b"), 0o600), 0)
        try FileManager.default.moveItem(atPath: path("src/svc/c"), toPath: path("c.old"))  // its inode stays in use
        try Data("other".utf8).write(to: URL(fileURLWithPath: path("src/svc/c.new")))
        try FileManager.default.moveItem(atPath: path("src/svc/c.new"), toPath: path("src/svc/c"))
        try FileManager.default.removeItem(atPath: marker)
        finish(p)
        XCTAssertEqual(p.terminationStatus, 9)
        let list = try kcar(["list", "v.kcv", "--json", "--key-file", keyFile], expect: 0)
        let names = (try JSONSerialization.jsonObject(with: list.data) as! [[String: Any]]).map {
            $0["name"] as! String
        }
        XCTAssertEqual(names, ["svc/a"])
        XCTAssertEqual(
            try kcar(["extract", "v.kcv", "--stdout", "svc/a", "--key-file", keyFile], expect: 0).out, "fine")
    }

    /// A commit stands when the automatic compaction after it fails, and the command says so on standard
    /// error with exit 0. The compaction is made to fail from outside: paused once its temporary file exists,
    /// the vault is replaced by a copy (another inode), so the rewrite refuses to rename itself over it.
    func testAFailedAutomaticCompactionIsReportedAndTheCommitStands() throws {
        // 2 MiB that do not compress: deleting them leaves more than 1 MiB and half of the body dead.
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        let big = (0..<2 << 20).map { _ -> UInt8 in
            x ^= x << 13
            x ^= x >> 7
            x ^= x << 17
            return UInt8(truncatingIfNeeded: x)
        }
        try makeVault(items: [
            (.genericPassword, ["svce": "s", "acct": "big"], big),
            (.genericPassword, ["svce": "s", "acct": "small"], [1, 2])
        ])
        let errors = Pipe()
        let (p, marker) = try start(
            ["delete", "v.kcv", "s/big", "--key-file", keyFile], pause: "temporary-created", errors: errors)
        try FileManager.default.copyItem(atPath: path("v.kcv"), toPath: path("copy.kcv"))
        XCTAssertEqual(rename(path("copy.kcv"), path("v.kcv")), 0)
        try FileManager.default.removeItem(atPath: marker)
        finish(p)
        XCTAssertEqual(p.terminationStatus, 0, "the commit stood")
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(said.contains("committed, but the automatic compaction after it failed"), said)
        XCTAssertTrue(said.contains("was replaced while a rewrite was written"), said)
        let list = try kcar(["list", "v.kcv", "--key-file", keyFile], expect: 0).out
        XCTAssertTrue(list.contains("s/small") && !list.contains("s/big"), list)
    }

    /// Another file renamed over the vault after the rewrite's last check and before its rename (someone who
    /// can write the folder): the rewrite is refused, the other file stays at the path untouched, the vault it
    /// copied is kept (here under the name the test linked it to), and no temporary file is left. Before, the
    /// rename unlinked the other file (hostile case `v2/swap-same-key-add`, once in a CI run).
    func testARewriteNeverUnlinksAFileSwappedInAfterItsCheck() throws {
        for (n, command) in ["compact", "upgrade", "rekey"].enumerated() {
            try makeVault(items: [(.genericPassword, ["svce": "s", "acct": "a"], [1, 2, 3])])
            let original = try Data(contentsOf: URL(fileURLWithPath: path("v.kcv")))
            let decoy = Data("not this writer's file \(n)".utf8)
            try decoy.write(to: URL(fileURLWithPath: path("decoy")))
            let errors = Pipe()
            let (p, marker) = try start(
                [command, "v.kcv", "--key-file", keyFile], pause: "before-replace", errors: errors)
            try? FileManager.default.removeItem(atPath: path("kept.kcv"))
            XCTAssertEqual(link(path("v.kcv"), path("kept.kcv")), 0)
            XCTAssertEqual(rename(path("decoy"), path("v.kcv")), 0)
            try FileManager.default.removeItem(atPath: marker)
            finish(p)
            let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            XCTAssertNotEqual(p.terminationStatus, 0, "\(command): \(said)")
            XCTAssertTrue(said.contains("v.kcv was replaced by another file while it was rewritten"), said)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path("v.kcv"))), decoy, "\(command)")
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path("kept.kcv"))), original, "\(command)")
            XCTAssertEqual(temporaries(dir), [], "\(command)")
            // Without a swap the same rewrite goes through, through the same exchange.
            XCTAssertEqual(rename(path("kept.kcv"), path("v.kcv")), 0)
            _ = try kcar([command, "v.kcv", "--key-file", keyFile], expect: 0)
            _ = try kcar(["verify", "v.kcv", "--key-file", keyFile], expect: 0)
            XCTAssertEqual(temporaries(dir), [], "\(command)")
        }
    }

    /// Leftover temporaries in `folder`: extract's `.kcar-*.tmp` and a vault writer's `.NAME.*.tmp`.
    func temporaries(_ folder: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: folder)) ?? []).filter {
            $0.hasSuffix(".tmp") || $0.hasSuffix(".tmp.new")
        }
    }

    /// SIGINT or SIGTERM in the middle of writing an extracted file, or a packed vault: the process dies of
    /// the signal, as before, but leaves no temporary file (before: a hidden file of decrypted data in the
    /// output folder, and the temporary vault).
    func testInterruptedExtractAndPackLeaveNoTemporaries() throws {
        // streamed: chunk by chunk to a temporary name
        let big = (0..<3 << 20).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try makeVault(items: [
            (.genericPassword, ["svce": "s", "acct": "big"], big),
            (.genericPassword, ["svce": "s", "acct": "small"], [1, 2])
        ])
        for (signal, force) in [(SIGINT, false), (SIGTERM, true)] {
            let (p, marker) = try start(
                ["extract", "v.kcv", "-C", "out", "--key-file", keyFile] + (force ? ["--force"] : []),
                pause: "extract-writing")
            XCTAssertFalse(
                ((try? FileManager.default.subpathsOfDirectory(atPath: path("out/s"))) ?? []).isEmpty,
                "a file is being written")
            kill(p.processIdentifier, signal)
            finish(p)
            try? FileManager.default.removeItem(atPath: marker)
            XCTAssertEqual(p.terminationReason, .uncaughtSignal)
            XCTAssertEqual(p.terminationStatus, signal)
            XCTAssertEqual(temporaries(path("out")), [], "signal \(signal)")
            XCTAssertNil(
                FileManager.default.contents(atPath: path("out/s/big")).map { $0.count == big.count ? nil : $0 } ?? nil,
                "a partial file is left")
        }
        try FileManager.default.createDirectory(atPath: path("src/svc"), withIntermediateDirectories: true)
        try Data(big).write(to: URL(fileURLWithPath: path("src/svc/big")))
        let (p, _) = try start(["pack", "packed.kcv", "src", "--key-file", keyFile], pause: "pack-writing")
        XCTAssertFalse(temporaries(dir).isEmpty, "the vault is being written")
        kill(p.processIdentifier, SIGTERM)
        finish(p)
        XCTAssertEqual(p.terminationReason, .uncaughtSignal)
        XCTAssertEqual(temporaries(dir), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("packed.kcv")))
    }

    /// A temporary file a killed extract left (SIGKILL: no handler runs) is removed by the next extract that
    /// writes to its folder, with or without --force; one that a live process holds locked, and names that
    /// are not extract's own, are left alone.
    func testStaleExtractTemporariesAreCleanedOnTheNextRun() throws {
        try makeVault(items: [
            (.genericPassword, ["svce": "s", "acct": "a"], [1]), (.genericPassword, ["svce": "s", "acct": "b"], [2])
        ])
        try FileManager.default.createDirectory(atPath: path("out/s"), withIntermediateDirectories: true)
        let stale = ".kcar-0123456789ab.tmp"
        let live = ".kcar-abcdef012345.tmp"
        let other = ".kcar-notours.tmp"
        for name in [stale, live, other] {
            try Data("decrypted".utf8).write(to: URL(fileURLWithPath: path("out/s/" + name)))
        }
        let held = open(path("out/s/" + live), O_RDONLY)
        XCTAssertEqual(flock(held, LOCK_EX | LOCK_NB), 0)
        defer { close(held) }
        try kcar(["extract", "v.kcv", "-C", "out", "s/a", "--key-file", keyFile], expect: 0)
        XCTAssertEqual(Set(temporaries(path("out/s"))), [live, other])
        try kcar(["extract", "v.kcv", "-C", "out", "--force", "--key-file", keyFile], expect: 0)
        XCTAssertEqual(Set(temporaries(path("out/s"))), [live, other])
        // And the kill itself: SIGKILL while writing, then a run with --force.
        let big = [UInt8](repeating: 9, count: 3 << 20)
        try makeVault(items: [(.genericPassword, ["svce": "s", "acct": "big"], big)])
        let (p, _) = try start(
            ["extract", "v.kcv", "-C", "out", "--force", "--key-file", keyFile], pause: "extract-writing")
        kill(p.processIdentifier, SIGKILL)
        finish(p)
        XCTAssertEqual(Set(temporaries(path("out/s"))).count, 3, "the killed extract left its temporary")
        try kcar(["extract", "v.kcv", "-C", "out", "--force", "--key-file", keyFile], expect: 0)
        XCTAssertEqual(Set(temporaries(path("out/s"))), [live, other])
        XCTAssertEqual(FileManager.default.contents(atPath: path("out/s/big")), Data(big))
    }

    /// The item file of extract --items holds every value decrypted: interrupted (SIGTERM) it leaves no
    /// temporary; killed (SIGKILL) it leaves one that the next staged write of that name removes, while a
    /// temporary a live process locks, and names of other forms, stay.
    func testItemFileTemporariesAreRemovedOrCleaned() throws {
        let big = [UInt8](repeating: 5, count: 3 << 20)
        try makeVault(items: [(.genericPassword, ["svce": "s", "acct": "big"], big)])
        let (p, marker) = try start(
            ["extract", "v.kcv", "--items", "items.json", "--key-file", keyFile], pause: "extract-writing")
        XCTAssertEqual(temporaries(dir).count, 1)
        kill(p.processIdentifier, SIGTERM)
        finish(p)
        try FileManager.default.removeItem(atPath: marker)
        XCTAssertEqual(p.terminationReason, .uncaughtSignal)
        XCTAssertEqual(temporaries(dir), [])
        let (killed, _) = try start(
            ["extract", "v.kcv", "--items", "items.json", "--key-file", keyFile], pause: "extract-writing")
        kill(killed.processIdentifier, SIGKILL)
        finish(killed)
        let left = temporaries(dir)
        XCTAssertEqual(left.count, 1, "SIGKILL leaves the temporary")
        let live = ".items.json.abcdef012345.tmp"
        let other = ".items.json.x.tmp"
        for name in [live, other] { try Data("x".utf8).write(to: URL(fileURLWithPath: path(name))) }
        let held = open(path(live), O_RDONLY)
        XCTAssertEqual(flock(held, LOCK_EX | LOCK_NB), 0)
        defer { close(held) }
        try kcar(["extract", "v.kcv", "--items", "items.json", "--key-file", keyFile], expect: 0)
        XCTAssertEqual(Set(temporaries(dir)), [live, other])
        XCTAssertEqual(
            ((try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path("items.json")))))
                as! [String: Any])["format"] as? String, "kcar-items")
    }
}
