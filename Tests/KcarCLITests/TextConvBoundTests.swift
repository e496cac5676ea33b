import Foundation
import TestSupport
import VaultFormat
import XCTest

/// `kcar git textconv --values` counts what it would print first and prints nothing past
/// `TEXTCONV_OUTPUT_MAX` (issue 21, point 5): before, a 228 KB vault printed 1.25 GB in 41 s (values that
/// compress a thousandfold, printed as JSON).
final class TextConvBoundTests: XCTestCase {
    var dir: String!
    var keyFile: String { CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-tc-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/src/svc", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// kcar as this class runs it (`KcarRunner`).
    var kcar: KcarRunner { KcarRunner(dir: dir, timeout: 120) }

    /// A value of 65 MiB of one letter (a vault of some 70 KB) prints a line of more than 64 MiB: refused,
    /// exit 4, nothing on standard output; in both format versions. Without --values the vault prints as before.
    func testValuesPastTheLimitPrintNothing() throws {
        let big = Data(repeating: UInt8(ascii: "a"), count: 65 << 20)
        try big.write(to: URL(fileURLWithPath: dir + "/src/svc/big"))
        try Data("small".utf8).write(to: URL(fileURLWithPath: dir + "/src/svc/small"))
        for format in ["1", "2"] {
            let vault = "v\(format).kcv"
            let packed = try kcar(["pack", vault, "src", "--key-file", keyFile, "--format", format, "-q"], expect: nil)
            XCTAssertEqual(packed.code, 0, packed.err)
            let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: dir + "/" + vault)[.size] as? Int)
            XCTAssertLessThan(size, 1 << 20, "the vault is small")
            let r = try kcar(["git", "textconv", vault, "--values", "--key-file", keyFile], expect: nil)
            XCTAssertEqual(r.code, 4, "format \(format): \(r.err)")
            XCTAssertEqual(r.data.count, 0, "format \(format): nothing is printed")
            XCTAssertTrue(r.err.contains("67108864"), r.err)
            let plain = try kcar(["git", "textconv", vault, "--key-file", keyFile], expect: nil)
            XCTAssertEqual(plain.code, 0, plain.err)
            XCTAssertEqual(plain.out.split(separator: "\n").count, 3, plain.out)
        }
    }

    /// Below the limit, values print as before, in the vault's order.
    func testValuesBelowTheLimitPrint() throws {
        for (name, value) in [("a", "first"), ("b", "second")] {
            try Data(value.utf8).write(to: URL(fileURLWithPath: dir + "/src/svc/" + name))
        }
        let packed = try kcar(["pack", "v.kcv", "src", "--key-file", keyFile, "-q"], expect: nil)
        XCTAssertEqual(packed.code, 0, packed.err)
        let r = try kcar(["git", "textconv", "v.kcv", "--values", "--key-file", keyFile], expect: nil)
        XCTAssertEqual(r.code, 0, r.err)
        let lines = r.out.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, r.out)
        XCTAssertTrue(lines[1].contains("svc/a") && lines[1].hasSuffix("value=\"first\""), r.out)
        XCTAssertTrue(lines[2].contains("svc/b") && lines[2].hasSuffix("value=\"second\""), r.out)
    }
}
