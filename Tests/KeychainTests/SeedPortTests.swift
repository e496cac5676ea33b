import Foundation
import KcarKeychain
import XCTest

// The seed's model (../shared/seeds/000_*.txt), UIImage as Data. The seed's KeychainManager itself, ported with
// its import changed, runs in the ported app outside this package (Examples/PortedApp, `make ported`).

struct UserData: Codable, Equatable {
    var userName: String? = nil
    var password: String? = nil
    var phone: String? = nil
    var email: String? = nil
    var image: Data? = nil
    var categoryName: String? = nil
}

final class SeedPortTests: KeychainTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        SecItemConfiguration.use(try store(["com.yourApp"]))
    }

    /// What the seed's question really wants, done better: each model its own item, filtered by the index.
    func testModelsAsItemsFilteredByCategoryWithoutDecrypting() throws {
        let users = (0..<20).map {
            UserData(userName: "u\($0)", password: "p\($0)", categoryName: $0 % 4 == 0 ? "管理员" : "普通用户")
        }
        for u in users {
            let add: [CFString: Any] = [
                kSecClass: kSecClassGenericPassword, kSecAttrService: "com.yourApp.users", kSecAttrAccount: u.userName!,
                kcarUserAttribute("categoryName"): u.categoryName!, kSecValueData: try JSONEncoder().encode(u)
            ]
            XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        }
        let query: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword, kSecAttrService: "com.yourApp.users",
            kcarUserAttribute("categoryName"): "管理员", kSecReturnAttributes: true, kSecMatchLimit: kSecMatchLimitAll
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
        let add: [String: Any] = [
            kSecClass: kSecClassInternetPassword, kSecAttrServer: "example.com", kSecAttrPort: 443,
            kSecAttrProtocol: kSecAttrProtocolHTTPS, kSecAttrAccount: "bob",
            kSecValueData: Data("pw".utf8), kSecReturnAttributes: true
        ]
        var added: AnyObject?
        XCTAssertEqual(SecItemAdd(add, &added), errSecSuccess)
        XCTAssertEqual((added as? [String: Any])?[kSecAttrPort] as? Int, 443)
        XCTAssertEqual(SecItemAdd(add, nil), errSecDuplicateItem)
        XCTAssertEqual(SecItemAdd([kSecAttrService: "x", kSecValueData: Data()], nil), errSecParam)  // no class
        XCTAssertEqual(
            SecItemAdd([kSecClass: kSecClassGenericPassword, "bogus": 1, kSecValueData: Data()], nil), errSecParam)
        XCTAssertEqual(
            SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrPort: 1, kSecValueData: Data()], nil), errSecParam)
        XCTAssertEqual(
            SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrAccessGroup: "other", kSecValueData: Data()], nil),
            errSecMissingEntitlement)

        var both: AnyObject?
        let q: [String: Any] = [
            kSecClass: kSecClassInternetPassword, kSecAttrServer: "example.com",
            kSecReturnData: true, kSecReturnAttributes: true
        ]
        XCTAssertEqual(SecItemCopyMatching(q, &both), errSecSuccess)
        let d = try XCTUnwrap(both as? [String: Any])
        XCTAssertEqual(d[kSecValueData] as? Data, Data("pw".utf8))
        XCTAssertEqual(d[kSecAttrAccount] as? String, "bob")
        XCTAssertNotNil(d[kSecAttrModificationDate] as? Date)

        XCTAssertEqual(
            SecItemUpdate(
                [kSecClass: kSecClassInternetPassword, kSecAttrServer: "example.com"],
                [kSecValueData: Data("new".utf8), kSecAttrLabel: "L"]), errSecSuccess)
        var data: AnyObject?
        XCTAssertEqual(
            SecItemCopyMatching([kSecClass: kSecClassInternetPassword, kSecReturnData: true], &data), errSecSuccess)
        XCTAssertEqual(data as? Data, Data("new".utf8))
        XCTAssertEqual(
            SecItemUpdate([kSecClass: kSecClassInternetPassword], [kSecClass: kSecClassGenericPassword]), errSecParam)
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassGenericPassword], [kSecAttrLabel: "x"]), errSecItemNotFound)
        XCTAssertEqual(
            SecItemCopyMatching([kSecClass: kSecClassInternetPassword, kSecReturnRef: true], &data), errSecUnimplemented
        )
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassInternetPassword, kSecAttrPort: 443]), errSecSuccess)
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassInternetPassword]), errSecItemNotFound)
        XCTAssertEqual(KeychainStatus(rawValue: errSecItemNotFound).description, "errSecItemNotFound (-25300)")
    }
}
