import Foundation
import KcarKeychain  // was: import KeychainAccess

// KeychainAccess's README, as an app calls it: only the import changed.
public enum KeychainAccessUsage {
    public static func run() throws -> [String: Bool] {
        var results: [String: Bool] = [:]
        let keychain = Keychain(service: "com.example.github-token")
        keychain["kishikawakatsumi"] = "01234567-89ab-cdef-0123-456789abcdef"
        results["subscript"] = keychain["kishikawakatsumi"] == "01234567-89ab-cdef-0123-456789abcdef"

        do {
            try keychain.set("01234567-89ab-cdef-0123-456789abcdef", key: "kishikawakatsumi")
        } catch let error {
            print(error)
        }
        let token = try? keychain.get("kishikawakatsumi")
        results["set/get"] = token == "01234567-89ab-cdef-0123-456789abcdef"
        results["string subscript"] = keychain[string: "kishikawakatsumi"] == token

        keychain[data: "secret"] = Data([0, 1, 2])
        results["getData"] = (try keychain.getData("secret")) == Data([0, 1, 2])

        try keychain
            .label("github.com (kishikawakatsumi)")
            .comment("github access token")
            .set("01234567-89ab-cdef-0123-456789abcdef", key: "kishikawakatsumi")
        keychain.accessibility(.afterFirstUnlock)["background"] = "token"
        results["allKeys"] = keychain.allKeys() == ["background", "kishikawakatsumi", "secret"]

        keychain["kishikawakatsumi"] = nil
        do {
            try keychain.remove("secret")
        } catch let error {
            print("error: \(error)")
        }
        results["remove"] = keychain.allKeys() == ["background"]
        try keychain.removeAll()
        results["removeAll"] = keychain.allKeys().isEmpty

        let internet = Keychain(server: "https://github.com", protocolType: .https)
        internet["kishikawakatsumi"] = "01234567-89ab-cdef-0123-456789abcdef"
        results["internet password"] = internet["kishikawakatsumi"] == "01234567-89ab-cdef-0123-456789abcdef"
            && internet.lastError == nil
        try internet.removeAll()
        return results
    }
}
