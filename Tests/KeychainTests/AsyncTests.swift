import Foundation
import KcarKeychain
import TestSupport
import VaultFormat
import XCTest

/// Issue 12, item 5: async variants that wait for a lock without holding a thread of the cooperative pool.
final class AsyncTests: KeychainTestCase {
    /// More calls wait on another holder's vault lock than the cooperative pool has threads, and a heartbeat
    /// task keeps ticking meanwhile; the calls succeed once the lock is released. (The synchronous calls,
    /// made from tasks, would hold every pool thread: the heartbeat ran once in 3 s in the issue.)
    func testWaitingCallsDoNotBlockTheCooperativePool() async throws {
        let s = try store(["app.shared"])
        try s.add(attributes: attrs(["svce": "a", "acct": "x"]), value: [1], group: "app.shared")
        let fd = open(dir.vaultPath("app.shared"), O_RDONLY)
        defer { close(fd) }
        XCTAssertEqual(flock(fd, LOCK_EX), 0, "another holder of the lock")

        let waiting = ProcessInfo.processInfo.activeProcessorCount + 2
        let calls = try (0..<waiting).map { n in
            let other = try KeychainStore(directory: dir, accessGroups: ["app.shared"], lockTimeout: 20)
            let k = Keychain(service: "a", accessGroup: "app.shared", store: other)
            return Task { try await k.async.set("v\(n)", forKey: "k\(n)") }
        }
        let heartbeat = Heartbeat()
        try await Task.sleep(for: .milliseconds(1000))
        let during = heartbeat.count
        flock(fd, LOCK_UN)
        for c in calls { try await c.value }
        heartbeat.stop()
        // 50 ticks in an idle second; a blocked pool gives 1 or 2.
        print("heartbeat: \(during) ticks of 20 ms in 1 s while \(waiting) async calls waited for the lock")
        XCTAssertGreaterThan(during, 10, "the heartbeat ticked \(during) times in 1 s while \(waiting) calls waited")
        let k = Keychain(service: "a", accessGroup: "app.shared", store: s)
        let keys = try await k.async.allKeys()
        XCTAssertEqual(keys, (["x"] + (0..<waiting).map { "k\($0)" }).sorted())
    }

    func testStoreAndKeychainVariantsMatchTheSynchronousCalls() async throws {
        let s = try store()
        let k = Keychain(service: "svc", accessGroup: "app.shared", store: s)
        try await k.async.set(Profile(name: "a", age: 1, tags: [], joined: Date(timeIntervalSince1970: 0)), forKey: "p")
        try await k.async.setData(Data([1, 2]), forKey: "d", attributes: ["kind": "raw"])
        let r2 = try await k.async.get(Profile.self, forKey: "p")?.name
        XCTAssertEqual(r2, "a")
        let r3 = try await k.async.getData("d")
        XCTAssertEqual(r3, Data([1, 2]))
        let r4 = try await k.async.keys(where: ["kind": "raw"])
        XCTAssertEqual(r4, ["d"])
        let r5 = try await k.async.getAll(Data.self, where: ["kind": "raw"])
        XCTAssertEqual(r5, ["d": Data([1, 2])])
        let r6 = try await k.async.loadOrCreate(String.self, forKey: "id") { "made" }
        XCTAssertEqual(r6, "made")
        let r7 = try await k.async.contains("id")
        XCTAssertTrue(r7)
        try await k.async.remove("id")
        let r8 = try await k.async.getString("id")
        XCTAssertNil(r8)

        let q = ItemQuery.password(service: "svc", group: "app.shared")
        let found = try await s.async.find(q)
        XCTAssertEqual(found.count, 2)
        let r9 = try await s.async.values(of: found)
        XCTAssertEqual(r9, try s.values(of: found))
        let r10 = try await s.async.update(q, set: ["labl": "L"])
        XCTAssertEqual(r10, 2)
        let added = try await s.async.add(attributes: attrs(["svce": "other"]), value: [9], group: "app.private")
        let r11 = try await s.async.value(of: added)
        XCTAssertEqual(r11, [9])
        let r12 = try await s.async.transaction(group: "app.private") { tx in try tx.find(ItemQuery()).count }
        XCTAssertEqual(r12, 1)
        let r13 = try await s.async.delete(ItemQuery(group: "app.private"))
        XCTAssertEqual(r13, 1)
        try await k.async.removeAll()
        let r14 = try await k.async.allKeys()
        XCTAssertEqual(r14, [])

        let data: Data? = try await withKeychainThread { try k.getData("nothing") }
        XCTAssertNil(data)
    }

    func testACancelledTaskDoesNotStartTheCall() async throws {
        let k = Keychain(service: "svc", accessGroup: "app.shared", store: try store())
        let t = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await k.async.set("v", forKey: "k")
        }
        await XCTAssertThrowsErrorAsync(try await t.value)
        XCTAssertNil(try k.getString("k"))
    }

    private func XCTAssertThrowsErrorAsync<T>(
        _ body: @autoclosure () async throws -> T, file: StaticString = #filePath, line: UInt = #line
    ) async {
        do {
            _ = try await body()
            XCTFail("no error", file: file, line: line)
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)", file: file, line: line)
        }
    }
}
