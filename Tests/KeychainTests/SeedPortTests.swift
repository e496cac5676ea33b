import Foundation
import KcarKeychain
import XCTest

// The seed's KeychainManager (../shared/seeds/000_*.txt), ported: `import Security` became `import KcarKeychain`,
// UIImage became Data (no UIKit on Linux). Everything else is the seed's code as written.

struct UserData: Codable, Equatable {
    var userName: String? = nil
    var password: String? = nil
    var phone: String? = nil
    var email: String? = nil
    var image: Data? = nil
    var categoryName: String? = nil
}

final class KeychainManager: @unchecked Sendable {
    static let shared = KeychainManager()
    private let serviceID = "com.yourApp.business.userData"

    @discardableResult
    func saveUserDataList(_ list: [UserData]) -> Bool {
        do {
            let data = try JSONEncoder().encode(list)
            deleteUserDataList()

            let query: [CFString: Any] = [
                kSecClass: kSecClassGenericPassword,
                kSecAttrService: serviceID,
                kSecValueData: data,
                kSecAttrAccessible: kSecAttrAccessibleWhenUnlocked
            ]

            let status = SecItemAdd(query as CFDictionary, nil)
            return status == errSecSuccess
        } catch {
            print("模型编码失败：\(error)")
            return false
        }
    }

    func fetchAllUserDataList() -> [UserData]? {
        let query: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrService: serviceID,
            kSecReturnData: kCFBooleanTrue!,
            kSecMatchLimit: kSecMatchLimitOne
        ]

        var dataRef: AnyObject?
        let status = SecItemCopyMatching(query as CFDictionary, &dataRef)

        guard status == errSecSuccess, let data = dataRef as? Data else {
            return nil
        }

        do {
            return try JSONDecoder().decode([UserData].self, from: data)
        } catch {
            print("模型解码失败：\(error)")
            return nil
        }
    }

    func fetchUserData(for category: String) -> [UserData] {
        guard let allList = fetchAllUserDataList() else {
            return []
        }
        return allList.filter { $0.categoryName == category }
    }

    @discardableResult
    func deleteUserDataList() -> Bool {
        let query: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrService: serviceID
        ]
        let status = SecItemDelete(query as CFDictionary)
        return status == errSecSuccess
    }
}

