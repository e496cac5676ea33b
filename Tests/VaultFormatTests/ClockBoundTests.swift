import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// SPEC.md Part 4, V5.1: a copy's versions bound how far a merge moves a vault's clock, so that no sequence of
/// legal files leaves a vault unable to change; a vault whose clock runs ahead is rewound.
final class ClockBoundTests: PagedTestCase {
    private var day: UInt64 { 86_400_000 }

    /// A vault of two items, and a copy of it.
    private func pair() throws -> (ours: String, theirs: String) {
        let ours = dir + "/ours.kcv"
        try PagedVault.create(
            path: ours, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
        let v = try PagedVault.open(path: ours, secret: secret, mode: .write)
        try v.commit { tx in
            _ = try tx.add(attributes: attrs("s", "a"), value: [1])
            _ = try tx.add(attributes: attrs("s", "b"), value: [2])
        }
        return (ours, try copy(ours, "theirs.kcv"))
    }

    /// A key holder's commit (a delta) that puts item `account` again at version `hlc`, as a file of their own.
    private func forgeVersion(_ path: String, account: String, hlc: UInt64) throws {
        let p = try PagedVault.open(path: path, secret: secret)
        let it = try item(p, "s", account)
        var e = ItemEntries.entry(it, version: Version(hlc: hlc, writer: 77), schema: p.schema)
        e.key = [TreeID.items.rawValue] + e.key
        e.rest = [1] + e.rest
        let crafted = try CraftedPagedVault(path: path, secret: secret, random: SystemRandom.shared)
        try crafted.delta(CraftedPagedVault.deltaPlaintext([e]))
    }

    private func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// The attack of issue 21: one legal commit whose version sits just under the bound merge used to refuse a
    /// side at (2^64 - 2^32) was taken with exit 0, and every later add, update and delete was refused. Now the
    /// merge refuses THEIRS as clock ahead, naming it and the item, writes nothing, and OURS stays writable.
    func testAVersionNearTheTopOfTheClockIsRefusedAndOursStaysWritable() throws {
        let (ours, theirs) = try pair()
        try forgeVersion(theirs, account: "a", hlc: UInt64.max - (1 << 32) - 2)
        let before = try bytes(ours)
        for base in [nil, dir + "/base.kcv"] {
            if let base {
                _ = try copy(ours, "base.kcv")
                XCTAssertEqual(base, dir + "/base.kcv")
            }
            XCTAssertThrowsError(try merge(base: base, ours: ours, theirs: theirs)) { e in
                let e = e as? VaultError
                XCTAssertEqual(e?.code, .clockAhead)
                XCTAssertTrue(e?.context.hasPrefix("THEIRS (\(theirs)): item ") == true, e?.context ?? "")
                XCTAssertEqual(e?.side, .theirs, e?.context ?? "")
                XCTAssertTrue(e?.context.contains("years ahead") == true, e?.context ?? "")
            }
            XCTAssertEqual(try bytes(ours), before, "a refused merge wrote nothing")
        }
        let v = try PagedVault.open(path: ours, secret: secret, mode: .write)
        for n in 0..<3 { try v.commit { tx in _ = try tx.add(attributes: attrs("s", "c\(n)"), value: [3]) } }
        try v.commit { tx in try tx.delete(try self.item(v, "s", "b")) }
        XCTAssertEqual(v.count, 4)
    }

    /// The bound is a day: a copy written by a machine a few hours ahead merges; two days ahead is refused,
    /// by the same check for a tombstone and for a kept version as for a live item.
    func testTheBoundIsADayAheadOfThisMachine() throws {
        let (ours, theirs) = try pair()
        let now = HybridClock.nowMilliseconds()
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write)
        try t.commit(now: { now + 3 * 3_600_000 }) { tx in
            try tx.update(try self.item(t, "s", "a"), attributes: nil, value: [9])
        }
        XCTAssertEqual(try merge(base: nil, ours: ours, theirs: theirs).taken, 1, "hours ahead: taken")

        let deleted = try copy(theirs, "deleted.kcv")
        let d = try PagedVault.open(path: deleted, secret: secret, mode: .write)
        try d.commit(now: { now + 2 * self.day }) { tx in try tx.delete(try self.item(d, "s", "b")) }
        XCTAssertThrowsError(try merge(base: nil, ours: ours, theirs: deleted)) { e in
            XCTAssertEqual((e as? VaultError)?.code, .clockAhead)
            XCTAssertTrue((e as? VaultError)?.context.contains("the deletion of item") == true, "\(e)")
            XCTAssertTrue((e as? VaultError)?.context.contains("2 days ahead") == true, "\(e)")
        }
    }

