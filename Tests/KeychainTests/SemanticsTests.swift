import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// Apple's semantics: primary keys per class, queries, update and delete of several matches (SPEC.md §K4, §K5).
final class SemanticsTests: KeychainTestCase {
    func testGenericPasswordPrimaryKeyIgnoresOtherAttributes() throws {
        let s = try store()
        try s.add(
            attributes: attrs(["svce": .string("api"), "acct": .string("bob"), "labl": .string("one")]), value: [1])
        // Label, comment, generic and accessibility are outside the key: still a duplicate.
        assertStatus(
            .duplicateItem,
            try s.add(
                attributes: attrs([
                    "svce": .string("api"), "acct": .string("bob"), "labl": .string("two"), "icmt": .string("x"),
                    "gena": .data([9]), "pdmn": .string("cku")
                ]), value: [2]))
        // Another account, or a synchronizable twin, is another item.
        try s.add(attributes: attrs(["svce": .string("api"), "acct": .string("alice")]), value: [3])
        try s.add(attributes: attrs(["svce": .string("api"), "acct": .string("bob"), "sync": .bool(true)]), value: [4])
        // An absent service equals the empty one.
        try s.add(attributes: attrs(["acct": .string("carol")]), value: [5])
        assertStatus(
            .duplicateItem, try s.add(attributes: attrs(["svce": .string(""), "acct": .string("carol")]), value: [6]))
        // The same key in another group is another item.
        try s.add(attributes: attrs(["svce": .string("api"), "acct": .string("bob")]), value: [7], group: "app.private")
        XCTAssertEqual(try s.find(ItemQuery(synchronizableAny: true)).count, 5)
    }

    func testPrimaryKeysOfEveryClass() throws {
        let s = try store()
        let cases: [(ItemClass, [String: AttributeValue], String, AttributeValue)] = [
            (
                .internetPassword,
                [
                    "srvr": .string("example.com"), "ptcl": .string("htps"), "port": .integer(443),
                    "path": .string("/"), "sdmn": .string(""), "atyp": .string("form"), "acct": .string("bob")
                ],
                "port", .integer(8443)
            ),
            (
                .certificate, ["ctyp": .integer(1), "issr": .data([1, 2]), "slnr": .data([3]), "subj": .data([4])],
                "slnr", .data([5])
            ),
            (
                .key,
                [
                    "kcls": .string("1"), "klbl": .data([1]), "atag": .data([2]), "type": .string("73"),
                    "bsiz": .integer(256),
                    "esiz": .integer(256), "sign": .bool(true)
                ], "bsiz", .integer(384)
            ),
            (
                .identity, ["ctyp": .integer(1), "issr": .data([1]), "slnr": .data([2]), "kcls": .string("1")], "issr",
                .data([7])
            )
        ]
        for (c, base, keyName, other) in cases {
            try s.add(class: c, attributes: attrs(base), value: [1])
            var twin = base
            twin["labl"] = .string("differs only outside the key")
            assertStatus(.duplicateItem, try s.add(class: c, attributes: attrs(twin), value: [2]))
            var distinct = base
            distinct[keyName] = other
            try s.add(class: c, attributes: attrs(distinct), value: [3])
            XCTAssertEqual(try s.find(ItemQuery(class: c)).count, 2, "\(c)")
        }
    }

    func testAttributesAreCheckedPerClass() throws {
        let s = try store()
        assertStatus(.param, try s.add(attributes: attrs(["srvr": .string("x")]), value: []))  // inet only
        assertStatus(.param, try s.add(attributes: attrs(["svce": .integer(1)]), value: []))  // wrong type
        assertStatus(.param, try s.add(attributes: attrs(["pdmn": .string("never")]), value: []))  // no such level
        assertStatus(.param, try s.add(attributes: attrs(["zzzz": .string("x")]), value: []))  // not Apple's
        assertStatus(.param, try s.add(class: ItemClass(rawValue: "blob"), attributes: Attributes(), value: []))
        assertStatus(.param, try s.find(ItemQuery(class: .certificate, attributes: attrs(["svce": .string("x")]))))
        // User attributes take any type.
        try s.add(
            attributes: attrs(["svce": .string("x"), "@n": .integer(1), "@when": .date(nanoseconds: 5)]), value: [])
    }

    func testAddSetsDatesAndAccessibility() throws {
        let s = try store()
        let before = Int64(Date().timeIntervalSince1970 * 1e9) - 1_000_000_000
        let item = try s.add(attributes: attrs(["svce": .string("a")]), value: [1, 2, 3])
        guard case .date(let c)? = item.attributes["cdat"], case .date(let m)? = item.attributes["mdat"] else {
            return XCTFail()
        }
        XCTAssertGreaterThan(c, before)
        XCTAssertEqual(c, m)
        XCTAssertEqual(item.attributes.string("pdmn"), "ak")
        XCTAssertEqual(item.size, 3)
        XCTAssertEqual(try s.value(of: item), [1, 2, 3])
    }

