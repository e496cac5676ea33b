import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Issue 22, point 8 (SPEC.md §8, "a damaged last trailer is not an interrupted write"; Part 4 V7): a last
/// trailer that is whole but fails its MAC is *damaged index*, so a flipped byte no longer opens the commit
/// before it (where the item the last commit deleted is back); a trailer cut short, or zeros, still reads as an
/// interrupted write, on the commit before it.
final class DamagedTrailerTests: VaultTestCase {
    /// A vault of two items, then a commit that deletes one: its last trailer's size, its generation, and the
    /// file's bytes. Version 2 with `fold`: the last commit changes more than 256 keys, so it writes a root.
    func twoCommits(version: Int, fold: Bool = false) throws -> (
        path: String, trailer: Int, generation: UInt64, bytes: [UInt8]
    ) {
        let path = dir + "/v\(version)\(fold ? "-fold" : "").kcv"
        var ids: [ItemID] = []
        let add = { (tx: Transaction) in
            ids.append(try tx.add(attributes: self.attrs("svc", "kept"), value: .bytes(Array("kept".utf8))))
            ids.append(try tx.add(attributes: self.attrs("svc", "deleted"), value: .bytes(Array("gone".utf8))))
        }
        if version == 1 {
            try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1, add)
        } else {
            try Vault.create(
                path: path, group: "g", slots: [.keyFile(key)], schema: IndexSchema.servicesAndAccounts, add)
        }
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        try v.commit(options: WriteOptions(autoCompact: false)) { tx in
            try tx.delete(ids[1])
            if fold {
                for i in 0..<300 {
                    _ = try tx.add(attributes: self.attrs("bulk", "a\(i)"), value: .bytes([UInt8(i & 0xFF)]))
                }
            }
        }
        XCTAssertEqual(v.version2?.tail.trailer.wroteRoot ?? fold, fold)
        return (path, version == 1 ? Trailer.size : TrailerV2.size, v.generation, try Recipes.read(path))
    }

    func write(_ path: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

    func openCode(_ path: String) -> VaultError.Code? {
        do {
            _ = try Vault.open(path: path, secret: secret)
            return nil
        } catch {
            return (error as? VaultError)?.code
        }
    }

    /// Every byte of the last trailer changed (two ways: one bit, all bits), in version 1 and in version 2 (the
    /// last commit a delta, then a fold): each file is *damaged index*, to a reader and to a writer.
    func testEveryChangedByteOfTheLastTrailerIsDamage() throws {
        for (version, fold) in [(1, false), (2, false), (2, true)] {
            let (path, size, generation, good) = try twoCommits(version: version, fold: fold)
            XCTAssertEqual(try Vault.open(path: path, secret: secret).generation, generation)
            for i in (good.count - size)..<good.count {
                for mask: UInt8 in [0x01, 0xFF] {
                    var b = good
                    b[i] ^= mask
                    try write(path, b)
                    XCTAssertEqual(
                        openCode(path), .damagedIndex,
                        "version \(version), fold \(fold): byte \(i - good.count + size) ^ \(mask)")
                }
            }
            // Writers open the file first: none cuts it back to the commit before.
            var b = good
            b[b.count - 1] ^= 1
            try write(path, b)
            XCTAssertThrowsError(try Vault.open(path: path, secret: secret, mode: .write)) {
                XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex)
            }
            XCTAssertEqual(try Recipes.read(path), b)
        }
    }

    /// What a crash leaves still opens the commit before, an incomplete commit after it: the file cut anywhere
    /// inside the last trailer, or its bytes zeros (blocks of an append that never reached the disk).
    func testATrailerCutShortOrZerosIsAnInterruptedWrite() throws {
        for (version, fold) in [(1, false), (2, false), (2, true)] {
            let (path, size, generation, good) = try twoCommits(version: version, fold: fold)
            var cases: [(String, [UInt8])] = (1..<size).map { ("cut by \($0)", Array(good.dropLast($0))) }
            cases.append(("zeros", good.dropLast(size) + [UInt8](repeating: 0, count: size)))
            // A trailer whose end never reached the disk (zeros from a block boundary on): 16 zero bytes or more.
            for zeros in [16, size / 2, size - 8] {
                cases.append(
                    ("the last \(zeros) bytes zeros", good.dropLast(zeros) + [UInt8](repeating: 0, count: zeros)))
            }
            for (what, b) in cases {
                try write(path, b)
                let v: Vault
                do { v = try Vault.open(path: path, secret: secret) } catch {
                    XCTFail("version \(version), fold \(fold): \(what): \(error)")
                    continue
                }
                XCTAssertEqual(v.generation, generation - 1, "version \(version), fold \(fold): \(what)")
                XCTAssertGreaterThan(v.incompleteBytes, 0, what)
                XCTAssertEqual(v.count, 2, "the commit before the delete: \(what)")
            }
        }
    }

    /// The limit SPEC.md §8 names: a trailer whose last 15 bytes are zeros is whole, and damaged (a crash that
    /// zeroed so few bytes reads as damage; `kcar recover --drop-damaged` goes back past it).
    func testATrailerEndingInFewerThan16ZerosIsDamage() throws {
        for version in [1, 2] {
            let (path, _, _, good) = try twoCommits(version: version)
            try write(path, good.dropLast(15) + [UInt8](repeating: 0, count: 15))
            XCTAssertEqual(openCode(path), .damagedIndex)
        }
    }

    /// A complete last trailer whose MAC verifies but whose fields break a rule (a key holder's file, as
    /// `Fixtures/vault-v2/malformed/fold-root-short.kcv`) is no trailer: an incomplete commit, as before.
    func testAnAuthenticTrailerThatBreaksARuleIsStillAnIncompleteCommit() throws {
        let (path, size, generation, good) = try twoCommits(version: 1)
        let p = UInt64(good.count - size - Int(try Vault.inspect(path: path).header.length))
        var t = try XCTUnwrap(Trailer.candidate(good.suffix(size), at: p))
        t.indexLength -= 1
        let v = try Vault.open(path: path, secret: secret)
        try write(path, good.dropLast(size) + t.encode(vaultID: v.header.vaultID, key: v.keys.trailer))
        let reopened = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(reopened.generation, generation - 1)
        XCTAssertEqual(reopened.incompleteBytes, UInt64(good.count - Int(v.fileOffset(reopened.bodyLength))))
    }

    /// The only trailer damaged: no commit to fall back to, so the file is *truncated*, as the released malformed
    /// fixture `trailer-flipped` pins it (refused either way).
    func testTheOnlyTrailerDamagedIsTruncated() throws {
        let path = dir + "/one.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            _ = try tx.add(attributes: self.attrs("s", "a"), value: .bytes([1]))
        }
        var b = try Recipes.read(path)
        b[b.count - 1] ^= 1
        try write(path, b)
        XCTAssertEqual(openCode(path), .truncated)
    }

    /// `kcar recover --drop-damaged`: back to the commit before a damaged trailer on request, saying how many
    /// bytes it dropped; the file is then the vault as that commit left it, byte for byte.
    func testDroppingADamagedTrailerGoesBackToTheCommitBefore() throws {
        for version in [1, 2] {
            let (path, size, generation, good) = try twoCommits(version: version)
            let before = try Vault.open(path: path, secret: secret)
            let previousEnd = Int(
                before.fileOffset(
                    before.version2?.tail.trailer.commitStart ?? (before.engine as! LogEngine).tail.trailer.commitStart)
            )
            var b = good
            b[b.count - size + 20] ^= 0x10
            try write(path, b)
            let r = try Vault.dropDamagedTail(path: path, secret: secret)
            XCTAssertEqual(r.generation, generation - 1)
            XCTAssertEqual(Int(r.dropped), good.count - previousEnd)
            XCTAssertEqual(try Recipes.read(path), Array(good.prefix(previousEnd)))
            let v = try Vault.open(path: path, secret: secret)
            XCTAssertEqual(v.count, 2)
            XCTAssertEqual(v.incompleteBytes, 0)
            XCTAssertTrue(v.verify().isIntact)
            // Nothing more to drop; a wrong key drops nothing.
            XCTAssertEqual(try Vault.dropDamagedTail(path: path, secret: secret).dropped, 0)
            try write(path, b)
            XCTAssertThrowsError(
                try Vault.dropDamagedTail(
                    path: path, secret: .keyFile(SecureBytes(copying: [UInt8](repeating: 9, count: 32)))))
            XCTAssertEqual(try Recipes.read(path), b)
        }
    }
}
