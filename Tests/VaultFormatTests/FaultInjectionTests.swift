import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Short writes and EIO injected through `File.faults` (a debug-only seam) at every write, sync and truncate
/// of a commit, a rewrite and a create: a failed operation reports an I/O error and leaves the vault byte for
/// byte as it was (a failed commit is cut back), with no temporary file behind.
final class FaultInjectionTests: VaultTestCase {
    override func tearDownWithError() throws {
        File.faults = nil
        try super.tearDownWithError()
    }

    /// Counts the operations the seam sees while `body` runs; with `fail`, the `fail`-th operation fails with EIO.
    final class Injector: @unchecked Sendable {
        var seen = 0
        var failed = false
        let failAt: Int?
        let failTruncate: Bool
        init(failAt: Int?, failTruncate: Bool = false) {
            self.failAt = failAt
            self.failTruncate = failTruncate
        }
        func install() {
            File.faults = { [self] _, op in
                if op == .truncate, failTruncate, failed { return .error(EIO) }
                seen += 1
                guard seen == failAt else { return nil }
                failed = true
                return .error(EIO)
            }
        }
    }

    func baseVault(_ path: String) throws -> [ItemID] {
        var ids: [ItemID] = []
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            ids.append(try tx.add(attributes: attrs("svc", "a"), value: .bytes(Array("first".utf8))))
            ids.append(try tx.add(attributes: attrs("svc", "b"), value: .bytes(Recipes.noise(200_000, seed: 1))))
        }
        return ids
    }

    /// A commit that writes solid and large records, and a delete: several writes and two syncs.
    func change(_ vault: Vault, _ ids: [ItemID]) throws {
        try vault.commit(options: WriteOptions(autoCompact: false)) { tx in
            try tx.update(ids[0], value: .bytes(Array("second".utf8)))
            try tx.add(attributes: attrs("svc", "c"), value: .bytes(Recipes.noise(5 << 20, seed: 2)))
            try tx.add(attributes: attrs("svc", "d"), value: .bytes(Recipes.text(3000, seed: 3)))
            try tx.delete(ids[1])
        }
    }

    func testShortWritesAreCompleted() throws {
        let path = dir + "/v.kcv"
        let ids = try baseVault(path)
        var shortened = 0
        File.faults = { _, op in
            guard case .write(_, let count) = op, count > 1 else { return nil }
            shortened += 1
            return .short(count / 3 + 1)
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        try change(vault, ids)
        try vault.compact()
        File.faults = nil
        XCTAssertGreaterThan(shortened, 10)
        let after = try snapshot(path)
        XCTAssertEqual(after.values["svc/a"], Array("second".utf8))
        XCTAssertEqual(after.values["svc/c"], Recipes.noise(5 << 20, seed: 2))
        XCTAssertNil(after.values["svc/b"])
        XCTAssertTrue(try Vault.open(path: path, secret: secret).verify().isIntact)
    }

    func testAFailedWriteOrSyncAnywhereInACommitIsCutBack() throws {
        let path = dir + "/v.kcv"
        let ids = try baseVault(path)
        let before = try snapshot(path)
        var point = 1
        while true {
            let vault = try Vault.open(path: path, secret: secret, mode: .write)
            let injector = Injector(failAt: point)
            injector.install()
            do {
                try change(vault, ids)
            } catch let e as VaultError {
                XCTAssertEqual(e.code, .io, "operation \(point): \(e)")
            }
            File.faults = nil
            guard injector.failed else { break }  // every operation has failed once
            assertIntact(path, before, "EIO at operation \(point)")
            XCTAssertEqual(vault.generation, before.generation)
            point += 1
        }
        XCTAssertGreaterThan(point, 4, "a commit makes several writes and two syncs")
        // The last run (no fault reached) committed.
        XCTAssertEqual(try snapshot(path).values["svc/a"], Array("second".utf8))
    }

    /// The write fails and so does the cut back: the bytes written stay after the last commit, as after a
    /// crash. Readers see the previous commit; the same instance's next commit cuts them off and goes on.
    func testAFailedCommitWhoseCutBackFailsLeavesAnIncompleteCommit() throws {
        let path = dir + "/v.kcv"
        let ids = try baseVault(path)
        let before = try snapshot(path)
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        let injector = Injector(failAt: 4, failTruncate: true)
        injector.install()
        _ = expectError(.io) { try change(vault, ids) }
        File.faults = nil
        let reader = try Vault.open(path: path, secret: secret)
        XCTAssertGreaterThan(reader.incompleteBytes, 0)
        XCTAssertEqual(reader.generation, before.generation)
        XCTAssertEqual(reader.verify().problems.map(\.code), [.incompleteCommit])
        var values: [String: [UInt8]] = [:]
        for item in reader.items { values["svc/\(item.account!)"] = try reader.read(item) }
        XCTAssertEqual(values, before.values)
        try change(vault, ids)
        XCTAssertTrue(try Vault.open(path: path, secret: secret).verify().isIntact)
    }

    func testAFailedWriteOrSyncAnywhereInARewriteLeavesTheVault() throws {
        let path = dir + "/v.kcv"
        let ids = try baseVault(path)
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        try vault.commit(options: WriteOptions(autoCompact: false)) { tx in try tx.delete(ids[1]) }
        let rewrites: [(String, (Vault) throws -> Void)] = [
            ("compact", { try $0.compact() }),
            ("rekey", { try $0.rekey(slots: [.keyFile(self.key)]) }),
            (
                "changeSlots",
                { try $0.changeSlots(remove: [], add: [.keyFile(SecureBytes(copying: Recipes.otherKeyFile))]) }
            )
        ]
        for (name, rewrite) in rewrites {
            let before = try snapshot(path)
            var point = 1
            while true {
                let v = try Vault.open(path: path, secret: secret, mode: .write)
                let injector = Injector(failAt: point)
                injector.install()
                do {
                    try rewrite(v)
                } catch let e as VaultError {
                    XCTAssertEqual(e.code, .io, "\(name), operation \(point): \(e)")
                }
                File.faults = nil
                guard injector.failed else { break }
                assertIntact(path, before, "\(name): EIO at operation \(point)")
                XCTAssertEqual(leftovers(dir, expected: ["v.kcv"]), [], "\(name): EIO at operation \(point)")
                point += 1
            }
            XCTAssertGreaterThan(point, 2, name)
            XCTAssertEqual(try snapshot(path).values, before.values, name)
        }
    }

    func testAFailedWriteOrSyncAnywhereInACreateLeavesNothing() throws {
        let path = dir + "/new.kcv"
        var point = 1
        while true {
            let injector = Injector(failAt: point)
            injector.install()
            do {
                try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
                    try tx.add(attributes: attrs("s", "big"), value: .bytes(Recipes.noise(5 << 20, seed: 4)))
                    try tx.add(attributes: attrs("s", "small"), value: .bytes([1, 2, 3]))
                }
            } catch let e as VaultError {
                XCTAssertEqual(e.code, .io, "operation \(point): \(e)")
            }
            File.faults = nil
            guard injector.failed else { break }
            XCTAssertEqual(leftovers(dir, expected: []), [], "EIO at operation \(point)")
            point += 1
        }
        XCTAssertGreaterThan(point, 3)
        XCTAssertTrue(try Vault.open(path: path, secret: secret).verify().isIntact)
    }
}
