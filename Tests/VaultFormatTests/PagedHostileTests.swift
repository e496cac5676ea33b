import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Version 2's bounds on hostile index structures (SPEC.md Part 4, V2): what a writer never makes is refused
/// before the work it would cost.
final class PagedHostileTests: XCTestCase {
    /// A page that inflates past 16 times its stored bytes (a decompression bomb: 1 MiB of zeros in about a
    /// kilobyte) is refused before the chunk is inflated; the same plaintext as the writer seals it (stored,
    /// since compressing it would break the bound) opens.
    func testPageBombsAreRefusedBeforeInflating() throws {
        let path = NSTemporaryDirectory() + "kcar-bomb-\(UUID().uuidString)"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try File.openReadWrite(path)
        let keys = Subkeys(vaultKey: SecureBytes(copying: [UInt8](repeating: 7, count: 32)))
        let vaultID = [UInt8](repeating: 1, count: 16)
        let source = RecordSource(file: file, headerLength: 0, vaultID: vaultID, keys: keys)
        let key = StreamKey.page(keys, vaultID: vaultID, pageID: ID128(hi: 1, lo: 2))
        let plain = [UInt8](repeating: 0, count: 1 << 20)
        let bomb = Blocks.jobs(for: plain, key: key, random: SystemRandom.shared).flatMap { Blocks.seal($0, level: 6) }
        XCTAssertLessThan(bomb.count, 8192)
        try file.write(bomb, at: 0)
        XCTAssertThrowsError(
            try PagedSealing.open(source, key: key, offset: 0, length: UInt64(bomb.count), max: PagedLimits.pageMax) {
                VaultError(.damagedIndex, $0)
            }
        ) { XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex) }
        let honest = PagedSealing.seal(plain, key: key, random: SystemRandom.shared, level: 6)
        XCTAssertGreaterThan(honest.count, plain.count)
        try file.write(honest, at: UInt64(bomb.count))
        XCTAssertEqual(
            try PagedSealing.open(
                source, key: key, offset: UInt64(bomb.count), length: UInt64(honest.count),
                max: PagedLimits.pageMax
            ) { VaultError(.damagedIndex, $0) }, plain)
        // Under another page id (a page moved to another place in a tree), it does not open.
        XCTAssertThrowsError(
            try PagedSealing.open(
                source, key: .page(keys, vaultID: vaultID, pageID: ID128(hi: 1, lo: 3)),
                offset: UInt64(bomb.count), length: UInt64(honest.count), max: PagedLimits.pageMax
            ) {
                VaultError(.damagedIndex, $0)
            })
    }

    /// A trailer's fields must agree with its position and with each other (V7): each rule broken alone makes
    /// the 128 bytes no candidate, so the search never spends a MAC on them.
    func testTrailerCandidateRules() {
        let at: UInt64 = 10_000
        let fold = TrailerV2(
            generation: 3, commitStart: 5000, previous: 4872, rootOffset: 9000, rootLength: 1000,
            rootID: ID128(hi: 1, lo: 1),
            deltaOffset: TrailerV2.none, deltaLength: 0, itemCount: 5, wroteRoot: true, chain: 0)
        let delta = TrailerV2(
            generation: 3, commitStart: 5000, previous: 4872, rootOffset: 100, rootLength: 50,
            rootID: ID128(hi: 1, lo: 1),
            deltaOffset: 9900, deltaLength: 100, itemCount: 5, wroteRoot: false, chain: 2)
        let key = SecureBytes(copying: [UInt8](repeating: 3, count: 32))
        for good in [fold, delta] {
            XCTAssertEqual(TrailerV2.candidate(good.encode(vaultID: [], key: key)[...], at: at), good)
        }
        var bad: [TrailerV2] = []
        var t = fold
        t.rootLength = 999
        bad.append(t)  // the root does not end at the trailer
        t = fold
        t.chain = 1
        bad.append(t)  // a fold with a chain
        t = fold
        t.previous = 4000
        bad.append(t)  // previous trailer not right before the commit
        t = fold
        t.previous = TrailerV2.none
        bad.append(t)  // a first commit must start at 0
        t = fold
        t.generation = 0
        bad.append(t)
        t = delta
        t.chain = UInt16(PagedLimits.deltaChainMax)
        bad.append(t)
        t = delta
        t.deltaLength = 99
        bad.append(t)
        t = delta
        t.rootOffset = 9950
        bad.append(t)  // the root after the trailer would be named
        t = delta
        t.itemCount = UInt64(Limits.itemsMax) + 1
        bad.append(t)
        t = delta
        t.commitStart = 0
        t.previous = TrailerV2.none
        bad.append(t)  // a first commit must be a fold
        for b in bad { XCTAssertNil(TrailerV2.candidate(b.encode(vaultID: [], key: key)[...], at: at), "\(b)") }
    }

    /// The in-place sort a merge and a commit use on a million changes orders exactly as the copying one, on
    /// seeded keys of many lengths sharing prefixes (every cycle of the order is followed).
    func testInPlaceSortByKeyMatchesSortedCopy() {
        var rng = SplitMix64(state: 0x5017)
        for n in [0, 1, 2, 3, 17, 1_000] {
            var keys: [[UInt8]] = (0..<n).map { _ in
                let len = Int(rng.next() % 6)
                return (0..<len).map { _ in UInt8(rng.next() % 3) }
            }
            keys = keys.enumerated().map { $0.element + [UInt8($0.offset & 0xFF), UInt8($0.offset >> 8)] }
            let expected = PagedRebuild.sortedByKey(keys, key: { $0 })
            var sorted = keys
            PagedRebuild.sortByKey(&sorted, key: { $0 })
            XCTAssertEqual(sorted, expected, "n = \(n)")
            XCTAssertEqual(sorted, keys.sorted { $0.lexicographicallyPrecedes($1) }, "n = \(n)")
        }
    }

}
