import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Version 2 writers under failure and at the edges of the merge rules: a failed write or sync anywhere, seeded
/// sweeps of edits with compactions and folds, a fold that would name one record twice, a wrong BASE, a BASE
/// under another schema, and classes without key attributes.
final class PagedWriteSweepTests: PagedTestCase {
    /// EIO at every write, sync and truncate of each version 2 writer in turn (a delta commit, a fold, a merge,
    /// compaction, rekey, a slot change): the file stays byte for byte as it was, no temporary file is left,
    /// and the instance that failed either commits next (and the file verifies) or refuses as replaced.
    func testAFailedWriteOrSyncAnywhereLeavesTheVault() throws {
        let base = try makeBase(items: 6)
        let theirs = try copy(base, "theirs.kcv")
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 3)
        try t.commit { tx in
            try tx.update(try item(t, "p1", "me"), value: Array("theirs".utf8))
            _ = try tx.add(attributes: attrs("theirs", "new"), value: Array("new".utf8))
        }
        try t.compact()  // its records are elsewhere: the merge copies and looks up
        let prepared = try copy(base, "prepared.kcv")
        let p = try PagedVault.open(path: prepared, secret: secret, mode: .write, writerID: 2)
        try p.commit { tx in try tx.update(try item(p, "p2", "me"), value: Array("ours".utf8)) }
        let operations: [(String, (PagedVault) throws -> Void)] = [
            ("delta commit", { v in try v.commit { tx in try tx.update(try self.item(v, "p3", "me"), value: [3]) } }),
            (
                "fold",
                { v in
                    try v.commit { tx in
                        for i in 0..<300 { _ = try tx.add(attributes: self.attrs("bulk", "\(i)"), value: [1]) }
                    }
                }
            ),
            (
                "merge",
                { v in
                    _ = try v.merge(
                        base: PagedVault.open(path: base, secret: self.secret),
                        theirs: PagedVault.open(path: theirs, secret: self.secret))
                }
            ),
            ("compact", { try $0.compact() }),
            ("rekey", { try $0.rekey(slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))]) }),
            (
                "changeSlots",
                { try $0.changeSlots(remove: [], add: [.keyFile(SecureBytes(copying: Recipes.otherKeyFile))]) }
            )
        ]
        for (name, operation) in operations {
            var point = 1
            while true {
                let path = try copy(prepared, "work.kcv")
                let before = try Recipes.read(path)
                let listing = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
                let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 2)
                let injector = FaultInjectionTests.Injector(failAt: point)
                injector.install()
                let result = Result { try operation(v) }
                File.faults = nil
                guard injector.failed else {
                    XCTAssertNoThrow(try result.get(), name)
                    break
                }
                let at = "\(name), EIO at operation \(point)"
                XCTAssertThrowsError(try result.get(), at)
                XCTAssertEqual(try Recipes.read(path), before, at)
                XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), listing, at)
                do {
                    try v.commit { tx in _ = try tx.add(attributes: self.attrs("after", "failure"), value: [9]) }
                    XCTAssertEqual(try PagedVault.open(path: path, secret: secret).verify().problems, [], at)
                } catch let e as VaultError {
                    XCTAssertTrue(e.context.contains("replaced"), "\(at): the next commit: \(e)")
                }
                point += 1
            }
            XCTAssertGreaterThan(point, 2, name)
        }
    }

    /// Seeded edits on two copies with what the merge tests' runs leave out: a side compacted between rounds,
    /// rounds large enough to fold, adds and moves onto keys the other side uses, deletes then re-adds of a
    /// key; then both orders merged, checked (commutative, nothing lost, verifies, idempotent), and each result
    /// folded and verified again.
    func testSeededEditsWithCompactionsAndFolds() throws {
        for seed in 1...5 {
            var rng = SplitMix64(state: UInt64(seed) &* 7919)
            let base = try makeBase("base-\(seed).kcv", items: 30)
            var sides: [String] = []
            for (n, writer) in [("a-\(seed).kcv", UInt64(2)), ("b-\(seed).kcv", 3)] {
                let path = try copy(base, n)
                let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: writer)
                for round in 0..<4 {
                    if rng.below(3) == 0 { try v.compact() }
                    var all: [Item] = []
                    try v.forEachItem {
                        all.append($0)
                        return true
                    }
                    var taken = Set(all.map { [$0.attributes["svce"], $0.attributes["acct"]] })
                    func free(_ a: Attributes) -> Bool { taken.insert([a["svce"], a["acct"]]).inserted }
                    let big = rng.below(4) == 0
                    try v.commit { tx in
                        if big {
                            for i in 0..<260 {
                                _ = try tx.add(
                                    attributes: self.attrs("bulk\(writer)", "\(round)-\(i)"), value: [UInt8(i % 256)])
                            }
                        }
                        for _ in 0..<(1 + rng.below(8)) where !all.isEmpty {
                            let it = all.remove(at: rng.below(all.count))
                            switch rng.below(6) {
                            case 0:
                                try tx.delete(it)
                                // The key freed, sometimes taken again at once by a new item.
                                if rng.below(2) == 0 {
                                    _ = try tx.add(attributes: it.attributes, value: [UInt8(writer), 0xEE])
                                }
                            case 1: try tx.update(it, value: [UInt8(truncatingIfNeeded: rng.below(256)), UInt8(round)])
                            case 2:
                                let a = self.attrs("p\(rng.below(40))", "me")
                                if free(a) { try tx.update(it, attributes: a) }
                            case 3:
                                let a = self.attrs("p\(rng.below(40))", "me")
                                if free(a) { _ = try tx.add(attributes: a, value: [UInt8(writer), UInt8(round)]) }
                            case 4:
                                let a = self.attrs("p\(rng.below(40))", "me", label: "both \(writer)")
                                if free(a) { try tx.update(it, attributes: a, value: [UInt8(writer)]) }
                            default:
                                var a = it.attributes
                                a["labl"] = .string("l\(round)-\(writer)")
                                try tx.update(it, attributes: a)
                            }
                        }
                    }
                    usleep(UInt32(rng.below(1500)))
                }
                sides.append(path)
            }
            try checkBothOrders(base: base, sides[0], sides[1])
            try checkBothOrders(base: nil, sides[0], sides[1])
            let ab = try copy(sides[0], "ab-\(seed).kcv")
            try merge(base: base, ours: ab, theirs: sides[1])
            let v = try PagedVault.open(path: ab, secret: secret, mode: .write, writerID: 2)
            try v.commit { tx in for i in 0..<300 { _ = try tx.add(attributes: self.attrs("fold", "\(i)"), value: [1]) }
            }
            XCTAssertEqual(v.verify().problems, [], "seed \(seed): folded after the merge")
            try v.compact()
            XCTAssertEqual(v.verify().problems, [], "seed \(seed): compacted after the merge")
        }
    }

    /// Two entries naming one record at two extents (which the reader of V6 does not cross-check between
    /// delta segments, and which a merge of a forged THEIRS could still leave): the fold that would put them in
    /// one leaf, whose record table cannot hold the id twice, is refused instead of writing a page no reader
    /// opens; the file stays as it was.
    func testAFoldNeverWritesALeafNamingOneRecordTwice() throws {
        let path = try makeBase(items: 3)
        let v = try PagedVault.open(path: path, secret: secret)
        try forgeEntry(path, try item(v, "p2", "me")) { item, _ in item.location.offset += 1 }
        let before = try Recipes.read(path)
        let w = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 2)
        XCTAssertThrowsError(
            try w.commit { tx in for i in 0..<300 { _ = try tx.add(attributes: self.attrs("bulk", "\(i)"), value: [1]) }
            }
        ) {
            XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex, "\($0)")
        }
        XCTAssertEqual(try Recipes.read(path), before)
        XCTAssertNoThrow(try PagedVault.open(path: path, secret: secret).read(try item(w, "p1", "me")))
    }

    /// BASE must be the common ancestor, but nothing checks it: with OURS itself given as BASE (arguments in the
    /// wrong order, a misconfigured merge driver), THEIRS's older state of an item counted as THEIRS's change and
    /// replaced OURS's newer version without keeping it (with `keep` 0 nothing else holds it): the newest value
    /// was gone. A side's state older than BASE's cannot be a change of that side (V5: every change is newer than
    /// all the vault held), so it no longer wins.
    func testAWrongBaseNeverLosesOursNewestVersion() throws {
        let base = try makeBase(items: 2, retention: Retention(keep: 0, days: 90, tombstoneDays: 90))
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        let o = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 2)
        try o.commit { tx in try tx.update(try item(o, "p1", "me"), value: Array("newest".utf8)) }
        let wrongBase = try copy(ours, "wrong-base.kcv")
        try merge(base: wrongBase, ours: ours, theirs: theirs)
        let v = try PagedVault.open(path: ours, secret: secret)
        XCTAssertEqual(try v.read(try item(v, "p1", "me")), Array("newest".utf8))
    }

    /// V9: inputs under another schema are refused naming the side. THEIRS's schema was compared, BASE's was
    /// not: a BASE keyed by another schema (a copy of the same version 1 vault upgraded with another schema)
    /// had its keys read under OURS's schema.
    func testABaseUnderAnotherSchemaIsRefusedNamingBase() throws {
        let v1 = dir + "/v1.kcv"
        try Vault.create(
            path: v1, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: .version1
        ) { tx in
            try tx.add(attributes: Attributes(["svce": .string("s"), "acct": .string("a")]), value: .bytes([1]))
        }
        let ours = try copy(v1, "ours.kcv")
        let base = try copy(v1, "base.kcv")
        try Vault.open(path: ours, secret: secret, mode: .write).upgrade(schema: schema, writerID: 2)
        let other = IndexSchema(classes: ["genp": ClassSchema(keyAttributes: [("acct", .string(""))])], indexed: [])
        try Vault.open(path: base, secret: secret, mode: .write).upgrade(schema: other, writerID: 2)
        let theirs = try copy(ours, "theirs.kcv")
        XCTAssertThrowsError(try merge(base: base, ours: ours, theirs: theirs)) { e in
            XCTAssertEqual((e as? VaultError)?.code, .invalidArgument, "\(e)")
            // The side is a field of the error (callers never read it off the message), and the message says it.
            XCTAssertEqual((e as? VaultError)?.side, .base, "\(e)")
            XCTAssertTrue("\(e)".contains("BASE (\(base))"), "\(e)")
        }
    }

    /// A class the schema gives no key attributes (kcar pack's schema keys only `genp`) has no primary key: its
    /// item keys are equal up to the item id for every item. Items of such a class added on the two sides are
    /// two items, and both stay live.
    func testItemsOfAClassWithoutKeyAttributesNeverShareAPrimaryKey() throws {
        let base = try makeBase(items: 1)
        let ours = try copy(base, "ours.kcv")
        let theirs = try copy(base, "theirs.kcv")
        for (path, writer) in [(ours, UInt64(2)), (theirs, 3)] {
            let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: writer)
            try v.commit { tx in
                _ = try tx.add(
                    class: .internetPassword, attributes: Attributes(["srvr": .string("host\(writer)")]),
                    value: [UInt8(writer)])
            }
            usleep(1500)
        }
        let report = try merge(base: base, ours: ours, theirs: theirs)
        XCTAssertEqual(report.sharedKeys, 0)
        var inet = 0
        try PagedVault.open(path: ours, secret: secret).forEachItem { item in
            if item.itemClass == .internetPassword { inet += 1 }
            return true
        }
        XCTAssertEqual(inet, 2, "an internet password added on one side was deleted by the merge")
    }
}
