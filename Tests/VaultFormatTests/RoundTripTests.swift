import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Round trips across sizes, commits, rewrites, and the edge sweeps (every prefix, every byte flip).
final class RoundTripTests: VaultTestCase {

    func testRoundTripAcrossSizes() throws {
        let c = Limits.chunkSize
        let sizes = [0, 1, 100, Limits.solidMemberMax, Limits.solidMemberMax + 1, c - 1, c, c + 1, 3 * c + 17]
        let path = dir + "/sizes.kcv"
        var values: [String: [UInt8]] = [:]
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(key)], format: .version1,
            random: DeterministicRandom(seed: Recipes.seed(40))
        ) { tx in
            for (i, n) in sizes.enumerated() {
                // Alternate compressible and incompressible content.
                let v = i % 2 == 0 ? Recipes.text(n, seed: UInt64(n)) : Recipes.noise(n, seed: UInt8(i))
                values["s\(i)"] = v
                try tx.add(attributes: attrs("sizes", "s\(i)"), value: .bytes(v))
            }
        }
        let vault = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(vault.count, sizes.count)
        for item in vault.items {
            XCTAssertEqual(try vault.read(item), values[item.account!], item.account!)
        }
        // The batch reader (decoded records, and records over 4 MiB streamed in one pass) agrees.
        var got: [ItemID: [UInt8]] = [:]
        var current: [UInt8] = []
        try vault.readValues(
            of: vault.items, begin: { _, _ in current = [] }, bytes: { current += $0 }, end: { got[$0.id] = current })
        for item in vault.items { XCTAssertEqual(got[item.id], values[item.account!], item.account!) }
        XCTAssertTrue(vault.verify().isIntact)
    }

    func testStreamingFromADescriptorMatchesBytes() throws {
        let src = dir + "/big.bin"
        let content = Recipes.text(Limits.chunkSize * 2 + 333, seed: 5) + Recipes.noise(Limits.chunkSize + 5, seed: 6)
        _ = FileManager.default.createFile(atPath: src, contents: Data(content))
        let fd = open(src, O_RDONLY)
        defer { close(fd) }
        let path = dir + "/stream.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("s", "big"), value: .fileDescriptor(fd, size: UInt64(content.count)))
        }
        let vault = try Vault.open(path: path, secret: secret)
        var streamed: [UInt8] = []
        var chunks = 0
        try vault.read(vault.items[0]) {
            streamed += $0
            chunks += 1
        }
        XCTAssertEqual(streamed, content)
        XCTAssertGreaterThan(chunks, 1, "values are streamed chunk by chunk")
    }

    func testSizeMismatchOfTheSourceFails() throws {
        let src = dir + "/short.bin"
        _ = FileManager.default.createFile(atPath: src, contents: Data(Recipes.noise(200_000, seed: 1)))
        let fd = open(src, O_RDONLY)
        defer { close(fd) }
        let path = dir + "/short.kcv"
        XCTAssertThrowsError(
            try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
                try tx.add(attributes: attrs("s", "x"), value: .fileDescriptor(fd, size: 300_000))
            })
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "no partial vault is left behind")
    }

    func testEveryPrefixOfASingleCommitVaultIsRejected() throws {
        let bytes = try Recipes.read(FixtureTests.fixture("one-item.kcv"))
        let path = dir + "/prefix.kcv"
        for n in 0..<bytes.count {
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes[0..<n]))
            XCTAssertThrowsError(try Vault.open(path: path, secret: secret), "prefix of \(n) bytes opened") { e in
                let code = (e as? VaultError)?.code
                XCTAssertTrue([.notAVault, .truncated, .damagedHeader].contains(code), "prefix \(n): \(e)")
            }
        }
    }

    func testEverySingleByteFlipIsDetected() throws {
        let bytes = try Recipes.read(FixtureTests.fixture("one-item.kcv"))
        let path = dir + "/flip.kcv"
        for i in 0..<bytes.count {
            var b = bytes
            b[i] ^= 0x40
            _ = FileManager.default.createFile(atPath: path, contents: Data(b))
            if let v = try? Vault.open(path: path, secret: secret) {
                XCTAssertFalse(v.verify().isIntact, "flip at byte \(i) went unnoticed")
            }
        }
    }

    func testWrongSecretsAreRejected() throws {
        XCTAssertThrowsError(
            try Vault.open(
                path: FixtureTests.fixture("passphrase.kcv"),
                secret: .passphrase(SecureBytes(copying: Array("wrong".utf8))))
        ) {
            XCTAssertEqual(($0 as? VaultError)?.code, .wrongKey)
        }
        XCTAssertThrowsError(
            try Vault.open(
                path: FixtureTests.fixture("one-item.kcv"),
                secret: .keyFile(SecureBytes(copying: Recipes.otherKeyFile)))
        ) {
            XCTAssertEqual(($0 as? VaultError)?.code, .wrongKey)
        }
    }

    func testManyCommitsKeepTheChainBoundedAndTheStateExact() throws {
        let path = dir + "/commits.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { _ in }
        var expected: [String: [UInt8]] = [:]
        var rng = SystemRandomNumberGenerator()
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        for round in 0..<150 {
            try vault.commit(options: WriteOptions(autoCompact: false)) { tx in
                let account = "a\(Int.random(in: 0..<40, using: &rng))"
                let existing = tx.items.first { $0.account == account }
                let value = Array("value \(round)".utf8)
                switch (existing, round % 3) {
                case (let e?, 0):
                    try tx.delete(e.id)
                    expected[account] = nil
                case (let e?, _):
                    try tx.update(e.id, value: .bytes(value))
                    expected[account] = value
                case (nil, _):
                    try tx.add(attributes: attrs("s", account), value: .bytes(value))
                    expected[account] = value
                }
            }
        }
        let reopened = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(reopened.generation, 151)
        XCTAssertEqual(reopened.count, expected.count)
        for item in reopened.items { XCTAssertEqual(try reopened.read(item), expected[item.account!]) }
        let report = reopened.verify()
        XCTAssertTrue(report.isIntact, "\(report.problems)")
        XCTAssertEqual(report.commits, 151)
        XCTAssertGreaterThan(reopened.deadBytes, 0)

        let writer = try Vault.open(path: path, secret: secret, mode: .write)
        let before = writer.bodyLength
        try writer.compact()
        XCTAssertLessThan(writer.bodyLength, before)
        let compacted = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(compacted.generation, 152, "generations never go back")
        XCTAssertEqual(compacted.deadBytes, 0)
        for item in compacted.items { XCTAssertEqual(try compacted.read(item), expected[item.account!]) }
        XCTAssertTrue(compacted.verify().isIntact)
    }

    func testCompactionRebuildsSolidRecordsWithDeletedMembers() throws {
        let path = dir + "/solid.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            for i in 0..<20 {
                try tx.add(attributes: attrs("s", "a\(i)"), value: .bytes(Array("secret number \(i)".utf8)))
            }
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        let victim = vault.items.first { $0.account == "a7" }!
        try vault.commit(options: WriteOptions(autoCompact: false)) { tx in try tx.delete(victim.id) }
        try vault.compact()
        let after = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(after.count, 19)
        XCTAssertNil(after.item(victim.id))
        XCTAssertTrue(after.verify().isIntact)
        // The rebuilt record holds 19 members: the deleted value is in no record any more.
        for item in after.items {
            XCTAssertEqual(try after.read(item), Array("secret number \(item.account!.dropFirst())".utf8))
        }
    }

    func testAFailedCommitLeavesTheVaultAsItWas() throws {
        let path = dir + "/fail.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("s", "keep"), value: .bytes([1, 2, 3]))
        }
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        struct Boom: Error {}
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        XCTAssertThrowsError(
            try vault.commit { tx in
                try tx.add(attributes: attrs("s", "big"), value: .bytes(Recipes.noise(3 * Limits.chunkSize, seed: 2)))
                throw Boom()
            })
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int, size)
        let reopened = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(reopened.count, 1)
        XCTAssertTrue(reopened.verify().isIntact)
    }

    func testTheNextWriterCutsOffAnIncompleteCommit() throws {
        let path = dir + "/torn.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("s", "a"), value: .bytes([1]))
        }
        let h = FileHandle(forWritingAtPath: path)!
        h.seekToEndOfFile()
        h.write(Data(Recipes.noise(5000, seed: 3)))
        h.closeFile()
        let reader = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(reader.incompleteBytes, 5000)
        XCTAssertEqual(reader.verify().problems.first?.code, .incompleteCommit)
        let writer = try Vault.open(path: path, secret: secret, mode: .write)
        try writer.commit { tx in try tx.add(attributes: attrs("s", "b"), value: .bytes([2])) }
        let after = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(after.incompleteBytes, 0)
        XCTAssertEqual(after.count, 2)
        XCTAssertTrue(after.verify().isIntact)
    }

    func testSlotChangesKeepTheBodyAndRekeyReplacesTheKey() throws {
        let path = dir + "/slots.kcv"
        let pass = SecureBytes(copying: Array("pass phrase".utf8))
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("s", "a"), value: .bytes(Array("v".utf8)))
        }
        let bodyBefore = try Vault.open(path: path, secret: secret).bodyLength
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        try v.changeSlots(remove: [], add: [.passphrase(pass, .minimum)])
        XCTAssertEqual(try Vault.open(path: path, secret: .passphrase(pass)).bodyLength, bodyBefore)
        try v.changeSlots(remove: [0], add: [])
        XCTAssertThrowsError(try Vault.open(path: path, secret: secret)) {
            XCTAssertEqual(($0 as? VaultError)?.code, .wrongKey)
        }

        let other = SecureBytes(copying: Recipes.otherKeyFile)
        let w = try Vault.open(path: path, secret: .passphrase(pass), mode: .write)
        try w.rekey(slots: [.keyFile(other)])
        XCTAssertThrowsError(try Vault.open(path: path, secret: .passphrase(pass)))
        let r = try Vault.open(path: path, secret: .keyFile(other))
        XCTAssertEqual(try r.read(r.items[0]), Array("v".utf8))
        XCTAssertTrue(r.verify().isIntact)
    }

    func testAnItemAddedAndDeletedInOneTransactionLeavesNoTrace() throws {
        let path = dir + "/adddelete.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            let gone = try tx.add(attributes: attrs("s", "gone"), value: .bytes([1]))
            try tx.add(attributes: attrs("s", "kept"), value: .bytes([2]))
            try tx.delete(gone)
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        XCTAssertEqual(vault.items.map(\.account), ["kept"])
        try vault.commit { tx in
            let again = try tx.add(attributes: attrs("s", "again"), value: .bytes([3]))
            try tx.update(again, value: .bytes([4]))
            try tx.delete(again)
        }
        let reopened = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(reopened.items.map(\.account), ["kept"])
        XCTAssertTrue(reopened.verify().isIntact)
    }

    func testCreateRefusesToOverwrite() throws {
        let path = dir + "/exists.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { _ in }
        XCTAssertThrowsError(
            try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { _ in }
        ) {
            XCTAssertEqual(($0 as? VaultError)?.code, .exists)
        }
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
        XCTAssertEqual(mode, 0o600)
    }

    func testSeededMutationsNeverCrash() throws {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 11
        }
        let path = dir + "/mutant.kcv"
        for name in ["commits.kcv", "many-items.kcv"] {
            let original = try Recipes.read(FixtureTests.fixture(name))
            for _ in 0..<400 {
                var b = original
                switch next() % 4 {
                case 0: for _ in 0..<(1 + next() % 8) { b[Int(next() % UInt64(b.count))] ^= UInt8(1 << (next() % 8)) }
                case 1: b = Array(b[0..<Int(next() % UInt64(b.count))])
                case 2:
                    let at = Int(next() % UInt64(b.count - 8))
                    b.replaceSubrange(at..<at + 8, with: [0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF])
                default:
                    let a = Int(next() % UInt64(b.count))
                    let c = Int(next() % UInt64(b.count))
                    b = Array(b[0..<min(a, c)]) + Array(b[max(a, c)...]) + Array(b[min(a, c)..<max(a, c)])
                }
                _ = FileManager.default.createFile(atPath: path, contents: Data(b))
                if let v = try? Vault.open(path: path, secret: secret) {
                    _ = v.verify()
                    for item in v.items.prefix(3) { _ = try? v.read(item) }
                }
            }
        }
    }

    func testDeterministicRandomIsTheLibsodiumStream() {
        // randombytes_buf_deterministic(seed = 0..31) starts with these bytes (ChaCha20-IETF, nonce "LibsodiumDRG").
        let r = DeterministicRandom(seed: Recipes.seed(0))
        var a = [UInt8](repeating: 0, count: 10)
        var b = [UInt8](repeating: 0, count: 6000)
        a.withUnsafeMutableBytes { r.fill($0) }
        b.withUnsafeMutableBytes { r.fill($0) }
        let whole = DeterministicRandom(seed: Recipes.seed(0))
        var c = [UInt8](repeating: 0, count: 6010)
        c.withUnsafeMutableBytes { whole.fill($0) }
        XCTAssertEqual(a + b, c, "draws are one continuous stream")
    }
}

