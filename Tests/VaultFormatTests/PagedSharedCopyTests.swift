import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Shared copies (SPEC.md Part 3, §K9): a copy written or merged into never holds a byte of an own item
/// (ThisDeviceOnly for kcar), whether its value shared a record with others or not; a merge keeps each side's
/// own items; a push sends no tombstone of an item the copy never held.
final class PagedSharedCopyTests: PagedTestCase {
    let own = MergePolicy(isOwn: { $0.attributes.string("pdmn")?.hasSuffix("u") == true })
    var push: MergePolicy { MergePolicy(isOwn: own.isOwn, takesUnknownTombstones: false) }

    func attrs(_ service: String, _ account: String, deviceOnly: Bool) -> Attributes {
        var a = attrs(service, account)
        a["pdmn"] = .string(deviceOnly ? "aku" : "ak")
        return a
    }

    /// The sealed bytes of every record that holds an own item's value (live or kept), read from the file.
    func ownRecords(_ v: PagedVault) throws -> [[UInt8]] {
        var items: [Item] = []
        try v.forEachItem { item in
            if own.isOwn!(item) { items.append(item) }
            return true
        }
        try v.forEachKeptVersion { k in
            if own.isOwn!(k.item) { items.append(k.item) }
            return true
        }
        let bytes = try Recipes.read(v.path)
        return items.map { i in
            let start = Int(v.header.length) + Int(i.location.offset)
            return Array(bytes[start..<start + Int(i.location.length)])
        }
    }

    func assertHoldsNone(_ records: [[UInt8]], _ path: String, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        let bytes = try Recipes.read(path)
        for r in records {
            // A window from the middle of the sealed record: ciphertext no other record has.
            let window = Array(r[r.count / 2..<min(r.count, r.count / 2 + 48)])
            XCTAssertNil(
                bytes.firstRange(of: window), "\(path) holds a record with an own item's value", file: file, line: line)
        }
    }

    func names(_ v: PagedVault) throws -> Set<String> {
        var out = Set<String>()
        try v.forEachItem { item in
            out.insert("\(item.service ?? "")/\(item.account ?? "")")
            return true
        }
        return out
    }

