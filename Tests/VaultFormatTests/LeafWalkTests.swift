import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Issue 24: a walk over the items tree by leaves, on every core (``PagedVault/mapItemLeaves(bytesMax:_:_:)``),
/// hands what a scan hands, in the same order, and stops where a scan stops, with the same error.
final class LeafWalkTests: PagedTestCase {
    /// A vault of `count` generic passwords (a tree of three levels at 6,000), every seventh deleted and the
    /// deletions folded into the tree by a compaction: leaves hold live and deleted entries.
    func makeVault(_ count: Int, _ name: String = "walk.kcv") throws -> String {
        let path = dir + "/" + name
        var rng = SplitMix64(state: 24)
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema
        ) {
            tx in
            for i in 0..<count {
                var a = Attributes()
                a["svce"] = .string("service \(i % 97)")
                a["acct"] = .string("account \(i) é")
                if i % 3 == 0 {
                    a["note"] = .string(String(repeating: "n", count: Int.random(in: 0...300, using: &rng)))
                }
                let size = Int.random(in: 0...2_000, using: &rng)
                try tx.add(class: .genericPassword, attributes: a, value: .bytes([UInt8](repeating: 1, count: size)))
            }
        }
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        let doomed = v.items.enumerated().filter { $0.offset % 7 == 0 }.map(\.element.id)
        try v.commit { tx in for id in doomed { try tx.delete(id) } }
        try v.compact()
        return path
    }

    /// What a scan hands, item by item, and the error it stops on.
    func scanned(_ path: String) throws -> (items: [Item], error: String?) {
        var items: [Item] = []
        do {
            try PagedVault.open(path: path, secret: secret).forEachItem {
                items.append($0)
                return true
            }
        } catch { return (items, "\(error)") }
        return (items, nil)
    }

    /// What the walk hands, run by run, the error it stops on, and whether it walked by leaves.
    func walked(_ path: String, bytesMax: Int = PagedVault.leafBytesMax) throws -> (
        items: [Item], error: String?, walked: Bool
    ) {
        var items: [Item] = []
        var walked = false
        do {
            walked = try PagedVault.open(path: path, secret: secret).mapItemLeaves(bytesMax: bytesMax) {
                $0
            } _: {
                items += $0
            }
        } catch { return (items, "\(error)", true) }
        return (items, nil, walked)
    }

    func testAWalkByLeavesHandsWhatAScanHands() throws {
        let path = try makeVault(6_000)
        let scan = try scanned(path)
        XCTAssertNil(scan.error)
        XCTAssertEqual(scan.items.count, 6_000 - 6_000 / 7 - 1)
        // 64 KiB: every leaf on the workers; 2 KiB: a leaf of long notes is read again on the calling thread.
        for bytesMax in [PagedVault.leafBytesMax, 2_048] {
            let walk = try walked(path, bytesMax: bytesMax)
            XCTAssertTrue(walk.walked)
            XCTAssertNil(walk.error)
            XCTAssertEqual(walk.items, scan.items, "bytesMax \(bytesMax)")
        }
        let p = try PagedVault.open(path: path, secret: secret)
        XCTAssertEqual(p.root.tombstones, 6_000 / 7 + 1, "the deleted items' tombstones are in the tree")
        XCTAssertEqual(try p.largestItemSize(), scan.items.map(\.size).max())
        // The tree has branches above level 1: a walk descends them.
        XCTAssertGreaterThanOrEqual(try p.store.read(XCTUnwrap(p.root.top(.items))).level, 2)
    }

    /// Delta commits over the tree (items added below its first key, between its leaves and above its last,
    /// items changed in place and deleted) are merged into the leaves that hold their keys, as a scan merges them.
    func testChangesOverTheTreeAreMergedAsAScanMergesThem() throws {
        let path = try makeVault(6_000)
        let v = try Vault.open(path: path, secret: secret, mode: .write)
        let items = v.items.sorted { $0.id.description < $1.id.description }
        var rng = SplitMix64(state: 2424)
        // Small commits, each kept as a delta (a commit of hundreds of changes folds).
        for (i, service) in ["", "0 first", "service 5", "service 50 x", "zzz last"].enumerated() {
            try v.commit { tx in
                for j in 0..<3 {
                    var a = Attributes()
                    a["svce"] = .string(service)
                    a["acct"] = .string("added \(i) \(j)")
                    try tx.add(class: .genericPassword, attributes: a, value: .bytes([UInt8(j)]))
                }
            }
        }
        try v.commit { tx in
            for item in items.prefix(20) {
                if Bool.random(using: &rng) {
                    try tx.delete(item.id)
                } else {
                    var a = item.attributes
                    a["note"] = .string("changed")
                    try tx.update(item.id, attributes: a)
                }
            }
        }
        XCTAssertFalse(try PagedVault.open(path: path, secret: secret).sortedChanges(.items).isEmpty, "a delta commit")
        let scan = try scanned(path)
        XCTAssertNil(scan.error)
        XCTAssertEqual(scan.items.count, 6_000 - 6_000 / 7 - 1 + 15 - deletedCount(items.prefix(20), scan.items))
        for bytesMax in [PagedVault.leafBytesMax, 2_048] {
            let walk = try walked(path, bytesMax: bytesMax)
            XCTAssertTrue(walk.walked)
            XCTAssertNil(walk.error)
            XCTAssertEqual(walk.items, scan.items, "bytesMax \(bytesMax)")
        }
        XCTAssertEqual(
            try PagedVault.open(path: path, secret: secret).largestItemSize(), scan.items.map(\.size).max())
    }

    func deletedCount(_ items: ArraySlice<Item>, _ live: [Item]) -> Int {
        let ids = Set(live.map(\.id))
        return items.filter { !ids.contains($0.id) }.count
    }

    func testASmallTreeIsLeftToAScan() throws {
        var handed = 0
        let small = try makeVault(100, "small.kcv")
        XCTAssertFalse(
            try PagedVault.open(path: small, secret: secret).mapItemLeaves {
                $0.count
            } _: {
                handed += $0
            })
        XCTAssertEqual(handed, 0)
    }

    /// A leaf damaged in the middle of the tree: the walk hands every item before it, as a scan does, then
    /// throws the scan's error; a damaged branch likewise.
    func testAWalkStopsWhereAScanStopsWithItsError() throws {
        let path = try makeVault(6_000)
        let p = try PagedVault.open(path: path, secret: secret)
        var pages: [PageRef] = []
        _ = try p.reader(.items).verify(page: { pages.append($0) })
        let leaves = try pages.filter { try p.store.read($0).level == 0 }
        let branches = try pages.filter { try p.store.read($0).level > 0 && $0 != p.root.top(.items) }
        XCTAssertGreaterThan(leaves.count, 150)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let damaged = [
            ("a leaf in the middle", leaves[leaves.count / 2]), ("the last leaf", leaves[leaves.count - 1]),
            ("the last branch", branches[branches.count - 1])
        ]
        for (what, ref) in damaged {
            var d = original
            d[Int(p.store.source.headerLength + ref.offset + ref.length / 2)] ^= 1
            try d.write(to: URL(fileURLWithPath: path))
            let scan = try scanned(path)
            let walk = try walked(path)
            XCTAssertNotNil(scan.error, what)
            XCTAssertEqual(walk.error, scan.error, what)
            XCTAssertEqual(walk.items, scan.items, what)
            XCTAssertGreaterThan(walk.items.count, 0, what)
        }
    }
}
