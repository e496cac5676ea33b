import Foundation
import KcarKeychain
import Synchronization
import VaultFormat
import XCTest

struct Profile: Codable, Equatable {
    var name: String
    var age: Int?
    var tags: [String]
    var joined: Date
}

/// The Swift-native layer: `Keychain(service:accessGroup:)` (KeychainAccess / Valet style).
final class TypedAPITests: KeychainTestCase {
    func testStringsDataAndCodable() throws {
        let k = Keychain(service: "com.example.app", store: try store())
        XCTAssertNil(k["token"])
        k["token"] = "s3cr3t"
        XCTAssertEqual(k["token"], "s3cr3t")
        k["token"] = "changed"  // replaces, no duplicate
        XCTAssertEqual(k.allKeys(), ["token"])
        XCTAssertEqual(k["token"], "changed")
        k[data: "blob"] = Data([0, 1, 2, 255])
        XCTAssertEqual(k[data: "blob"], Data([0, 1, 2, 255]))
        XCTAssertNil(k["blob"], "not UTF-8: the string subscript reads nil")
        XCTAssertThrowsError(try k.getString("blob"))

        let p = Profile(name: "Zoë", age: nil, tags: ["a", "b"], joined: Date(timeIntervalSince1970: 1_700_000_000))
        try k.set(p, forKey: "profile")
        XCTAssertEqual(try k.get(Profile.self, forKey: "profile"), p)
        try k.set([p, p], forKey: "profiles")
        XCTAssertEqual(try k.get([Profile].self, forKey: "profiles"), [p, p])
        try k.set("plain", forKey: "s")
        XCTAssertEqual(k["s"], "plain", "a String goes in as UTF-8, readable by other programs")
        XCTAssertThrowsError(try k.get(Profile.self, forKey: "token")) { e in
            XCTAssertEqual((e as? KeychainError)?.status, .decode)
        }
        XCTAssertEqual(k.allKeys(), ["blob", "profile", "profiles", "s", "token"])
        XCTAssertTrue(try k.contains("s"))
        try k.remove("s")
        try k.remove("s")  // absent: no error
        XCTAssertFalse(try k.contains("s"))
        // Another service is another namespace.
        let other = Keychain(service: "com.example.other", store: try store())
        XCTAssertNil(other["token"])
        try k.removeAll()
        XCTAssertEqual(k.allKeys(), [])
    }

    /// A key stored in another group of the list is replaced where it is, not added again to the default
    /// group: `get` and `set` name the same item.
    func testSetReplacesTheItemGetReadsInWhicheverGroup() throws {
        let other = Keychain(service: "svc", accessGroup: "app.private", store: try store())
        try other.setString("old", forKey: "k")
        let k = Keychain(service: "svc", store: try store())  // default group: app.shared, the first of the list
        XCTAssertEqual(try k.getString("k"), "old")
        try k.setString("new", forKey: "k")
        XCTAssertEqual(try k.getString("k"), "new")
        XCTAssertEqual(try other.getString("k"), "new")
        XCTAssertEqual(try Keychain(service: "svc", accessGroup: "app.shared", store: try store()).getString("k"), nil)
        try k.setString("fresh", forKey: "n")
        XCTAssertEqual(
            try Keychain(service: "svc", accessGroup: "app.shared", store: try store()).getString("n"), "fresh")
    }

    func testAccessibilityAndUserAttributes() throws {
        let s = try store()
        let k = Keychain(service: "svc", store: s).accessibility(.afterFirstUnlockThisDeviceOnly)
        try k.setString("v", forKey: "a", attributes: ["categoryName": .string("管理员")])
        try k.setString("w", forKey: "b", attributes: ["categoryName": .string("普通用户")])
        let item = try XCTUnwrap(try k.allItems().first)
        XCTAssertEqual(item.attributes.string("pdmn"), "cku")
        XCTAssertTrue(item.isDeviceOnly)
        XCTAssertEqual(item.userAttributes["categoryName"], .string("管理员"))
        XCTAssertEqual(try k.keys(where: ["categoryName": .string("管理员")]), ["a"])
    }

    func testLoadOrCreateIsAtomicAcrossThreadsAndStores() throws {
        let stores = try (0..<4).map { _ in try store() }  // separate stores behave like separate processes
        let results = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let k = Keychain(service: "device", store: stores[i % 4])
            let id = try? k.loadOrCreate(String.self, forKey: "uuid") { UUID().uuidString }
            results.withLock { $0.append(id ?? "error") }
        }
        let all = results.withLock { $0 }
        XCTAssertEqual(all.count, 8)
        XCTAssertEqual(Set(all).count, 1, "every caller got the one stored id: \(all)")
        XCTAssertNotEqual(all[0], "error")
    }

    func testConcurrentWritersLoseNothing() throws {
        let stores = try (0..<3).map { _ in try store() }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { t in
            let s = stores[t % 3]
            for i in 0..<25 {
                do {
                    try s.add(
                        attributes: Attributes(["svce": .string("t\(t)"), "acct": .string("\(i)")]),
                        value: [UInt8(t), UInt8(i)])
                    if i % 5 == 4 {
                        try s.update(.password(service: "t\(t)", account: "\(i - 1)"), set: ["labl": .string("u")])
                    }
                    if i % 7 == 6 { try s.delete(.password(service: "t\(t)", account: "\(i - 2)")) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let items = try store().find(ItemQuery())
        XCTAssertEqual(items.count, 6 * (25 - 3))
        for t in 0..<6 {
            let mine = items.filter { $0.attributes.string("svce") == "t\(t)" }
            // Updated: accounts 3, 8, 13, 18, 23; deleted: 4, 11, 18.
            XCTAssertEqual(
                mine.filter { $0.attributes.string("labl") == "u" }.compactMap { $0.attributes.string("acct") }
                    .sorted(),
                ["13", "23", "3", "8"])
            for item in mine {
                XCTAssertEqual(try stores[0].value(of: item), [UInt8(t), UInt8(item.attributes.string("acct")!)!])
            }
        }
    }
}
