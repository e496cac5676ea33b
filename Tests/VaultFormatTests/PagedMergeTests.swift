import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Merging copies of a version 2 vault (SPEC.md Part 4, V9): the rules on a scenario that exercises each one,
/// then seeded random edits on both sides checked for what the rules promise: the same items whichever side
/// merges, nothing changed by merging again, no live version lost (it is live or in history), and no
/// deletion undone by a side that did not touch the item.
final class PagedMergeTests: PagedTestCase {
    func testEachRule() throws {
        let base = dir + "/base.kcv"
        try PagedVault.create(
            path: base, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
        let b = try PagedVault.open(path: base, secret: secret, mode: .write, writerID: 1)
        try b.commit { tx in
            for i in 1...6 { _ = try tx.add(attributes: attrs("p\(i)", "me"), value: Array("base \(i)".utf8)) }
        }
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        let o = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
        let oursP1 = try item(o, "p1", "me")
        try o.commit { tx in
            try tx.update(try item(o, "p1", "me"), value: Array("ours 1".utf8))
            try tx.delete(try item(o, "p2", "me"))
            try tx.update(try item(o, "p3", "me"), attributes: attrs("p3", "me", label: "relabelled"))
            _ = try tx.add(attributes: attrs("x", "new"), value: Array("ours x".utf8))
        }
        let oursX = try item(o, "x", "new")
        usleep(3000)  // THEIRS's changes are newer
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
        try t.commit { tx in
            try tx.update(try item(t, "p1", "me"), value: Array("theirs 1".utf8))
            try tx.update(try item(t, "p2", "me"), value: Array("theirs 2".utf8))
            try tx.delete(try item(t, "p4", "me"))
            try tx.update(try item(t, "p5", "me"), value: Array("theirs 5".utf8))
            _ = try tx.add(attributes: attrs("x", "new"), value: Array("theirs x".utf8))
            _ = try tx.add(attributes: attrs("y", "new"), value: Array("theirs y".utf8))
        }
        let oursBefore = try Recipes.read(ours)
        let report = try merge(base: base, ours: ours, theirs: theirs)
        let m = try PagedVault.open(path: ours, secret: secret)
        func value(_ s: String, _ a: String) throws -> String {
            String(decoding: try m.read(try item(m, s, a)), as: UTF8.self)
        }
        XCTAssertEqual(try value("p1", "me"), "theirs 1", "both changed: the newer wins")
        XCTAssertEqual(try m.history(of: oursP1.id).filter { $0.why == 2 }.count, 1, "the losing live version is kept")
        XCTAssertEqual(try value("p2", "me"), "theirs 2", "a change newer than a deletion wins")
        XCTAssertEqual(
            try item(m, "p3", "me").attributes["labl"], .string("relabelled"),
            "a change on one side wins over no change")
        XCTAssertEqual(
            try m.items(class: .genericPassword, keyValues: [.bool(false), .string("p4")]), [],
            "a deletion on one side wins over no change")
        XCTAssertEqual(try value("p5", "me"), "theirs 5")
        XCTAssertEqual(try value("p6", "me"), "base 6")
        XCTAssertEqual(
            try m.items(class: .genericPassword, keyValues: [.bool(false), .string("x"), .string("new")]).count, 1,
            "one item per primary key")
        XCTAssertEqual(try value("x", "new"), "theirs x", "added on both sides: the newer stays")
        XCTAssertEqual(try m.history(of: oursX.id).map(\.why), [2])
        XCTAssertEqual(try value("y", "new"), "theirs y")
        XCTAssertEqual(report.conflicts, 2)  // p1, p2
        XCTAssertEqual(report.sharedKeys, 1)
        XCTAssertEqual(m.verify().problems, [])
        XCTAssertNotEqual(try Recipes.read(ours), oursBefore)
    }

    /// A merge refused for another vault leaves OURS byte for byte.
    func testAnotherVaultIsRefusedNamingTheSide() throws {
        let a = dir + "/a.kcv"
        let other = dir + "/other.kcv"
        for p in [a, other] {
            try PagedVault.create(
                path: p, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
        }
        let before = try Recipes.read(a)
        XCTAssertThrowsError(try merge(base: nil, ours: a, theirs: other)) { e in
            XCTAssertEqual((e as? VaultError)?.code, .invalidArgument)
            XCTAssertTrue("\(e)".contains("THEIRS"), "\(e)")
        }
        XCTAssertEqual(try Recipes.read(a), before)
    }

    func testRandomEditsMergeCommutativelyAndIdempotently() throws {
        for seed in 1...12 {
            var rng = SplitMix64(state: UInt64(seed))
            let base = dir + "/base.kcv"
            try? FileManager.default.removeItem(atPath: base)
            try PagedVault.create(
                path: base, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
            let b = try PagedVault.open(path: base, secret: secret, mode: .write, writerID: 1)
            try b.commit { tx in
                for i in 0..<40 { _ = try tx.add(attributes: attrs("s\(i % 7)", "u\(i)"), value: [UInt8(i)]) }
            }
            var sides: [String] = []
            for (n, writer) in [("a.kcv", UInt64(2)), ("b.kcv", 3)] {
                let path = try copy(base, n)
                let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: writer)
                for round in 0..<3 {
                    var all: [Item] = []
                    try v.forEachItem {
                        all.append($0)
                        return true
                    }
                    // Each side keeps one item per primary key, as the keychain does.
                    var taken = Set(all.map { [$0.attributes["svce"], $0.attributes["acct"]] })
                    func free(_ a: Attributes) -> Bool { taken.insert([a["svce"], a["acct"]]).inserted }
                    try v.commit { tx in
                        for _ in 0..<(1 + rng.below(6)) where !all.isEmpty {
                            let it = all.remove(at: rng.below(all.count))
                            let service: String
                            if case .string(let sv) = it.attributes["svce"] { service = sv } else { service = "" }
                            switch rng.below(5) {
                            case 0: try tx.delete(it)
                            case 1: try tx.update(it, value: [UInt8(truncatingIfNeeded: rng.below(256)), UInt8(round)])
                            case 2:
                                let a = attrs(service, "moved\(rng.below(3))")
                                if free(a) { try tx.update(it, attributes: a) }
                            case 3:
                                let a = attrs("both", "k\(rng.below(3))")
                                if free(a) { _ = try tx.add(attributes: a, value: [UInt8(writer)]) }
                            default:
                                var a = it.attributes
                                a["labl"] = .string("l\(round)-\(writer)")
                                try tx.update(it, attributes: a)
                            }
                        }
                    }
                }
                sides.append(path)
            }
            let (a, bb) = (try snapshot(sides[0]), try snapshot(sides[1]))
            let ab = try copy(sides[0], "ab.kcv")
            let ba = try copy(sides[1], "ba.kcv")
            _ = try merge(base: base, ours: ab, theirs: sides[1])
            _ = try merge(base: base, ours: ba, theirs: sides[0])
            let (mab, mba) = (try snapshot(ab), try snapshot(ba))
            XCTAssertEqual(mab.live, mba.live, "seed \(seed): commutative")
            XCTAssertEqual(mab.history, mba.history, "seed \(seed): the same history")
            XCTAssertEqual(try PagedVault.open(path: ab, secret: secret).verify().problems, [], "seed \(seed)")
            // Nothing lost: every live version of either side is live or kept.
            for side in [a, bb] {
                for (id, s) in side.live {
                    let history = try PagedVault.open(path: ab, secret: secret).history(of: id).map(\.version)
                    let kept = mab.live[id]?.version == s.version || history.contains(s.version)
                    XCTAssertTrue(kept, "seed \(seed): a version of \(id) was lost")
                }
            }
            // A deletion on one side of an item the other left alone stays a deletion.
            let baseLive = try snapshot(base).live
            for (id, s) in baseLive {
                let inA = a.live[id]
                let inB = bb.live[id]
                if inA == nil, inB?.version == s.version {
                    XCTAssertNil(mab.live[id], "seed \(seed): a deleted item came back")
                }
                if inB == nil, inA?.version == s.version {
                    XCTAssertNil(mab.live[id], "seed \(seed): a deleted item came back")
                }
            }
            // One item per primary key.
            XCTAssertEqual(
                Set(mab.live.values.map { [$0.attributes["svce"], $0.attributes["acct"]] }).count, mab.live.count,
                "seed \(seed)")
            // Idempotent: merging the result with either input, or with the other result, changes no item.
            for other in [sides[0], sides[1], ba] {
                _ = try merge(base: base, ours: ab, theirs: other)
                XCTAssertEqual(try snapshot(ab).live, mab.live, "seed \(seed): merging again changed items")
            }
            _ = try merge(base: nil, ours: ab, theirs: ba)
            XCTAssertEqual(try snapshot(ab).live, mab.live, "seed \(seed): merge --into changed items")
        }
    }
}

extension PagedMergeTests {
    /// V8: a copy whose last change is older than the tombstone horizon is reported, so that the caller can
    /// warn that deletions it missed may come back. (One whose clock runs more than a day ahead is refused:
    /// ClockBoundTests, V5.1.)
    func testACopyOlderThanTheTombstoneHorizonIsReported() throws {
        let base = dir + "/base.kcv"
        try PagedVault.create(
            path: base, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema,
            retention: Retention(keep: 10, days: 90, tombstoneDays: 30))
        let old = try copy(base, "old.kcv")
        let v = try PagedVault.open(path: old, secret: secret, mode: .write)
        // Its last change, 40 days ago.
        let fortyDaysAgo = HybridClock.nowMilliseconds() - 40 * 86_400_000
        try v.commit(now: { fortyDaysAgo }) { tx in _ = try tx.add(attributes: attrs("s", "a"), value: [1]) }
        let recent = try copy(base, "recent.kcv")
        let r = try PagedVault.open(path: recent, secret: secret, mode: .write)
        try r.commit { tx in _ = try tx.add(attributes: attrs("s", "b"), value: [2]) }
        XCTAssertTrue(try merge(base: base, ours: recent, theirs: old).theirsOlderThanTombstones)
        XCTAssertFalse(try merge(base: base, ours: old, theirs: recent).theirsOlderThanTombstones)
    }
}
