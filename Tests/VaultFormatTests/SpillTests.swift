import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Issue 24: a commit of any number of adds in bounded memory. Its adds leave memory as sorted runs sealed into
/// a temporary file that the commit merges back; the vault it leaves is one a commit holding everything in
/// memory would leave (the same items, every rule of verification kept), and a refused commit leaves nothing.
final class SpillTests: VaultTestCase {
    func attributes(_ i: Int, service: String? = nil) -> Attributes {
        Attributes([
            AttributeName.service: .string(service ?? "svc\(i % 7)"), AttributeName.account: .string("user\(i)"),
            "@team": .string("t\(i / 10)")
        ])
    }

    func value(_ i: Int) -> [UInt8] { Array("value \(i)".utf8) }

    /// Item i's key attributes.
    func key(_ i: Int) -> Attributes {
        Attributes([AttributeName.service: .string("svc\(i % 7)"), AttributeName.account: .string("user\(i)")])
    }

    /// A version 2 vault holding `stored` items, opened for writing with its items on demand.
    func vault(stored: Int, at name: String = "v.kcv") throws -> Vault {
        let path = dir + "/" + name
        let schema = IndexSchema(classes: IndexSchema.primaryKeys.classes, indexed: ["@team"])
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(key)], format: .current(schema: schema), overwrite: true
        ) { tx in
            for i in 0..<stored { try tx.add(attributes: self.attributes(i), value: .bytes(self.value(i))) }
        }
        return try Vault.open(path: path, secret: secret, mode: .write, itemsOnDemand: true)
    }

    /// service/account/team to value, read by a new instance (the value of every 97th item: a read of a
    /// member of a large solid record inflates the record).
    func contents(_ path: String) throws -> [String: [UInt8]] {
        let r = try Vault.open(path: path, secret: secret)
        var out: [String: [UInt8]] = [:]
        for (n, item) in r.items.sorted(by: { $0.account ?? "" < $1.account ?? "" }).enumerated() {
            let name = "\(item.service ?? "")/\(item.account ?? "")/\(item.attributes["@team"].map { "\($0)" } ?? "")"
            out[name] = n % 97 == 0 ? try r.read(item) : Array("\(item.size)".utf8)
        }
        return out
    }

    func testASpillingCommitLeavesWhatACommitInMemoryLeaves() throws {
        // Seeded sizes and spill points: runs of one item, runs larger than a chunk of the temporary file,
        // spills that leave a remainder in memory, over an empty vault and over stored items.
        for (stored, adds, every) in [(0, 10, 1), (0, 9_000, 4_500), (50, 2_000, 333), (2_000, 3_000, 1_024)] {
            let spilled = try vault(stored: stored, at: "spill.kcv")
            let held = try vault(stored: stored, at: "held.kcv")
            var spillable = false
            try spilled.commit { tx in
                spillable = tx.spillAdds(every: every, refusingEqualKeys: true)
                var first: ItemID?
                for i in stored..<(stored + adds) {
                    let id = try tx.add(
                        attributes: self.attributes(i), value: .bytes(self.value(i)), ifKeyExists: .keepBoth)
                    first = first ?? id
                }
                // The first add was spilled: the transaction no longer holds it.
                XCTAssertNil(tx.item(first!))
            }
            XCTAssertTrue(spillable)
            try held.commit { tx in
                for i in stored..<(stored + adds) {
                    try tx.add(attributes: self.attributes(i), value: .bytes(self.value(i)))
                }
            }
            let name = "\(stored) stored, \(adds) added, spilled every \(every)"
            XCTAssertTrue(try contents(spilled.path) == contents(held.path), name)
            XCTAssertEqual(try contents(spilled.path).count, stored + adds, name)
            let paged = try PagedVault.open(path: spilled.path, secret: secret)
            XCTAssertEqual(paged.verify().problems, [], name)
            XCTAssertEqual(try paged.verifyIndex(), stored + adds, name)
            // Found by key and by indexed attribute, as any item.
            let r = try Vault.open(path: spilled.path, secret: secret, itemsOnDemand: true)
            let last = stored + adds - 1
            let found = try r.items(class: .genericPassword, key: key(last))
            XCTAssertEqual(try found.map { try r.read($0) }, [value(last)], name)
            XCTAssertEqual(
                try paged.items(attribute: "@team", equals: .string("t\(last / 10)")).count, last % 10 + 1, name)
        }
    }

    func testTwoItemsWithOneKeyAreRefusedWhereverTheyWereSpilledAndNothingIsWritten() throws {
        for (first, second) in [(3, 650), (3, 5), (600, 699)] {
            let v = try vault(stored: 20)
            let before = try contents(v.path)
            let generation = v.generation
            XCTAssertThrowsError(
                try v.commit { tx in
                    XCTAssertTrue(tx.spillAdds(every: 64, refusingEqualKeys: true))
                    for i in 100..<800 {
                        // Items `first` and `second` of the commit share a service and an account.
                        let n = i - 100 == second ? 100 + first : i
                        try tx.add(attributes: self.attributes(n), value: .bytes(self.value(i)), ifKeyExists: .keepBoth)
                    }
                }, "\(first), \(second)"
            ) { e in
                XCTAssertEqual((e as? VaultError)?.code, .exists, "\(e)")
                XCTAssertTrue("\(e)".contains("user\(100 + first)"), "\(e)")
            }
            XCTAssertEqual(try Vault.open(path: v.path, secret: secret).generation, generation)
            XCTAssertTrue(try contents(v.path) == before)
            XCTAssertEqual(try PagedVault.open(path: v.path, secret: secret).verify().problems, [])
            // The failed commit's records were cut off: the file ends where the last commit did.
            try v.commit { tx in try tx.add(attributes: self.attributes(9_999), value: .bytes([1])) }
            XCTAssertEqual(try contents(v.path).count, 21)
        }
    }

    /// Items with large attributes spill by the bytes they hold, however few: 40 items of 20 KB against a budget
    /// of 100 KB spill every fifth item or so.
    func testLargeItemsSpillByTheirBytes() throws {
        let v = try vault(stored: 0)
        let fat = String(repeating: "x", count: 20_000)
        try v.commit { tx in
            XCTAssertTrue(tx.spillAdds(every: 1_000, bytes: 100_000, refusingEqualKeys: true))
            var first: ItemID?
            for i in 0..<40 {
                var a = self.attributes(i)
                a["@note"] = .string(fat + "\(i)")
                let id = try tx.add(attributes: a, value: .bytes(self.value(i)), ifKeyExists: .keepBoth)
                first = first ?? id
            }
            XCTAssertNil(tx.item(first!))
        }
        let r = try Vault.open(path: v.path, secret: secret, itemsOnDemand: true)
        XCTAssertEqual(r.count, 40)
        XCTAssertEqual(
            try r.items(class: .genericPassword, key: key(39)).first?.attributes["@note"], .string(fat + "39"))
        XCTAssertEqual(try PagedVault.open(path: v.path, secret: secret).verify().problems, [])
    }

    /// An item whose items-tree key is exactly `KEY_MAX` (which fits a page, not a delta segment) spills and comes
    /// back as it went; the runs' own encoding round-trips every kind of change.
    func testAnItemAtTheKeyLimitSpills() throws {
        let v = try vault(stored: 0)
        let schema = try PagedVault.open(path: v.path, secret: secret).root.schema
        var service = String(repeating: "s", count: 4_000)
        func keyLength() -> Int {
            ItemKey.make(
                class: "genp", attributes: Attributes([AttributeName.service: .string(service)]),
                schema: schema.classes["genp"], id: ItemID(Array(repeating: 7, count: 16))
            ).key.count
        }
        while keyLength() < PagedLimits.keyMax { service += "s" }
        XCTAssertEqual(keyLength(), PagedLimits.keyMax)
        try v.commit { tx in
            XCTAssertTrue(tx.spillAdds(every: 1, refusingEqualKeys: true))
            try tx.add(
                attributes: Attributes([AttributeName.service: .string(service)]), value: .bytes([1]),
                ifKeyExists: .keepBoth)
            try tx.add(attributes: self.attributes(1), value: .bytes([2]), ifKeyExists: .keepBoth)
        }
        let r = try Vault.open(path: v.path, secret: secret, itemsOnDemand: true)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(try PagedVault.open(path: v.path, secret: secret).verify().problems, [])
        let entry = LeafEntry(
            key: Array(repeating: 9, count: PagedLimits.keyMax),
            record: RecordRef(id: ID128(hi: 1, lo: 2), offset: 300, length: 70_000), writer: 1 << 60, rest: [1, 2, 3])
        let changes: [TreeWriter.Change] = [.put(entry), .put(LeafEntry(key: [1])), .remove([2, 3])]
        let back = try SpillRuns.decode(SpillRuns.encode(changes[...]))
        XCTAssertEqual(back.map(\.key), changes.map(\.key))
        XCTAssertEqual(back.map(\.entry), changes.map(\.entry))
    }

    /// Two stored items with one key (another program's, kept by §K4) that a delta chain still holds do not make
    /// a bulk commit of other items fail: its check of equal keys is of its own changes.
    func testStoredItemsWithOneKeyInTheChainDoNotRefuseABulkCommit() throws {
        let v = try vault(stored: 30)
        try v.commit { tx in
            for n in 0..<2 {
                try tx.add(attributes: self.attributes(500), value: .bytes([UInt8(n)]), ifKeyExists: .keepBoth)
            }
        }
        XCTAssertGreaterThan(try PagedVault.open(path: v.path, secret: secret).tail.trailer.chain, 0)
        try v.commit { tx in
            XCTAssertTrue(tx.spillAdds(every: 4, refusingEqualKeys: true))
            for i in 1_000..<1_020 {
                try tx.add(attributes: self.attributes(i), value: .bytes([3]), ifKeyExists: .keepBoth)
            }
        }
        let r = try Vault.open(path: v.path, secret: secret, itemsOnDemand: true)
        XCTAssertEqual(r.count, 52)
        XCTAssertEqual(try r.items(class: .genericPassword, key: key(500)).count, 2)
        XCTAssertEqual(try PagedVault.open(path: v.path, secret: secret).verify().problems, [])
    }

    func testWithoutRefusingOneKeyTwiceIsKeptAsAKeepBothAddKeepsIt() throws {
        let v = try vault(stored: 0)
        try v.commit { tx in
            XCTAssertTrue(tx.spillAdds(every: 8, refusingEqualKeys: false))
            for i in 0..<40 {
                try tx.add(attributes: self.attributes(i % 20), value: .bytes(self.value(i)), ifKeyExists: .keepBoth)
            }
        }
        let r = try Vault.open(path: v.path, secret: secret, itemsOnDemand: true)
        XCTAssertEqual(r.count, 40)
        XCTAssertEqual(try r.items(class: .genericPassword, key: key(7)).count, 2)
    }

    func testAnItemSpilledIsNotKnownToTheTransactionAnyMore() throws {
        let v = try vault(stored: 0)
        XCTAssertThrowsError(
            try v.commit { tx in
                XCTAssertTrue(tx.spillAdds(every: 4, refusingEqualKeys: true))
                let first = try tx.add(attributes: self.attributes(0), value: .bytes([0]), ifKeyExists: .keepBoth)
                for i in 1..<10 {
                    try tx.add(attributes: self.attributes(i), value: .bytes([1]), ifKeyExists: .keepBoth)
                }
                try tx.delete(first)
            }
        ) { XCTAssertEqual(($0 as? VaultError)?.code, .itemNotFound, "\($0)") }
        XCTAssertEqual(try contents(v.path).count, 0)
    }

    func testAVaultHoldingEveryItemInMemoryDoesNotSpill() throws {
        let path = dir + "/held.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .current()) { _ in }
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        try v.commit { tx in XCTAssertFalse(tx.spillAdds(every: 4, refusingEqualKeys: true)) }
        let v1 = dir + "/v1.kcv"
        try Vault.create(path: v1, group: "g", slots: [.keyFile(key)], format: .version1) { _ in }
        try Vault.open(path: v1, secret: secret, mode: .write, itemsOnDemand: true).commit { tx in
            XCTAssertFalse(tx.spillAdds(every: 4, refusingEqualKeys: true))
        }
    }
}
