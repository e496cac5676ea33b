import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Real I/O faults on a small tmpfs: a full disk and a read-only file system. Each failed operation must
/// report an I/O error and leave the vault byte for byte as it was, with no temporary file behind.
/// Needs root (mount); skips otherwise.
final class DiskFaultTests: VaultTestCase {
    func makeVault(_ path: String, big: Int = 100_000) throws {
        try Vault.create(path: path, group: "faults", slots: [.keyFile(key)], format: .version1) { tx in
            try tx.add(attributes: attrs("svc", "small"), value: .bytes(Array("hunter2".utf8)))
            try tx.add(attributes: attrs("svc", "big"), value: .bytes(Recipes.noise(big, seed: 1)))
        }
    }

    func testFullDiskCommitIsCutBack() throws {
        let m = try scratchMount("512k")
        let path = m.path + "/v.kcv"
        try makeVault(path)
        let before = try snapshot(path)
        let vault = try Vault.open(path: path, secret: secret, mode: .write)

        // In memory, larger than the file system.
        let tooLarge = Recipes.noise(1_000_000, seed: 2)
        let e1 = expectError(.io, "commit of bytes") {
            try vault.commit { tx in try tx.add(attributes: attrs("svc", "huge"), value: .bytes(tooLarge)) }
        }
        XCTAssertTrue(e1?.context.contains("No space left on device") == true, "\(String(describing: e1))")
        assertIntact(path, before, "after a commit that filled the disk")

        // Streamed from a file descriptor (a record of its own, written in batches).
        let src = dir + "/huge.bin"
        XCTAssertTrue(FileManager.default.createFile(atPath: src, contents: Data(tooLarge)))
        let fd = open(src, O_RDONLY)
        defer { close(fd) }
        _ = expectError(.io, "streamed commit") {
            try vault.commit { tx in
                try tx.update(vault.items.first { $0.account == "small" }!.id, value: .bytes([1]))
                try tx.add(attributes: attrs("svc", "huge"), value: .fileDescriptor(fd, size: UInt64(tooLarge.count)))
            }
        }
        assertIntact(path, before, "after a streamed commit that filled the disk")
        XCTAssertEqual(leftovers(m.path, expected: ["v.kcv"]), [])

        // The same instance goes on once the value fits.
        try vault.commit { tx in
            try tx.add(attributes: attrs("svc", "fits"), value: .bytes(Recipes.noise(20_000, seed: 3)))
        }
        XCTAssertTrue(try Vault.open(path: path, secret: secret).verify().isIntact)
        XCTAssertEqual(try snapshot(path).values.count, 3)
    }

    func testFullDiskRewritesAndCreateLeaveNothingBehind() throws {
        let m = try scratchMount("512k")
        let path = m.path + "/v.kcv"
        try makeVault(path, big: 150_000)
        let before = try snapshot(path)
        m.fill("filler", leave: 16_384)
        let vault = try Vault.open(path: path, secret: secret, mode: .write)

        _ = expectError(.io, "compact") { try vault.compact() }
        assertIntact(path, before, "after compact on a full disk")
        _ = expectError(.io, "changeSlots") {
            try vault.changeSlots(remove: [], add: [.keyFile(SecureBytes(copying: Recipes.otherKeyFile))])
        }
        assertIntact(path, before, "after a slot change on a full disk")
        XCTAssertEqual(vault.header.slots.count, 1)
        _ = expectError(.io, "rekey") { try vault.rekey(slots: [.keyFile(key)]) }
        assertIntact(path, before, "after rekey on a full disk")
        _ = expectError(.io, "commit") {
            try vault.commit { tx in
                try tx.add(attributes: attrs("svc", "more"), value: .bytes(Recipes.noise(64_000, seed: 4)))
            }
        }
        assertIntact(path, before, "after a commit on a full disk")
        _ = expectError(.io, "create") {
            try Vault.create(path: m.path + "/new.kcv", group: "g", slots: [.keyFile(key)], format: .version1) { tx in
                try tx.add(attributes: attrs("s", "a"), value: .bytes(Recipes.noise(64_000, seed: 5)))
            }
        }
        XCTAssertEqual(leftovers(m.path, expected: ["v.kcv", "filler"]), [])

        // With room again, the same instance rewrites.
        try FileManager.default.removeItem(atPath: m.path + "/filler")
        try vault.compact()
        try vault.rekey(slots: [.keyFile(key)])
        XCTAssertEqual(try snapshot(path).values, before.values)
        XCTAssertEqual(leftovers(m.path, expected: ["v.kcv"]), [])
    }