    func testQueryOptions() throws {
        let s = try store()
        for (i, acct) in ["Bob", "bob", "alice"].enumerated() {
            try s.add(
                attributes: attrs(["svce": .string("Mail"), "acct": .string(acct), "@tier": .integer(Int64(i % 2))]),
                value: [UInt8(i)])
        }
        try s.add(
            attributes: attrs(["svce": .string("Mail"), "acct": .string("sync"), "sync": .bool(true)]), value: [9])
        // Exact and case-sensitive by default.
        XCTAssertEqual(try s.find(.password(service: "Mail", account: "bob")).count, 1)
        XCTAssertEqual(try s.find(.password(service: "mail")).count, 0)
        var ci = ItemQuery.password(service: "mail", account: "BOB")
        ci.caseInsensitive = true
        XCTAssertEqual(try s.find(ci).count, 2)
        // Limit, order (service, account bytewise: "Bob" < "alice" < "bob").
        var all = ItemQuery.password(service: "Mail")
        XCTAssertEqual(try s.find(all).compactMap { $0.attributes.string("acct") }, ["Bob", "alice", "bob"])
        all.limit = 2
        XCTAssertEqual(try s.find(all).count, 2)
        // Synchronizable items only when asked.
        all.limit = nil
        all.synchronizableAny = true
        XCTAssertEqual(try s.find(all).count, 4)
        var onlySync = ItemQuery.password(service: "Mail")
        onlySync.attributes["sync"] = .bool(true)
        XCTAssertEqual(try s.find(onlySync).compactMap { $0.attributes.string("acct") }, ["sync"])
        // User attributes from the index.
        var tier = ItemQuery(attributes: attrs(["@tier": .integer(0)]))
        XCTAssertEqual(try s.find(tier).compactMap { $0.attributes.string("acct") }, ["Bob", "alice"])
        tier.attributes["@tier"] = .string("0")  // typed: a string is not the integer
        XCTAssertEqual(try s.find(tier).count, 0)
        // Class is part of the match.
        XCTAssertEqual(try s.find(ItemQuery(class: .internetPassword)).count, 0)
    }

    func testUpdateChangesEveryMatchOrNothing() throws {
        let s = try store()
        for a in ["a", "b", "c"] {
            try s.add(attributes: attrs(["svce": .string("s"), "acct": .string(a)]), value: [0])
        }
        XCTAssertEqual(try s.update(.password(service: "s"), set: ["labl": .string("L")], value: [7]), 3)
        for item in try s.find(.password(service: "s")) {
            XCTAssertEqual(item.attributes.string("labl"), "L")
            XCTAssertEqual(try s.value(of: item), [7])
        }
        // Renaming two items to one account would collide: refused, nothing changed.
        let before = try s.find(.password(service: "s"))
        assertStatus(.duplicateItem, try s.update(.password(service: "s"), set: ["acct": .string("same")]))
        XCTAssertEqual(try s.find(.password(service: "s")), before)
        // Renaming one onto another's key collides too.
        assertStatus(.duplicateItem, try s.update(.password(service: "s", account: "a"), set: ["acct": .string("b")]))
        // Swapping is fine within one change set? Moving a -> z is.
        try s.update(.password(service: "s", account: "a"), set: ["acct": .string("z"), "labl": nil])
        let z = try s.find(.password(service: "s", account: "z"))
        XCTAssertEqual(z.count, 1)
        XCTAssertNil(z[0].attributes["labl"])
        assertStatus(.itemNotFound, try s.update(.password(service: "none"), set: ["labl": .string("x")]))
        assertStatus(.param, try s.update(.password(service: "s"), set: ["srvr": .string("x")]))
    }

    func testDeleteRemovesEveryMatch() throws {
        let s = try store()
        for a in ["a", "b"] { try s.add(attributes: attrs(["svce": .string("s"), "acct": .string(a)]), value: [0]) }
        try s.add(attributes: attrs(["svce": .string("t")]), value: [0])
        XCTAssertEqual(try s.delete(.password(service: "s")), 2)
        XCTAssertEqual(try s.find(ItemQuery()).count, 1)
        assertStatus(.itemNotFound, try s.delete(.password(service: "s")))
    }

