import Foundation
import TestSupport
import VaultFormat
import XCTest

/// `kcar extract` with hostile item names and a hostile output folder: nothing is ever written outside the
/// folder or through a link planted in it, names that cannot be written are reported, and names that differ
/// only in bytes (case, Unicode normalisation) stay distinct files.
final class ExtractSafetyTests: XCTestCase {
    var dir: String!
    var keyFile: String { CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-extract-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/box", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/outside", withIntermediateDirectories: true)
        try Data("outside, untouched".utf8).write(to: URL(fileURLWithPath: dir + "/outside/file"))
    }

    override func tearDownWithError() throws {
        // `rm -rf` copes with paths longer than PATH_MAX.
        let rm = Process()
        rm.executableURL = URL(fileURLWithPath: "/bin/rm")
        rm.arguments = ["-rf", dir]
        try rm.run()
        rm.waitUntilExit()
    }

    /// kcar as this class runs it (`KcarRunner`).
    var kcar: KcarRunner { KcarRunner(dir: dir, arguments: ["--key-file", keyFile]) }

    /// A vault `v.kcv` holding (service, account, value) items.
    func vault(_ items: [(String, String, [UInt8])]) throws {
        try Vault.create(
            path: dir + "/v.kcv", group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            format: .version1, overwrite: true
        ) { tx in
            for (s, a, v) in items {
                var attributes = Attributes()
                attributes[AttributeName.service] = .string(s)
                attributes[AttributeName.account] = .string(a)
                try tx.add(attributes: attributes, value: .bytes(v))
            }
        }
    }

    /// Nothing changed outside `box/out`: the folder beside it is as setUp left it, and `box` holds only `out`.
    func assertNothingOutside(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(
            regularFiles(dir + "/outside"), ["file": Array("outside, untouched".utf8)], file: file, line: line)
        XCTAssertEqual(
            Set((try? FileManager.default.contentsOfDirectory(atPath: dir + "/box")) ?? []).subtracting(["out"]), [],
            file: file, line: line)
        XCTAssertEqual(
            Set((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []), ["box", "outside", "v.kcv"],
            file: file, line: line)
    }

    func testTraversalAndAbsoluteNamesStayInside() throws {
        try vault([
            ("..", "../../escape", [1]), ("/etc", "/passwd", [2]), (".", "./x", [3]),
            ("svc", "a/../../../b", [4]), ("svc", "/abs/path", [5]), ("svc", "trailing/", [6]), ("", "", [7])
        ])
        try kcar(["extract", "v.kcv", "-C", "box/out"], expect: 0)
        XCTAssertEqual(
            regularFiles(dir + "/box/out"),
            [
                "%2E%2E/%2E%2E/%2E%2E/escape": [1], "%2Fetc/%/passwd": [2], "%2E/%2E/x": [3],
                "svc/a/%2E%2E/%2E%2E/%2E%2E/b": [4], "svc/%/abs/path": [5], "svc/trailing/%": [6], "%/%": [7]
            ])
        assertNothingOutside()
        // The names `list` prints select the same items.
        XCTAssertEqual(
            try kcar(["extract", "v.kcv", "--stdout", "%2E%2E/%2E%2E/%2E%2E/escape"], expect: 0).data, Data([1]))
        XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", "%2Fetc/%/passwd"], expect: 0).data, Data([2]))
    }

    func testNULAndControlCharactersAreEncoded() throws {
        try vault([("sv\u{0}c", "a\u{0}b", [1]), ("svc", "tab\there\nnewline", [2]), ("svc", "100%", [3])])
        let list = try kcar(["list", "v.kcv"], expect: 0)
        XCTAssertTrue(list.output.contains("sv%00c/a%00b"), list.output)
        try kcar(["extract", "v.kcv", "-C", "box/out"], expect: 0)
        XCTAssertEqual(
            regularFiles(dir + "/box/out"), ["sv%00c/a%00b": [1], "svc/tab%09here%0Anewline": [2], "svc/100%25": [3]])
        XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", "sv%00c/a%00b"], expect: 0).data, Data([1]))
        assertNothingOutside()
    }

    /// A path component over 255 bytes (NAME_MAX), also one that percent-encoding makes that long, cannot be
    /// a file name: the item is reported and skipped (exit 9), the others are written. A path longer than
    /// PATH_MAX in total is written (every folder is opened relative to its parent).
    func testLongNames() throws {
        let longest = String(repeating: "n", count: 255)
        let tooLong = String(repeating: "n", count: 256)
        let encodedTooLong = String(repeating: "\u{1}", count: 86)  // 258 bytes once written as %01
        let deep = (0..<20).map { "\($0)" + String(repeating: "d", count: 240) }.joined(separator: "/")
        XCTAssertGreaterThan(deep.utf8.count, Int(PATH_MAX))
        try vault([
            ("svc", longest, [1]), ("svc", tooLong, [2]), ("svc", encodedTooLong, [3]), (tooLong, "a", [4]),
            ("svc", deep, [5]), ("svc", "plain", [6])
        ])
        let r = try kcar(["extract", "v.kcv", "-C", "box/out"], expect: 9)
        XCTAssertEqual(r.err.components(separatedBy: "over 255 bytes").count - 1, 3, r.err)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/box/out/svc/" + longest)), Data([1]))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/box/out/svc/plain")), Data([6]))
        XCTAssertEqual(try readBelow(dir + "/box/out/svc", deep), [5])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/box/out").sorted(), ["svc"])
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: dir + "/box/out/svc").sorted(),
            ["0" + String(repeating: "d", count: 240), longest, "plain"].sorted())
        // Asked for by name, a skipped item is still reported.
        try kcar(["extract", "v.kcv", "-C", "box/out", "svc/" + tooLong, "--force"], expect: 9)
        XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", "svc/" + tooLong], expect: 0).data, Data([2]))
        assertNothingOutside()
    }

    /// Reads a file by a path that may exceed PATH_MAX, one folder at a time.
    func readBelow(_ root: String, _ relative: String) throws -> [UInt8] {
        var fd = open(root, O_RDONLY | O_DIRECTORY)
        let parts = relative.split(separator: "/").map(String.init)
        for p in parts.dropLast() {
            let next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
            close(fd)
            guard next >= 0 else { throw CocoaError(.fileNoSuchFile) }
            fd = next
        }
        let f = openat(fd, parts.last!, O_RDONLY | O_NOFOLLOW)
        close(fd)
        guard f >= 0 else { throw CocoaError(.fileNoSuchFile) }
        defer { close(f) }
        var buf = [UInt8](repeating: 0, count: 64)
        let n = read(f, &buf, buf.count)
        return Array(buf[0..<max(0, n)])
    }

    /// On Linux file names are bytes: names that differ only in case, or only in Unicode normalisation, are
    /// different files, and a name given on the command line selects exactly the item with those bytes.
    func testCaseAndNormalisationVariantsAreDistinctFiles() throws {
        let nfc = "caf\u{E9}"
        let nfd = "cafe\u{301}"
        XCTAssertEqual(nfc, nfd)  // equal as Swift strings ...
        XCTAssertNotEqual(Array(nfc.utf8), Array(nfd.utf8))  // ... not as bytes, nor as file names
        try vault([
            ("Svc", "Token", [1]), ("svc", "token", [2]), ("svc", "TOKEN", [3]),
            (nfc, "x", [4]), (nfd, "x", [5]), ("svc", nfc, [6]), ("svc", nfd, [7])
        ])
        try kcar(["extract", "v.kcv", "-C", "box/out"], expect: 0)
        let byBytes = regularFilesByBytes(dir + "/box/out")
        XCTAssertEqual(byBytes.count, 7, "\(byBytes.keys.map { String(decoding: $0, as: UTF8.self) })")
        XCTAssertEqual(byBytes[Array("Svc/Token".utf8)], [1])
        XCTAssertEqual(byBytes[Array("svc/token".utf8)], [2])
        XCTAssertEqual(byBytes[Array("svc/TOKEN".utf8)], [3])
        XCTAssertEqual(byBytes[Array((nfc + "/x").utf8)], [4])
        XCTAssertEqual(byBytes[Array((nfd + "/x").utf8)], [5])
        XCTAssertEqual(byBytes[Array(("svc/" + nfc).utf8)], [6])
        XCTAssertEqual(byBytes[Array(("svc/" + nfd).utf8)], [7])
        XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", "svc/" + nfc], expect: 0).data, Data([6]))
        XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", "svc/" + nfd], expect: 0).data, Data([7]))
        XCTAssertEqual(try kcar(["extract", "v.kcv", "--stdout", nfd + "/x"], expect: 0).data, Data([5]))
        try kcar(["extract", "v.kcv", "-C", "box/one", nfc], expect: 0)
        XCTAssertEqual(regularFilesByBytes(dir + "/box/one"), [Array((nfc + "/x").utf8): [4]])
        try FileManager.default.removeItem(atPath: dir + "/box/one")
        assertNothingOutside()
    }

    /// Links planted in the output folder: a folder that is a symlink is refused (exit 8); a file name that is
    /// a symlink (dangling or not) or a hard link is refused without --force (exit 7) and replaced by a new
    /// file with it; nothing is written to what a link points at. Small values (written whole) and large
    /// ones (streamed through a temporary file) alike.
    func testLinksPlantedInTheOutputFolder() throws {
        let large = Recipes.noise(5 << 20, seed: 1)
        try vault([("svc", "a", Array("small".utf8)), ("svc", "big", large), ("svc", "sub/c", [3])])
        let out = dir + "/box/out"
        let fm = FileManager.default
        func reset() throws {
            try? fm.removeItem(atPath: out)
            try fm.createDirectory(atPath: out + "/svc/sub", withIntermediateDirectories: true)
        }

        // A folder on the way is a symlink to outside.
        for link in ["svc", "svc/sub"] {
            try? fm.removeItem(atPath: out)
            try fm.createDirectory(atPath: out, withIntermediateDirectories: true)
            if link == "svc/sub" { try fm.createDirectory(atPath: out + "/svc", withIntermediateDirectories: false) }
            try fm.createSymbolicLink(atPath: out + "/" + link, withDestinationPath: dir + "/outside")
            for force in [[], ["--force"]] {
                let r = try kcar(["extract", "v.kcv", "-C", "box/out"] + force, expect: 8)
                XCTAssertTrue(r.err.contains("symbolic link"), r.err)
                assertNothingOutside()
            }
        }

        // File names that are links to outside (symlink, dangling symlink, hard link).
        let plants: [(String, (String) throws -> Void)] = [
            ("symlink", { try fm.createSymbolicLink(atPath: $0, withDestinationPath: self.dir + "/outside/file") }),
            (
                "dangling symlink",
                { try fm.createSymbolicLink(atPath: $0, withDestinationPath: self.dir + "/outside/new") }
            ),
            ("hard link", { try fm.linkItem(atPath: self.dir + "/outside/file", toPath: $0) })
        ]
        for (kind, plant) in plants {
            for name in ["a", "big"] {
                try reset()
                try plant(out + "/svc/" + name)
                let r = try kcar(["extract", "v.kcv", "-C", "box/out"], expect: 7)
                XCTAssertTrue(r.err.contains("exists"), "\(kind) \(name): \(r.err)")
                XCTAssertEqual(
                    regularFiles(out).keys.filter { $0 != "svc/" + name }, [],
                    "\(kind) \(name): written before the refusal")
                assertNothingOutside()
                try kcar(["extract", "v.kcv", "-C", "box/out", "--force"], expect: 0)
                let attrs = try fm.attributesOfItem(atPath: out + "/svc/" + name)
                XCTAssertEqual(attrs[.type] as? FileAttributeType, .typeRegular, "\(kind) \(name)")
                XCTAssertEqual(attrs[.referenceCount] as? Int, 1, "\(kind) \(name)")
                XCTAssertEqual(
                    regularFiles(out), ["svc/a": Array("small".utf8), "svc/big": large, "svc/sub/c": [3]],
                    "\(kind) \(name)")
                assertNothingOutside()
            }
        }
    }

    /// Existing files are refused before anything is written (exit 7), and replaced with --force (mode 0600).
    /// A file where a folder is needed, or a folder where a file is, is refused (exit 8 and 7) and stays.
    func testExistingFilesAndFolders() throws {
        try vault([("svc", "a", [1]), ("svc", "b", [2]), ("tree", "x/y", [3])])
        let out = dir + "/box/out"
        let fm = FileManager.default
        try fm.createDirectory(atPath: out + "/svc", withIntermediateDirectories: true)
        try Data("old".utf8).write(to: URL(fileURLWithPath: out + "/svc/b"))
        try fm.setAttributes([.posixPermissions: 0o644], ofItemAtPath: out + "/svc/b")
        try kcar(["extract", "v.kcv", "-C", "box/out"], expect: 7)
        XCTAssertEqual(regularFiles(out), ["svc/b": Array("old".utf8)])
        try kcar(["extract", "v.kcv", "-C", "box/out", "--force"], expect: 0)
        XCTAssertEqual(regularFiles(out), ["svc/a": [1], "svc/b": [2], "tree/x/y": [3]])
        XCTAssertEqual(try fm.attributesOfItem(atPath: out + "/svc/b")[.posixPermissions] as? Int, 0o600)

        // A regular file where the folder `tree/x` is needed.
        try fm.removeItem(atPath: out)
        try fm.createDirectory(atPath: out + "/tree", withIntermediateDirectories: true)
        try Data("file".utf8).write(to: URL(fileURLWithPath: out + "/tree/x"))
        for force in [[], ["--force"]] {
            let r = try kcar(["extract", "v.kcv", "-C", "box/out", "tree"] + force, expect: 8)
            XCTAssertTrue(r.err.contains("not a folder"), r.err)
            XCTAssertEqual(regularFiles(out), ["tree/x": Array("file".utf8)])
        }
        // A folder where the file `svc/a` goes.
        try fm.createDirectory(atPath: out + "/svc/a", withIntermediateDirectories: true)
        try kcar(["extract", "v.kcv", "-C", "box/out", "svc/a"], expect: 7)
        try kcar(["extract", "v.kcv", "-C", "box/out", "svc/a", "--force"], expect: 8)
        var isDir: ObjCBool = false
        XCTAssertTrue(fm.fileExists(atPath: out + "/svc/a", isDirectory: &isDir) && isDir.boolValue)
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: out + "/svc"), ["a"], "no temporary file left")
        assertNothingOutside()
    }

    /// `-C DIR` is the user's own path: it is followed if it is a symlink (like `tar -C`); links are refused
    /// only below it.
    func testTheOutputFolderItselfMayBeALink() throws {
        try vault([("svc", "a", [1])])
        try FileManager.default.createSymbolicLink(atPath: dir + "/box/out", withDestinationPath: dir + "/outside")
        try kcar(["extract", "v.kcv", "-C", "box/out"], expect: 0)
        XCTAssertEqual(regularFiles(dir + "/outside")["svc/a"], [1])
    }
}
