import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Writers of version 2 files: every change gets a version above every version in the vault (V5), including
/// those of delta commits, which write no root, and when the clock steps back; and a folding writer refuses a
/// chain that removes what nobody holds (V6) instead of folding it away.
final class PagedVersionTests: PagedTestCase {
    func testVersionsIncreaseWhenTheClockStepsBack() throws {
        let path = dir + "/v.kcv"
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            schema: .servicesAndAccounts)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        let start: UInt64 = 1_800_000_000_000
        try v.commit(now: { start }) { tx in
            _ = try tx.add(attributes: Attributes(["svce": .string("s"), "acct": .string("a")]), value: [0])
        }
        var seen: [Version] = []
        for round in 0..<40 {
            // The clock goes back a second each round; every other round a fresh instance learns the clock
            // from the file alone (a delta commit's versions are only in its segment).
            let w = round % 2 == 0 ? v : try PagedVault.open(path: path, secret: secret, mode: .write)
            let item = try XCTUnwrap(w.items(class: .genericPassword, keyValues: [.string("s"), .string("a")]).first)
            try w.commit(now: { start - UInt64(round) * 1000 }) { tx in try tx.update(item, value: [UInt8(round)]) }
            let now = try XCTUnwrap(w.items(class: .genericPassword, keyValues: [.string("s"), .string("a")]).first)
            seen.append(try XCTUnwrap(w.version(of: now)))
        }
        for i in seen.indices.dropFirst() { XCTAssertGreaterThan(seen[i], seen[i - 1], "commit \(i)") }
        let r = try PagedVault.open(path: path, secret: secret)
        // 40 replaced versions, of which retention (keep 10 by default) keeps the last 10.
        XCTAssertEqual(
            try r.history(of: try XCTUnwrap(r.items(class: .genericPassword, keyValues: [.string("s")]).first).id).map(
                \.version), Array(seen.dropLast().suffix(10)))
    }

    /// V8: a commit that touches an item trims its history to the retention rule, without a compaction.
    func testTouchingAnItemTrimsItsHistory() throws {
        let path = dir + "/keep.kcv"
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            schema: .servicesAndAccounts,
            retention: Retention(keep: 2, days: 90, tombstoneDays: 90))
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        let start: UInt64 = 1_800_000_000_000
        try v.commit(now: { start }) { tx in
            _ = try tx.add(attributes: Attributes(["svce": .string("s"), "acct": .string("a")]), value: [0])
        }
        func item() throws -> Item {
            try XCTUnwrap(v.items(class: .genericPassword, keyValues: [.string("s"), .string("a")]).first)
        }
        var versions: [Version] = [try XCTUnwrap(v.version(of: try item()))]
        for round in 1...6 {
            // Several commits each, some of them folds (more than 256 changes).
            try v.commit(now: { start + UInt64(round) }) { tx in
                try tx.update(try item(), value: [UInt8(round)])
                if round % 3 == 0 {
                    for i in 0..<300 {
                        _ = try tx.add(
                            attributes: Attributes(["svce": .string("f\(round)"), "acct": .string("\(i)")]), value: [])
                    }
                }
            }
            versions.append(try XCTUnwrap(v.version(of: try item())))
            XCTAssertEqual(
                try v.history(of: try item().id).map(\.version), Array(versions.dropLast().suffix(2)), "round \(round)")
        }
        // A hundred days on, the next touch drops what is older than 90 days: only the version it replaces stays.
        try v.commit(now: { start + 100 * 86_400_000 }) { tx in try tx.update(try item(), value: [9]) }
        XCTAssertEqual(try v.history(of: try item().id).map(\.version), [versions.last!])
        XCTAssertEqual(v.verify().problems, [])
        XCTAssertEqual(try PagedVault.open(path: path, secret: secret).history(of: try item().id).count, 1)
    }

    func testAFoldRefusesARemoveOfWhatNobodyHolds() throws {
        let path = dir + "/bad.kcv"
        try FileManager.default.copyItem(
            atPath: FixtureTests.root.appendingPathComponent("Fixtures/vault-v2/malformed/delta-remove-missing.kcv")
                .path,
            toPath: path)
        let before = try Recipes.read(path)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        // More than 256 changes: this commit folds the chain.
        XCTAssertThrowsError(
            try v.commit { tx in
                for i in 0..<300 {
                    _ = try tx.add(
                        attributes: Attributes(["svce": .string("fold"), "acct": .string("\(i)")]), value: [1])
                }
            }
        ) { XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex, "\($0)") }
        XCTAssertEqual(try Recipes.read(path), before, "the failed commit was cut off")
    }
}