    func testTransactionIsAllOrNothing() throws {
        let s = try store()
        try s.add(attributes: attrs(["svce": .string("keep")]), value: [1])
        assertStatus(
            .duplicateItem,
            try s.transaction { tx in
                try tx.add(attributes: self.attrs(["svce": .string("new")]), value: [2])
                try tx.add(attributes: self.attrs(["svce": .string("keep")]), value: [3])
            })
        XCTAssertEqual(try s.find(ItemQuery()).compactMap { $0.attributes.string("svce") }, ["keep"])
        // A batch in one commit.
        let g0 = try s.withVault(group: "app.shared") { $0.generation }
        try s.transaction { tx in
            for i in 0..<100 {
                try tx.add(attributes: self.attrs(["svce": .string("b"), "acct": .string("\(i)")]), value: [UInt8(i)])
            }
        }
        XCTAssertEqual(try s.withVault(group: "app.shared") { $0.generation }, g0 + 1)
        XCTAssertEqual(try s.find(.password(service: "b")).count, 100)
    }

    /// The store keeps a group's primary-key index from one transaction to the next: it must follow every
    /// change, be dropped with a failed transaction, and give way when another writer changed the group.
    func testPrimaryKeyIndexKeptAcrossTransactions() throws {
        let s = try store()
        func pw(_ a: String) -> Attributes { attrs(["svce": .string("s"), "acct": .string(a)]) }
        for a in ["a", "b", "c"] { try s.add(attributes: pw(a), value: [0]) }
        assertStatus(.duplicateItem, try s.add(attributes: pw("b"), value: [1]))
        // A failed transaction leaves nothing in the index: n1 is free afterwards.
        assertStatus(
            .duplicateItem,
            try s.transaction { tx in
                try tx.add(attributes: pw("n1"), value: [2])
                try tx.add(attributes: pw("a"), value: [3])
            })
        try s.add(attributes: pw("n1"), value: [2])
        // A refused update changes nothing; the transaction goes on and commits.
        try s.transaction { tx in
            let a = try tx.find(.password(service: "s", account: "a"))
            XCTAssertThrowsError(try tx.update(a.map(\.id), set: ["acct": .string("b")], value: nil))
            XCTAssertThrowsError(try tx.add(attributes: pw("a"), value: [4]))
            try tx.update(a.map(\.id), set: ["acct": .string("z")], value: nil)
            try tx.add(attributes: pw("a"), value: [5])  // vacated by the move
            XCTAssertThrowsError(try tx.add(attributes: pw("z"), value: [6]))
            // Added and deleted again: no trace.
            let t = try tx.add(attributes: pw("temp"), value: [7])
            try tx.delete(t.id)
        }
        assertStatus(.duplicateItem, try s.add(attributes: pw("z"), value: [8]))
        try s.add(attributes: pw("temp"), value: [9])
        // Two items moved in one change set: c -> y and z -> c, so z's key is free and c's is taken again.
        try s.transaction { tx in
            let ids = try tx.find(.password(service: "s", account: "c")).map(\.id)
            try tx.update(ids, set: ["acct": .string("y")], value: nil)
            try tx.update(
                try tx.find(.password(service: "s", account: "z")).map(\.id), set: ["acct": .string("c")], value: nil)
        }
        try s.add(attributes: pw("z"), value: [10])
        // Another writer (another store, as another process) adds and deletes: this store must see it.
        let other = try store()
        try other.add(attributes: pw("x"), value: [13])
        XCTAssertEqual(try other.delete(.password(service: "s", account: "b")), 1)
        assertStatus(.duplicateItem, try s.add(attributes: pw("x"), value: [14]))
        try s.add(attributes: pw("b"), value: [15])
        assertStatus(.duplicateItem, try s.add(attributes: pw("c"), value: [11]))
        assertStatus(.duplicateItem, try s.add(attributes: pw("y"), value: [12]))
        try s.delete(.password(service: "s", account: "b"))
        try s.add(attributes: pw("b"), value: [16])
        // A store's first add looks for its key by a scan (no index yet): same rule, absent attributes as
        // their defaults (sync false), and the next add of the transaction sees the first.
        assertStatus(.duplicateItem, try store().add(attributes: pw("a"), value: [17]))
        assertStatus(
            .duplicateItem,
            try store().transaction { tx in
                try tx.add(attributes: pw("n2"), value: [18])
                try tx.add(attributes: pw("n2"), value: [19])
            })
        var synced = pw("a")
        synced["sync"] = .bool(true)
        try store().add(attributes: synced, value: [20])
        XCTAssertEqual(try s.find(ItemQuery(attributes: pw("a"), synchronizableAny: true)).count, 2)
        try s.delete(ItemQuery(attributes: synced))
        XCTAssertEqual(
            try s.find(.password(service: "s")).compactMap { $0.attributes.string("acct") },
            ["a", "b", "c", "n1", "temp", "x", "y", "z"])
    }
}
