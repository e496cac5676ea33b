import Foundation
import TestSupport
import XCTest

/// `kcar` on a full disk and on a read-only file system (a small tmpfs; needs root, skips otherwise): every
/// command that writes exits 8 with the system's reason, the vault is byte for byte as it was and still
/// lists and verifies, and no vault, temporary or partial file is left behind.
final class DiskFaultCLITests: XCTestCase {
    var dir: String!
    var mnt: String { dir + "/mnt" }
    var keyFile: String { CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-diskfault-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// kcar as this class runs it (`KcarRunner`).
    var kcar: KcarRunner { KcarRunner(dir: dir) }

    func write(_ path: String, _ bytes: [UInt8]) throws {
        let url = URL(fileURLWithPath: dir + "/" + path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
    }

    func bytes(_ path: String) -> [UInt8] {
        Array((try? Data(contentsOf: URL(fileURLWithPath: dir + "/" + path))) ?? Data())
    }

    /// The vault at `path` holds exactly `before`'s bytes, lists its items and verifies.
    func assertIntact(
        _ path: String, _ before: [UInt8], _ what: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        XCTAssertTrue(bytes(path) == before, "\(what): the vault changed", file: file, line: line)
        try kcar(["verify", path, "--key-file", keyFile], expect: 0, file: file, line: line)
        let small = try kcar(
            ["extract", path, "--stdout", "svc/small", "--key-file", keyFile], expect: 0, file: file, line: line)
        XCTAssertEqual(small.data, Data("hunter2".utf8), what, file: file, line: line)
    }

    func makeSmallTree() throws {
        try write("small/svc/small", Array("hunter2".utf8))
        try write("small/svc/other", Recipes.noise(20_000, seed: 1))
    }

    func testPackAndExtractOnAFullDisk() throws {
        let m = try scratchMount(at: mnt, size: "512k")
        try makeSmallTree()
        try write("large/svc/small", Array("hunter2".utf8))
        try write("large/svc/huge", Recipes.noise(1_000_000, seed: 2))

        // A new vault too large: nothing is left, neither the vault nor its temporary file.
        let r = try kcar(["pack", "mnt/v.kcv", "large", "--key-file", keyFile], expect: 8)
        XCTAssertTrue(r.err.contains("No space left on device"), r.err)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: m.path), [])

        // Replacing a vault (--force) with one too large: the old one stays.
        try kcar(["pack", "mnt/v.kcv", "small", "--key-file", keyFile], expect: 0)
        let before = bytes("mnt/v.kcv")
        try kcar(["pack", "mnt/v.kcv", "large", "--key-file", keyFile, "--force"], expect: 8)
        try assertIntact("mnt/v.kcv", before, "pack --force")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: m.path), ["v.kcv"])

        // Packing to standard output goes through a temporary file in TMPDIR.
        try kcar(["pack", "-", "large", "--key-file", keyFile], env: ["TMPDIR": m.path], expect: 8)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: m.path), ["v.kcv"])

        // Extracting onto the full disk: exit 8; files written before the failure are whole, nothing else is left.
        try kcar(["pack", "big.kcv", "large", "--key-file", keyFile], expect: 0)
        let x = try kcar(["extract", "big.kcv", "-C", "mnt/out", "--key-file", keyFile], expect: 8)
        XCTAssertTrue(x.err.contains("No space left on device"), x.err)
        let left = regularFiles(m.path + "/out")
        XCTAssertTrue(Set(left.keys).isSubset(of: ["svc/small"]), "\(left.keys.sorted())")
        if let small = left["svc/small"] { XCTAssertEqual(small, Array("hunter2".utf8)) }
    }

    func testCompactPasswdRekeyRecoverOnAFullDisk() throws {
        let m = try scratchMount(at: mnt, size: "512k")
        try makeSmallTree()
        try write("k2", Recipes.otherKeyFile)
        try write("p1", Array("first pass".utf8))
        try write("p2", Array("second pass".utf8))
        let kdf = ["--kdf-memory", "8", "--kdf-passes", "1"]
        try kcar(["pack", "mnt/v.kcv", "small", "--key-file", keyFile, "--passphrase-file", "p1"] + kdf, expect: 0)
        let before = bytes("mnt/v.kcv")
        m.fill("filler")
        for (what, args) in [
            ("compact", ["compact", "mnt/v.kcv", "--key-file", keyFile]),
            ("passwd --add-key-file", ["passwd", "mnt/v.kcv", "--key-file", keyFile, "--add-key-file", "k2"]),
            (
                "passwd (new passphrase)",
                ["passwd", "mnt/v.kcv", "--passphrase-file", "p1", "--new-passphrase-file", "p2"] + kdf
            ),
            ("passwd --remove-slot", ["passwd", "mnt/v.kcv", "--key-file", keyFile, "--remove-slot", "1"]),
            // Both secrets, so that rekey keeps both slots (issue 13, item 8) and reaches the full disk.
            ("rekey", ["rekey", "mnt/v.kcv", "--key-file", keyFile, "--passphrase-file", "p1"])
        ] {
            let r = try kcar(args, expect: 8)
            XCTAssertTrue(r.err.contains("No space left on device"), "\(what): \(r.err)")
            try assertIntact("mnt/v.kcv", before, what)
            XCTAssertEqual(
                try FileManager.default.contentsOfDirectory(atPath: m.path).sorted(), ["filler", "v.kcv"], what)
        }
        try kcar(["list", "mnt/v.kcv", "--passphrase-file", "p1"], expect: 0)
        try kcar(["recover", "mnt/v.kcv", "--key-file", keyFile], expect: 0)  // nothing to cut: writes nothing

        try FileManager.default.removeItem(atPath: m.path + "/filler")
        try kcar(["compact", "mnt/v.kcv", "--key-file", keyFile], expect: 0)
        try kcar(["rekey", "mnt/v.kcv", "--key-file", keyFile, "--passphrase-file", "p1"], expect: 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: m.path), ["v.kcv"])
        try kcar(["list", "mnt/v.kcv", "--passphrase-file", "p1"], expect: 0)
    }

    func testReadOnlyFileSystem() throws {
        let m = try scratchMount(at: mnt, size: "1m")
        try makeSmallTree()
        try write("k2", Recipes.otherKeyFile)
        try kcar(["pack", "mnt/v.kcv", "small", "--key-file", keyFile], expect: 0)
        try kcar(["pack", "outside.kcv", "small", "--key-file", keyFile], expect: 0)
        try FileManager.default.createDirectory(atPath: m.path + "/existing", withIntermediateDirectories: false)
        let before = bytes("mnt/v.kcv")
        XCTAssertTrue(m.remountReadOnly(), "remount read-only: \(String(cString: strerror(errno)))")

        try kcar(["list", "mnt/v.kcv", "--key-file", keyFile], expect: 0)
        try kcar(["info", "mnt/v.kcv", "--key-file", keyFile], expect: 0)
        for (what, args) in [
            ("compact", ["compact", "mnt/v.kcv", "--key-file", keyFile]),
            ("passwd", ["passwd", "mnt/v.kcv", "--key-file", keyFile, "--add-key-file", "k2"]),
            ("rekey", ["rekey", "mnt/v.kcv", "--key-file", keyFile]),
            ("recover", ["recover", "mnt/v.kcv", "--key-file", keyFile]),
            ("pack", ["pack", "mnt/new.kcv", "small", "--key-file", keyFile]),
            ("pack --force", ["pack", "mnt/v.kcv", "small", "--key-file", keyFile, "--force"]),
            ("extract to a new folder", ["extract", "outside.kcv", "-C", "mnt/out", "--key-file", keyFile]),
            ("extract to an existing folder", ["extract", "outside.kcv", "-C", "mnt/existing", "--key-file", keyFile]),
            ("keygen", ["keygen", "mnt/new.key"])
        ] {
            let r = try kcar(args, expect: 8)
            XCTAssertTrue(r.err.contains("Read-only file system"), "\(what): \(r.err)")
            try assertIntact("mnt/v.kcv", before, what)
        }
        XCTAssertTrue(m.remountReadWrite())
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: m.path).sorted(), ["existing", "v.kcv"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: m.path + "/existing"), [])
    }
}