    /// A vault whose clock runs ahead of this machine's (a copy made on a machine whose clock is right, read on
    /// one whose clock is behind) keeps counting from its own clock: local commits never stop.
    func testLocalCommitsCountOnFromAClockAhead() throws {
        let (ours, _) = try pair()
        let v = try PagedVault.open(path: ours, secret: secret, mode: .write)
        let farAhead = HybridClock.nowMilliseconds() + 3650 * day
        try v.commit(now: { farAhead }) { tx in _ = try tx.add(attributes: attrs("s", "c"), value: [3]) }
        let clock = v.clock
        try v.commit { tx in try tx.update(try self.item(v, "s", "c"), attributes: nil, value: [4]) }
        XCTAssertGreaterThan(try XCTUnwrap(v.version(of: try item(v, "s", "c"))).hlc, clock)
    }

    /// A local clock past CLOCK_NOW_MAX reads as it, so that `now << 16` never wraps to a small clock.
    func testALocalClockPastTheYear6429ReadsAsIt() throws {
        let (ours, _) = try pair()
        let v = try PagedVault.open(path: ours, secret: secret, mode: .write)
        try v.commit(now: { 1 << 50 }) { tx in _ = try tx.add(attributes: attrs("s", "c"), value: [3]) }
        XCTAssertEqual(try XCTUnwrap(v.version(of: try item(v, "s", "c"))).hlc >> 16, HybridClock.nowMaxMilliseconds)
        XCTAssertLessThan(v.clock, HybridClock.ceiling)
    }

