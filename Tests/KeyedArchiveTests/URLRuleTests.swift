import Foundation
import TestSupport
import XCTest

@testable import KeyedArchive

/// SPEC.md Part 2 §A5.6: the URL rule, its examples, and Foundation giving back every URL the rule accepts.
final class URLRuleTests: XCTestCase {
    static let base = "https://x.example/"

    /// The examples table of §A5.6: string, then valid as `0x0B`, as `0x0C`'s relative string, as its base.
    static func specExamples() throws -> [(string: String, verdicts: [Bool])] {
        let spec = try String(contentsOf: ArchiveFixtures.root.appendingPathComponent("SPEC.md"), encoding: .utf8)
        let table = spec.components(separatedBy: "<!-- url-examples -->\n")[1].components(separatedBy: "\n\n")[0]
        return table.split(separator: "\n").dropFirst(2).map { row in
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            return (String(cells[0].dropFirst().dropLast()), cells[1...3].map { $0 == "valid" })
        }
    }

    static func slot(_ s: String) -> [UInt8] { [0x00, UInt8(s.utf8.count)] + Array(s.utf8) }

    /// The archive bytes of a URL item: `0x0B` with `s`, `0x0C` with `s` relative to `base`, or with `a` relative
    /// to `s`.
    static func archives(_ s: String) -> [[UInt8]] {
        let h: [UInt8] = [0x89, 0x4B, 0x43, 0x41, 0x01, 0x00]
        return [h + [0x0B] + slot(s), h + [0x0C] + slot(s) + slot(base), h + [0x0C] + slot("a") + slot(s)]
    }

    func testSpecExamplesThroughTheReader() throws {
        let examples = try Self.specExamples()
        XCTAssertGreaterThanOrEqual(examples.count, 40)
        for (s, verdicts) in examples {
            for (bytes, valid) in zip(Self.archives(s), verdicts) {
                do {
                    let value = try ArchiveSerialization.value(from: bytes)
                    XCTAssert(valid, "\(s) read as \(value), the spec says invalid")
                    // Written back, the same bytes (and the same tag).
                    XCTAssertEqual(try ArchiveSerialization.bytes(from: value), bytes, s)
                } catch let error as ArchiveError {
                    XCTAssertFalse(valid, "\(s): \(error), the spec says valid")
                    XCTAssertEqual(error.code, .invalidValue, s)
                }
            }
        }
    }

    /// A URL with a base whose relative string has a scheme is no URL with a base: Foundation drops the base.
    func testAbsoluteStringDropsTheBaseSoTheArchiveRefusesIt() throws {
        let url = try XCTUnwrap(URL(string: "http://z/q", relativeTo: URL(string: Self.base)))
        XCTAssertNil(url.baseURL)
        XCTAssertEqual(try ArchiveSerialization.value(from: ArchiveSerialization.bytes(from: .url(url))), .url(url))
        assertArchiveError(.invalidValue, "0x0C with a scheme") {
            try ArchiveSerialization.value(from: Self.archives("http://z/q")[1])
        }
    }

    func testWriterRefusesWhatTheRuleRefuses() throws {
        let relativeBase = try XCTUnwrap(URL(string: "a", relativeTo: URL(string: "rel/")))
        let zone = try XCTUnwrap(URL(string: "http://[fe80::1%25en0]/"))
        for url in [relativeBase, zone] {
            assertArchiveError(.invalidValue, "\(url)") { try ArchiveSerialization.bytes(from: .url(url)) }
            assertArchiveError(.invalidValue, "export \(url)") { try NSKeyedArchive.exportValue(.url(url)) }
        }
    }

    /// Random strings from URL pieces: the two forms of the rule agree with each other as the grammar says,
    /// and Foundation builds every URL the rule accepts and gives its strings back.
    func testFoundationGivesBackEveryURLTheRuleAccepts() throws {
        let pieces = [
            "a", "Z", "0", "9", "-", ".", "_", "~", "!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=",
            ":", "/", "?", "#", "[", "]", "@", "%41", "%", "%g1", " ", "é", "::", "//", "http:", "x+1.-:",
            "[::1]", "[v1.x]", "[::ffff:1.2.3.4]", "[1:2:3:4:5:6:7:8]", "1.2.3.4", "u:p@", ":80", ":",
            "mailto:", "file:///", "..", "[fe80::1%25en0]", "\\", "|", "^"
        ]
        let schemes = ["", "", "http:", "a+b.c-d:", "HTTPS:", "1a:", ":", "file:"]
        let hosts = ["", "h", "h.example", "[::1]", "[1::2::3]", "[v7.a:b]", "1.2.3.4", "%41b", "a@b", "[::1", "h]"]
        var rng = SplitMix64(state: 0x7572_6C73)
        var counts = [0, 0, 0]
        for n in 0..<30_000 {
            var s = ""
            if n % 2 == 0 {
                for _ in 0..<(1 + rng.below(8)) { s += pieces[rng.below(pieces.count)] }
            } else {
                s = schemes[rng.below(schemes.count)]
                if rng.below(3) > 0 {
                    s +=
                        "//" + (rng.below(4) == 0 ? "user:pw@" : "") + hosts[rng.below(hosts.count)]
                        + [" ", "", ":", ":443", ":x"][rng.below(5)]
                }
                for _ in 0..<rng.below(4) { s += ["/", "/p", "/a:b", "/%7E", "/[x]", "p"][rng.below(6)] }
                if rng.below(3) == 0 { s += "?" + ["", "q=1", "a/b?c", "[", "é"][rng.below(5)] }
                if rng.below(3) == 0 { s += "#" + ["", "f", "a#b", "/?:@"][rng.below(4)] }
            }
            let reference = ArchiveURL.problem(s, .reference) == nil
            let relative = ArchiveURL.problem(s, .relative) == nil
            let absolute = ArchiveURL.problem(s, .absolute) == nil
            XCTAssertEqual(reference, relative || absolute, s)
            XCTAssertFalse(relative && absolute, s)
            if reference {
                counts[0] += 1
                XCTAssertNotNil(ArchiveURL.make(s, base: nil), "Foundation does not give back \(s)")
            }
            if relative {
                counts[1] += 1
                XCTAssertNotNil(ArchiveURL.make(s, base: Self.base), "Foundation does not give back \(s) on a base")
            }
            if absolute {
                counts[2] += 1
                XCTAssertNotNil(ArchiveURL.make("a", base: s), "Foundation does not give back the base \(s)")
            }
        }
        // Enough of each form to mean something.
        XCTAssert(counts.allSatisfy { $0 > 2_000 }, "\(counts)")
    }
}
