import Foundation
import XCTest

/// Issue 22, point 8, on the built binary: a damaged last trailer is damage (exit 4), not an interrupted write
/// that `list` reads past.
final class TrustCLITests: XCTestCase {
    var dir = ""
    var key = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-trust-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: true)
        key = dir + "/team.key"
        XCTAssertEqual(try run(["keygen", key]).code, 0)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// The test's own HOME and folders, and no key unless one is given (`KCAR_KEY_FILE` empty is none).
    var environment: [String: String] {
        ["HOME": dir + "/home", "XDG_DATA_HOME": dir + "/data", "XDG_STATE_HOME": dir + "/state", "KCAR_KEYCHAIN": dir + "/kc", "KCAR_KEY_FILE": ""]
    }

    @discardableResult
    func run(_ args: [String], env: [String: String] = [:]) throws -> KcarRun {
        let r = try runProcess(CLITests.binary, args, env: environment.merging(env) { $1 }, cwd: dir)
        return KcarRun(code: r.code, out: r.data, err: r.err)
    }

    @discardableResult
    func keyed(_ args: [String], expect: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> KcarRun {
        let r = try run(args + ["--key-file", key])
        XCTAssertEqual(r.code, expect, "kcar \(args.joined(separator: " ")): \(r.output)", file: file, line: line)
        return r
    }

    /// A vault of format `version` holding svc/a and svc/b, then a commit that deletes svc/b.
    func vaultWithADeletion(_ name: String, version: Int) throws -> String {
        let src = dir + "/src-" + name
        try FileManager.default.createDirectory(atPath: src + "/svc", withIntermediateDirectories: true)
        for n in ["a", "b"] { try "value \(n)".write(toFile: src + "/svc/" + n, atomically: true, encoding: .utf8) }
        let path = dir + "/" + name
        try keyed(["pack", path, src, "-q", "--format", String(version)])
        try keyed(["delete", path, "svc/b"])
        return path
    }

    func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
    func put(_ path: String, _ b: [UInt8]) throws { try Data(b).write(to: URL(fileURLWithPath: path)) }
    func text(_ r: KcarRun) -> String { String(decoding: r.out, as: UTF8.self) }
    /// The NAME column of `kcar list`.
    func names(_ r: KcarRun) -> [String] { text(r).split(separator: "\n").dropFirst().compactMap { $0.split(separator: " ").last.map(String.init) } }

    // MARK: Point 8: a damaged last trailer

    /// Every byte of the last trailer changed, in both format versions: `list` and `verify` exit 4 (damaged
    /// index), never 0 with the item the last commit deleted back; `recover` alone refuses it, and
    /// `recover --drop-damaged` goes back to the commit before, saying so.
    func testADamagedLastTrailerExits4AndIsDroppedOnlyOnRequest() throws {
        for (version, size) in [(1, 96), (2, 128)] {
            let path = try vaultWithADeletion("v\(version).kcv", version: version)
            let good = try bytes(path)
            XCTAssertEqual(names(try keyed(["list", path])), ["svc/a"])
            for i in 0..<size {
                var b = good
                b[b.count - size + i] ^= 0x04
                try put(path, b)
                let list = try keyed(["list", path], expect: 4)
                XCTAssertTrue(list.err.contains("damaged index") && !text(list).contains("svc/b"), "byte \(i): \(list.output)")
                if i % 8 == 0 || i >= size - 2 {
                    XCTAssertTrue(try keyed(["verify", path], expect: 4).output.contains("damaged index"), "byte \(i)")
                }
            }
            let damaged = try bytes(path)
            XCTAssertTrue(try keyed(["recover", path], expect: 4).err.contains("--drop-damaged"))
            XCTAssertEqual(try bytes(path), damaged, "plain recover changes nothing")
            let drop = try keyed(["recover", path, "--drop-damaged"])
            XCTAssertTrue(drop.err.contains("dropped the last") && drop.err.contains("generation 1 is the last"), drop.err)
            XCTAssertEqual(names(try keyed(["list", path])), ["svc/a", "svc/b"], "the commit before the delete, on request")
            XCTAssertEqual(try keyed(["verify", path]).code, 0)
            XCTAssertTrue(try keyed(["recover", path, "--drop-damaged"]).err.contains("nothing to recover"))
        }
    }

    /// What a crash leaves (the file cut inside the last trailer) still reads the commit before, with a warning,
    /// and `verify` says incomplete commit (exit 5), as before.
    func testALastTrailerCutShortStillRecovers() throws {
        for (version, size) in [(1, 96), (2, 128)] {
            let path = try vaultWithADeletion("v\(version).kcv", version: version)
            let good = try bytes(path)
            for cut in [1, size / 2, size - 1] {
                try put(path, Array(good.dropLast(cut)))
                let list = try keyed(["list", path])
                XCTAssertEqual(names(list), ["svc/a", "svc/b"], "cut by \(cut)")
                XCTAssertTrue(list.err.contains("incomplete commit"), list.err)
                XCTAssertEqual(try keyed(["verify", path], expect: 5).code, 5)
            }
            XCTAssertEqual(try keyed(["recover", path]).code, 0)
            XCTAssertEqual(try keyed(["verify", path]).code, 0)
        }
    }
}
