import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Helpers of the version 2 merge tests: a BASE to copy from, the two orders of one merge checked against V9,
/// and an entry of THEIRS replaced by a forged one.
extension PagedTestCase {
    func makeBase(_ name: String = "base.kcv", items: Int = 6, retention: Retention = .init()) throws -> String {
        let base = dir + "/" + name
        try PagedVault.create(
            path: base, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema,
            retention: retention)
        let b = try PagedVault.open(path: base, secret: secret, mode: .write, writerID: 1)
        try b.commit { tx in
            for i in 1...items { _ = try tx.add(attributes: attrs("p\(i)", "me"), value: Array("base \(i)".utf8)) }
        }
        return base
    }

    /// Checks what V9 promises of the two orders of one merge: the same live items and history, a file that
    /// verifies, every live version of either side live or kept.
    func checkBothOrders(base: String?, _ a: String, _ b: String, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        let (sa, sb) = (try snapshot(a), try snapshot(b))
        let ab = try copy(a, "ab-\(UUID().uuidString).kcv")
        let ba = try copy(b, "ba-\(UUID().uuidString).kcv")
        try merge(base: base, ours: ab, theirs: b)
        try merge(base: base, ours: ba, theirs: a)
        let (mab, mba) = (try snapshot(ab), try snapshot(ba))
        XCTAssertEqual(mab.live, mba.live, "commutative", file: file, line: line)
        XCTAssertEqual(mab.history, mba.history, "the same history", file: file, line: line)
        for p in [ab, ba] {
            XCTAssertEqual(try PagedVault.open(path: p, secret: secret).verify().problems, [], file: file, line: line)
        }
        for side in [sa, sb] {
            for (id, s) in side.live {
                XCTAssertTrue(
                    mab.live[id]?.version == s.version || mab.history[id]?.contains(s.version) == true,
                    "a live version of \(id) was lost", file: file, line: line)
            }
        }
        XCTAssertEqual(
            Set(mab.live.values.map { [$0.attributes["svce"], $0.attributes["acct"]] }).count, mab.live.count,
            "one item per primary key", file: file, line: line)
        // Idempotent.
        try merge(base: base, ours: ab, theirs: ba)
        XCTAssertEqual(try snapshot(ab).live, mab.live, "merging the results again", file: file, line: line)
    }

    /// Replaces THEIRS's entry of `item` by `forge(item, version)`'s entry, in a crafted delta segment sealed
    /// under the vault's keys (what any holder of the vault key can write).
    func forgeEntry(
        _ path: String, _ it: Item, addsLiveItem: Bool = false, _ forge: (inout Item, inout Version) -> Void
    ) throws {
        let v = try PagedVault.open(path: path, secret: secret)
        var (item, version) = (it, try XCTUnwrap(try v.version(of: it)))
        forge(&item, &version)
        let crafted = try CraftedPagedVault(path: path, secret: secret, random: SystemRandom.shared)
        try crafted.delta(
            DeltaCodec.encode([(tree: .items, change: .put(ItemEntries.entry(item, version: version, schema: schema)))])
        ) {
            if addsLiveItem { $0.itemCount += 1 }
        }
    }
}
