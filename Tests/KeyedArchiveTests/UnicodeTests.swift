import Foundation
import KeyedArchive
@_spi(_Unicode) import Swift
import XCTest

/// SPEC.md Part 2 §A4: strings compare under canonical equivalence of Unicode 17.0.0. kcar compares with
/// Swift's `String`, so Swift's Unicode data must be 17.0.0's: every code point is checked against the table
/// the independent reader uses (`scripts/interop/unicode-17.0.0-nfd.txt`, written from Unicode's own data).
/// A toolchain on another Unicode version fails here rather than changing which archives kcar accepts.
final class UnicodeTests: XCTestCase {
    func testSwiftStringIsUnicode17() throws {
        let url = ArchiveFixtures.root.appendingPathComponent("scripts/interop/unicode-17.0.0-nfd.txt")
        var table: [UInt32: (ccc: UInt8, nfd: [UInt32])] = [:]
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
            let f = line.split(separator: " ")
            table[UInt32(f[0], radix: 16)!] = (UInt8(f[1])!, f.dropFirst(2).map { UInt32($0, radix: 16)! })
        }
        XCTAssertEqual(table.count, 3_045)
        var mismatches: [String] = []
        for cp: UInt32 in 0...0x10FFFF where !(0xAC00...0xD7A3).contains(cp) {
            guard let scalar = Unicode.Scalar(cp) else { continue }
            let expected = table[cp] ?? (0, [])
            let ccc = scalar.properties.canonicalCombiningClass.rawValue
            let nfd = String(scalar)._nfd.map(\.value)
            if ccc != expected.ccc || nfd != (expected.nfd.isEmpty ? [cp] : expected.nfd) {
                mismatches.append("U+\(String(cp, radix: 16, uppercase: true)): class \(ccc), NFD \(nfd)")
            }
        }
        XCTAssert(mismatches.isEmpty, "Swift's Unicode data differ from 17.0.0: \(mismatches.prefix(10))")
        // U+1ACF, new in Unicode 17.0.0, is known to this Swift.
        XCTAssertEqual(Unicode.Scalar(0x1ACF)!.properties.age.map { "\($0.major).\($0.minor)" }, "17.0")
    }

    /// Keys equivalent under 17.0.0 data only, and a code point unassigned in 17.0.0 standing for itself.
    func testEquivalenceOfTheSpecExamples() throws {
        XCTAssertEqual("a\u{1ACF}\u{0316}", "a\u{0316}\u{1ACF}")
        XCTAssertEqual("\u{16D68}", "\u{16D67}\u{16D67}")
        XCTAssertNotEqual("a\u{1AEC}\u{0316}", "a\u{0316}\u{1AEC}")
        // Class names compare the same way: two objects, one value.
        let a = ArchiveValue.object("\u{E9}", [:])
        let b = ArchiveValue.object("e\u{301}", [:])
        XCTAssertEqual(a, b)
        XCTAssertEqual(ArchiveValue.set([a, b]), .set([a]))
    }
}
