import FixtureRecipes
import Foundation
import VaultFormat
import XCTest

/// Versions (SPEC.md Part 4, V5): every change gets a version above every version in the vault, including
/// those of delta commits, which write no root, and of commits made within one millisecond.
final class PagedVersionTests: XCTestCase {
    func testVersionsOfQuickCommitsStrictlyIncrease() throws {
        let dir = NSTemporaryDirectory() + "kcar-versions-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/v.kcv"
        let secret = UnlockSecret.keyFile(SecureBytes(copying: Recipes.keyFile))
        try PagedVault.create(path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], schema: .packed)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        try v.commit { tx in _ = try tx.add(attributes: Attributes(["svce": .string("s"), "acct": .string("a")]), value: [0]) }
        var seen: [Version] = []
        for round in 0..<40 {
            // Every other round through a fresh instance, which learns the clock from the file alone.
            let w = round % 2 == 0 ? v : try PagedVault.open(path: path, secret: secret, mode: .write)
            let item = try XCTUnwrap(w.items(class: .genericPassword, keyValues: [.string("s"), .string("a")]).first)
            try w.commit { tx in try tx.update(item, value: [UInt8(round)]) }
            let now = try XCTUnwrap(w.items(class: .genericPassword, keyValues: [.string("s"), .string("a")]).first)
            seen.append(try XCTUnwrap(w.version(of: now)))
        }
        for i in seen.indices.dropFirst() { XCTAssertGreaterThan(seen[i].hlc, seen[i - 1].hlc, "commit \(i)") }
    }
}