final class SeedPortTests: KeychainTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        SecItemConfiguration.use(try store(["com.yourApp"]))
    }

    func testSeedKeychainManagerWorksUnchanged() throws {
        let m = KeychainManager.shared
        XCTAssertNil(m.fetchAllUserDataList())
        XCTAssertFalse(m.deleteUserDataList())  // errSecItemNotFound, as on iOS
        let user1 = UserData(userName: "张三", password: "123456", categoryName: "普通用户")
        let user2 = UserData(userName: "李四", password: "abc123", image: Data([0x89, 0x50, 0x4E, 0x47]), categoryName: "管理员")
        XCTAssertTrue(m.saveUserDataList([user1, user2]))
        XCTAssertEqual(m.fetchAllUserDataList(), [user1, user2])
        XCTAssertEqual(m.fetchUserData(for: "管理员"), [user2])
        // Saving again replaces (the seed deletes first), no duplicate.
        XCTAssertTrue(m.saveUserDataList([user1]))
        XCTAssertEqual(m.fetchAllUserDataList(), [user1])
        XCTAssertTrue(m.deleteUserDataList())
        XCTAssertNil(m.fetchAllUserDataList())
    }

    /// What the seed's question really wants, done better: each model its own item, filtered by the index.
    func testModelsAsItemsFilteredByCategoryWithoutDecrypting() throws {
        let users = (0..<20).map { UserData(userName: "u\($0)", password: "p\($0)", categoryName: $0 % 4 == 0 ? "管理员" : "普通用户") }
        for u in users {
            let add: [CFString: Any] = [
                kSecClass: kSecClassGenericPassword, kSecAttrService: "com.yourApp.users", kSecAttrAccount: u.userName!,
                kcarUserAttribute("categoryName"): u.categoryName!, kSecValueData: try JSONEncoder().encode(u),
            ]
            XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        }
        let query: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword, kSecAttrService: "com.yourApp.users",
            kcarUserAttribute("categoryName"): "管理员", kSecReturnAttributes: true, kSecMatchLimit: kSecMatchLimitAll,
        ]
        var result: AnyObject?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        let rows = try XCTUnwrap(result as? [[String: Any]])
        XCTAssertEqual(rows.compactMap { $0[kSecAttrAccount] as? String }.sorted(), ["u0", "u12", "u16", "u4", "u8"])
        XCTAssertEqual(rows.first?[kSecAttrAccessGroup] as? String, "com.yourApp")
        XCTAssertNil(rows.first?[kSecValueData], "attributes only: no value was read")
    }

    /// The README's typed example compiles with `import KcarKeychain` alone.
    func testTypedAPIWithOneImport() throws {
        let keychain = Keychain(service: "com.example.app", accessGroup: "com.yourApp")
        let profile = UserData(userName: "u", categoryName: "admin")
        try keychain.set(profile, forKey: "profile", attributes: ["category": .string("admin")])
        XCTAssertEqual(try keychain.keys(where: ["category": .string("admin")]), ["profile"])
        XCTAssertEqual(try keychain.get(UserData.self, forKey: "profile"), profile)
    }

    func testSecItemStatusesAndResults() throws {
        let add: [String: Any] = [kSecClass: kSecClassInternetPassword, kSecAttrServer: "example.com", kSecAttrPort: 443,
                                  kSecAttrProtocol: kSecAttrProtocolHTTPS, kSecAttrAccount: "bob",
                                  kSecValueData: Data("pw".utf8), kSecReturnAttributes: true]
        var added: AnyObject?
        XCTAssertEqual(SecItemAdd(add, &added), errSecSuccess)
        XCTAssertEqual((added as? [String: Any])?[kSecAttrPort] as? Int, 443)
        XCTAssertEqual(SecItemAdd(add, nil), errSecDuplicateItem)
        XCTAssertEqual(SecItemAdd([kSecAttrService: "x", kSecValueData: Data()], nil), errSecParam)  // no class
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, "bogus": 1, kSecValueData: Data()], nil), errSecParam)
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrPort: 1, kSecValueData: Data()], nil), errSecParam)
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrAccessGroup: "other", kSecValueData: Data()], nil),
                       errSecMissingEntitlement)

        var both: AnyObject?
        let q: [String: Any] = [kSecClass: kSecClassInternetPassword, kSecAttrServer: "example.com",
                                kSecReturnData: true, kSecReturnAttributes: true]
        XCTAssertEqual(SecItemCopyMatching(q, &both), errSecSuccess)
        let d = try XCTUnwrap(both as? [String: Any])
        XCTAssertEqual(d[kSecValueData] as? Data, Data("pw".utf8))
        XCTAssertEqual(d[kSecAttrAccount] as? String, "bob")
        XCTAssertNotNil(d[kSecAttrModificationDate] as? Date)

        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassInternetPassword, kSecAttrServer: "example.com"],
                                     [kSecValueData: Data("new".utf8), kSecAttrLabel: "L"]), errSecSuccess)
        var data: AnyObject?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassInternetPassword, kSecReturnData: true], &data), errSecSuccess)
        XCTAssertEqual(data as? Data, Data("new".utf8))
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassInternetPassword], [kSecClass: kSecClassGenericPassword]), errSecParam)
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassGenericPassword], [kSecAttrLabel: "x"]), errSecItemNotFound)
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassInternetPassword, kSecReturnRef: true], &data), errSecUnimplemented)
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassInternetPassword, kSecAttrPort: 443]), errSecSuccess)
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassInternetPassword]), errSecItemNotFound)
        XCTAssertEqual(KeychainStatus(rawValue: errSecItemNotFound).description, "errSecItemNotFound (-25300)")
    }
}
