import Foundation
import KeyedArchive
import TestSupport
import XCTest

/// Hostile property lists and archives fail fast with their specific error; seeded mutations never crash.
final class NSKeyedHostileTests: XCTestCase {
    /// The recipes rebuild every file of `Fixtures/nskeyed/` byte for byte, and nothing else is there.
    func testFixturesAreReproduced() throws {
        let dir = NSKeyedFixtures.directory
        if ProcessInfo.processInfo.environment["KCAR_WRITE_FIXTURES"] == "1" { try NSKeyedFixtures.write(to: dir) }
        for (path, bytes) in NSKeyedFixtures.files() {
            XCTAssertEqual(
                try Data(contentsOf: dir.appendingPathComponent(path)), Data(bytes), "\(path) differs from its recipe")
        }
        let present = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        XCTAssertEqual(Set(present), Set(NSKeyedFixtures.files().map(\.path) + ["README.md"]))
    }

    /// One loop over the manifest: every file fails with exactly the error written beside it.
    func testEveryFixtureFailsWithItsManifestError() throws {
        let dir = NSKeyedFixtures.directory
        let manifest = try String(contentsOf: dir.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8)
        var count = 0
        for line in manifest.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "\t").map(String.init)
            XCTAssertEqual(parts.count, 2, "manifest line \(line)")
            let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent(parts[0])))
            assertArchiveError(ArchiveError.Code(rawValue: parts[1]), parts[0]) {
                try NSKeyedArchive.importValue(from: bytes)
            }
            count += 1
        }
        XCTAssertEqual(count, NSKeyedFixtures.hostile.count)
        XCTAssertGreaterThanOrEqual(count, 40)
    }

    func testTwentyThousandNestedArraysFailAtTheDepthLimit() {
        assertArchiveError(.depthLimit, "plist arrays") {
            try NSKeyedArchive.importValue(from: NSKeyedFixtures.nestedPlistArrays(20_000))
        }
        assertArchiveError(.depthLimit, "NSArrays") {
            try NSKeyedArchive.importValue(from: NSKeyedFixtures.nestedArchiveArrays(20_000))
        }
    }

    func testDepthLimitIsExact() throws {
        let limits = ArchiveLimits(maxDepth: 100)
        var expected: ArchiveValue = []
        for _ in 0..<99 { expected = [expected] }
        XCTAssertEqual(
            try NSKeyedArchive.importValue(from: NSKeyedFixtures.nestedArchiveArrays(100), limits: limits),
            expected)
        assertArchiveError(.depthLimit) {
            try NSKeyedArchive.importValue(from: NSKeyedFixtures.nestedArchiveArrays(101), limits: limits)
        }
        XCTAssertNoThrow(try PropertyList(binary: NSKeyedFixtures.nestedPlistArrays(100), limits: limits))
        assertArchiveError(.depthLimit) {
            try PropertyList(binary: NSKeyedFixtures.nestedPlistArrays(101), limits: limits)
        }
        // The exporter refuses what the importer would refuse.
        XCTAssertEqual(
            try NSKeyedArchive.importValue(
                from: try NSKeyedArchive.exportValue(expected, limits: limits),
                limits: limits), expected)
        assertArchiveError(.depthLimit) { try NSKeyedArchive.exportValue([expected], limits: limits) }
    }

    func testSharingWithinTheBudgetImportsAsOneBox() throws {
        // 10 levels of an NSArray holding the previous twice: 2^11 - 1 values expanded, 11 objects stored.
        let bytes = NSKeyedFixtures.archive { b in
            var last = b.add("leaf")
            for _ in 0..<10 { last = b.instance("NSArray", ["NS.objects": .array([last, last])]) }
            return last
        }
        let value = try NSKeyedArchive.importValue(from: bytes)
        guard case .shared(let a)? = value[0], case .shared(let b)? = value[1] else { return XCTFail("\(value)") }
        XCTAssert(a === b)
        assertArchiveError(.expansionLimit) {
            try NSKeyedArchive.importValue(from: bytes, limits: ArchiveLimits(maxExpandedValues: 2_000))
        }
    }

    func testEveryPrefixOfAnExportFails() throws {
        let bytes = try NSKeyedArchive.exportValue(NSKeyedInteropTests.sample)
        for n in 0..<bytes.count {
            XCTAssertThrowsError(try NSKeyedArchive.importValue(from: Array(bytes[..<n]))) {
                XCTAssert($0 is ArchiveError, "prefix \(n): \($0)")
            }
        }
    }

    /// Seeded mutations of exports and of Apple's archives (binary and XML): import either succeeds or throws an
    /// ``ArchiveError``, never crashes or hangs; the mutations reach many different checks.
    func testMutatedArchivesNeverCrash() throws {
        var rng = SplitMix64(state: 0x6E73_6B61)
        var sources = try AppleArchiveTests.archives().map(\.bytes)
        sources.append(try NSKeyedArchive.exportValue(NSKeyedInteropTests.sample))
        sources.append(try NSKeyedArchive.exportValue(.anyKeyDictionary([1: [1, 2], "x": .set([1])])))
        var accepted = 0
        var rejected: [ArchiveError.Code: Int] = [:]
        let start = Date()
        for _ in 0..<5_000 {
            var bytes = sources[Int.random(in: 0..<sources.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let i = Int.random(in: 0..<bytes.count, using: &rng)
                // Mostly in place: an insertion or removal moves a bplist's offset table off its trailer.
                switch Int.random(in: 0..<10, using: &rng) {
                case 0...3: bytes[i] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
                case 4, 5: bytes[i] = UInt8.random(in: 0...255, using: &rng)
                case 6: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: i)
                case 7: if bytes.count > 1 { bytes.remove(at: i) }
                default:
                    // A small number in the trailer or a reference: the places where plists go wrong.
                    let j = Int.random(in: max(0, bytes.count - 32)..<bytes.count, using: &rng)
                    bytes[j] = UInt8.random(in: 0...4, using: &rng)
                }
            }
            do {
                _ = try NSKeyedArchive.importValue(from: bytes)
                accepted += 1
            } catch let error as ArchiveError {
                rejected[error.code, default: 0] += 1
            }
        }
        XCTAssertGreaterThan(accepted, 0)
        XCTAssertGreaterThanOrEqual(rejected.count, 15, "mutations reach many different checks: \(rejected)")
        XCTAssertLessThan(Date().timeIntervalSince(start), 20)
    }
}
