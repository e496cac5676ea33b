import FixtureRecipes
import Foundation
import VaultFormat
import XCTest

/// Writers of version 2 files: every change gets a version above every version in the vault (V5), including
/// those of delta commits, which write no root, and when the clock steps back; and a folding writer refuses a
/// chain that removes what nobody holds (V6) instead of folding it away.
final class PagedVersionTests: PagedTestCase {
    func testVersionsIncreaseWhenTheClockStepsBack() throws {
        let path = dir + "/v.kcv"
        try PagedVault.create(path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: .packed)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        let start: UInt64 = 1_800_000_000_000
        try v.commit(now: { start }) { tx in _ = try tx.add(attributes: Attributes(["svce": .string("s"), "acct": .string("a")]), value: [0]) }
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
        XCTAssertEqual(try r.history(of: try XCTUnwrap(r.items(class: .genericPassword, keyValues: [.string("s")]).first).id).count, 40)
    }

    func testAFoldRefusesARemoveOfWhatNobodyHolds() throws {
        let path = dir + "/bad.kcv"
        try FileManager.default.copyItem(atPath: FixtureTests.root.appendingPathComponent("Fixtures/vault-v2/malformed/delta-remove-missing.kcv").path,
                                         toPath: path)
        let before = try Recipes.read(path)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        // More than 256 changes: this commit folds the chain.
        XCTAssertThrowsError(try v.commit { tx in
            for i in 0..<300 { _ = try tx.add(attributes: Attributes(["svce": .string("fold"), "acct": .string("\(i)")]), value: [1]) }
        }) { XCTAssertEqual(($0 as? VaultError)?.code, .damagedIndex, "\($0)") }
        XCTAssertEqual(try Recipes.read(path), before, "the failed commit was cut off")
    }
}