/// A record whose member table is larger than a chunk (65,536 members): readers must gather chunks. Writers
/// no longer make one (a solid record is closed once its table reaches SOLID_TARGET), so it is crafted.
final class LargeMemberTableTests: XCTestCase {
    func testMemberTableSpanningChunks() throws {
        let dir = NSTemporaryDirectory() + "kcar-members-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/members.kcv"
        let n = Limits.membersMax
        var v = try HostileVaults.vault()
        let recordID = HostileVaults.id(0, 9)
        let members = (0..<n).map { (HostileVaults.randomID($0, 1), $0 == n - 1 ? Array("last".utf8) : [UInt8]()) }
        let plain = CraftedVault.recordPlaintext(members)
        XCTAssertGreaterThan(plain.count, Limits.chunkSize)
        var blocks: [CraftedVault.Block] = []
        var start = 0
        while start < plain.count {
            let end = min(start + Limits.chunkSize, plain.count)
            blocks.append(.stored(Array(plain[start..<end]), index: UInt32(blocks.count), last: end == plain.count))
            start = end
        }
        let (offset, length) = v.appendRecord(id: recordID, blocks: blocks)
        let ops = members.enumerated().map { i, m in
            (
                op: UInt8(1), id: m.0,
                entry: HostileVaults.entry(
                    service: "s", account: String(i), salt: Array(m.0.suffix(8)),
                    size: UInt64(m.1.count), recordID: recordID,
                    offset: offset, length: length, member: i, dataOffset: 0)
            )
        }
        let index = v.appendIndex(CraftedVault.indexPlaintext(ops), generation: 1)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: index, previous: nil, itemCount: UInt32(n), checkpoint: true, chain: 0
        )
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(v.bytes)))
        let key = SecureBytes(copying: HostileVaults.key)
        let vault = try Vault.open(path: path, secret: .keyFile(key), mode: .write)
        XCTAssertEqual(vault.count, n)
        let last = vault.unorderedItems.first { $0.account == String(n - 1) }!
        XCTAssertEqual(last.location.member, n - 1)
        XCTAssertEqual(try vault.read(last), Array("last".utf8))
        var values = 0
        try vault.readValues(
            of: Array(vault.unorderedItems), begin: { _, _ in values += 1 }, bytes: { _ in }, end: { _ in })
        XCTAssertEqual(values, n)
        let report = vault.verify()
        XCTAssertTrue(report.isIntact, "\(report.problems)")
        try vault.commit(options: WriteOptions(autoCompact: false)) { tx in try tx.delete(last.id) }
        try vault.compact()
        XCTAssertTrue(try Vault.open(path: path, secret: .keyFile(key)).verify().isIntact)
    }
}
