import Foundation
import XCTest

/// Issue 13, item 9 (in part): `-v` names each item as it is packed or extracted, as tar does: on standard
/// output, or on standard error when the vault goes to standard output.
extension KeychainCLITests {
    func testVerboseNamesEachItemWhereTarWould() throws {
        try kcar(["keygen", "k"])
        for path in ["src/web/b", "src/api/a", "src/api/x/c"] {
            try FileManager.default.createDirectory(
                atPath: dir + "/" + (path as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true)
            try Data(path.utf8).write(to: URL(fileURLWithPath: dir + "/" + path))
        }
        let names = "api/a\napi/x/c\nweb/b\n"
        let pack = try kcar(["pack", "v.kcv", "src", "-v", "--key-file", "k"])
        XCTAssertEqual(pack.out, names)
        XCTAssertTrue(pack.err.contains("packed 3 items"), pack.err)
        // The vault on standard output: the names go to standard error.
        let piped = try kcar(["pack", "-", "src", "-qv", "--key-file", "k"], expect: 2)  // flags are not combined
        XCTAssertTrue(piped.err.contains("-q takes no value"), piped.err)
        let toStdout = try runKcar(["pack", "-", "src", "-v", "-q", "--key-file", "k"], in: dir)
        XCTAssertEqual(toStdout.code, 0, toStdout.err)
        XCTAssertEqual(toStdout.err, names)
        XCTAssertEqual(Array(toStdout.data.prefix(4)), [0x89, 0x4B, 0x43, 0x56])
        // extract -v: each file as it is written, and none without -v.
        XCTAssertEqual(try kcar(["extract", "v.kcv", "-v", "-Cout", "--key-file", "k"]).out, names)
        XCTAssertEqual(try kcar(["extract", "v.kcv", "-C", "quiet", "--key-file", "k"]).out, "")
        XCTAssertTrue(try kcar(["help", "pack"]).out.contains("-v, --verbose"))
    }
}
