import Foundation
import Synchronization
import TestSupport
import XCTest

@testable import VaultFormat

/// A vault file replaced behind an open `Vault` (renamed over by another vault or by an older copy of itself,
/// or overwritten in place): a change either fails with a clear error or applies to the file now at the path,
/// and never damages either file.
final class ReplacedVaultTests: VaultTestCase {
    override func tearDownWithError() throws {
        File.faults = nil
        try super.tearDownWithError()
    }

    func make(_ path: String, _ account: String, key k: [UInt8] = Recipes.keyFile) throws {
        try Vault.create(path: path, group: "g", slots: [.keyFile(SecureBytes(copying: k))], format: .version1) { tx in
            try tx.add(attributes: attrs("svc", account), value: .bytes(Array(account.utf8)))
        }
    }

    func add(_ vault: Vault, _ account: String) throws {
        try vault.commit { tx in try tx.add(attributes: attrs("svc", account), value: .bytes(Array(account.utf8))) }
    }

    func testRenamedOverByAnotherVault() throws {
        for otherKey in [Recipes.keyFile, Recipes.otherKeyFile] {
            let path = dir + "/v.kcv"
            let other = dir + "/other.kcv"
            try make(path, "mine")
            let vault = try Vault.open(path: path, secret: secret, mode: .write)
            try make(other, "theirs", key: otherKey)
            let theirs = try Data(contentsOf: URL(fileURLWithPath: other))
            XCTAssertEqual(rename(other, path), 0)
            for (name, change) in [
                ("commit", { try self.add(vault, "new") }), ("compact", { try vault.compact() }),
                ("changeSlots", { try vault.changeSlots(remove: [], add: [.keyFile(self.key)]) }),
                ("rekey", { try vault.rekey(slots: [.keyFile(self.key)]) })
            ] as [(String, () throws -> Void)] {
                let e = expectError(.replaced, name, change)
                XCTAssertTrue(e?.context.contains("replaced") == true, "\(String(describing: e))")
                XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), theirs, name)
            }
            XCTAssertEqual(leftovers(dir, expected: ["v.kcv"]), [])
            try FileManager.default.removeItem(atPath: path)
        }
    }

    /// Rolled back to an older copy (by rename, or copied over in place): the next change applies to that
    /// file, on top of what it holds; a change to an item only the newer vault had fails as not found.
    func testReplacedByAnOlderCopyOfItself() throws {
        for inPlace in [false, true] {
            let path = dir + "/v.kcv"
            let old = dir + "/old.kcv"
            try make(path, "first")
            try FileManager.default.copyItem(atPath: path, toPath: old)
            let oldBytes = try Data(contentsOf: URL(fileURLWithPath: old))
            let vault = try Vault.open(path: path, secret: secret, mode: .write)
            try add(vault, "second")
            let second = vault.items.first { $0.account == "second" }!.id
            if inPlace {
                try oldBytes.write(to: URL(fileURLWithPath: path))  // same inode, truncated and rewritten
                try FileManager.default.removeItem(atPath: old)
            } else {
                XCTAssertEqual(rename(old, path), 0)
            }
            let e = expectError(.itemNotFound, "update of an item the old copy lacks") {
                try vault.commit { tx in try tx.update(second, value: .bytes([9])) }
            }
            XCTAssertNotNil(e)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), oldBytes)
            try add(vault, "third")
            let now = try snapshot(path)
            XCTAssertEqual(Set(now.values.keys), ["svc/first", "svc/third"], "inPlace \(inPlace)")
            XCTAssertEqual(now.generation, 2)
            XCTAssertTrue(try Vault.open(path: path, secret: secret).verify().isIntact)
            try vault.compact()
            XCTAssertEqual(Set(try snapshot(path).values.keys), ["svc/first", "svc/third"])
            try FileManager.default.removeItem(atPath: path)
        }
    }

    /// Replaced while a commit is being written (after the writer took its lock on the old file): the
    /// commit must not be reported as done when it went to a file no longer at the path.
    func testReplacedDuringACommit() throws {
        let path = dir + "/v.kcv"
        let other = dir + "/other.kcv"
        try make(path, "mine")
        try make(other, "theirs")
        let theirs = try Data(contentsOf: URL(fileURLWithPath: other))
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        let e = expectError(.io, "commit") {
            try vault.commit { tx in
                try tx.add(attributes: attrs("svc", "new"), value: .bytes([1]))
                XCTAssertEqual(rename(other, path), 0)
            }
        }
        XCTAssertTrue(e?.context.contains("replaced") == true, "\(String(describing: e))")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), theirs)
    }

    /// Replaced while a rewrite (compact, rekey, slot change) writes its temporary file: the rewrite must not
    /// rename its copy of the old vault over the new file.
    func testReplacedDuringARewrite() throws {
        let rewrites: [(String, (Vault) throws -> Void)] = [
            ("compact", { try $0.compact() }),
            ("rekey", { try $0.rekey(slots: [.keyFile(self.key)]) }),
            ("changeSlots", { try $0.changeSlots(remove: [], add: [.keyFile(self.key)]) })
        ]
        for (name, rewrite) in rewrites {
            let path = dir + "/v.kcv"
            let other = dir + "/other.kcv"
            try make(path, "mine")
            try make(other, "theirs")
            let theirs = try Data(contentsOf: URL(fileURLWithPath: other))
            let vault = try Vault.open(path: path, secret: secret, mode: .write)
            // The rewrite syncs its temporary file just before renaming it: replace the vault then.
            File.faults = { p, op in
                if op == .sync, p.hasSuffix(".tmp"), fileExists(other) { rename(other, path) }
                return nil
            }
            let e = expectError(.io, name) { try rewrite(vault) }
            File.faults = nil
            XCTAssertTrue(e?.context.contains("replaced") == true, "\(name): \(String(describing: e))")
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), theirs, name)
            XCTAssertEqual(leftovers(dir, expected: ["v.kcv"]), [], name)
            try FileManager.default.removeItem(atPath: path)
        }
    }

    /// Another instance compacts the vault (a new file renamed over the path) just after a refresh or a commit
    /// checked that the file it holds is still at the path, and before it locks that file (held there by the
    /// debug seams `refresh-before-lock` and `commit-before-lock`). The refresh must end on the new file, and
    /// the commit land in it. Before, the refresh read the old file as current (a keychain then took the new
    /// file's generation record for a rollback: KeychainTests' concurrent writers failed about once in 30 runs),
    /// and a version 2 commit failed ("replaced since it was opened").
    func testACompactionBetweenTheCheckAndTheLock() throws {
        for (label, format) in [("v1", NewVaultFormat.version1), ("v2", .current())] {
            for point in ["refresh-before-lock", "commit-before-lock"] {
                if point == "commit-before-lock", label == "v1" { continue }  // v1 checks under its lock
                let path = dir + "/c.kcv"
                try? FileManager.default.removeItem(atPath: path)
                try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: format) { tx in
                    try tx.add(attributes: attrs("svc", "seed"), value: .bytes([1]))
                }
                nonisolated(unsafe) let held = try Vault.open(path: path, secret: secret, mode: .write)
                let marker = dir + "/.pause"
                setenv("KCAR_DEBUG_PAUSE", "\(point):\(marker)", 1)
                defer { unsetenv("KCAR_DEBUG_PAUSE") }
                let failure = Mutex<String?>(nil)
                let thread = Thread {
                    do {
                        if point == "refresh-before-lock" {
                            try held.refresh()
                        } else {
                            try held.commit { tx in
                                try tx.add(
                                    attributes: Attributes(["svce": .string("svc"), "acct": .string("late")]),
                                    value: .bytes([2]))
                            }
                        }
                    } catch {
                        failure.withLock { $0 = "\(error)" }
                    }
                    failure.withLock { if $0 == nil { $0 = "" } }
                }
                thread.start()
                var waited = 0
                while access(marker, F_OK) != 0, waited < 3000 {
                    usleep(1000)
                    waited += 1
                }
                XCTAssertEqual(access(marker, F_OK), 0, "\(point) was not reached")
                unsetenv("KCAR_DEBUG_PAUSE")
                let other = try Vault.open(path: path, secret: secret, mode: .write)
                try other.compact()
                let compacted = other.generation
                unlink(marker)
                while failure.withLock({ $0 }) == nil { usleep(1000) }
                XCTAssertEqual(failure.withLock { $0 }, "", "\(label) \(point)")
                if point == "refresh-before-lock" {
                    XCTAssertEqual(held.generation, compacted, "\(label): the refresh ended on the new file")
                } else {
                    let now = try Vault.open(path: path, secret: secret)
                    XCTAssertEqual(now.generation, compacted + 1, "\(label): the commit landed in the new file")
                    XCTAssertTrue(now.items.contains { $0.account == "late" }, "\(label)")
                }
            }
        }
    }
}
