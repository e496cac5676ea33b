import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// The index root's garbage counter and automatic compaction of version 2 vaults (SPEC.md Part 4, V8.1):
/// what folds count, that compaction resets it, that commits compact by themselves when it passes the
/// threshold (keeping the file bounded), that a failed automatic compaction leaves the commit standing, and
/// that a forged count costs at most one compaction.
final class PagedGarbageTests: PagedTestCase {
    func open(_ path: String, retention: Retention = .init()) throws -> PagedVault {
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema,
            retention: retention)
        return try PagedVault.open(path: path, secret: secret, mode: .write)
    }

    func addOne(_ v: PagedVault, _ n: Int, autoCompact: Bool = false) throws {
        try v.commit(autoCompact: autoCompact) { tx in
            try tx.add(attributes: attrs("svc\(n % 7)", "user\(n)"), value: Array("secret number \(n)".utf8))
        }
    }

    func fileSize(_ path: String) throws -> UInt64 {
        try XCTUnwrap((try FileManager.default.attributesOfItem(atPath: path))[.size] as? UInt64)
    }

    /// SPEC.md V10's index root: empty trees under `kcar pack`'s schema, clock 0, the default retention, and
    /// a garbage count of 300 (V8.1).
    func testRootVector() throws {
        let root = IndexRoot(schema: .servicesAndAccounts, garbage: 300)
        XCTAssertEqual(
            Hex.encode(root.encode()),
            "030000" + "000000" + "000000" + "01" + "0467656e70" + "02" + "0473766365" + "0100" + "0461636374" + "0100"
                + "00"
                + "0000000000000000" + "0a5a5a" + "ac02")
        XCTAssertEqual(try IndexRoot.decode(root.encode()), root)
        // Any count decodes (a hint), the largest too.
        var forged = root
        forged.garbage = .max
        XCTAssertEqual(try IndexRoot.decode(forged.encode()).garbage, .max)
    }

    /// A delta commit counts nothing; the fold that ends its chain counts the root, the trailers and the delta
    /// segments it supersedes (and, once the trees have pages, the pages it replaces); compaction counts 0.
    func testTheCounterAfterADeltaAFoldAndACompaction() throws {
        let v = try open(dir + "/c.kcv")
        XCTAssertEqual(v.garbage, 0, "a new vault")
        try addOne(v, 0)
        XCTAssertFalse(v.tail.trailer.wroteRoot, "a delta commit")
        XCTAssertEqual(v.garbage, 0, "a delta commit writes no root and counts nothing")
        for n in 1..<15 { try addOne(v, n) }
        XCTAssertEqual(v.tail.trailer.chain, 15)
        let before = v.tail.trailer
        let expected = before.rootLength + 16 * UInt64(TrailerV2.size) + (try v.chainDeltaBytes())
        try addOne(v, 15)
        XCTAssertTrue(v.tail.trailer.wroteRoot, "the 16th commit folds")
        XCTAssertEqual(v.garbage, expected, "the first root (its trees empty), 16 trailers and 15 delta segments")
        XCTAssertEqual(v.verify().deadBytes, expected, "the exact count agrees: nothing else is dead")
        try v.compact()
        XCTAssertEqual(v.garbage, 0)
        XCTAssertEqual(try PagedVault.open(path: v.path, secret: secret).garbage, 0, "as written in the root")
        XCTAssertEqual(v.verify().deadBytes, 0)
    }

    /// After each fold of a seeded run of single-item adds, updates and deletes (history kept, then not),
    /// the counter equals verify's exact count of dead bytes: replaced pages, roots, trailers, segments and
    /// the records no entry names any more (history trimmed past `keep`, values replaced with `keep` 0).
    func testTheCounterMatchesTheExactDeadBytesAfterEveryFold() throws {
        for keep in [2, 0] {
            let v = try open(dir + "/exact-\(keep).kcv", retention: Retention(keep: keep))
            var rng = SplitMix64(state: 7)
            var folds = 0
            for n in 0..<200 {
                var all: [Item] = []
                try v.forEachItem {
                    all.append($0)
                    return true
                }
                try v.commit(autoCompact: false) { tx in
                    switch all.isEmpty ? 0 : rng.below(3) {
                    case 0:
                        try tx.add(
                            attributes: attrs("svc\(rng.below(5))", "user\(n)"),
                            value: Array(repeating: UInt8(n & 0xff), count: rng.below(400)))
                    case 1: try tx.update(all[rng.below(all.count)], value: Array("v\(n)".utf8))
                    default: try tx.delete(all[rng.below(all.count)])
                    }
                }
                guard v.tail.trailer.wroteRoot else { continue }
                folds += 1
                let r = v.verify()
                XCTAssertEqual(r.problems, [])
                XCTAssertEqual(r.countedGarbage, v.garbage)
                XCTAssertEqual(v.garbage, r.deadBytes, "keep \(keep), commit \(n)")
            }
            XCTAssertGreaterThan(folds, 10)
        }
    }

    /// Single-item commits: with automatic compaction the file stays below twice its compacted size plus the
    /// 1 MiB floor (and a fold's garbage), and verifies clean; without it, it keeps growing. 1,500 commits
    /// (10,000 take two minutes in a debug build; `kcar-scale-bench` runs them): the bound holds at every
    /// commit, since all dead bytes but the pending chain's are counted and a commit compacts once they pass
    /// half the body, so it does not depend on their number.
    func testManySingleItemCommitsStayBounded() throws {
        let commits = 1_500
        let path = dir + "/bounded.kcv"
        let v = try open(path)
        var largest: UInt64 = 0
        var compactions = 0
        for n in 0..<commits {
            let generation = v.generation
            try addOne(v, n, autoCompact: true)
            if v.tail.trailer.previous == TrailerV2.none, generation > 1 { compactions += 1 }
            largest = max(largest, try fileSize(path))
        }
        XCTAssertNil(v.lastCompactionError)
        let r = v.verify()
        XCTAssertEqual(r.problems, [])
        XCTAssertEqual(r.items, commits)
        let before = try fileSize(path)
        try v.compact()
        let live = try fileSize(path)
        // Dead bytes pass half the body only when the body is at least twice the live bytes; the commit that
        // passes it adds one fold's garbage (a few pages, a root, 16 trailers and segments: below 128 KiB).
        XCTAssertLessThan(largest, max(2 * live, live + 1 << 20) + 128 << 10, "largest \(largest), live \(live)")
        XCTAssertGreaterThan(compactions, 0)
        XCTAssertLessThan(compactions, commits / 200, "compaction is not run after every commit")
        print(
            "bounded: \(commits) commits, \(compactions) automatic compactions, largest \(largest) bytes, last \(before), compacted \(live)"
        )

        // The same without automatic compaction: most of the file is dead, and the counter says so.
        let off = try open(dir + "/unbounded.kcv")
        for n in 0..<commits / 2 { try addOne(off, n) }
        let ro = off.verify()
        XCTAssertEqual(ro.problems, [])
        XCTAssertGreaterThan(Double(ro.deadBytes), 0.6 * Double(try fileSize(off.path)))
        XCTAssertEqual(off.garbage, ro.deadBytes, "every dead byte is counted (the pending chain is not dead yet)")
        XCTAssertTrue(off.shouldCompact)
    }

    /// An automatic compaction that fails (the temporary file cannot be written) leaves the commit standing,
    /// is reported to the handler and in `lastCompactionError`, and is tried again after the next commit.
    func testAFailedAutomaticCompactionLeavesTheCommitAndIsReported() throws {
        let path = dir + "/fail.kcv"
        let v = try open(path, retention: Retention(keep: 0))
        var big: ItemID!
        try v.commit { tx in big = try tx.add(attributes: attrs("s", "big"), value: Recipes.noise(2 << 20, seed: 1)) }
        let bigItem = try item(v, "s", "big")
        XCTAssertEqual(bigItem.id, big)
        try withFailingCompactions { seen in
            // More than 256 changes: a fold, which counts the deleted 2 MiB value.
            try v.commit { tx in
                try tx.delete(bigItem)
                for n in 0..<300 { try tx.add(attributes: attrs("small", "\(n)"), value: [UInt8(n & 0xff)]) }
            }
            XCTAssertEqual(v.count, 300, "the commit stood")
            XCTAssertEqual(try PagedVault.open(path: path, secret: secret).count, 300)
            XCTAssertEqual(v.lastCompactionError?.code, .io)
            XCTAssertEqual(seen.reports.map(\.0), [path])
            XCTAssertTrue(v.shouldCompact, "the garbage is still there")
            XCTAssertEqual(
                try FileManager.default.contentsOfDirectory(atPath: dir), ["fail.kcv"], "no temporary file is left")
            File.faults = nil
            // The next commit (a delta commit: the count is the last fold's) tries again.
            try addOne(v, 1000, autoCompact: true)
            XCTAssertNil(v.lastCompactionError)
            XCTAssertEqual(v.garbage, 0)
            XCTAssertEqual(v.count, 301)
            XCTAssertEqual(v.verify().problems, [])
            XCTAssertLessThan(try fileSize(path), 1 << 20, "the deleted value left the file")
        }
    }

    /// A merge is a commit and counts as one (V8.1): a merge that folds (more than 256 changes) counts the
    /// pages it replaces, the chain it ends, and the records of OURS's versions that THEIRS's replaced and
    /// that no history keeps, as verify's exact count does; and it compacts after itself as a commit does.
    func testAMergeCountsItsGarbage() throws {
        for (keep, due) in [(10, false), (0, false), (0, true)] {
            let base = dir + "/base-\(keep)-\(due).kcv"
            let b = try open(base, retention: Retention(keep: keep))
            // One record per value: a dead member of a shared record counts a share that verify, which counts
            // a record live while any member is, does not (V8.1).
            try b.commit(solidMembers: 1, autoCompact: false) { tx in
                for n in 0..<400 { try tx.add(attributes: attrs("s", "\(n)"), value: Array("base \(n)".utf8)) }
            }
            let ours = try copy(base, "ours-\(keep)-\(due).kcv")
            let theirs = try copy(base, "theirs-\(keep)-\(due).kcv")
            let o = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
            try o.commit(autoCompact: false) { tx in try tx.update(try item(o, "s", "1"), value: Array("ours".utf8)) }
            let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
            try t.commit(autoCompact: false) { tx in
                for n in 0..<300 { try tx.update(try item(t, "s", "\(n)"), value: Array("theirs \(n)".utf8)) }
            }
            if due { o.root.garbage = 1 << 40 }  // past the threshold
            let before = o.garbage
            _ = try o.merge(base: try PagedVault.open(path: base, secret: secret), theirs: t)
            XCTAssertTrue(o.tail.trailer.wroteRoot, "the merge folds")
            let r = o.verify()
            XCTAssertEqual(r.problems, [])
            XCTAssertEqual(o.garbage, r.deadBytes, "keep \(keep)")
            if due {
                XCTAssertEqual(o.tail.trailer.previous, TrailerV2.none, "compacted after the merge")
                XCTAssertEqual(o.garbage, 0)
                XCTAssertEqual(try item(o, "s", "7").size, UInt64("theirs 7".utf8.count))
            } else {
                XCTAssertGreaterThan(o.garbage, before)
            }
        }
    }

    /// A root whose garbage count is forged to 2^64 − 1 opens and verifies (the count is a hint), a fold on it
    /// saturates instead of trapping, and it costs one compaction, after which the count is true again.
    func testAHostileGarbageCountCostsOneCompaction() throws {
        let path = dir + "/hostile.kcv"
        let v = try open(path)
        for n in 0..<20 { try addOne(v, n) }
        v.root.garbage = .max
        // A fold (more than 256 changes) writes the forged count into a root, and adds to it without trapping.
        try v.commit(autoCompact: false) { tx in
            for n in 0..<300 { try tx.add(attributes: attrs("many", "\(n)"), value: [1]) }
        }
        XCTAssertTrue(v.tail.trailer.wroteRoot)
        let reopened = try PagedVault.open(path: path, secret: secret, mode: .write)
        XCTAssertEqual(reopened.garbage, .max)
        let r = reopened.verify()
        XCTAssertEqual(r.problems, [], "a wrong count is not damage")
        XCTAssertEqual(r.countedGarbage, .max)
        XCTAssertEqual(reopened.count, 320)
        // A commit that changes nothing writes nothing and does not compact (as version 1).
        try reopened.commit { _ in }
        XCTAssertEqual(reopened.garbage, .max)
        XCTAssertNotEqual(reopened.tail.trailer.previous, TrailerV2.none)
        try addOne(reopened, 1000, autoCompact: true)
        XCTAssertEqual(reopened.tail.trailer.previous, TrailerV2.none, "compacted")
        XCTAssertEqual(reopened.garbage, 0)
        let generation = reopened.generation
        for n in 1001..<1040 { try addOne(reopened, n, autoCompact: true) }
        XCTAssertEqual(reopened.generation, generation + 39, "no further compaction")
        XCTAssertNotEqual(reopened.tail.trailer.previous, TrailerV2.none)
        XCTAssertEqual(reopened.count, 360)
        XCTAssertEqual(reopened.verify().problems, [])
    }
}
