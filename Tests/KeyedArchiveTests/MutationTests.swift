import Foundation
import KeyedArchive
import TestSupport
import XCTest

/// Seeded mutations of the golden archives: the reader never crashes or hangs, and whatever it accepts from
/// a canonical (sorted) archive it writes back byte for byte (no two encodings of one value).
final class MutationTests: XCTestCase {
    func testMutatedArchivesNeverCrashAndStayCanonical() throws {
        var rng = SplitMix64(state: 0x6B63_6172)
        let sources = try ArchiveFixtures.golden.map {
            try ArchiveSerialization.bytes(from: $0.value, options: .deterministic)
        }
        var accepted = 0
        var rejected: [ArchiveError.Code: Int] = [:]
        for _ in 0..<5_000 {
            var bytes = sources[Int.random(in: 0..<sources.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let i = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: bytes[i] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
                case 1: bytes[i] = UInt8.random(in: 0...255, using: &rng)
                case 2: bytes.insert(UInt8.random(in: 0...0x14, using: &rng), at: i)
                case 3: if bytes.count > 1 { bytes.remove(at: i) }
                default: bytes[i] = UInt8.random(in: 0...0x14, using: &rng)
                }
            }
            do {
                let value = try ArchiveSerialization.value(from: bytes)
                accepted += 1
                if bytes.count > 5, bytes[5] == 1 {
                    XCTAssertEqual(
                        try ArchiveSerialization.bytes(from: value, options: .deterministic), bytes,
                        "accepted a non-canonical archive: \(bytes)")
                }
            } catch let error as ArchiveError {
                rejected[error.code, default: 0] += 1
            }
        }
        XCTAssertGreaterThan(accepted, 0)
        XCTAssertGreaterThan(rejected.count, 8, "mutations reach many different checks: \(rejected)")
    }

    /// Every single-bit flip of every golden file: no crash, and canonical whenever accepted.
    func testEveryBitFlip() throws {
        for g in ArchiveFixtures.golden {
            let source = try ArchiveSerialization.bytes(from: g.value, options: .deterministic)
            for i in 0..<source.count {
                for bit in 0..<8 {
                    var bytes = source
                    bytes[i] ^= 1 << bit
                    guard let value = try? ArchiveSerialization.value(from: bytes) else { continue }
                    if bytes[5] == 1 {
                        XCTAssertEqual(
                            try ArchiveSerialization.bytes(from: value, options: .deterministic), bytes,
                            "\(g.name) byte \(i) bit \(bit)")
                    }
                }
            }
        }
    }
}
