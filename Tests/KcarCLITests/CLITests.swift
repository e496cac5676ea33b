import Foundation
import TestSupport
import XCTest

/// Runs the built `kcar` as users do and checks its output, files and exit codes.
final class CLITests: XCTestCase {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static var binary: String {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("kcar").path,
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("kcar").path,
            repo.appendingPathComponent(".build/debug/kcar").path
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates.last!
    }
    var dir: String!
    var keyFile: String { Self.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path }

    typealias Result = ProcessResult

    var kcar: KcarRunner { KcarRunner(dir: dir) }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func write(_ path: String, _ content: [UInt8], mtime: Date? = nil) throws {
        let url = URL(fileURLWithPath: dir).appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(content).write(to: url)
        if let mtime { try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: url.path) }
    }

    func read(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: dir).appendingPathComponent(path)))
    }

    func makeTree() throws -> [String: [UInt8]] {
        let files: [String: [UInt8]] = [
            "src/svc.alpha/nested/token": Array("hunter2\n".utf8),
            "src/svc.alpha/empty": [],
            "src/svc.beta/big.bin": Recipes.noise(2_500_000, seed: 1),
            "src/svc.beta/text.json": Recipes.text(300_000, seed: 2),
            "src/ünïcødé/名前 with space": Array("non-ASCII".utf8)
        ]
        for (p, c) in files { try write(p, c, mtime: Date(timeIntervalSince1970: 1_700_000_000.25)) }
        return files
    }

    func testPackListVerifyExtractRoundTrip() throws {
        let files = try makeTree()
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile, "--group", "ops"])
        let list = try kcar(["list", "v.kcv", "--key-file", keyFile, "--json"])
        let json = try JSONSerialization.jsonObject(with: list.data) as! [[String: Any]]
        XCTAssertEqual(json.count, files.count)
        let token = json.first { $0["account"] as? String == "nested/token" }!
        XCTAssertEqual(token["service"] as? String, "svc.alpha")
        XCTAssertEqual(token["class"] as? String, "genp")
        XCTAssertEqual(token["size"] as? Int, 8)
        XCTAssertEqual(token["modified"] as? String, "2023-11-14T22:13:20.25Z")
        let table = try kcar(["list", "v.kcv", "--key-file", keyFile])
        XCTAssertTrue(table.out.contains("svc.alpha/nested/token"))
        let verify = try kcar(["verify", "v.kcv", "--key-file", keyFile])
        XCTAssertTrue(verify.out.contains("intact"))
        // The root's garbage count beside the exact dead bytes (SPEC.md Part 4, V8.1): a new vault holds none.
        XCTAssertTrue(verify.out.contains("\n  0 dead bytes; the index root counts 0 as garbage"), verify.out)
        try kcar(["extract", "v.kcv", "-C", "out", "--key-file", keyFile])
        for (p, c) in files {
            let out = "out/" + p.dropFirst(4)
            XCTAssertEqual(try read(out), c, out)
            let attrs = try FileManager.default.attributesOfItem(atPath: dir + "/" + out)
            XCTAssertEqual(attrs[.posixPermissions] as? Int, 0o600)
            XCTAssertEqual((attrs[.modificationDate] as! Date).timeIntervalSince1970, 1_700_000_000.25, accuracy: 0.001)
        }
        let one = try kcar(["extract", "v.kcv", "--stdout", "svc.alpha/nested/token", "--key-file", keyFile])
        XCTAssertEqual(one.out, "hunter2\n")
        let info = try kcar(["info", "v.kcv", "--key-file", keyFile, "--json"])
        let i = try JSONSerialization.jsonObject(with: info.data) as! [String: Any]
        XCTAssertEqual(i["group"] as? String, "ops")
        XCTAssertEqual(i["items"] as? Int, files.count)
    }

    func testPackReportsWhatItCannotStore() throws {
        try write("src/svc/ok", [1])
        try write("src/loose-file", [2])
        try FileManager.default.createSymbolicLink(atPath: dir + "/src/svc/link", withDestinationPath: "/etc/passwd")
        mkfifo(dir + "/src/svc/fifo", 0o600)
        let r = try kcar(["pack", "v.kcv", "src", "--key-file", keyFile], expect: 9)
        XCTAssertFalse(r.err.contains("symbolic link"), r.err)  // stored as a link since issue 13, item 9
        XCTAssertTrue(r.err.contains("not a regular file"), r.err)
        XCTAssertFalse(r.err.contains("loose-file"), r.err)  // a top-level item since issue 22, point 4
        let list = try kcar(["list", "v.kcv", "--key-file", keyFile, "--json"])
        XCTAssertEqual(
            (try JSONSerialization.jsonObject(with: list.data) as! [[String: Any]]).map { $0["name"] as! String },
            ["loose-file", "svc/link", "svc/ok"])
    }

    func testPackExcludesPatterns() throws {
        try write("src/svc/keep", [1])
        try write("src/svc/skip.tmp", [2])
        try write("src/svc/cache/x", [3])
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile, "--exclude", "*.tmp", "--exclude", "svc/cache"])
        let list = try kcar(["list", "v.kcv", "--key-file", keyFile])
        XCTAssertTrue(list.out.contains("svc/keep"))
        XCTAssertFalse(list.out.contains("skip.tmp"))
        XCTAssertFalse(list.out.contains("cache"))
    }

    func testOverwritesAreRefusedUnlessForced() throws {
        try write("src/svc/a", Array("new".utf8))
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile])
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile], expect: 7)
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile, "--force"])
        try write("out/svc/a", Array("old".utf8))
        try kcar(["extract", "v.kcv", "-C", "out", "--key-file", keyFile], expect: 7)
        XCTAssertEqual(try read("out/svc/a"), Array("old".utf8))
        try kcar(["extract", "v.kcv", "-C", "out", "--key-file", keyFile, "--force"])
        XCTAssertEqual(try read("out/svc/a"), Array("new".utf8))
    }

    func testExtractNeverFollowsASymlinkedFolder() throws {
        try write("src/svc/a", Array("secret".utf8))
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile])
        try FileManager.default.createDirectory(atPath: dir + "/elsewhere", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/out/svc", withDestinationPath: dir + "/elsewhere")
        let r = try kcar(["extract", "v.kcv", "-C", "out", "--key-file", keyFile, "--force"], expect: 8)
        XCTAssertTrue(r.err.contains("symbolic link"), r.err)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/elsewhere"), [])
    }

    func testUnsafeNamesArePercentEncoded() throws {
        try write("src/svc/%41", [1])
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile])
        let list = try kcar(["list", "v.kcv", "--key-file", keyFile])
        XCTAssertTrue(list.out.contains("svc/%2541"), list.out)
        try kcar(["extract", "v.kcv", "-C", "out", "svc/%2541", "--key-file", keyFile])
        XCTAssertEqual(try read("out/svc/%2541"), [1])
    }

    func testErrorsHaveTheirExitCodes() throws {
        let fixtures = Self.repo.appendingPathComponent("Fixtures").path
        try kcar(["list", "\(fixtures)/vault/one-item.kcv", "--key-file", "\(fixtures)/keys/other.key"], expect: 3)
        try kcar(["list", "\(fixtures)/vault/malformed/header-checksum.kcv", "--key-file", keyFile], expect: 4)
        try kcar(["verify", "\(fixtures)/vault/malformed/record-flipped.kcv", "--key-file", keyFile], expect: 4)
        let torn = try kcar(
            ["verify", "\(fixtures)/vault/malformed/incomplete-commit.kcv", "--key-file", keyFile], expect: 5)
        XCTAssertTrue(torn.out.contains("incomplete commit"), torn.out)
        let list = try kcar(["list", "\(fixtures)/vault/malformed/incomplete-commit.kcv", "--key-file", keyFile])
        XCTAssertTrue(list.err.contains("incomplete commit"), list.err)
        try kcar(["extract", "\(fixtures)/vault/one-item.kcv", "--stdout", "no/such", "--key-file", keyFile], expect: 6)
        try kcar(["list", "\(fixtures)/vault/malformed/not-a-vault.kcv", "--key-file", keyFile], expect: 4)
        try kcar(["list", "\(fixtures)/vault/one-item.kcv"], expect: 10)
        try kcar(["list"], expect: 2)
        try kcar(["frobnicate"], expect: 2)
        try kcar(["list", "x", "--bogus"], expect: 2)
        try kcar(["list", "/nonexistent/v.kcv", "--key-file", keyFile], expect: 8)
        let report = try kcar(
            ["verify", "\(fixtures)/vault/malformed/record-flipped.kcv", "--key-file", keyFile, "--json"], expect: 4)
        let json = try JSONSerialization.jsonObject(with: report.data) as! [String: Any]
        XCTAssertEqual(json["intact"] as? Bool, false)
        XCTAssertEqual((json["problems"] as? [[String: Any]])?.first?["code"] as? String, "damaged record")
        let keyless = try kcar(["verify", "\(fixtures)/vault/one-item.kcv", "--no-key"])
        XCTAssertTrue(keyless.out.contains("not authenticated"), keyless.out)
        try kcar(["verify", "\(fixtures)/vault/malformed/header-checksum.kcv", "--no-key"], expect: 4)
        // Issue 9, item 12: without a secret and without --no-key nothing is checked, and it says so (exit 10).
        try kcar(["verify", "\(fixtures)/vault/one-item.kcv"], expect: 10)
        try kcar(["verify", "\(fixtures)/vault/malformed/record-flipped.kcv"], expect: 10)
    }

    func testPassphrasesNeverLeakIntoOutput() throws {
        try write("src/svc/a", [1])
        let pass = "Tr0ub4dor&3-unique-marker"
        try write("pass.txt", Array((pass + "\n").utf8))
        try kcar(["pack", "v.kcv", "src", "--passphrase-file", "pass.txt", "--kdf-memory", "8", "--kdf-passes", "1"])
        try kcar(["list", "v.kcv"], env: ["KCAR_PASSPHRASE": pass])
        try write("wrong.txt", Array("wrong-marker-1234".utf8))
        let r = try kcar(["list", "v.kcv", "--passphrase-file", "wrong.txt"], expect: 3)
        XCTAssertFalse(r.err.contains("wrong-marker-1234"))
        XCTAssertFalse(r.out.contains("wrong-marker-1234"))
        let fd = try kcar(["verify", "v.kcv", "--passphrase-fd", "0"], stdin: Data(pass.utf8))
        XCTAssertFalse((fd.out + fd.err).contains(pass))
    }

    func testKeygenX25519PackForARecipient() throws {
        let gen = try kcar(["keygen", "server.key", "--x25519"])
        let pub = gen.out.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(pub.hasPrefix("age1") && pub.count == 62, pub)
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/server.key")[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        XCTAssertEqual(try read("server.key").count, 32)
        try kcar(["keygen", "server.key"], expect: 7)
        try write("src/svc/a", Array("for the server".utf8))
        try kcar(["pack", "v.kcv", "src", "--recipient", pub])
        try kcar(["pack", "w.kcv", "src", "--recipient", "server.key.pub"])
        let r = try kcar(["extract", "v.kcv", "--stdout", "svc/a", "--key-file", "server.key"])
        XCTAssertEqual(r.out, "for the server")
        try kcar(["list", "w.kcv", "--key-file", "server.key"])
    }

    func testPasswdRekeyCompactRecover() throws {
        try write("src/svc/a", Array("value".utf8))
        try write("p1", Array("first pass".utf8))
        try write("p2", Array("second pass".utf8))
        let kdf = ["--kdf-memory", "8", "--kdf-passes", "1"]
        try kcar(["pack", "v.kcv", "src", "--passphrase-file", "p1"] + kdf)
        try kcar(["passwd", "v.kcv", "--passphrase-file", "p1", "--new-passphrase-file", "p2"] + kdf)
        try kcar(["list", "v.kcv", "--passphrase-file", "p1"], expect: 3)
        try kcar(["list", "v.kcv", "--passphrase-file", "p2"])
        try kcar(["keygen", "k"])
        try kcar(["passwd", "v.kcv", "--passphrase-file", "p2", "--add-key-file", "k"])
        try kcar(["list", "v.kcv", "--key-file", "k"])
        try kcar(["passwd", "v.kcv", "--key-file", "k", "--remove-slot", "0"])
        try kcar(["list", "v.kcv", "--passphrase-file", "p2"], expect: 3)
        try kcar(["rekey", "v.kcv", "--key-file", "k"])
        XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", "svc/a", "--key-file", "k"]).out, "value")
        try kcar(["compact", "v.kcv", "--key-file", "k"])
        let h = FileHandle(forWritingAtPath: dir + "/v.kcv")!
        h.seekToEndOfFile()
        h.write(Data(repeating: 7, count: 300))
        h.closeFile()
        try kcar(["verify", "v.kcv", "--key-file", "k"], expect: 5)
        try kcar(["recover", "v.kcv", "--key-file", "k"])
        try kcar(["verify", "v.kcv", "--key-file", "k"])
    }

    func testPackToStandardOutput() throws {
        try write("src/svc/a", Array("piped".utf8))
        let r = try kcar(["pack", "-", "src", "--key-file", keyFile])
        try r.data.write(to: URL(fileURLWithPath: dir + "/piped.kcv"))
        XCTAssertEqual(try kcar(["extract", "piped.kcv", "--stdout", "svc/a", "--key-file", keyFile]).out, "piped")
    }

    func testArchiveShowAndConvert() throws {
        let fixtures = Self.repo.appendingPathComponent("Fixtures/archive").path
        let users = try kcar(["archive", "show", "\(fixtures)/users.kca", "--json"])
        let json = try JSONSerialization.jsonObject(with: users.data) as! [[String: Any]]
        XCTAssertEqual(json.count, 2)
        XCTAssertEqual(json[1]["$class"] as? String, "UserData")
        XCTAssertEqual((json[1]["$fields"] as? [String: Any])?["categoryName"] as? String, "管理员")
        XCTAssertEqual(
            ((json[1]["$fields"] as? [String: Any])?["image"] as? [String: Any])?["$data"] as? String, "iVBORw==")
        let distinct = try kcar(["archive", "show", "\(fixtures)/distinct.kca", "--json"])
        XCTAssertEqual(distinct.out.trimmingCharacters(in: .whitespacesAndNewlines), "[true,1,1.0,1]")
        XCTAssertTrue(
            try kcar(["archive", "show", "\(fixtures)/users.kca"]).out.contains("\n    \"$class\": \"UserData\""))
        try kcar(["archive", "convert", "\(fixtures)/users.kca", "copy.kca", "--to", "kcar", "--deterministic"])
        XCTAssertEqual(try read("copy.kca"), Array(try Data(contentsOf: URL(fileURLWithPath: "\(fixtures)/users.kca"))))
        try kcar(["archive", "convert", "\(fixtures)/users.kca", "copy.kca"], expect: 7)
        let bad = try kcar(
            [
                "archive", "show",
                "\(fixtures)/malformed/\(try FileManager.default.contentsOfDirectory(atPath: "\(fixtures)/malformed").filter { $0.hasSuffix(".kca") }.sorted()[0])"
            ], expect: 4)
        XCTAssertEqual(bad.err.split(separator: "\n").count, 1, "one-line error: \(bad.err)")
        try kcar(["archive", "frob"], expect: 2)
    }

    func testArchiveShowAndConvertNSKeyedArchiverArchives() throws {
        let apple = Self.repo.deletingLastPathComponent().appendingPathComponent(
            "shared/fixtures/apple-nskeyedarchiver")
        let complex = apple.appendingPathComponent("NSKeyedUnarchiver-ComplexTest.plist").path
        guard FileManager.default.fileExists(atPath: complex) else {
            throw XCTSkip("shared fixtures not beside the repo")
        }
        let shown = try kcar(["archive", "show", complex, "--json"])
        let json = try JSONSerialization.jsonObject(with: shown.data) as! [String: Any]
        XCTAssertEqual(json["string"] as? String, "hello")
        XCTAssertEqual((json["uuid"] as? [String: Any])?["$uuid"] as? String, "71DC068E-3420-45FF-919E-3A267D55EC22")
        // NSKeyedArchiver -> kcar -> NSKeyedArchiver -> kcar keeps the value.
        try kcar(["archive", "convert", complex, "a.kca"])
        try kcar(["archive", "convert", "a.kca", "b.plist"])
        try kcar(["archive", "convert", "b.plist", "c.kca", "--deterministic"])
        let again = try kcar(["archive", "show", "c.kca", "--json"])
        XCTAssertEqual(try JSONSerialization.jsonObject(with: again.data) as? NSDictionary, json as NSDictionary)
        let hostile = Self.repo.appendingPathComponent("Fixtures/nskeyed")
        let first = try FileManager.default.contentsOfDirectory(atPath: hostile.path).filter {
            $0.hasSuffix(".plist") || $0.hasSuffix(".bplist") || $0.hasSuffix(".xml")
        }.sorted().first
        if let first {
            let r = try kcar(["archive", "show", hostile.appendingPathComponent(first).path], expect: 4)
            XCTAssertEqual(r.err.split(separator: "\n").count, 1, r.err)
        }
    }

    func testHelpAndVersion() throws {
        XCTAssertTrue(try kcar(["--help"]).out.contains("usage: kcar"))
        XCTAssertTrue(try kcar(["pack", "--help"]).out.contains("--exclude"))
        XCTAssertTrue(try kcar(["--version"]).out.contains("formats 1 and 2"))
    }
}
