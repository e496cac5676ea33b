import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Review: ``Vault`` over version 2, on demand and eager, across failed commits, slot changes, rekeys and
/// other writers.
final class Version2FacadeTests: PagedTestCase {
    func make(_ n: Int) throws -> String {
        let path = dir + "/v.kcv"
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema
        ) { tx in
            for i in 0..<n { try tx.add(attributes: attrs("s", "a\(i)"), value: .bytes([UInt8(i)])) }
        }
        return path
    }

    func values(_ v: Vault) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for item in v.items { out[item.account ?? ""] = try v.read(item) }
        return out
    }

    func testOnDemandFailedCommitChangesNothing() throws {
        let path = try make(5)
        let v = try Vault.open(path: path, secret: secret, mode: .write, itemsOnDemand: true)
        let p = try XCTUnwrap(v.version2)
        let a1 = try XCTUnwrap(
            p.items(class: .genericPassword, keyValues: [.bool(false), .string("s"), .string("a1")]).first)
        struct Refused: Error {}
        XCTAssertThrowsError(
            try v.commit { tx in
                tx.know(a1)
                try tx.add(attributes: attrs("n", "n"), value: .bytes([1]))
                try tx.update(a1.id, attributes: attrs("moved", "a1"))
                throw Refused()
            })
        XCTAssertEqual(v.count, 5)
        let q = try XCTUnwrap(v.version2)
        XCTAssertEqual(
            try q.items(class: .genericPassword, keyValues: [.bool(false), .string("s"), .string("a1")]).map(\.id),
            [a1.id])
        XCTAssertEqual(try q.items(class: .genericPassword, keyValues: [.bool(false), .string("n")]).count, 0)
        XCTAssertEqual(try v.read(a1), [1])
        try v.commit { tx in _ = try tx.add(attributes: attrs("ok", "ok"), value: .bytes([2])) }
        XCTAssertEqual(v.count, 6)
        let fresh = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(fresh.count, 6)
        XCTAssertTrue(fresh.verify().isIntact)
    }

    func testSlotChangesAndRekeysSeenByOtherInstances() throws {
        let path = try make(8)
        let a = try Vault.open(path: path, secret: secret, mode: .write)
        let b = try Vault.open(path: path, secret: secret, mode: .write)
        let c = try Vault.open(path: path, secret: secret, mode: .write, itemsOnDemand: true)
        let expected = try values(a)
        try a.changeSlots(remove: [], add: [.keyFile(SecureBytes(copying: Array(repeating: 7, count: 32)))])
        XCTAssertEqual(try values(a), expected, "after its own slot change")
        try a.commit { tx in _ = try tx.add(attributes: attrs("s", "x"), value: .bytes([9])) }
        var more = expected
        more["x"] = [9]
        XCTAssertEqual(try values(a), more)
        try b.commit { tx in _ = try tx.add(attributes: attrs("s", "y"), value: .bytes([10])) }
        more["y"] = [10]
        XCTAssertEqual(try values(b), more, "b followed a's slot change into its commit")
        try c.refresh()
        XCTAssertEqual(c.count, 10)
        let y = try XCTUnwrap(
            c.version2?.items(class: .genericPassword, keyValues: [.bool(false), .string("s"), .string("y")]).first)
        XCTAssertEqual(try c.read(y), [10])
        try a.refresh()
        XCTAssertEqual(try values(a), more)
        // A compaction by one, then a commit by another that still holds a handle.
        let x = try XCTUnwrap(b.items.first { $0.account == "x" })
        try a.compact()
        try b.commit { tx in try tx.update(x.id, value: .bytes([11])) }
        more["x"] = [11]
        XCTAssertEqual(try values(b), more)
        try c.refresh()
        let x2 = try XCTUnwrap(
            c.version2?.items(class: .genericPassword, keyValues: [.bool(false), .string("s"), .string("x")]).first)
        XCTAssertEqual(try c.read(x2), [11])
        // A rekey: the others must open again, and change nothing meanwhile.
        try a.rekey(slots: [.keyFile(SecureBytes(copying: Array(repeating: 8, count: 32)))])
        XCTAssertEqual(try values(a), more)
        XCTAssertThrowsError(try b.commit { tx in _ = try tx.add(attributes: attrs("s", "z"), value: .bytes([12])) })
        XCTAssertEqual(b.count, 10)
        XCTAssertThrowsError(try c.refresh())
        XCTAssertTrue(a.verify().isIntact)
        XCTAssertEqual(
            try Vault.open(path: path, secret: .keyFile(SecureBytes(copying: Array(repeating: 8, count: 32)))).count, 10
        )
    }
}

