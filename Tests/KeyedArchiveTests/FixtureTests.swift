import Foundation
import KeyedArchive
import XCTest

/// The golden and malformed archives of `Fixtures/archive/`, and the test vectors of SPEC.md Part 2.
final class FixtureTests: XCTestCase {
    /// The recipes rebuild every file byte for byte (with `KCAR_WRITE_FIXTURES=1`, they rewrite them first).
    func testFixturesAreReproduced() throws {
        if ProcessInfo.processInfo.environment["KCAR_WRITE_FIXTURES"] == "1" {
            try ArchiveFixtures.write(to: ArchiveFixtures.directory)
        }
        let temp = FileManager.default.temporaryDirectory.appendingPathComponent("kcar-archive-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: temp) }
        try ArchiveFixtures.write(to: temp)
        for (path, _) in try ArchiveFixtures.files() {
            let made = try Data(contentsOf: temp.appendingPathComponent(path))
            let stored = try Data(contentsOf: ArchiveFixtures.directory.appendingPathComponent(path))
            XCTAssertEqual(made, stored, "\(path) differs from its recipe")
        }
        // No stray files: everything in the folder comes from a recipe (README.md aside).
        let expected = Set(try ArchiveFixtures.files().map(\.path) + ["README.md"])
        let present = try FileManager.default.subpathsOfDirectory(
            atPath: ArchiveFixtures.directory.resolvingSymlinksInPath().path
        )
        .filter { !$0.hasSuffix("malformed") }
        XCTAssertEqual(Set(present), expected)
    }

    func testGoldenFilesDecodeToTheirValues() throws {
        for g in ArchiveFixtures.golden {
            let bytes = try Data(contentsOf: ArchiveFixtures.directory.appendingPathComponent(g.name))
            let value = try ArchiveSerialization.value(from: bytes)
            XCTAssertEqual(value, g.value, g.name)
            // Canonical: reading then writing gives the same bytes.
            XCTAssertEqual(try ArchiveSerialization.data(from: value, options: .deterministic), bytes, g.name)
        }
    }

    /// One loop over the manifest: every malformed file fails with exactly the error written beside it.
    func testMalformedFilesFailWithTheirManifestError() throws {
        let dir = ArchiveFixtures.directory.appendingPathComponent("malformed")
        let manifest = try String(contentsOf: dir.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8)
        var count = 0
        for line in manifest.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "\t").map(String.init)
            XCTAssertEqual(parts.count, 2, "manifest line \(line)")
            let bytes = try Data(contentsOf: dir.appendingPathComponent(parts[0]))
            let start = Date()
            XCTAssertThrowsError(try ArchiveSerialization.value(from: bytes), parts[0]) { error in
                XCTAssertEqual((error as? ArchiveError)?.code.rawValue, parts[1], "\(parts[0]): \(error)")
            }
            XCTAssertLessThan(Date().timeIntervalSince(start), 5, "\(parts[0]) took too long to fail")
            count += 1
        }
        XCTAssertEqual(count, ArchiveFixtures.malformed.count)
    }

    /// SPEC.md Part 2 §A9's hex vectors are the golden files, and the code writes them.
    func testSpecVectorsMatchTheCode() throws {
        let spec = try String(contentsOf: ArchiveFixtures.root.appendingPathComponent("SPEC.md"), encoding: .utf8)
        // Part 2's vectors only (Part 1 has the vault's).
        let part2 = spec.components(separatedBy: "# Part 2.").dropFirst().joined()
        let blocks = part2.components(separatedBy: "<!-- vector:").dropFirst()
        XCTAssertGreaterThanOrEqual(blocks.count, 3)
        for block in blocks {
            let name = String(block.prefix { $0 != " " })
            let hex = block.components(separatedBy: "```\n")[1].filter(\.isHexDigit)
            var bytes: [UInt8] = []
            var i = hex.startIndex
            while i < hex.endIndex {
                let j = hex.index(i, offsetBy: 2)
                bytes.append(UInt8(hex[i..<j], radix: 16) ?? 0)
                i = j
            }
            guard let g = ArchiveFixtures.golden.first(where: { $0.name == name }) else {
                XCTFail("vector \(name) has no recipe")
                continue
            }
            XCTAssertEqual(try ArchiveSerialization.bytes(from: g.value, options: .deterministic), bytes, name)
        }
    }

    /// Every proper prefix of every golden file fails cleanly, as a truncation.
    func testEveryPrefixOfEveryGoldenFileFails() throws {
        for g in ArchiveFixtures.golden {
            let bytes = try ArchiveSerialization.bytes(from: g.value, options: .deterministic)
            for n in 0..<bytes.count {
                XCTAssertThrowsError(try ArchiveSerialization.value(from: Array(bytes[..<n]))) { error in
                    let code = (error as? ArchiveError)?.code
                    XCTAssert(code == .truncated || code == .countExceedsInput, "\(g.name)[..<\(n)]: \(error)")
                }
            }
        }
    }
}
