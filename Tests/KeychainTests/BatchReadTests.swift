import Foundation
import KcarKeychain
import KeyedArchive
import VaultFormat
import XCTest

/// Issue 12, item 7: the values of every matching item in one pass, each record decrypted once.
final class BatchReadTests: KeychainTestCase {
    /// 200 models with a user attribute and 50 other items in one group, as the seed's `[UserData]` kept one
    /// item per model.
    private func fill(_ k: Keychain) throws {
        try store().transaction(group: "app.shared") { tx in
            for n in 0..<250 {
                let model = UserData(
                    userName: "user\(n)", password: "pw\(n)", email: "u\(n)@example.com",
                    categoryName: n < 200 ? "user" : "other")
                var a = Attributes([
                    "svce": "models", "acct": .string(String(format: "m%03d", n)), "@kind": n < 200 ? "user" : "other"
                ])
                a["pdmn"] = "ak"
                _ = try tx.add(attributes: a, value: [UInt8](try ArchiveEncoder().encode(model)))
            }
        }
    }

    func testValuesMatchReadingOneByOne() throws {
        let s = try store()
        let k = Keychain(service: "models", accessGroup: "app.shared", store: s)
        try fill(k)
        let q = ItemQuery(attributes: Attributes(["svce": "models", "@kind": "user"]))
        let items = try s.find(q)
        XCTAssertEqual(items.count, 200)

        var clock = ContinuousClock.now
        let one = try items.map { try s.value(of: $0) }
        let oneByOne = ContinuousClock.now - clock
        clock = .now
        let batch = try s.values(of: items)
        let batched = ContinuousClock.now - clock
        XCTAssertEqual(batch, one)
        print("200 matching items of 250: one by one \(oneByOne), batch \(batched)")

        let pairs = try s.values(matching: q)
        XCTAssertEqual(pairs.map(\.item), items)
        XCTAssertEqual(pairs.map(\.value), one)

        let models = try k.getAll(UserData.self, where: ["kind": "user"])
        XCTAssertEqual(models.count, 200)
        XCTAssertEqual(models["m007"]?.password, "pw7")
        XCTAssertEqual(try k.getAll(UserData.self).count, 250, "[:]: every key of the service")

        // The same item twice, and items of two groups, keep the order asked for.
        let other = try s.add(attributes: attrs(["svce": "models", "acct": "p"]), value: [7], group: "app.private")
        XCTAssertEqual(try s.values(of: [items[3], other, items[3]]), [one[3], [7], one[3]])
    }

    func testADeletedItemIsNotFound() throws {
        let s = try store()
        let a = try s.add(attributes: attrs(["svce": "x", "acct": "a"]), value: [1], group: "app.shared")
        let b = try s.add(attributes: attrs(["svce": "x", "acct": "b"]), value: [2], group: "app.shared")
        try s.delete(ItemQuery.password(service: "x", account: "a"))
        assertStatus(.itemNotFound, try s.values(of: [b, a]))
        XCTAssertEqual(try s.values(of: [b]), [[2]])
        XCTAssertEqual(try s.values(of: []), [])
    }

    /// SecItemCopyMatching with kSecMatchLimitAll and kSecReturnData reads through the batch: the same
    /// values, in the order of the attributes returned.
    func testSecItemCopyMatchingAllReturnsEveryValue() throws {
        let s = try store()
        SecItemConfiguration.use(s)
        try fill(Keychain(service: "models", accessGroup: "app.shared", store: s))
        let query: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword, kSecAttrService: "models",
            kcarUserAttribute("kind"): "user", kSecReturnData: true,
            kSecReturnAttributes: true, kSecMatchLimit: kSecMatchLimitAll
        ]
        var result: AnyObject?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        let rows = try XCTUnwrap(result as? [[String: Any]])
        XCTAssertEqual(rows.count, 200)
        for row in rows.prefix(20) {
            let account = try XCTUnwrap(row[kSecAttrAccount as String] as? String)
            let n = try XCTUnwrap(Int(account.dropFirst()))
            let model = try ArchiveDecoder().decode(
                UserData.self, from: try XCTUnwrap(row[kSecValueData as String] as? Data))
            XCTAssertEqual(model.password, "pw\(n)")
        }
        var dataOnly: AnyObject?
        var q2 = query
        q2[kSecReturnAttributes] = nil
        XCTAssertEqual(SecItemCopyMatching(q2 as CFDictionary, &dataOnly), errSecSuccess)
        XCTAssertEqual((dataOnly as? [Data])?.count, 200)
    }
}
