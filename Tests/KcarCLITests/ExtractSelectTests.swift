import Foundation
import TestSupport
import XCTest

@testable import KcarCLI
@testable import VaultFormat

/// `extract NAME` (and `list NAME`) on a version 2 vault select through the items tree's ranges of the name's
/// service (``PagedVault/items(stringAttribute:among:)``) instead of reading every item. Held here to the
/// answer of reading every item, in the same order, on seeded vaults under three schemas (the service first,
/// after `sync`, third), with the items a crafted or keychain vault holds: other classes with a service,
/// `sync` of other types and more distinct values than are ranged, a service that is absent, an integer or
/// empty, accounts that are folders of others, zero bytes.
final class ExtractSelectTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-select-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    static let schemas: [(String, IndexSchema)] = [
        ("primary keys", .primaryKeys),
        ("service first", .servicesAndAccounts),
        (
            "service third",
            IndexSchema(classes: [
                "genp": ClassSchema(keyAttributes: [
                    ("sync", .bool(false)), ("labl", .string("")), ("svce", .string("")), ("acct", .string(""))
                ])
            ])
        )
    ]

    func testSelectThroughTheIndexAnswersAsReadingEveryItem() throws {
        let services = ["svc", "svc/x", "", "a\u{0}b", "other", "s\u{301}"]
        let accounts = ["a", "a/b", "a/b/c", "ab", "b", "", "x\u{0}y", "a/"]
        var compared = 0
        var nonEmpty = 0
        for (label, schema) in Self.schemas {
            for seed in 0..<4 {
                var rng = SplitMix64(state: UInt64(seed) &* 0x9E37_79B9 &+ UInt64(label.utf8.count))
                let path = dir + "/\(seed)-\(label).kcv"
                let count = seed == 3 ? 300 : 60 + seed * 40
                var names: Set<String> = ["nothing/here", "svc", "svc/", "a", "b", "%", "svc/a/", "other/a/b"]
                try Vault.create(
                    path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
                    format: .current(schema: schema)
                ) { tx in
                    for i in 0..<count {
                        var attributes = Attributes()
                        let service = services[Int(rng.next() % UInt64(services.count))]
                        let account = accounts[Int(rng.next() % UInt64(accounts.count))] + (i % 3 == 0 ? "\(i)" : "")
                        switch rng.next() % 10 {
                        case 0: break  // no service
                        case 1: attributes["svce"] = .integer(7)
                        default: attributes["svce"] = .string(service)
                        }
                        attributes["acct"] = .string(account)
                        // sync of either boolean, or (crafted) a string of one of 20 values: more than are ranged.
                        switch rng.next() % 4 {
                        case 0: attributes["sync"] = .bool(true)
                        case 1: attributes["sync"] = .string("v\(rng.next() % 20)")
                        default: break
                        }
                        if rng.next() % 3 == 0 { attributes["labl"] = .string("l\(rng.next() % 3)") }
                        let itemClass: ItemClass = [.genericPassword, .genericPassword, .internetPassword, .key][
                            Int(rng.next() % 4)]
                        // Seed 3: about 90 classes, more than are visited one by one.
                        let cls =
                            seed == 3
                            ? ItemClass(rawValue: "c\(rng.next() % 90)")
                            : rng.next() % 9 == 0 ? ItemClass(rawValue: "zz\u{0}z") : itemClass
                        // An item of a key already added is refused, and left out.
                        guard (try? tx.add(class: cls, attributes: attributes, value: .bytes([UInt8(i & 0xFF)]))) != nil
                        else { continue }
                        if case .string(let s) = attributes["svce"] {
                            names.insert(s.isEmpty ? account : "\(s)/\(account)")
                            names.insert(s)
                            if let slash = account.firstIndex(of: "/") { names.insert("\(s)/\(account[..<slash])") }
                        }
                    }
                }
                let vault = try Vault.open(
                    path: path, secret: .keyFile(SecureBytes(copying: Recipes.keyFile)), itemsOnDemand: true)
                XCTAssertNotNil(vault.itemIndex)
                let all = names.sorted()
                for name in stride(from: 0, to: all.count, by: max(1, all.count / 50)).map({ all[$0] }) {
                    let scanned = try? ExtractCommand.select(vault, [name], throughIndex: false)
                    let ranged = try? ExtractCommand.select(vault, [name])
                    XCTAssertEqual(
                        ranged.map { $0.map(\.id) }, scanned.map { $0.map(\.id) }, "\(label) seed \(seed): \(name)")
                    compared += 1
                    if let s = scanned, !s.isEmpty { nonEmpty += 1 }
                }
            }
        }
        // Neither side vacuous: most names select something, some nothing.
        XCTAssertGreaterThan(nonEmpty, compared / 2)
        XCTAssertLessThan(nonEmpty, compared)
    }

    /// The ranges read a few pages of a large vault, not all of them.
    func testSelectReadsAFewPagesOfALargeVault() throws {
        let path = dir + "/large.kcv"
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            format: .current(schema: .primaryKeys)
        ) { tx in
            for i in 0..<20_000 {
                _ = try tx.add(
                    attributes: Attributes(["svce": .string("s\(i % 100)"), "acct": .string("a\(i)")]),
                    value: .bytes([1]))
            }
        }
        let vault = try Vault.open(
            path: path, secret: .keyFile(SecureBytes(copying: Recipes.keyFile)), itemsOnDemand: true)
        let index = try XCTUnwrap(vault.itemIndex)
        let before = index.pagesOpened
        let found = try ExtractCommand.select(vault, ["s42/a4242"])
        XCTAssertEqual(found.map(\.account), ["a4242"])
        let ranged = index.pagesOpened - before
        _ = try ExtractCommand.select(vault, ["s42/a4242"], throughIndex: false)
        let scanned = index.pagesOpened - before - ranged
        XCTAssertLessThan(ranged * 10, scanned, "ranged \(ranged) pages, scanned \(scanned)")
    }
}
