import Foundation
import XCTest

/// What the `kcar` command does with a version 2 file (SPEC.md Part 4, draft) before the format is released:
/// `info` reads its header, `verify` checks it whole with a key (or its structure without one), and the
/// commands that would change it refuse it as an unsupported version.
final class Version2CLITests: XCTestCase {
    let v2 = CLITests.repo.appendingPathComponent("Fixtures/vault-v2").path
    let key = CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path

    func testVerifyChecksGoldenAndMalformedVersion2Files() throws {
        for name in ["one-item", "many-items", "history", "compacted", "keychain"] {
            let r = try runKcar(["verify", "--key-file", key, "\(v2)/\(name).kcv"], in: NSTemporaryDirectory())
            XCTAssertEqual(r.code, 0, "\(name): \(r.output)")
            XCTAssertTrue(r.output.contains("intact"), r.output)
            XCTAssertEqual(try runKcar(["verify", "--no-key", "\(v2)/\(name).kcv"], in: NSTemporaryDirectory()).code, 0, name)
        }
        // Every malformed file fails, with the error its manifest gives, named once.
        let manifest = try String(contentsOfFile: "\(v2)/malformed/MANIFEST.tsv", encoding: .utf8)
        var checked = 0
        for line in manifest.split(separator: "\n") where !line.hasPrefix("#") {
            let f = line.split(separator: "\t").map(String.init)
            let r = try runKcar(["verify", "--key-file", key, "\(v2)/malformed/\(f[0]).kcv"], in: NSTemporaryDirectory())
            XCTAssertNotEqual(r.code, 0, f[0])
            XCTAssertTrue(r.output.contains(f[2]), "\(f[0]): expected \(f[2]), got \(r.output)")
            XCTAssertEqual(r.output.components(separatedBy: f[2]).count, 2, "\(f[0]): named once: \(r.output)")
            checked += 1
        }
        XCTAssertGreaterThan(checked, 20)
    }

    func testInfoReadsTheHeaderAndWritersRefuse() throws {
        let info = try runKcar(["info", "\(v2)/one-item.kcv"], in: NSTemporaryDirectory())
        XCTAssertEqual(info.code, 0, info.output)
        XCTAssertTrue(info.output.contains("version:    2"), info.output)
        let list = try runKcar(["list", "--key-file", key, "\(v2)/one-item.kcv"], in: NSTemporaryDirectory())
        XCTAssertEqual(list.code, 4, list.output)
        XCTAssertTrue(list.output.contains("unsupported version"), list.output)
    }
}
