import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Issue 9 (hardening, round 2), the vault area: each test crafts the attack and fails on the code before it.
final class HardeningTests: VaultTestCase {
    var hostileSecret: UnlockSecret { .keyFile(SecureBytes(copying: HostileVaults.key)) }

    func write(_ v: CraftedVault, _ name: String = "v.kcv") throws -> String {
        let path = dir + "/" + name
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(v.bytes)))
        return path
    }

    func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    func code(_ body: () throws -> Void) -> VaultError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? VaultError)?.code
        }
    }

    // MARK: item 2c, records that inflate past what they declare

    /// A record decoded whole stops at its weight: the old code inflated every chunk first (40 MiB here, 4 GiB
    /// for a 4 MB file), then found the length wrong.
    func testBatchDecodingStopsAtTheRecordsWeight() throws {
        let vault = try Vault.open(
            path: try write(try HostileVaults.bombVault(records: 3, chunksPerRecord: 40)), secret: hostileSecret)
        let batches = Vault.recordBatches(vault.items)
        XCTAssertEqual(batches.count, 1, "three small records, one batch")
        let batch = batches[0]
        XCTAssertLessThan(Vault.weight(batch[0]), 64 << 10, "the stored bytes, 40 chunks of about 1 KiB")
        let decoded = try Vault.decodeRecords(
            batch, raws: try vault.readRecords(batch), keys: vault.keys, vaultID: vault.header.vaultID)
        XCTAssertEqual(decoded.count, 3)
        XCTAssertTrue(
            decoded.allSatisfy { $0 == nil }, "over its weight, a record is handed back to be streamed, not inflated")
        // Streamed, it stops at the first chunk past its member table.
        XCTAssertEqual(
            code { try vault.readValues(of: vault.items, begin: { _, _ in }, bytes: { _ in }, end: { _ in }) },
            .damagedRecord)
        let report = vault.verify()
        XCTAssertEqual(report.problems.map(\.code), [.damagedRecord, .damagedRecord, .damagedRecord])
        // Stopped after the first chunk (the old code inflated all 40 first).
        XCTAssertTrue(report.problems[0].context.contains("holds 1048576 bytes"), "\(report.problems[0])")
    }

    /// `Blocks.openAll` refuses, before inflating it, the chunk that passes the limit.
    func testOpenAllStopsBeforeTheChunkThatPassesTheLimit() throws {
        let vault = try Vault.open(
            path: try write(try HostileVaults.bombVault(records: 1, chunksPerRecord: 3)), secret: hostileSecret)
        let item = vault.items[0]
        let raw = try vault.readRecords([[item]])[0]
        let key = StreamKey.record(vault.keys, vaultID: vault.header.vaultID, recordID: item.location.recordID)
        let fail = { (m: String) in VaultError(.damagedRecord, m) }
        XCTAssertEqual(try Blocks.openAll(raw, key: key, limit: 3 << 20, fail: fail)?.count, 3 << 20)
        XCTAssertNil(try Blocks.openAll(raw, key: key, limit: (3 << 20) - 1, fail: fail))
        XCTAssertNil(try Blocks.openAll(raw, key: key, limit: 1 << 20 - 1, fail: fail))
    }

    // MARK: item 2d, index chains

    /// The chain's segments share one budget: 9 segments of 32 MiB each are within INDEX_MAX one by one, and
    /// refused together (the old code read all of them and held the items they put).
    func testIndexChainIsBoundedAsAWhole() throws {
        let path = try write(try HostileVaults.chainVault(segments: 9, itemsPerSegment: 2))
        XCTAssertEqual(code { _ = try Vault.open(path: path, secret: hostileSecret) }, .damagedIndex)
        // Fewer segments, within the chain's budget, open.
        let fine = try write(try HostileVaults.chainVault(segments: 3, itemsPerSegment: 1), "fine.kcv")
        XCTAssertEqual(try Vault.open(path: fine, secret: hostileSecret).count, 3)
    }

    /// A segment stores at least 16 bytes per operation (its random item id): made-up, compressible ids that
    /// put 4,000,000 items in 9 MB (1.7 GiB to list before) are refused from the count; random-looking ones
    /// open.
    func testASegmentHoldsAtMostOneOperationPer16StoredBytes() throws {
        let made = try write(try HostileVaults.manyItems(5_000))
        XCTAssertEqual(code { _ = try Vault.open(path: made, secret: hostileSecret) }, .damagedIndex)
        let random = try write(try HostileVaults.manyItems(5_000, salted: true), "r.kcv")
        XCTAssertEqual(try Vault.open(path: random, secret: hostileSecret).count, 5_000)
    }

    /// Operations are counted over the chain, before a segment's are decoded.
    func testIndexOperationsAreCountedOverTheChain() throws {
        var ops = Limits.chainOpsMax - 1
        let segment = IndexCodec.encode([])
        try IndexCodec.forEach(segment, checkpoint: true, budget: &ops) { _ in }
        let two: [UInt8] = [2] + [UInt8](repeating: 0, count: 40)
        XCTAssertEqual(code { try IndexCodec.forEach(two, checkpoint: true, budget: &ops) { _ in } }, .damagedIndex)
    }

    /// Writers keep to the chain's budgets: a commit whose delta would pass them is a checkpoint.
    func testWriterStartsACheckpointBeforeTheChainPassesItsBudget() throws {
        let path = dir + "/w.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("s", "a"), value: .bytes([1]))
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        try vault.commit(options: .init(autoCompact: false)) { tx in
            try tx.add(attributes: attrs("s", "b"), value: .bytes([2]))
        }
        let log = try XCTUnwrap(vault.engine as? LogEngine, "a version 1 file")
        XCTAssertFalse(log.tail.trailer.checkpoint)
        log.tail.chainOps = Limits.chainOpsMax
        try vault.commit(options: .init(autoCompact: false)) { tx in
            try tx.add(attributes: attrs("s", "c"), value: .bytes([3]))
        }
        XCTAssertTrue(log.tail.trailer.checkpoint)
        XCTAssertEqual(log.tail.chainOps, 3)
    }

    // MARK: item 3b, the backward trailer search

    /// Appended trailer candidates (magic and fields right for their position, MAC wrong) cost a MAC each:
    /// the search gives up after TRAILER_PROBES_MAX of them.
    func testTrailerSearchGivesUpAfterTheProbeLimit() throws {
        let junk = try write(try HostileVaults.trailerJunk(bytes: 96 * Limits.trailerProbesMax, structured: true))
        XCTAssertEqual(code { _ = try Vault.open(path: junk, secret: hostileSecret) }, .damagedIndex)
        // One fewer: the search goes on and finds the vault's last commit. Junk that ends in a whole trailer
        // whose MAC fails is damage, not an interrupted write (SPEC.md §8, issue 22): 3 more bytes make its end no
        // trailer, so that the search is what is tested.
        var fewerJunk = try HostileVaults.trailerJunk(bytes: 96 * (Limits.trailerProbesMax - 1), structured: true)
        XCTAssertEqual(
            code { _ = try Vault.open(path: try self.write(fewerJunk, "d.kcv"), secret: hostileSecret) }, .damagedIndex)
        fewerJunk.body += [0x5A, 0x5A, 0x5A]
        let fewer = try write(fewerJunk, "f.kcv")
        let vault = try Vault.open(path: fewer, secret: hostileSecret)
        XCTAssertEqual(vault.count, 1)
        XCTAssertEqual(vault.incompleteBytes, UInt64(96 * (Limits.trailerProbesMax - 1) + 3))
        // The bare magic, repeated, is no candidate at all: scanned past without a MAC (but for the 96 bytes at
        // the end, whose magic makes them a whole trailer: damage, as above).
        var magicJunk = try HostileVaults.trailerJunk(bytes: 1 << 20, structured: false)
        XCTAssertEqual(
            code { _ = try Vault.open(path: try self.write(magicJunk, "n.kcv"), secret: hostileSecret) }, .damagedIndex)
        magicJunk.body += [0x5A, 0x5A, 0x5A]
        let magic = try write(magicJunk, "m.kcv")
        XCTAssertEqual(try Vault.open(path: magic, secret: hostileSecret).incompleteBytes, (1 << 20) + 3)
    }

    func testTrailerCandidateChecksFieldsAgainstThePosition() throws {
        let v = try HostileVaults.oneItem()
        let raw = v.body.suffix(96)
        let p = UInt64(v.body.count - 96)
        XCTAssertNotNil(Trailer.candidate(raw, at: p))
        XCTAssertNil(Trailer.candidate(raw, at: p + 1), "the index must end where the trailer starts")
        var flipped = Array(raw)
        flipped[53] = 1
        XCTAssertNil(Trailer.candidate(flipped[...], at: p), "reserved flag bits")
    }

    // MARK: item 8, arithmetic on the file's numbers

    /// A vault at generation 2^64-1 (past GENERATION_MAX: a key holder's file) takes no more commits: refused
    /// before a byte is written (the old code trapped, and `add` left an incomplete commit), and verify says it
    /// breaks the writers' rule. A compaction starts its generations again at 1 (SPEC.md §8), so the vault can
    /// be written again (it could not, before: a clone that took such a file through git was stuck).
    func testLastGenerationRefusesCommitsUntilARewriteStartsAgainAtOne() throws {
        let path = try write(try HostileVaults.lastGeneration())
        let before = try bytes(path)
        let vault = try Vault.open(path: path, secret: hostileSecret, mode: .write)
        XCTAssertEqual(vault.generation, .max)
        XCTAssertEqual(
            code { try vault.commit { tx in try tx.add(attributes: self.attrs("s", "b"), value: .bytes([1])) } },
            .invalidArgument)
        XCTAssertEqual(try bytes(path), before)
        let dirEntries = try FileManager.default.contentsOfDirectory(atPath: dir)
        XCTAssertEqual(dirEntries, ["v.kcv"], "no temporary file left")
        XCTAssertEqual(vault.verify().problems.map(\.code), [.damagedIndex])
        let items = vault.count
        try vault.compact()
        XCTAssertEqual(vault.generation, 1)
        try vault.commit { tx in try tx.add(attributes: self.attrs("s", "b"), value: .bytes([1])) }
        XCTAssertEqual(vault.generation, 2)
        XCTAssertEqual(vault.count, items + 1)
        XCTAssertTrue(try Vault.open(path: path, secret: hostileSecret).verify().isIntact)
    }

    /// Item sizes are the index's word until a record proves them: 65,537 items of 2^48 bytes, whose sizes sum
    /// past 2^64, are batched and refused as damaged, not trapped on.
    func testHugeDeclaredSizesAreRefusedWhenRead() throws {
        let vault = try Vault.open(path: try write(try HostileVaults.hugeSizes(items: 65_537)), secret: hostileSecret)
        XCTAssertEqual(vault.count, 65_537)
        XCTAssertEqual(
            code { try vault.readValues(of: vault.items, begin: { _, _ in }, bytes: { _ in }, end: { _ in }) },
            .damagedRecord)
        XCTAssertFalse(vault.verify().isIntact)
    }

    /// A member table whose sizes fill 64 bits (65,535 of 2^48 and one of 2^48 - 1): the record would be
    /// longer than 2^64 bytes with its table, which the old code computed with a trapping addition.
    func testMemberSizesThatOverflowWithTheTableAreRefused() throws {
        let max = Limits.valueMax
        var members = (0..<Limits.membersMax - 1).map { (id: ItemID(HostileVaults.id($0, 1)), size: max) }
        members.append((ItemID(HostileVaults.id(Limits.membersMax, 1)), max - 1))
        let fail = { (m: String) in VaultError(.damagedRecord, m) }
        XCTAssertEqual(code { _ = try MemberTable.parse(MemberTable.encode(members), fail: fail) }, .damagedRecord)
        members[0].size = max - 2_000_000
        XCTAssertNotNil(try MemberTable.parse(MemberTable.encode(members), fail: fail))
    }

    // MARK: item 15a, stale item handles

    func testStaleHandlesFailClearly() throws {
        let path = dir + "/s.kcv"
        var a: ItemID!
        var b: ItemID!
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            a = try tx.add(attributes: attrs("s", "a"), value: .bytes(Array("old a".utf8)))
            b = try tx.add(attributes: attrs("s", "b"), value: .bytes(Array("old b".utf8)))
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        let oldA = try XCTUnwrap(vault.item(a))
        let oldB = try XCTUnwrap(vault.item(b))
        try vault.commit(options: .init(autoCompact: false)) { tx in
            try tx.update(a, value: .bytes(Array("new a".utf8)))
            try tx.delete(b)
        }
        XCTAssertEqual(code { _ = try vault.read(oldA) }, .staleItem, "the old code returned the old value")
        XCTAssertEqual(code { _ = try vault.read(oldB) }, .staleItem, "the old code returned the deleted value")
        XCTAssertEqual(
            code { try vault.readValues(of: [oldA], begin: { _, _ in }, bytes: { _ in }, end: { _ in }) }, .staleItem)
        XCTAssertEqual(try vault.read(try XCTUnwrap(vault.item(a))), Array("new a".utf8))
        // An attribute change keeps the value: the handle stays current. A compaction that copies the record
        // keeps it current too (the old code read the record's old offset and reported it damaged).
        let current = try XCTUnwrap(vault.item(a))
        try vault.commit(options: .init(autoCompact: false)) { tx in
            try tx.update(a, attributes: self.attrs("s", "renamed"))
        }
        XCTAssertEqual(try vault.read(current), Array("new a".utf8))
        try vault.compact()
        XCTAssertTrue(vault.verify().isIntact)
        XCTAssertEqual(try vault.read(current), Array("new a".utf8))
    }

    /// A handle that the last lookup by key returned is read without a second lookup only while nothing that
    /// lookup read has changed: a commit of this instance (a new value, a delete, a new attribute), another
    /// instance's commit seen at a refresh, or a compaction between the lookup and the read is still seen.
    func testAHandleFromTheLastLookupIsCheckedAfterAnyChange() throws {
        let path = dir + "/l.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)]) { tx in
            for i in 0..<300 { try tx.add(attributes: self.attrs("s", "a\(i)"), value: .bytes([UInt8(i & 0xFF)])) }
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write, itemsOnDemand: true)
        let other = try Vault.open(path: path, secret: secret, mode: .write, itemsOnDemand: true)
        let quiet = WriteOptions(autoCompact: false)
        func lookup(_ account: String) throws -> Item {
            try XCTUnwrap(vault.items(class: .genericPassword, key: attrs("s", account)).first)
        }
        var h = try lookup("a1")
        XCTAssertEqual(try vault.read(h), [1])
        try vault.commit(options: quiet) { tx in try tx.update(h.id, value: .bytes([101])) }
        XCTAssertEqual(code { _ = try vault.read(h) }, .staleItem, "a new value, this instance")
        h = try lookup("a2")
        try vault.commit(options: quiet) { tx in try tx.delete(h.id) }
        XCTAssertEqual(code { _ = try vault.read(h) }, .staleItem, "deleted, this instance")
        h = try lookup("a3")
        try other.commit(options: quiet) { tx in try tx.update(h.id, value: .bytes([103])) }
        XCTAssertEqual(try vault.read(h), [3], "not refreshed: the vault as this instance last saw it")
        try vault.refresh()
        XCTAssertEqual(code { _ = try vault.read(h) }, .staleItem, "a new value, another instance")
        h = try lookup("a4")
        try other.commit(options: quiet) { tx in try tx.delete(h.id) }
        try vault.refresh()
        XCTAssertEqual(code { _ = try vault.read(h) }, .staleItem, "deleted, another instance")
        // An attribute change keeps the value: the handle stays current, its item is the one found now.
        h = try lookup("a5")
        try vault.commit(options: quiet) { tx in try tx.update(h.id, attributes: self.attrs("s", "b5")) }
        XCTAssertEqual(try vault.read(h), [5])
        // A compaction moves the records: the handle is checked against the new file and stays current.
        h = try lookup("a6")
        try other.compact()
        try vault.refresh()
        XCTAssertEqual(try vault.read(h), [6])
        h = try lookup("a7")
        try vault.commit(options: quiet) { tx in try tx.update(h.id, value: .bytes([107])) }
        try vault.compact()
        XCTAssertEqual(code { _ = try vault.read(h) }, .staleItem, "a new value, then a compaction")
        XCTAssertEqual(try vault.read(try lookup("a7")), [107])
        XCTAssertTrue(vault.verify().isIntact)
    }

    /// Items read with the stamp they were given at are not looked up again while it stands; once anything
    /// changed (a commit, a refresh), they are, and a stale one is refused as before. A stamp is never
    /// taken twice, by this instance or by the one a reopen makes.
    func testItemsGivenAtAStampAreCheckedOnceItMoves() throws {
        let path = dir + "/g.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)]) { tx in
            for i in 0..<50 { try tx.add(attributes: self.attrs("s", "a\(i)"), value: .bytes([UInt8(i)])) }
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write, itemsOnDemand: true)
        func readAll(_ items: [Item], _ stamp: UInt64?) throws -> [[UInt8]] {
            var out: [[UInt8]] = []
            try vault.readValues(
                of: items, givenAt: stamp, begin: { _, _ in out.append([]) },
                bytes: { out[out.count - 1] += $0 }, end: { _ in })
            return out
        }
        var stamp = vault.indexStamp
        var items: [Item] = []
        try vault.forEachItem {
            items.append($0)
            return true
        }
        XCTAssertEqual(vault.indexStamp, stamp, "reading changes nothing")
        XCTAssertEqual(try readAll(items, stamp).count, 50)
        try vault.commit(options: WriteOptions(autoCompact: false)) { tx in
            try tx.update(try XCTUnwrap(items.first { $0.account == "a7" }).id, value: .bytes([107]))
        }
        XCTAssertNotEqual(vault.indexStamp, stamp)
        XCTAssertEqual(code { _ = try readAll(items, stamp) }, .staleItem, "the stamp moved: looked up, refused")
        stamp = vault.indexStamp
        items = []
        try vault.forEachItem {
            items.append($0)
            return true
        }
        let other = try Vault.open(path: path, secret: secret, mode: .write)
        try other.compact()
        try vault.refresh()
        XCTAssertNotEqual(vault.indexStamp, stamp, "a new instance after the compaction")
        XCTAssertEqual(
            try readAll(items, stamp).map { $0[0] }.sorted(), (0..<50).map { $0 == 7 ? 107 : UInt8($0) }.sorted())
    }

    // MARK: item 10, dead space and failed automatic compactions

    /// A failed automatic compaction is reported (the commit stood): to the handler the CLI sets, and in
    /// `lastCompactionError`. The old code kept it in the property only, which no caller read.
    func testAFailedAutomaticCompactionIsReported() throws {
        let path = dir + "/c.kcv"
        var big: ItemID!
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            big = try tx.add(attributes: attrs("s", "big"), value: .bytes(Recipes.noise(2 << 20, seed: 1)))
            try tx.add(attributes: attrs("s", "small"), value: .bytes([1]))
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        try withFailingCompactions { seen in
            try vault.commit { tx in try tx.delete(big) }
            XCTAssertEqual(vault.count, 1, "the commit stood")
            XCTAssertEqual(vault.lastCompactionError?.code, .io)
            XCTAssertEqual(seen.reports.map(\.0), [path])
            XCTAssertTrue(vault.shouldCompact, "the dead space is still there")
            File.faults = nil
            try vault.compact()
            XCTAssertEqual(vault.deadBytes, 0)
        }
    }

    /// A deleted value that shares a solid record with live ones counts as dead space (the old code counted
    /// the whole record live: 0 dead bytes), and `compact` removes it from the file.
    func testDeletedMembersOfLiveRecordsCountAsDead() throws {
        let path = dir + "/d.kcv"
        let secretValue = Array("the deleted secret, 0123456789".utf8)
        var gone: ItemID!
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1, options: .init(level: 0)) {
            tx in
            gone = try tx.add(attributes: attrs("s", "a"), value: .bytes(secretValue))
            try tx.add(attributes: attrs("s", "b"), value: .bytes(Array("kept".utf8)))
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        try vault.commit { tx in try tx.delete(gone) }
        XCTAssertGreaterThanOrEqual(vault.deadBytes, UInt64(secretValue.count))
        XCTAssertFalse(vault.shouldCompact, "below the threshold: it stays until compacted")
        try vault.compact(options: .init(level: 0))
        XCTAssertEqual(vault.deadBytes, 0)
        XCTAssertEqual(vault.count, 1)
    }

    // MARK: SPEC §4/§9, unknown non-critical header fields

    /// Every rewrite keeps an unknown non-critical field, bytes unchanged (the old passwd and rekey dropped it).
    func testEveryRewriteKeepsUnknownNonCriticalFields() throws {
        let crafted = try CraftedVault(
            keyFile: HostileVaults.key, group: "g", random: DeterministicRandom(seed: [UInt8](repeating: 4, count: 32)),
            extraFields: [(0x0042, Array("future".utf8))])
        var v = crafted
        let recordID = HostileVaults.id(0, 9)
        let itemID = HostileVaults.id(0, 1)
        let (offset, length) = HostileVaults.smallRecord(&v, id: recordID, member: itemID, value: [7])
        let index = v.appendIndex(
            CraftedVault.indexPlaintext([
                (
                    1, itemID,
                    HostileVaults.entry(
                        service: "s", account: "a", size: 1,
                        recordID: recordID, offset: offset, length: length)
                )
            ]),
            generation: 1)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: index, previous: nil, itemCount: 1, checkpoint: true, chain: 0)
        let path = try write(v)
        let vault = try Vault.open(path: path, secret: hostileSecret, mode: .write)
        XCTAssertEqual(vault.header.unknownFields, [0x0042])
        let k2 = SecureBytes(copying: [UInt8](repeating: 8, count: 32))
        try vault.changeSlots(remove: [], add: [.keyFile(k2)])
        XCTAssertEqual(try Vault.open(path: path, secret: .keyFile(k2)).header.unknownFields, [0x0042])
        try vault.rekey(slots: [.keyFile(SecureBytes(copying: HostileVaults.key))])
        XCTAssertEqual(try Vault.open(path: path, secret: hostileSecret).header.unknownFields, [0x0042])
        try vault.compact()
        let reopened = try Vault.open(path: path, secret: hostileSecret)
        XCTAssertEqual(reopened.header.unknownFields, [0x0042])
        XCTAssertEqual(reopened.header.unknown.map(\.value), [Array("future".utf8)])
        XCTAssertEqual(try reopened.read(reopened.items[0]), [7])
    }

    // MARK: SPEC §3/§6, the member table counts toward SOLID_TARGET

    /// 20,000 empty values made one record of 340 KB of member table (70,000: 1.1 MB); now a record is closed
    /// once its table reaches SOLID_TARGET too.
    func testMemberTablesCountTowardTheSolidTarget() throws {
        let path = dir + "/e.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1, options: .init(level: 0)) {
            tx in
            for i in 0..<20_000 { try tx.add(attributes: attrs("s", "\(i)"), value: .bytes([])) }
        }
        let vault = try Vault.open(path: path, secret: secret)
        let lengths = Dictionary(grouping: vault.unorderedItems, by: { $0.location.recordID }).values.map {
            $0[0].location.length
        }
        XCTAssertEqual(lengths.count, 2)
        XCTAssertLessThan(lengths.max() ?? 0, UInt64(Limits.solidTarget) + 1024)
    }

    // MARK: SPEC §8, a later first commit hiding earlier ones

    /// A second "first" commit (commit start 0, no previous trailer) after a whole commit: its records region
    /// holds the earlier commit, trailer included, which the walk back never reaches. The old verify said
    /// intact; now the trailer inside the records is reported.
    func testVerifyFindsACommitHiddenInsideALaterFirstCommit() throws {
        var v = try HostileVaults.oneItem()
        let intact = try write(v, "intact.kcv")
        XCTAssertTrue(try Vault.open(path: intact, secret: hostileSecret).verify().isIntact)
        // The record of the one item is at body offset 0; the second first commit names it again.
        let first = try Vault.open(path: intact, secret: hostileSecret).items[0]
        let entry = HostileVaults.entry(
            service: "s", account: "a", size: first.size, recordID: first.location.recordID.bytes,
            offset: first.location.offset, length: first.location.length)
        let index = v.appendIndex(CraftedVault.indexPlaintext([(1, first.id.bytes, entry)]), generation: 2)
        v.appendTrailer(
            generation: 2, commitStart: 0, index: index, previous: nil, itemCount: 1, checkpoint: true, chain: 0)
        let vault = try Vault.open(path: try write(v), secret: hostileSecret)
        XCTAssertEqual(vault.generation, 2)
        let report = vault.verify()
        XCTAssertEqual(report.problems.map(\.code), [.damagedIndex])
        XCTAssertTrue(report.problems.first?.context.contains("generation 1") ?? false, "\(report.problems)")
    }
}