    /// A commit that fits but whose automatic compaction does not: the commit stands, the compaction error
    /// is kept in `lastCompactionError`, and the next commit with room compacts.
    func testAutoCompactionOnAFullDiskKeepsTheCommit() throws {
        let m = try scratchMount("4m")
        let path = m.path + "/v.kcv"
        var id: ItemID!
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1) { tx in
            id = try tx.add(attributes: attrs("svc", "large"), value: .bytes(Recipes.noise(600_000, seed: 6)))
        }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        for s: UInt8 in 7...8 {
            try vault.commit(options: WriteOptions(autoCompact: false)) { tx in
                try tx.update(id, value: .bytes(Recipes.noise(600_000, seed: s)))
            }
        }
        XCTAssertTrue(vault.shouldCompact)
        m.fill("filler", leave: 65_536)
        let small = Recipes.noise(1000, seed: 9)
        try vault.commit { tx in try tx.add(attributes: attrs("svc", "small"), value: .bytes(small)) }
        XCTAssertEqual(vault.lastCompactionError?.code, .io)
        let after = try Vault.open(path: path, secret: secret)
        XCTAssertTrue(after.verify().isIntact)
        XCTAssertEqual(try after.read(after.items.first { $0.account == "small" }!), small)
        XCTAssertEqual(try after.read(after.item(id)!), Recipes.noise(600_000, seed: 8))
        XCTAssertEqual(leftovers(m.path, expected: ["v.kcv", "filler"]), [])

        try FileManager.default.removeItem(atPath: m.path + "/filler")
        try vault.commit { tx in try tx.add(attributes: attrs("svc", "another"), value: .bytes([1])) }
        XCTAssertNil(vault.lastCompactionError)
        XCTAssertFalse(vault.shouldCompact)
        XCTAssertTrue(try Vault.open(path: path, secret: secret).verify().isIntact)
    }

    /// On a read-only file system a vault opens and reads; opening it to write (which commit, compact, slot
    /// changes and rekey need) and creating one fail with an I/O error; nothing changes.
    func testReadOnlyFileSystem() throws {
        let m = try scratchMount("1m")
        let path = m.path + "/v.kcv"
        try makeVault(path)
        let before = try snapshot(path)
        XCTAssertTrue(m.remountReadOnly(), "remount read-only: \(String(cString: strerror(errno)))")

        let reader = try Vault.open(path: path, secret: secret)
        XCTAssertTrue(reader.verify().isIntact)
        let e = expectError(.io, "open to write") { _ = try Vault.open(path: path, secret: secret, mode: .write) }
        XCTAssertTrue(e?.context.contains("Read-only file system") == true, "\(String(describing: e))")
        _ = expectError(.io, "create") {
            try Vault.create(path: m.path + "/new.kcv", group: "g", slots: [.keyFile(key)], format: .version1) { _ in }
        }
        _ = expectError(.io, "create over") {
            try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: .version1, overwrite: true) { _ in
            }
        }
        assertIntact(path, before, "on a read-only file system")
        XCTAssertEqual(leftovers(m.path, expected: ["v.kcv"]), [])

        // Back to read-write: the vault is the one it was and takes commits.
        XCTAssertTrue(m.remountReadWrite())
        let writer = try Vault.open(path: path, secret: secret, mode: .write)
        try writer.commit { tx in try tx.add(attributes: attrs("svc", "later"), value: .bytes([2])) }
        XCTAssertTrue(writer.verify().isIntact)
    }
}
