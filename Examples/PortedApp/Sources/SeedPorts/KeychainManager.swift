import Foundation
import KcarKeychain  // was: import Security (and UIKit)

// Seed 000 (../shared/seeds/000_*.txt): a KeychainManager that keeps a JSON array of models in one generic
// password. Ported with its import changed and UIImage -> Data (no UIKit on Linux); the rest as written.

public struct UserData: Codable, Equatable, Sendable {
    public var userName: String? = nil
    public var password: String? = nil
    public var phone: String? = nil
    public var email: String? = nil
    public var image: Data? = nil
    public var categoryName: String? = nil

    public init(userName: String? = nil, password: String? = nil, image: Data? = nil, categoryName: String? = nil) {
        self.userName = userName
        self.password = password
        self.image = image
        self.categoryName = categoryName
    }
}

public final class KeychainManager: @unchecked Sendable {
    public static let shared = KeychainManager()
    private let serviceID = "com.yourApp.business.userData"

    @discardableResult
    public func saveUserDataList(_ list: [UserData]) -> Bool {
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

    public func fetchAllUserDataList() -> [UserData]? {
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

    public func fetchUserData(for category: String) -> [UserData] {
        guard let allList = fetchAllUserDataList() else {
            return []
        }
        return allList.filter { $0.categoryName == category }
    }

    @discardableResult
    public func deleteUserDataList() -> Bool {
        let query: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrService: serviceID
        ]
        let status = SecItemDelete(query as CFDictionary)
        return status == errSecSuccess
    }
}
