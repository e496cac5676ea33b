import Foundation
import TestSupport
import VaultFormat
import XCTest

/// A generic password's key: its service and account.
private func primaryKey(_ service: String, _ account: String) -> Attributes {
    Attributes([AttributeName.service: .string(service), AttributeName.account: .string(account)])
}

/// Issue 26: one vault shared by many tasks (`SharedVault`), its async variants off the cooperative pool, and
/// `close()`. Written against the public API only.
final class SharedVaultTests: VaultTestCase {
    func make(_ name: String, items: Int, format: NewVaultFormat = .current()) throws -> String {
        let path = dir + "/" + name
        try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: format) { tx in
            for i in 0..<items {
                try tx.add(attributes: primaryKey("db", "user\(i)"), value: .bytes(Array("secret \(i)".utf8)))
            }
        }
        return path
    }

    /// 64 tasks read and write through one `SharedVault` (a `Vault` is not `Sendable`: this did not compile);
    /// every read sees a whole value and every commit lands.
    func testSixtyFourTasksShareOneVault() async throws {
        for format in [NewVaultFormat.current(), .version1] {
            let path = try make("shared.kcv", items: 100, format: format)
            let vault = try SharedVault(path: path, secret: .keyFile(key), mode: .write, readers: 4)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for t in 0..<64 {
                    group.addTask {
                        if t % 8 == 0 {
                            try await vault.async.commit { tx in
                                try tx.add(attributes: primaryKey("new", "t\(t)"), value: .bytes([UInt8(t)]))
                            }
                        } else {
                            let n = t % 100
                            let value = try await vault.async.value(
                                class: .genericPassword, key: primaryKey("db", "user\(n)"))
                            XCTAssertEqual(value, Array("secret \(n)".utf8))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let count = try vault.withVault { $0.count }
            XCTAssertEqual(count, 108)
            XCTAssertEqual(try vault.value(class: .genericPassword, key: primaryKey("new", "t56")), [56])
            XCTAssertNil(try vault.value(class: .genericPassword, key: primaryKey("new", "t57")))
            vault.close()
            try FileManager.default.removeItem(atPath: path)
        }
    }

    /// A long-running reader sees what another writer committed after it opened the vault.
    func testEachCallSeesWhatOthersCommitted() throws {
        let path = try make("seen.kcv", items: 1)
        let reader = try SharedVault(path: path, secret: .keyFile(key))
        XCTAssertNil(try reader.value(class: .genericPassword, key: primaryKey("db", "later")))
        try Vault.open(path: path, secret: .keyFile(key), mode: .write).commit { tx in
            try tx.add(attributes: primaryKey("db", "later"), value: .bytes([9]))
        }
        XCTAssertEqual(try reader.value(class: .genericPassword, key: primaryKey("db", "later")), [9])
        XCTAssertThrowsError(try reader.commit { _ in }) {
            XCTAssertEqual(($0 as? VaultError)?.code, .invalidArgument, "opened for reading")
        }
    }

    /// A key that matches several items is refused by `value`, not answered with one of them.
    func testAValueWhoseKeyMatchesSeveralItemsIsRefused() throws {
        let path = try make("several.kcv", items: 3)
        let vault = try SharedVault(path: path, secret: .keyFile(key))
        let service = Attributes([AttributeName.service: .string("db")])
        XCTAssertNil(try vault.value(class: .genericPassword, key: service), "no item has account \"\"")
        XCTAssertEqual(try vault.items(class: .genericPassword, key: primaryKey("db", "user2")).count, 1)
        try Vault.open(path: path, secret: .keyFile(key), mode: .write).commit { tx in
            // The same service and account twice, as a collaborator's copy could hold them.
            try tx.add(attributes: primaryKey("db", "twice"), value: .bytes([1]))
            try tx.add(attributes: primaryKey("db", "twice"), value: .bytes([2]), ifKeyExists: .keepBoth)
        }
        XCTAssertThrowsError(try vault.value(class: .genericPassword, key: primaryKey("db", "twice"))) {
            XCTAssertEqual(($0 as? VaultError)?.code, .invalidArgument)
            XCTAssertTrue("\($0)".contains("2 items"), "\($0)")
        }
    }

    /// `close()` lets the file go at once; every call after it throws `.closed`, and a second close does nothing.
    func testCloseLetsTheFileGo() async throws {
        let path = try make("closed.kcv", items: 1)
        func descriptors() -> Int {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return fds.filter {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == path
            }
            .count
        }
        let vault = try SharedVault(path: path, secret: .keyFile(key), mode: .write, readers: 3)
        XCTAssertEqual(descriptors(), 4, "a writer and three readers")
        vault.close()
        XCTAssertEqual(descriptors(), 0)
        vault.close()
        XCTAssertThrowsError(try vault.read(try Vault.open(path: path, secret: .keyFile(key)).items[0])) {
            XCTAssertEqual(($0 as? VaultError)?.code, .closed)
            XCTAssertEqual(($0 as? VaultError)?.path, path)
        }
        do {
            _ = try await vault.async.value(class: .genericPassword, key: primaryKey("db", "user0"))
            XCTFail("read a closed vault")
        } catch let e as VaultError {
            XCTAssertEqual(e.code, .closed)
        }
    }

    /// With two readers, a read completes while another holds a reader for as long as it likes; a write goes
    /// on beside both.
    func testReadsRunBesideEachOtherAndBesideAWrite() throws {
        let path = try make("readers.kcv", items: 10)
        let vault = try SharedVault(path: path, secret: .keyFile(key), mode: .write, readers: 2)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? vault.withReader { _ in
                holding.signal()
                release.wait()
            }
            done.signal()
        }
        holding.wait()
        let other = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            XCTAssertEqual(
                try? vault.value(class: .genericPassword, key: primaryKey("db", "user3")), Array("secret 3".utf8))
            try? vault.commit { tx in try tx.add(attributes: primaryKey("db", "beside"), value: .bytes([1])) }
            other.signal()
        }
        // The other reader and the writer were free: this does not wait for the held reader.
        XCTAssertEqual(other.wait(timeout: .now() + 30), .success, "a read or write waited for the held reader")
        release.signal()
        done.wait()
        XCTAssertEqual(try vault.value(class: .genericPassword, key: primaryKey("db", "beside")), [1])
        XCTAssertThrowsError(try SharedVault(path: path, secret: .keyFile(key), readers: 0)) {
            XCTAssertEqual(($0 as? VaultError)?.code, .invalidArgument)
        }
    }

    /// More async calls wait on another holder's lock than the cooperative pool has threads, and a heartbeat
    /// task keeps ticking meanwhile: the calls wait on the vaults' own queues, not on the pool.
    func testWaitingCallsDoNotBlockTheCooperativePool() async throws {
        let path = try make("locked.kcv", items: 1)
        let waiting = ProcessInfo.processInfo.activeProcessorCount + 2
        // Opened before the lock is taken (opening reads under the shared lock).
        let vaults = try (0..<waiting).map { _ in
            try SharedVault(path: path, secret: .keyFile(key), mode: .write, lockTimeout: 20)
        }
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        XCTAssertEqual(flock(fd, LOCK_EX), 0, "another holder of the lock")
        let calls = vaults.enumerated().map { n, vault in
            Task {
                try await vault.async.commit { tx in
                    try tx.add(attributes: primaryKey("waited", "n\(n)"), value: .bytes([UInt8(n)]))
                }
            }
        }
        let heartbeat = Heartbeat()
        try await Task.sleep(for: .milliseconds(1000))
        let during = heartbeat.count
        flock(fd, LOCK_UN)
        for c in calls { try await c.value }
        heartbeat.stop()
        XCTAssertGreaterThan(during, 10, "the heartbeat ticked \(during) times in 1 s while \(waiting) calls waited")
        XCTAssertEqual(try Vault.open(path: path, secret: .keyFile(key)).count, 1 + waiting)
    }
}
