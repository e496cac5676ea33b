import Foundation
import KcarKeychain

/// The seeds' and Apple's ported code, called as the apps call it: each check's name and whether it did what
/// it does on iOS.
public enum SeedChecks {
    public static func keychainManager() throws -> [String: Bool] {
        let m = KeychainManager.shared
        let user1 = UserData(userName: "张三", password: "123456", categoryName: "普通用户")
        let user2 = UserData(userName: "李四", password: "abc123", image: Data([0x89, 0x50, 0x4E, 0x47]), categoryName: "管理员")
        return ["empty at first": m.fetchAllUserDataList() == nil,
                "save": m.saveUserDataList([user1, user2]),
                "fetch": m.fetchAllUserDataList() == [user1, user2],
                "filter": m.fetchUserData(for: "管理员") == [user2],
                "save again replaces": m.saveUserDataList([user1]) && m.fetchAllUserDataList() == [user1],
                "delete": m.deleteUserDataList() && m.fetchAllUserDataList() == nil]
    }

    public static func archivingHelpers() throws -> [String: Bool] {
        ArchivingKeychain.save("passwordKey", data: ["user": "bob", "pin": 1234] as NSDictionary)
        let loaded = ArchivingKeychain.load("passwordKey") as? NSDictionary
        ArchivingKeychain.save("passwordKey", data: "replaced")
        let replaced = ArchivingKeychain.load("passwordKey") as? String
        let updated = ArchivingKeychain.update("updated", forService: "passwordKey")
        let afterUpdate = ArchivingKeychain.load("passwordKey") as? String
        ArchivingKeychain.delete("passwordKey")
        let group = "ABCDE12345.com.jinyinghui.bill"
        ArchivingKeychain.save("shared", data: "for the team", accessGroup: group)
        let shared = ArchivingKeychain.load("shared", accessGroup: group) as? String
        let uuid = ArchivingKeychain.uuid()
        return ["save/load an NSDictionary": loaded?["user"] as? String == "bob" && (loaded?["pin"] as? NSNumber)?.intValue == 1234,
                "delete-then-add replaces": replaced == "replaced",
                "SecItemUpdate": updated && afterUpdate == "updated",
                "delete": ArchivingKeychain.load("passwordKey") == nil,
                "access group": shared == "for the team",
                "device UUID is kept": ArchivingKeychain.uuid() == uuid && UUID(uuidString: uuid) != nil]
    }

    public static func addingAPassword() throws -> [String: Bool] {
        try AppleSample.addCredentials(Credentials(username: "appleseed", password: "hunter2"))
        let read = try AppleSample.readCredentials()
        try AppleSample.updateCredentials(Credentials(username: "appleseed", password: "correct horse"))
        let updated = try AppleSample.readCredentials()
        try AppleSample.deleteCredentials()
        var gone = false
        do { _ = try AppleSample.readCredentials() } catch KeychainError.noPassword { gone = true }
        return ["add/read": read == Credentials(username: "appleseed", password: "hunter2"),
                "update": updated.password == "correct horse", "delete": gone]
    }

    public static func keychainItemWrapper() throws -> [String: Bool] {
        let wrapper = KeychainItemWrapper(identifier: "Password", accessGroup: nil)
        wrapper.setObject("bob", forKey: kSecAttrAccount)
        let reread = KeychainItemWrapper(identifier: "Password", accessGroup: nil)
        let account = reread.object(forKey: kSecAttrAccount) as? String
        reread.setObject("hunter2", forKey: kSecValueData)
        let third = KeychainItemWrapper(identifier: "Password", accessGroup: nil)
        let password = third.object(forKey: kSecValueData) as? String
        third.resetKeychainItem()
        return ["account written and read": account == "bob", "password through returned attributes": password == "hunter2"]
    }
}
