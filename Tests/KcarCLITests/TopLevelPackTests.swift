import Foundation
import XCTest

/// Files directly in a packed folder, and a single file, are top-level items (issue 22, point 4; SPEC.md §7.1):
/// what tar, 7z and age users try first comes back as it went in.
final class TopLevelPackTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-toplevel-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        _ = try kcar(["keygen", "k.key"])
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// kcar as this class runs it (`KcarRunner`).
    var kcar: KcarRunner { KcarRunner(dir: dir, env: ["HOME": dir + "/home"]) }

    func write(_ path: String, _ text: String, mode: Int = 0o600) throws {
        let url = URL(fileURLWithPath: dir + "/" + path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
    }

    func names(_ vault: String) throws -> [String] {
        let r = try kcar(["list", vault, "--json", "--key-file", "k.key"])
        return (try JSONSerialization.jsonObject(with: r.data) as! [[String: Any]]).map { $0["name"] as! String }
            .sorted()
    }

    /// Every entry below `root` (relative path) with its type, permission bits, and content or link target.
    func tree(_ root: String) throws -> [String: String] {
        var out: [String: String] = [:]
        let fm = FileManager.default
        for rel in try fm.subpathsOfDirectory(atPath: root) {
            let path = root + "/" + rel
            let a = try fm.attributesOfItem(atPath: path)
            let mode = String(a[.posixPermissions] as! Int, radix: 8)
            switch a[.type] as? FileAttributeType {
            case .typeSymbolicLink?: out[rel] = "link " + (try fm.destinationOfSymbolicLink(atPath: path))
            case .typeDirectory?: out[rel] = "folder \(mode)"
            default:
                out[rel] =
                    "file \(mode) " + String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
            }
        }
        return out
    }

    func testATreeWithTopLevelFilesComesBackExactly() throws {
        try write("plain/notes.txt", "notes\n", mode: 0o640)
        try write("plain/run.sh", "#!/bin/sh\n", mode: 0o755)
        try write("plain/%odd name", "odd")
        try write("plain/svc/a", "one")
        try write("plain/svc/sub/b", "two", mode: 0o644)
        try FileManager.default.createDirectory(atPath: dir + "/plain/empty", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/plain/latest", withDestinationPath: "notes.txt")
        // A folder that holds items is no item of its own (SPEC.md §7.1): extract makes it 0700, so it is made so here.
        for folder in ["plain/svc", "plain/svc/sub"] {
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: dir + "/" + folder)
        }
        let packed = try kcar(["pack", "v.kcv", "plain", "--key-file", "k.key"])
        XCTAssertTrue(packed.err.contains("packed 7 items"), packed.err)
        // list names a top-level item by its name alone (its own path component encoding kept), tar tf's way.
        XCTAssertEqual(
            try names("v.kcv"), ["%25odd name", "empty/", "latest", "notes.txt", "run.sh", "svc/a", "svc/sub/b"])
        let table = try kcar(["list", "v.kcv", "--key-file", "k.key"]).out
        XCTAssertTrue(table.contains(" notes.txt\n") && table.contains(" latest -> notes.txt\n"), table)
        // Into an empty folder, with the packed modes: the same tree, byte for byte, mode for mode.
        try kcar(["extract", "v.kcv", "-C", "out", "-p", "--key-file", "k.key"])
        var expected = try tree(dir + "/plain")
        expected["%25odd name"] = expected.removeValue(forKey: "%odd name")  // `%` is written %25, as on every path
        XCTAssertEqual(try tree(dir + "/out"), expected)
        // A name without `/` selects the top-level item (and %/name too); --stdout reads it.
        XCTAssertEqual(
            try kcar(["extract", "v.kcv", "--stdout", "notes.txt", "--key-file", "k.key"]).data, Data("notes\n".utf8))
        XCTAssertEqual(
            try kcar(["extract", "v.kcv", "--stdout", "%/run.sh", "--key-file", "k.key"]).data, Data("#!/bin/sh\n".utf8)
        )
        try kcar(["extract", "v.kcv", "notes.txt", "-C", "one", "--key-file", "k.key"])
        XCTAssertEqual(try tree(dir + "/one"), ["notes.txt": "file 600 notes\n"])
    }

    func testASingleFileIsPackedAndExtracted() throws {
        try write("dir/token.txt", "s3cret", mode: 0o640)
        try kcar(["pack", "t.kcv", "dir/token.txt", "--key-file", "k.key"])
        XCTAssertEqual(try names("t.kcv"), ["token.txt"])
        try kcar(["extract", "t.kcv", "-C", "out", "-p", "--key-file", "k.key"])
        XCTAssertEqual(try tree(dir + "/out"), ["token.txt": "file 640 s3cret"])
        // A file in the current folder, and a link to one (followed, as any path given is).
        try kcar(["pack", "u.kcv", "k.key", "--key-file", "k.key"])
        XCTAssertEqual(try names("u.kcv"), ["k.key"])
        try FileManager.default.createSymbolicLink(atPath: dir + "/alias", withDestinationPath: "dir/token.txt")
        try kcar(["pack", "w.kcv", "alias", "--key-file", "k.key"])
        XCTAssertEqual(
            try kcar(["extract", "w.kcv", "--stdout", "alias", "--key-file", "k.key"]).data, Data("s3cret".utf8))
        // Neither a folder nor a regular file: refused (exit 8), nothing written.
        mkfifo(dir + "/fifo", 0o600)
        let fifo = try kcar(["pack", "f.kcv", "fifo", "--key-file", "k.key"], expect: 8)
        XCTAssertTrue(fifo.err.contains("neither a folder nor a regular file"), fifo.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/f.kcv"))
    }

    func testATopLevelItemAndAServiceOfTheSameNameCollide() throws {
        try write("plain/svc/a", "one")
        try kcar(["pack", "v.kcv", "plain", "--key-file", "k.key"])
        // A top-level item svc cannot be written where the service svc is a folder: refused, nothing changed.
        let r = try kcar(
            ["add", "v.kcv", "svc", "--value-file", "-", "--key-file", "k.key"], stdin: Data("x".utf8), expect: 7)
        XCTAssertTrue(r.err.contains("needs as a folder"), r.err)
        // A top-level item's value given directly, with no plaintext file.
        try kcar(["add", "v.kcv", "api-token", "--value-file", "-", "--key-file", "k.key"], stdin: Data("tok\n".utf8))
        XCTAssertEqual(try names("v.kcv"), ["api-token", "svc/a"])
        XCTAssertEqual(
            try kcar(["extract", "v.kcv", "--stdout", "api-token", "--key-file", "k.key"]).data, Data("tok".utf8))
    }

    func testAddWarnsAboutAPathTypedFromTheFolderAbove() throws {
        try write("secrets/svc/a", "one")
        try kcar(["pack", "v.kcv", "secrets", "--key-file", "k.key"])
        try kcar(["pack", "w.kcv", "secrets", "--key-file", "k.key"])
        try write("secrets/x", "new")
        // Typed beside `secrets`, the folder v.kcv was packed from: added (service `secrets`), with a warning that
        // says what was likely meant.
        let wrong = try kcar(["add", "v.kcv", "secrets/x", "--key-file", "k.key"])
        XCTAssertTrue(
            wrong.err.contains(
                "kcar: warning: secrets/x makes a new service secrets, but secrets/ holds svc, which v.kcv already has"),
            wrong.err)
        XCTAssertTrue(wrong.err.contains("(kcar add v.kcv -C secrets x)"), wrong.err)
        XCTAssertEqual(try names("v.kcv"), ["secrets/x", "svc/a"])
        // The right form: a top-level item, no warning; nor for a new service that holds nothing the vault has.
        let right = try kcar(["add", "v.kcv", "-C", "secrets", "x", "--key-file", "k.key"])
        XCTAssertFalse(right.err.contains("warning"), right.err)
        try write("secrets/mail/pw", "pw")
        let new = try kcar(["add", "v.kcv", "-C", "secrets", "mail/pw", "--key-file", "k.key"])
        XCTAssertFalse(new.err.contains("warning"), new.err)
        XCTAssertEqual(try names("v.kcv"), ["mail/pw", "secrets/x", "svc/a", "x"])
        // The whole folder typed from above is flagged too.
        let whole = try kcar(["add", "w.kcv", "secrets", "--key-file", "k.key"])
        XCTAssertTrue(whole.err.contains("(kcar add w.kcv -C secrets .)"), whole.err)
    }
}
