import Crafting
import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// What the version 2 tests share: a fresh folder per test, the fixtures' key file, and a keychain-like
/// schema (`genp` keyed by `sync`, `svce`, `acct`; every user attribute indexed).
class PagedTestCase: XCTestCase {
    var dir = ""
    let secret = UnlockSecret.keyFile(SecureBytes(copying: Recipes.keyFile))
    let schema = IndexSchema(
        classes: [
            "genp": ClassSchema(keyAttributes: [("sync", .bool(false)), ("svce", .string("")), ("acct", .string(""))])
        ],
        indexed: ["@*"])

    override func setUp() {
        dir = NSTemporaryDirectory() + "kcar-paged-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    // Merge scenarios (PagedMergeTests, PagedAttackTests).

    struct Seen: Hashable {
        let attributes: Attributes
        let value: [UInt8]
        let version: Version
    }

    /// Live items by id, and the kept versions of every item (live or not).
    func snapshot(_ path: String) throws -> (live: [ItemID: Seen], history: [ItemID: Set<Version>]) {
        let v = try PagedVault.open(path: path, secret: secret)
        var live: [ItemID: Seen] = [:]
        try v.forEachItem { item in
            live[item.id] = Seen(
                attributes: item.attributes, value: try v.read(item), version: try XCTUnwrap(v.version(of: item)))
            return true
        }
        var history: [ItemID: Set<Version>] = [:]
        try v.scan(.history) { e in
            let h = try ItemEntries.decodeHistory(e)
            history[h.item.id, default: []].insert(h.version)
            return true
        }
        return (live, history)
    }

    /// Commits, as a delta, the vault's items with `edit` applied to each (a key holder's forged index).
    func forge(_ path: String, _ edit: (inout Item) -> Void) throws {
        let p = try PagedVault.open(path: path, secret: secret)
        var entries: [LeafEntry] = []
        try p.forEachItem { item in
            var it = item
            edit(&it)
            var e = ItemEntries.entry(it, version: Version(hlc: p.clock + 10, writer: 1), schema: p.schema)
            e.key = [TreeID.items.rawValue] + e.key
            e.rest = [1] + e.rest
            entries.append(e)
            return true
        }
        let crafted = try CraftedPagedVault(path: path, secret: secret, random: SystemRandom.shared)
        try crafted.delta(CraftedPagedVault.deltaPlaintext(entries.sorted { $0.key.lexicographicallyPrecedes($1.key) }))
    }

    func copy(_ from: String, _ to: String) throws -> String {
        let path = dir + "/" + to
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: from, toPath: path)
        return path
    }

    func attrs(_ service: String, _ account: String, label: String = "") -> Attributes {
        var a = Attributes(["svce": .string(service), "acct": .string(account), "@team": .string("t")])
        if !label.isEmpty { a["labl"] = .string(label) }
        return a
    }

    func item(_ v: PagedVault, _ service: String, _ account: String) throws -> Item {
        try XCTUnwrap(
            v.items(class: .genericPassword, keyValues: [.bool(false), .string(service), .string(account)]).first,
            "\(service)/\(account)")
    }

    @discardableResult
    func merge(base: String?, ours: String, theirs: String, writer: UInt64 = 9) throws -> MergeReport {
        let o = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: writer)
        return try o.merge(
            base: base.map { try PagedVault.open(path: $0, secret: secret) },
            theirs: PagedVault.open(path: theirs, secret: secret))
    }
}
