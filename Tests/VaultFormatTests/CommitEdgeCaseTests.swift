import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Commits at their edges: a small then a large value for one item in one transaction, catching up with a
/// writer that cut an incomplete commit, slot changes against a concurrent one, a commit whose automatic
/// compaction fails, and a header's non-critical tag 0. Each test failed before its fix.
final class CommitEdgeCaseTests: VaultTestCase {

    func size(_ path: String) throws -> UInt64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as! NSNumber).uint64Value
    }

    /// in one transaction, a small value (kept in the open solid record) followed by a large value
    /// (> SOLID_MEMBER_MAX, closed into its own record at once) for the same item: the solid record is
    /// written last, so `finalize`'s "last in `written` wins" picks the older, small value.
    func testSmallThenLargeUpdateInOneTransactionKeepsTheLastValue() throws {
        let path = dir + "/order.kcv"
        var id: ItemID!
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            id = try tx.add(attributes: attrs("s", "a"), value: .bytes(Array("original".utf8)))
        }
        let large = Recipes.noise(Limits.solidMemberMax + 1000, seed: 9)
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        try vault.commit { tx in
            try tx.update(id, value: .bytes(Array("small, superseded".utf8)))
            try tx.update(id, value: .bytes(large))
        }
        let reopened = try Vault.open(path: path, secret: secret)
        let item = try XCTUnwrap(reopened.item(id))
        XCTAssertEqual(item.size, UInt64(large.count), "the index records the superseded value")
        XCTAssertTrue(try reopened.read(item) == large, "read back the superseded value")
    }

    /// Large values are queued behind the batches still sealing, not waited for (a core sat idle for each
    /// large file of a `pack`): each record is placed where its first batch is written, in both formats,
    /// with values whose record is exactly a batch, one byte more, several batches, and small values between
    /// them filling more batches than are sealed at once.
    func testLargeValuesQueuedBehindBatchesStillSealingAreWhereTheIndexSaysTheyAre() throws {
        let batch = CommitWriter.batchBytes
        // A value whose record (its one-member table, then the value) is exactly one batch.
        var exact = batch - 40
        while MemberTable.encode([(ItemID(Array(repeating: 1, count: 16)), UInt64(exact))]).count + exact < batch {
            exact += 1
        }
        let large = [Limits.solidMemberMax + 1, exact, exact + 1, 2 * batch + 17]
        let src = dir + "/large.bin"
        XCTAssertTrue(
            FileManager.default.createFile(atPath: src, contents: Data(Recipes.noise(2 * batch + 17, seed: 8))))
        for (n, format) in [NewVaultFormat.version1, .current()].enumerated() {
            let path = dir + "/queued-v\(n + 1).kcv"
            var expected: [String: [UInt8]] = [:]
            try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: format) { tx in
                for i in 0..<240 {
                    let name = "a\(i)"
                    if i % 60 == 59 {
                        let n = large[i / 60]
                        if n == 2 * batch + 17 {
                            let fd = open(src, O_RDONLY)
                            defer { close(fd) }
                            try tx.add(attributes: self.attrs("s", name), value: .fileDescriptor(fd, size: UInt64(n)))
                            expected[name] = Recipes.noise(2 * batch + 17, seed: 8)
                        } else {
                            expected[name] = Recipes.noise(n, seed: UInt8(i))
                            try tx.add(attributes: self.attrs("s", name), value: .bytes(expected[name]!))
                        }
                    } else {
                        expected[name] = Recipes.noise(100_000, seed: UInt8(i))
                        try tx.add(attributes: self.attrs("s", name), value: .bytes(expected[name]!))
                    }
                }
            }
            let v = try Vault.open(path: path, secret: secret)
            XCTAssertEqual(v.count, 240)
            for item in v.items {
                XCTAssertTrue(try v.read(item) == expected[item.account!], "v\(n + 1) \(item.displayName)")
            }
            XCTAssertTrue(v.verify().isIntact, "v\(n + 1)")
        }
    }

    /// Same, with the large value streamed from a descriptor (what a caller packing files would use).
    func testSmallThenStreamedUpdateInOneTransactionKeepsTheLastValue() throws {
        let path = dir + "/order-fd.kcv"
        var id: ItemID!
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            id = try tx.add(attributes: attrs("s", "a"), value: .bytes([1]))
        }
        let large = Recipes.noise(Limits.solidMemberMax + 1, seed: 4)
        let src = dir + "/large.bin"
        XCTAssertTrue(FileManager.default.createFile(atPath: src, contents: Data(large)))
        let fd = open(src, O_RDONLY)
        defer { close(fd) }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        try vault.commit { tx in
            try tx.update(id, value: .bytes([2]))
            try tx.update(id, value: .fileDescriptor(fd, size: UInt64(large.count)))
        }
        let reopened = try Vault.open(path: path, secret: secret)
        XCTAssertTrue(try reopened.read(try XCTUnwrap(reopened.item(id))) == large, "read back the superseded value")
    }

    /// `catchUp` takes the file as unchanged when its size equals `tail.end + incompleteBytes` and the
    /// trailer it knows is in place, without looking at the bytes after it. If another writer cut the
    /// incomplete commit and appended a commit of exactly that size, this writer then cuts that commit off.
    func testCatchUpDoesNotCutAnotherWritersCommitOfTheIncompleteSize() throws {
        let path = dir + "/catchup.kcv"
        var id: ItemID!
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            id = try tx.add(attributes: attrs("s", "a"), value: .bytes(Array("v0".utf8)))
        }
        let base = try size(path)
        let v1 = Recipes.noise(500, seed: 1)
        // A writer's commit whose trailer never became valid (crash): `commitBytes` incomplete bytes. The crash
        // leaves its trailer's MAC as zeros (its last block never reached the disk): a flipped byte there would be
        // damage, not an interrupted write (SPEC.md §8, issue 22).
        do {
            let crashed = try Vault.open(path: path, secret: secret, mode: .write)
            try crashed.commit(random: DeterministicRandom(seed: Recipes.seed(70))) { tx in
                try tx.update(id, value: .bytes(v1))
            }
        }
        let commitBytes = try size(path) - base
        let h = try XCTUnwrap(FileHandle(forUpdatingAtPath: path))
        h.seek(toFileOffset: try size(path) - 32)
        h.write(Data(count: 32))
        h.closeFile()

        // C opens now and sees the incomplete commit.
        let c = try Vault.open(path: path, secret: secret, mode: .write)
        XCTAssertEqual(c.incompleteBytes, commitBytes)
        // B makes a change of the same shape: it cuts the incomplete bytes and appends a commit of the same size.
        let v2 = Recipes.noise(500, seed: 2)
        let b = try Vault.open(path: path, secret: secret, mode: .write)
        try b.commit(random: DeterministicRandom(seed: Recipes.seed(70))) { tx in try tx.update(id, value: .bytes(v2)) }
        XCTAssertEqual(try size(path), base + commitBytes)
        XCTAssertEqual(try Vault.open(path: path, secret: secret).generation, 2)
        // C commits an unrelated change.
        try c.commit { tx in try tx.add(attributes: attrs("s", "other"), value: .bytes([7])) }
        let after = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(after.generation, 3, "B's commit (generation 2) was cut off by C")
        XCTAssertTrue(try after.read(try XCTUnwrap(after.item(id))) == v2, "B's committed value is lost")
    }

    /// `changeSlots(keep:)` takes slot indexes from the header this instance opened, but applies
    /// them to the header it catches up with under the lock. A concurrent slot change shifts the indexes, so a
    /// slot meant to be removed survives (or another one is dropped).
    func testChangeSlotsIndexesAreResolvedAgainstTheHeaderTheCallerSaw() throws {
        let path = dir + "/slots.kcv"
        let keys = (0..<4).map { i in SecureBytes(copying: (0..<32).map { UInt8(i * 40 + $0) }) }
        try Vault.create(path: path, group: "g", slots: keys.map { .keyFile($0) }, format: .version1) { tx in
            try tx.add(attributes: attrs("s", "a"), value: .bytes([1]))
        }
        let a = try Vault.open(path: path, secret: .keyFile(keys[1]), mode: .write)
        let b = try Vault.open(path: path, secret: .keyFile(keys[2]), mode: .write)
        try b.changeSlots(remove: [0], add: [])  // B removes slot 0
        try a.changeSlots(remove: [3], add: [])  // A removes slot 3 (keys[3]), as A saw the header
        XCTAssertThrowsError(
            try Vault.open(path: path, secret: .keyFile(keys[3])),
            "the slot A removed (keys[3]) still opens the vault")
        XCTAssertThrowsError(try Vault.open(path: path, secret: .keyFile(keys[0])))
    }

    /// `commit` documents that "on any error the file is cut back ... a failed commit leaves the vault
    /// as it was", but the automatic compaction runs after the commit is durable and its error is thrown from
    /// `commit`: the caller sees a failure for a change that was made (and a retry applies it twice). Any
    /// compaction failure does it (ENOSPC for the temporary copy, lock timeout, rename); here a damaged live
    /// record that the commit itself never reads.
    func testACommitThatThrowsLeavesTheVaultAsItWas() throws {
        let path = dir + "/autocompact.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("s", "small"), value: .bytes(Array("small value".utf8)))
        }
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        var big: ItemID!
        try v.commit { tx in
            big = try tx.add(attributes: attrs("s", "big"), value: .bytes(Recipes.noise(2 << 20, seed: 3)))
        }
        // Damage one byte inside the small item's record (body offset 0: the first commit's record).
        let h = try XCTUnwrap(FileHandle(forUpdatingAtPath: path))
        let at = UInt64(v.headerLength) + 40
        h.seek(toFileOffset: at)
        let byte = h.readData(ofLength: 1)[0]
        h.seek(toFileOffset: at)
        h.write(Data([byte ^ 1]))
        h.closeFile()
        var threw = false
        do {
            try v.commit { tx in try tx.delete(big) }
        } catch {
            threw = true
        }
        let after = try Vault.open(path: path, secret: secret)
        if threw {
            XCTAssertNotNil(after.item(big), "commit threw, but its change (the delete) was committed")
        }
    }

    /// a non-critical header field with tag 0x0000 is an unknown non-critical field that SPEC.md §4
    /// says a reader MUST skip; `Header.parse` starts `lastTag` at 0 and requires `tag > lastTag`, so it
    /// rejects it as "out of order" (damaged header).
    func testNonCriticalTagZeroIsSkipped() throws {
        var v = try CraftedVault(
            keyFile: Recipes.keyFile, group: "g", random: DeterministicRandom(seed: Recipes.seed(72)),
            extraFields: [(0x0000, [1, 2, 3])])
        let itemID = [UInt8](repeating: 0xA1, count: 16)
        let recordID = [UInt8](repeating: 0xB1, count: 16)
        let rec = v.appendRecord(
            id: recordID, blocks: [.stored(CraftedVault.recordPlaintext([(itemID, [7])]), index: 0, last: true)])
        let entry = CraftedVault.entry(
            strings: [("acct", "a"), ("svce", "s")], size: 1, recordID: recordID, offset: rec.0, length: rec.1)
        let idx = v.appendIndex(CraftedVault.indexPlaintext([(1, itemID, entry)]), generation: 1)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: idx, previous: nil, itemCount: 1, checkpoint: true, chain: 0)
        let path = dir + "/tag0.kcv"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(v.bytes)))
        let vault = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(vault.header.unknownFields, [0x0000])
    }
}