extension Version2FacadeTests {
    /// No writer of version 2 checks ITEMS_MAX against the count it writes: ``Transaction/add`` compares the
    /// items it holds in memory (only those it touched, on demand), and PagedVault none. A vault whose trailer
    /// counts ITEMS_MAX items (4,000,000 real ones, or a count a key holder forged: verification alone checks
    /// it) takes one more add; the trailer written then fails its own bound at open, so the acknowledged commit
    /// silently disappears (the reader falls back to the trailer before it).
    func testAnAddPastItemsMaxIsRefusedNotWrittenAndLost() throws {
        let path = try make(3)
        let crafted = try CraftedPagedVault(path: path, secret: secret, random: SystemRandom.shared)
        try crafted.rewriteLastTrailer { $0.itemCount = UInt64(Limits.itemsMax) }
        let v = try Vault.open(path: path, secret: secret, mode: .write, itemsOnDemand: true)
        XCTAssertEqual(v.count, Limits.itemsMax)
        let generation = v.generation
        do {
            try v.commit { tx in _ = try tx.add(attributes: attrs("one", "more"), value: .bytes([1])) }
        } catch {
            return  // refused: what is expected
        }
        // Accepted: then it must be there for the next reader.
        let fresh = try Vault.open(path: path, secret: secret)
        XCTAssertEqual(fresh.generation, generation + 1, "the acknowledged commit is gone after reopening")
    }
}

extension Version2FacadeTests {
    /// Record lengths in a version 2 index are any varint whose extent does not overflow: a key holder can
    /// name two records of 2^63 bytes. `deadBytes` (``kcar info``) adds the live records' lengths with `+`.
    func testDeadBytesOfHugeRecordLengthsIsNotATrap() throws {
        let path = try make(2)
        var n: UInt64 = 0
        try forge(path) { item in
            item.location = RecordLocation(
                recordID: ID128(hi: 9, lo: n), offset: 0, length: 1 << 63, member: 0, dataOffset: 0)
            n += 1
        }
        // A record must end before the delta segment that names it (V3.4, V6): such a file no longer opens.
        XCTAssertThrowsError(try Vault.open(path: path, secret: secret)) {
            XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex, "\($0)")
        }
    }
}

extension Version2FacadeTests {
    /// Both ways of reading a value (one item, and batched) refuse a vault whose one item `edit` forged, with
    /// an error, not a trap.
    func assertReadsRefused(_ edit: (inout Item) -> Void, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = try make(1)
        try forge(path, edit)
        let v: Vault
        do {
            v = try Vault.open(path: path, secret: secret)
        } catch {
            // An extent that does not end before the delta segment naming it is refused when the segment is read.
            return XCTAssertEqual((error as? VaultError)?.code, .damagedIndex, "\(error)", file: file, line: line)
        }
        XCTAssertThrowsError(
            try v.readValues(of: v.items, begin: { _, _ in }, bytes: { _ in }, end: { _ in }), file: file, line: line)
        XCTAssertThrowsError(try v.read(v.items[0]), file: file, line: line)
    }

    /// A version 2 item's data offset is any varint that does not overflow with its size (version 1 bounds
    /// both by 2^48): `Vault.weight` adds a member table's bound to it, and the keychain reads values through
    /// ``Vault/readValues(of:begin:bytes:end:)``.
    func testReadValuesOfAHugeDataOffsetIsNotATrap() throws {
        try assertReadsRefused { $0.location.dataOffset = UInt64.max - 100 }
    }

    /// A record extent that ends near 2^64: the body offset fits, the file offset (plus the header) does not.
    func testReadOfARecordEndingNear2To64IsNotATrap() throws {
        try assertReadsRefused { $0.location.length = UInt64.max - $0.location.offset }
    }

    /// A small record whose body offset is near 2^64: batched value reads add the header's length to it.
    func testReadValuesOfARecordOffsetNear2To64IsNotATrap() throws {
        try assertReadsRefused {
            $0.location.offset = UInt64.max - 101
            $0.location.length = 100
        }
    }

    /// dataOffset + size = 2^64 - 1 exactly (decoding allows it): `weight` adds a member table's bound.
    func testReadValuesOfAValueEndingAt2To64IsNotATrap() throws {
        try assertReadsRefused { $0.location.dataOffset = UInt64.max - $0.size }
    }
}
