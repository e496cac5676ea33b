import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Version 2 vaults (SPEC.md Part 4, draft) end to end: seeded random commits against a model, reopened
/// from disk, with lookups by primary key and by indexed attribute, history, tombstones and damage.
final class PagedVaultTests: PagedTestCase {
    func make(_ name: String = "v2.kcv") throws -> String {
        let path = dir + "/" + name
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: schema)
        return path
    }

    func attributes(_ service: String, _ account: String, team: Int) -> Attributes {
        var a = Attributes()
        a["svce"] = .string(service)
        if !account.isEmpty { a["acct"] = .string(account) }  // an absent account is keyed by its default
        a["@team"] = .string("t\(team)")
        a["labl"] = .string("label of \(service)")
        return a
    }

    func testRandomCommitsMatchAModelAcrossReopens() throws {
        let path = try make()
        var rng = SplitMix64(state: 99)
        // (service, account) -> (team, value)
        var model: [String: (service: String, account: String, team: Int, value: [UInt8])] = [:]
        var folds = 0
        var deltas = 0
        for round in 0..<50 {
            let vault = try PagedVault.open(path: path, secret: secret, mode: .write)
            let before = vault.generation
            try vault.commit { tx in
                let n = round % 15 == 0 ? 300 : 1 + rng.below(8)
                var touched = Set<String>()  // items added in this commit are not in the vault yet
                for _ in 0..<n {
                    let s = "svc\(rng.below(40))"
                    let a = rng.below(5) == 0 ? "" : "acct\(rng.below(30))"
                    let k = s + "/" + a
                    guard touched.insert(k).inserted else { continue }
                    let value = (0..<rng.below(300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    let team = rng.below(7)
                    if let old = model[k] {
                        let item = try XCTUnwrap(
                            vault.items(
                                class: .genericPassword,
                                keyValues: [.bool(false), .string(old.service), .string(old.account)]
                            ).first)
                        switch rng.below(3) {
                        case 0:
                            try tx.delete(item)
                            model[k] = nil
                        case 1:
                            try tx.update(item, attributes: attributes(s, a, team: team), value: value)
                            model[k] = (s, a, team, value)
                        default:
                            try tx.update(item, value: value)
                            model[k] = (s, a, old.team, value)
                        }
                    } else {
                        try tx.add(attributes: attributes(s, a, team: team), value: value)
                        model[k] = (s, a, team, value)
                    }
                }
            }
            XCTAssertEqual(vault.generation, before + 1)
            // Reopened from disk: the model, item by item, by primary key and by attribute.
            let r = try PagedVault.open(path: path, secret: secret)
            XCTAssertEqual(r.count, model.count)
            if round % 10 == 9 { XCTAssertEqual(try r.verifyIndex(), model.count) }
            for (_, m) in model.prefix(25) {
                let found = try r.items(
                    class: .genericPassword, keyValues: [.bool(false), .string(m.service), .string(m.account)])
                XCTAssertEqual(found.count, 1)
                XCTAssertEqual(try r.read(found[0]), m.value)
                XCTAssertEqual(found[0].attributes["@team"], .string("t\(m.team)"))
                XCTAssertEqual(found[0].attributes["acct"], m.account.isEmpty ? nil : .string(m.account))
            }
            let team = rng.below(7)
            let byTeam = try r.items(attribute: "@team", equals: .string("t\(team)")).map {
                $0.service! + "/" + ($0.account ?? "")
            }
            XCTAssertEqual(Set(byTeam), Set(model.filter { $0.value.team == team }.map(\.key)))
            var all: [String] = []
            try r.forEachItem {
                all.append($0.service! + "/" + ($0.account ?? ""))
                return true
            }
            XCTAssertEqual(all.count, model.count)
            XCTAssertEqual(Set(all), Set(model.keys))
            if r.generation > 1 {
                let raw = try Data(contentsOf: URL(fileURLWithPath: path))
                // The last trailer's flags: a fold or a delta commit.
                if raw[raw.count - 40] & 1 == 1 { folds += 1 } else { deltas += 1 }
            }
        }
        XCTAssertGreaterThan(folds, 3)
        XCTAssertGreaterThan(deltas, 20)
    }

    func testUpdatesKeepHistoryAndDeletesLeaveTombstones() throws {
        let path = try make()
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        try v.commit { tx in try tx.add(attributes: attributes("gh", "me", team: 1), value: Array("one".utf8)) }
        var item = try XCTUnwrap(
            v.items(class: .genericPassword, keyValues: [.bool(false), .string("gh"), .string("me")]).first)
        let v1 = try XCTUnwrap(v.version(of: item))
        try v.commit { tx in try tx.update(item, value: Array("two".utf8)) }
        item = try XCTUnwrap(
            v.items(class: .genericPassword, keyValues: [.bool(false), .string("gh"), .string("me")]).first)
        let v2 = try XCTUnwrap(v.version(of: item))
        XCTAssertGreaterThan(v2, v1)
        XCTAssertEqual(try v.history(of: item.id).map(\.version), [v1])
        // A key change moves the item: the old key is gone, the new one holds the same id.
        try v.commit { tx in try tx.update(item, attributes: attributes("gh", "you", team: 1)) }
        XCTAssertEqual(
            try v.items(class: .genericPassword, keyValues: [.bool(false), .string("gh"), .string("me")]), [])
        item = try XCTUnwrap(
            v.items(class: .genericPassword, keyValues: [.bool(false), .string("gh"), .string("you")]).first)
        XCTAssertEqual(try v.read(item), Array("two".utf8))
        try v.commit { tx in try tx.delete(item) }
        let r = try PagedVault.open(path: path, secret: secret)
        XCTAssertEqual(r.count, 0)
        XCTAssertEqual(try r.items(class: .genericPassword, keyValues: [.bool(false), .string("gh")]), [])
        XCTAssertEqual(try r.history(of: item.id).map(\.why), [1, 1, 3])
        XCTAssertEqual(try r.items(attribute: "@team", equals: .string("t1")), [])
    }

    /// A file renamed over the vault after it was opened takes no commit meant for the old one.
    func testACommitToAReplacedFileFails() throws {
        let path = try make()
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        let other = try make("other.kcv")
        XCTAssertEqual(rename(other, path), 0)
        XCTAssertThrowsError(try v.commit { tx in try tx.add(attributes: attributes("a", "b", team: 1), value: [1]) }) {
            XCTAssertEqual(($0 as? VaultError)?.code, .io)
        }
        XCTAssertEqual(try PagedVault.open(path: path, secret: secret).count, 0)
    }

    func testVersion1ReadersRefuseVersion2() throws {
        let path = try make()
        // What a reader of version 1 only does with the header (Vault reads both versions).
        let bytes = try Recipes.read(path)
        XCTAssertThrowsError(
            try Header.parse(prefix: bytes, fileSize: UInt64(bytes.count), versions: 1...1) { Array(bytes.prefix($0)) }
        ) {
            XCTAssertEqual(($0 as? VaultError)?.code, .unsupportedVersion)
        }
        XCTAssertThrowsError(try PagedVault.open(path: FixtureTests.fixture("one-item.kcv"), secret: secret)) {
            XCTAssertEqual(($0 as? VaultError)?.code, .unsupportedVersion)
        }
    }

    /// Every byte flip in the index of a vault of folds and deltas is caught: opening, a lookup, a scan
    /// or verification fails with a specific error; no flip ever gives a different answer.
    func testByteFlipsNeverGiveAWrongAnswer() throws {
        let path = try make()
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        try v.commit { tx in
            for i in 0..<400 {
                try tx.add(attributes: attributes("s\(i % 20)", "a\(i)", team: i % 3), value: [UInt8(i % 256)])
            }
        }
        try v.commit { tx in try tx.add(attributes: attributes("late", "x", team: 2), value: [1, 2]) }
        let good = try Data(contentsOf: URL(fileURLWithPath: path))
        func answers(_ p: String) throws -> [String] {
            let r = try PagedVault.open(path: p, secret: secret)
            // A damaged last trailer reads as an interrupted write: the commit before it, and the bytes after
            // it reported (SPEC.md §8).
            if r.incompleteBytes > 0 { return ["incomplete"] + (try answersOf(r)) }
            return try answersOf(r)
        }
        func answersOf(_ r: PagedVault) throws -> [String] {
            _ = try r.verifyIndex()
            var out: [String] = []
            try r.forEachItem {
                out.append("\($0.service!)/\($0.account!)")
                return true
            }
            out += try r.items(attribute: "@team", equals: .string("t2")).map { $0.account! }
            return out
        }
        let expected = try answers(path)
        XCTAssertTrue(expected.contains("late/x"))
        // What the vault held before its last commit.
        let previous = dir + "/previous.kcv"
        try Data(good.prefix(upTo: good.count - 1)).write(to: URL(fileURLWithPath: previous))
        let expectedPrevious = try answers(previous)
        XCTAssertEqual(expectedPrevious.first, "incomplete")
        XCTAssertFalse(expectedPrevious.contains("late/x"))
        let flipped = dir + "/flipped.kcv"
        let header = Int(good[12]) | Int(good[13]) << 8 | Int(good[14]) << 16 | Int(good[15]) << 24
        var rng = SplitMix64(state: 5)
        var caught = 0
        for _ in 0..<100 {
            var d = good
            let at = header + rng.below(good.count - header)
            d[at] ^= UInt8(1 << rng.below(8))
            try d.write(to: URL(fileURLWithPath: flipped))
            do {
                let got = try answers(flipped)
                XCTAssertTrue(got == expected || got == expectedPrevious, "a flip at \(at) changed an answer")
            } catch let e as VaultError {
                XCTAssertTrue([.damagedIndex, .truncated, .damagedRecord].contains(e.code), "\(e)")
                caught += 1
            }
        }
        // Flips in the records region of the 400 values are found only when a value is read.
        XCTAssertGreaterThan(caught, 12)
    }
}