    /// Rule 6: a rewind renumbers every version ahead of now (live, tombstone, kept) in order, the root's clock
    /// comes down to what the vault holds, and the copy merges again; versions at or below now are kept.
    func testARewindRenumbersInOrderAndTheCopyMergesAgain() throws {
        let (ours, theirs) = try pair()
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 5)
        let now = HybridClock.nowMilliseconds()
        // Item a's first version (now) goes to history with the updates below, and is kept as it is.
        let untouched = try XCTUnwrap(t.version(of: try item(t, "s", "a")))
        try t.commit(now: { now + 30 * self.day }) { tx in
            try tx.update(try self.item(t, "s", "a"), attributes: nil, value: [7])
            _ = try tx.add(attributes: attrs("s", "d"), value: [8])
        }
        try t.commit(now: { now + 31 * self.day }) { tx in
            try tx.update(try self.item(t, "s", "a"), attributes: nil, value: [9])
            try tx.delete(try self.item(t, "s", "d"))
        }
        try forgeVersion(theirs, account: "b", hlc: UInt64.max - (1 << 32) - 1)
        XCTAssertThrowsError(try merge(base: nil, ours: ours, theirs: theirs))
        // Every version before the rewind, in order, by item.
        func versions(_ path: String) throws -> [(ItemID, Version, Bool)] {
            let v = try PagedVault.open(path: path, secret: secret)
            var out: [(ItemID, Version, Bool)] = []
            try v.scan(.items) { e in
                let s = try ItemEntries.decode(e, schema: v.schema)
                out.append((s.id, s.version, s.item == nil))
                return true
            }
            try v.scan(.history) { e in
                let h = try ItemEntries.decodeHistory(e)
                out.append((h.item.id, h.version, false))
                return true
            }
            return out
        }
        let before = try versions(theirs)
        let rewinding = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 6)
        let rewindAt = PagedRebuild.clockNow()
        try rewinding.compact(now: rewindAt, rewindingClock: true)
        let after = try versions(theirs)
        XCTAssertEqual(before.count, after.count)
        XCTAssertEqual(Set(before.map(\.0)), Set(after.map(\.0)))
        // The map is monotone: every pair of versions keeps its order.
        let pairs = Dictionary(
            uniqueKeysWithValues: zip(before.sorted { $0.1 < $1.1 }.map(\.1), after.sorted { $0.1 < $1.1 }.map(\.1)))
        XCTAssertEqual(pairs.count, before.count)
        for (old, new) in pairs {
            if old.hlc <= rewindAt {
                XCTAssertEqual(old, new, "a version at or below now is kept")
            } else {
                XCTAssertGreaterThan(new.hlc, rewindAt)
                XCTAssertLessThanOrEqual(new.hlc, rewindAt + UInt64(before.count))
                XCTAssertEqual(new.writer, 6)
            }
        }
        XCTAssertTrue(pairs.keys.contains(untouched))
        XCTAssertLessThanOrEqual(rewinding.clock, rewindAt + UInt64(before.count))
        XCTAssertEqual(try PagedVault.open(path: theirs, secret: secret).verify().problems, [])
        // It merges again, and what it holds wins as before: a's latest value, d deleted.
        XCTAssertGreaterThan(try merge(base: nil, ours: ours, theirs: theirs).taken, 0)
        let o = try PagedVault.open(path: ours, secret: secret)
        XCTAssertEqual(try o.read(try item(o, "s", "a")), [9])
        XCTAssertEqual(o.count, 2)
    }

    /// A vault a file already left at the ceiling (written by kcar before V5.1 took such a copy, or by a key
    /// holder's own tool) refuses commits, and a rewind makes it writable again.
    func testARewindMakesAVaultAtTheCeilingWritable() throws {
        let (ours, _) = try pair()
        try forgeVersion(ours, account: "a", hlc: UInt64.max - 5)
        let v = try PagedVault.open(path: ours, secret: secret, mode: .write)
        XCTAssertThrowsError(try v.commit { tx in _ = try tx.add(attributes: self.attrs("s", "c"), value: [3]) }) { e in
            XCTAssertEqual((e as? VaultError)?.code, .invalidArgument)
        }
        try v.compact(rewindingClock: true)
        XCTAssertLessThan(v.clock, HybridClock.limit(now: PagedRebuild.clockNow()))
        try v.commit { tx in _ = try tx.add(attributes: self.attrs("s", "c"), value: [3]) }
        XCTAssertEqual(try v.read(try item(v, "s", "a")), [1])
        XCTAssertEqual(v.verify().problems, [])
    }

    /// SPEC.md §8, GENERATION_MAX, for version 2: a key holder's file whose last trailer says generation 2^64 - 1
    /// (every field authenticated) took no more commits or rewrites, so a clone that took it through git (a
    /// fast-forward: no merge runs) could never change its vault again. Commits are still refused, with the way
    /// out; verify reports it; a compaction starts the generations again at 1.
    func testAVersion2FileAtTheLastGenerationIsWrittenAgainAfterACompaction() throws {
        let (ours, _) = try pair()
        try PagedVault.open(path: ours, secret: secret, mode: .write).compact()  // one fold, its trailer the only one
        let crafted = try CraftedPagedVault(path: ours, secret: secret, random: SystemRandom.shared)
        try crafted.rewriteLastTrailer { $0.generation = .max }
        let v = try PagedVault.open(path: ours, secret: secret, mode: .write)
        XCTAssertThrowsError(try v.commit { tx in _ = try tx.add(attributes: self.attrs("s", "c"), value: [3]) }) { e in
            XCTAssertEqual((e as? VaultError)?.code, .invalidArgument)
            XCTAssertTrue("\(e)".contains("kcar compact"), "\(e)")
        }
        XCTAssertEqual(v.verify().problems.map(\.code), [.damagedIndex])
        try v.compact()
        XCTAssertEqual(v.generation, 1)
        try v.commit { tx in _ = try tx.add(attributes: self.attrs("s", "c"), value: [3]) }
        XCTAssertEqual(v.count, 3)
        XCTAssertEqual(try PagedVault.open(path: ours, secret: secret).verify().problems, [])
    }
}
