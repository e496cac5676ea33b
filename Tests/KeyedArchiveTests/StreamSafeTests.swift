import Crafting
import Foundation
import XCTest

@testable import KeyedArchive

/// Issue 9: `NONSTARTER_RUN_MAX` (SPEC.md Part 2 §A3). Runs of non-starters are counted in the canonical
/// decomposition, as canonical equivalence sees them, and every reader refuses a longer run before any
/// comparison (a 400 KB key of combining marks took 45 s to compare).
final class StreamSafeTests: XCTestCase {
    /// Every code point's contribution, against Unicode 17.0.0's table (the one the independent reader uses).
    func testEveryCodePointAgainstUnicode17() throws {
        let url = ArchiveFixtures.root.appendingPathComponent("scripts/interop/unicode-17.0.0-nfd.txt")
        var ccc: [UInt32: Int] = [:]
        var nfd: [UInt32: [UInt32]] = [:]
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
            let f = line.split(separator: " ")
            let cp = UInt32(f[0], radix: 16)!
            ccc[cp] = Int(f[1])!
            if f.count > 2 { nfd[cp] = f.dropFirst(2).map { UInt32($0, radix: 16)! } }
        }
        var mismatches: [String] = []
        for cp: UInt32 in 0...0x10FFFF {
            guard let scalar = Unicode.Scalar(cp) else { continue }
            let classes = (nfd[cp] ?? [cp]).map { ccc[$0] ?? 0 }  // Hangul syllables: Jamo, all starters
            let expected: (Int, Int)
            if classes.allSatisfy({ $0 != 0 }) {
                expected = (classes.count, 0)
            } else {
                expected = (-1, classes.reversed().prefix { $0 != 0 }.count)
            }
            let got = StreamSafe.nonStarters(scalar)
            if got != expected { mismatches.append("U+\(String(cp, radix: 16)): \(got), expected \(expected)") }
        }
        XCTAssert(mismatches.isEmpty, "\(mismatches.count) code points differ: \(mismatches.prefix(10))")
    }

    func testRunsCountTheDecomposition() {
        let acute = String(repeating: "\u{301}", count: 30)
        XCTAssertEqual(StreamSafe.longestNonStarterRun("a" + acute), 30)
        XCTAssertTrue(StreamSafe.isStreamSafe("a" + acute))
        XCTAssertFalse(StreamSafe.isStreamSafe("a" + acute + "\u{301}"))
        // À is A U+0300: its mark starts the run (before issue 9 this counted 30).
        XCTAssertEqual(StreamSafe.longestNonStarterRun("\u{C0}" + acute), 31)
        // U+1E69 is s U+0323 U+0307; U+0344 is U+0308 U+0301 (class 230, counted 1 before issue 9).
        XCTAssertEqual(StreamSafe.longestNonStarterRun("\u{1E69}" + acute), 32)
        XCTAssertEqual(StreamSafe.longestNonStarterRun(String(repeating: "\u{344}", count: 16)), 32)
        XCTAssertEqual(StreamSafe.longestNonStarterRun("a\u{301}b\u{301}\u{301}"), 2)
        XCTAssertEqual(StreamSafe.longestNonStarterRun("\u{F73}\u{F73}"), 4)
        XCTAssertEqual(StreamSafe.longestNonStarterRun("\u{AC00}\u{301}"), 1)  // a Hangul syllable is a starter
        XCTAssertEqual(StreamSafe.longestNonStarterRun(""), 0)
    }

    func testEveryReaderRefusesALongRunBeforeComparing() throws {
        func code(_ body: () throws -> Void) -> ArchiveError.Code? {
            do {
                try body()
                return nil
            } catch {
                return (error as? ArchiveError)?.code
            }
        }
        XCTAssertNil(code { _ = try ArchiveSerialization.value(from: ArchiveCrafting.combiningKey(marks: 30)) })
        XCTAssertEqual(
            code { _ = try ArchiveSerialization.value(from: ArchiveCrafting.combiningKey(marks: 31)) },
            .nonStarterRunLimit)
        XCTAssertEqual(
            code { _ = try ArchiveSerialization.value(from: ArchiveCrafting.combiningKey(base: "\u{C0}", marks: 30)) },
            .nonStarterRunLimit)
        // 400 KB of marks: refused at once (it took 45 s to compare before issue 9).
        XCTAssertEqual(
            code { _ = try ArchiveSerialization.value(from: ArchiveCrafting.combiningKey(marks: 200_000)) },
            .nonStarterRunLimit)
        // An application may raise the limit for archives it trusts.
        XCTAssertNil(
            code {
                _ = try ArchiveSerialization.value(
                    from: ArchiveCrafting.combiningKey(marks: 31),
                    limits: ArchiveLimits(maxNonStarterRun: 31))
            })
        // The writer refuses what the reader would.
        let long = "a" + String(repeating: "\u{301}", count: 31)
        XCTAssertEqual(code { _ = try ArchiveSerialization.bytes(from: .string(long)) }, .nonStarterRunLimit)
        // Property lists: XML text, binary UTF-16 strings.
        let xml = "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>\(long)</key><true/></dict></plist>"
        XCTAssertEqual(code { _ = try PropertyList(xml: Array(xml.utf8)) }, .nonStarterRunLimit)
        var utf16: [UInt8] = []
        for u in long.utf16 { utf16 += [UInt8(u >> 8), UInt8(u & 0xFF)] }
        let plist = ArchiveCrafting.binaryPlist(
            objects: [ArchiveCrafting.marker(0x6, count: long.utf16.count) + utf16],
            table: [0], top: 0, refSize: 1)
        XCTAssertEqual(code { _ = try PropertyList(binary: plist) }, .nonStarterRunLimit)
        XCTAssertEqual(code { _ = try PropertyList(binary: plist, limits: ArchiveLimits(maxNonStarterRun: 31)) }, nil)
    }
}