    /// A group's vault (writer 1) whose first commit adds `items` (service, account, device-only, value).
    func group(_ items: [(String, String, Bool, String)]) throws -> (path: String, vault: PagedVault) {
        let path = dir + "/group.kcv"
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
        let g = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: 1)
        try g.commit { tx in
            for (s, a, d, v) in items { _ = try tx.add(attributes: attrs(s, a, deviceOnly: d), value: Array(v.utf8)) }
        }
        return (path, g)
    }

    func testTheCopyAndItsPushesHoldNoOwnByte() throws {
        let shared = dir + "/shared.kcv"
        // One commit: the three values share one solid record.
        let (_, g) = try group([
            ("api", "alice", false, "alice secret"), ("local", "me", true, "device secret"),
            ("api", "bob", false, "bob secret")
        ])
        XCTAssertEqual(
            Set(try g.items(class: .genericPassword, keyValues: []).map(\.location.recordID)).count, 1,
            "one solid record")
        try g.writeCopy(to: shared, keeping: { !self.own.isOwn!($0) })
        XCTAssertThrowsError(try g.writeCopy(to: shared, keeping: { _ in true })) {
            XCTAssertEqual(($0 as? VaultError)?.code, .exists)
        }
        var s = try PagedVault.open(path: shared, secret: secret)
        XCTAssertEqual(try names(s), ["api/alice", "api/bob"])
        XCTAssertEqual(s.header.vaultID, g.header.vaultID)
        XCTAssertEqual(String(decoding: try s.read(try item(s, "api", "bob")), as: UTF8.self), "bob secret")
        XCTAssertEqual(s.verify().problems, [])
        try assertHoldsNone(try ownRecords(g), shared)

        // Changes in the group: again a solid record with an own value, an own item updated, a deletion, and an
        // item added and deleted between two pushes.
        let bob = try item(g, "api", "bob")
        let me = try item(g, "local", "me")
        try g.commit { tx in
            _ = try tx.add(attributes: attrs("api", "carol", deviceOnly: false), value: Array("carol secret".utf8))
            _ = try tx.add(
                attributes: attrs("local", "you", deviceOnly: true), value: Array("second device secret".utf8))
            try tx.update(me, value: Array("device secret 2".utf8))
            try tx.delete(bob)
            _ = try tx.add(attributes: attrs("tmp", "x", deviceOnly: false), value: Array("short-lived".utf8))
        }
        let x = try item(g, "tmp", "x")
        try g.commit { tx in try tx.delete(x) }
        let copy = try PagedVault.open(path: shared, secret: secret, mode: .write, writerID: 2)
        let report = try copy.merge(base: nil, theirs: g, policy: push)
        XCTAssertEqual(report.taken, 2, "carol, and bob's deletion")
        s = try PagedVault.open(path: shared, secret: secret)
        XCTAssertEqual(try names(s), ["api/alice", "api/carol"])
        XCTAssertNil(try s.state(of: x), "no tombstone of an item the copy never held")
        XCTAssertNotNil(try s.state(of: bob), "bob's deletion is pushed")
        XCTAssertEqual(try s.history(of: me.id).count, 0, "an own item's kept versions stay")
        XCTAssertEqual(String(decoding: try s.read(try item(s, "api", "carol")), as: UTF8.self), "carol secret")
        XCTAssertEqual(s.verify().problems, [])
        try assertHoldsNone(try ownRecords(g), shared)
        // Nothing changed: a second push takes nothing.
        let size = try Recipes.read(shared).count
        XCTAssertEqual(
            try PagedVault.open(path: shared, secret: secret, mode: .write, writerID: 2).merge(
                base: nil, theirs: g, policy: push
            ).taken, 0)
        XCTAssertEqual(try Recipes.read(shared).count, size, "nothing written")
    }

    func testAPullKeepsTheGroupsOwnItems() throws {
        let shared = dir + "/shared.kcv"
        let (path, g) = try group([("api", "alice", false, "alice 1"), ("local", "me", true, "mine")])
        try g.writeCopy(to: shared, keeping: { !self.own.isOwn!($0) })
        // Here, alice becomes ThisDeviceOnly; elsewhere, someone changes alice and adds local/me (not own there),
        // and a copy that broke the rule carries an own item.
        try g.commit { tx in
            try tx.update(try item(g, "api", "alice"), attributes: attrs("api", "alice", deviceOnly: true))
        }
        usleep(3000)
        let other = try PagedVault.open(path: shared, secret: secret, mode: .write, writerID: 2)
        try other.commit { tx in
            try tx.update(try item(other, "api", "alice"), value: Array("alice 2".utf8))
            _ = try tx.add(attributes: attrs("local", "me", deviceOnly: false), value: Array("theirs".utf8))
            _ = try tx.add(attributes: attrs("their", "own", deviceOnly: true), value: Array("not for us".utf8))
        }
        let aliceID = try item(g, "api", "alice").id
        // Without the rule the newer version wins: the rule is what keeps the group's own.
        let plain = try copy(path, "plain.kcv")
        _ = try merge(base: nil, ours: plain, theirs: shared)
        let p = try PagedVault.open(path: plain, secret: secret)
        XCTAssertEqual(String(decoding: try p.read(try item(p, "api", "alice")), as: UTF8.self), "alice 2")
        let report = try g.merge(base: nil, theirs: try PagedVault.open(path: shared, secret: secret), policy: own)
        XCTAssertEqual(report.keptOwn, 2, "alice's newer version and the other local/me, both kept in history")
        XCTAssertEqual(try names(g), ["api/alice", "local/me"])
        XCTAssertEqual(String(decoding: try g.read(try item(g, "api", "alice")), as: UTF8.self), "alice 1")
        XCTAssertEqual(String(decoding: try g.read(try item(g, "local", "me")), as: UTF8.self), "mine")
        XCTAssertTrue(try g.history(of: aliceID).contains { $0.why == 2 }, "the version not taken is kept")
        XCTAssertEqual(g.verify().problems, [])
    }

    /// Without own items in it, a record of several members is still copied byte for byte, once: the rule costs
    /// nothing to copies that hold no ThisDeviceOnly item (every git merge of shared copies).
    func testARecordWithoutOwnMembersIsCopiedWhole() throws {
        let (path, _) = try group([("api", "alice", false, "alice 1")])
        let ours = try copy(path, "ours.kcv")
        let theirs = try copy(path, "theirs.kcv")
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 2)
        try t.commit { tx in
            for i in 0..<3 {
                _ = try tx.add(attributes: attrs("api", "user\(i)", deviceOnly: false), value: Array("value \(i)".utf8))
            }
        }
        let record = try item(t, "api", "user0").location
        XCTAssertEqual(try item(t, "api", "user2").location.recordID, record.recordID, "one solid record")
        let report = try PagedVault.open(path: ours, secret: secret, mode: .write, writerID: 1).merge(
            base: nil, theirs: t, policy: own)
        XCTAssertEqual(report.taken, 3)
        XCTAssertEqual(report.recordsCopied, 1)
        let sealed = Array(
            try Recipes.read(theirs)[
                Int(t.header.length) + Int(record.offset)..<Int(t.header.length) + Int(record.offset + record.length)])
        XCTAssertNotNil(try Recipes.read(ours).firstRange(of: sealed), "the record is in OURS byte for byte")
        let o = try PagedVault.open(path: ours, secret: secret)
        XCTAssertEqual(String(decoding: try o.read(try item(o, "api", "user1")), as: UTF8.self), "value 1")
    }

    /// Every key of the items and history trees of `v`: what a reader of the file learns of each item's class
    /// and primary key, tombstones included.
    func treeKeys(_ v: PagedVault) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        for tree in [TreeID.items, .history] {
            try v.scan(tree) { e in
                keys.append(e.key)
                return true
            }
        }
        return keys
    }

    /// A tombstone's key holds the item's class and primary key (service, account) as the item last had them: an
    /// item shared, then made ThisDeviceOnly under another account, then deleted, must not bring that account
    /// into the copy with its tombstone (§K9 rule 1: no state of an own item is taken). The deletion itself is
    /// pushed, at the key the copy knew.
    func testATombstoneOfAnItemMadeOwnCarriesNoOwnKey() throws {
        let shared = dir + "/shared.kcv"
        let (_, g) = try group([("api", "alice", false, "alice secret")])
        try g.writeCopy(to: shared, keeping: { !self.own.isOwn!($0) })
        let alice = try item(g, "api", "alice")
        try g.commit { tx in try tx.update(alice, attributes: attrs("api", "private-account-name", deviceOnly: true)) }
        try g.commit { tx in try tx.delete(try self.item(g, "api", "private-account-name")) }
        let copy = try PagedVault.open(path: shared, secret: secret, mode: .write, writerID: 2)
        XCTAssertEqual(try copy.merge(base: nil, theirs: g, policy: push).taken, 1, "the deletion is pushed")
        let s = try PagedVault.open(path: shared, secret: secret)
        XCTAssertEqual(try names(s), [])
        for key in try treeKeys(s) {
            XCTAssertNil(
                key.firstRange(of: Array("private-account-name".utf8)), "the copy holds the own item's account in a key"
            )
        }
        XCTAssertEqual(s.verify().problems, [])
        // A second push changes nothing, and a pull takes nothing back.
        XCTAssertEqual(
            try PagedVault.open(path: shared, secret: secret, mode: .write, writerID: 2).merge(
                base: nil, theirs: g, policy: push
            ).taken, 0)
        XCTAssertEqual(try g.merge(base: nil, theirs: s, policy: own).taken, 0)
    }

    /// `kcar merge --into COPY GROUP-VAULT` (the device-only rule without a push's rule for tombstones): an own
    /// item deleted in the group, which the copy never held, leaves no tombstone, and so no key, in the copy.
    func testAMergeIntoACopyTakesNoTombstoneOfAnOwnItem() throws {
        let shared = dir + "/shared.kcv"
        let (_, g) = try group([
            ("api", "alice", false, "alice secret"), ("local", "private-account-name", true, "mine")
        ])
        try g.writeCopy(to: shared, keeping: { !self.own.isOwn!($0) })
        try g.commit { tx in try tx.delete(try self.item(g, "local", "private-account-name")) }
        let copy = try PagedVault.open(path: shared, secret: secret, mode: .write, writerID: 2)
        XCTAssertEqual(try copy.merge(base: nil, theirs: g, policy: own).taken, 0)
        for key in try treeKeys(try PagedVault.open(path: shared, secret: secret)) {
            XCTAssertNil(
                key.firstRange(of: Array("private-account-name".utf8)), "the copy holds the own item's account in a key"
            )
        }
    }

    /// §K9: "a second sync with nothing changed writes nothing", also right after the first push, which applied
    /// retention to the kept versions it wrote while the group still holds those past it.
    func testTheFirstPushIsFollowedByNoWrite() throws {
        let shared = dir + "/shared.kcv"
        let (_, g) = try group([("api", "alice", false, "alice 0")])
        for n in 1...13 {
            try g.commit { tx in try tx.update(try self.item(g, "api", "alice"), value: Array("alice \(n)".utf8)) }
        }
        try g.writeCopy(to: shared, keeping: { !self.own.isOwn!($0) })
        let size = try Recipes.read(shared).count
        let report = try PagedVault.open(path: shared, secret: secret, mode: .write, writerID: 2).merge(
            base: nil, theirs: g, policy: push)
        XCTAssertEqual(report.taken, 0)
        XCTAssertEqual(report.historyCopied, 0, "kept versions past retention pushed after the first push")
        XCTAssertEqual(try Recipes.read(shared).count, size, "nothing written")
    }

    /// An item of the copy left out by rule 3 (its service and account are an own item's here) stays live in the
    /// copy: every later pull meets it again, and must write nothing (§K9: a second sync with nothing changed
    /// writes nothing).
    func testAnItemLeftOutIsNotWrittenAgainByTheNextPull() throws {
        let shared = dir + "/shared.kcv"
        let (_, g) = try group([("api", "alice", false, "alice 1"), ("local", "me", true, "mine")])
        try g.writeCopy(to: shared, keeping: { !self.own.isOwn!($0) })
        let other = try PagedVault.open(path: shared, secret: secret, mode: .write, writerID: 2)
        try other.commit { tx in
            _ = try tx.add(attributes: attrs("local", "me", deviceOnly: false), value: Array("theirs".utf8))
        }
        XCTAssertEqual(
            try g.merge(base: nil, theirs: try PagedVault.open(path: shared, secret: secret), policy: own).keptOwn, 1)
        let size = try Recipes.read(g.path).count
        let again = try g.merge(base: nil, theirs: try PagedVault.open(path: shared, secret: secret), policy: own)
        XCTAssertEqual(again.taken + again.keptInHistory + again.historyCopied, 0)
        XCTAssertEqual(try Recipes.read(g.path).count, size, "nothing written")
    }
}
