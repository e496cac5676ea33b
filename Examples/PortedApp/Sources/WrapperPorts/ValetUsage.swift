import Foundation
import KcarKeychain  // was: import Valet

// Valet's README, as an app calls it: only the import changed.
public enum ValetUsage {
    public static func run() throws -> [String: Bool] {
        var results: [String: Bool] = [:]
        let myValet = Valet.valet(with: Identifier(nonEmpty: "Druidia")!, accessibility: .whenUnlocked)
        results["canAccessKeychain"] = myValet.canAccessKeychain()

        let username = "Skroob"
        try? myValet.setString("12345", forKey: username)
        let myLuggageCombination = try? myValet.string(forKey: username)
        results["setString/string"] = myLuggageCombination == "12345"

        try myValet.setObject(Data([1, 2, 3]), forKey: "blob")
        results["setObject/object"] = (try myValet.object(forKey: "blob")) == Data([1, 2, 3])
        results["allKeys"] = (try myValet.allKeys()) == [username, "blob"]

        try? myValet.removeObject(forKey: username)
        do {
            _ = try myValet.string(forKey: username)
            results["itemNotFound"] = false
        } catch KeychainError.itemNotFound {
            results["itemNotFound"] = true
        } catch {
            results["itemNotFound"] = false
        }

        let oldValet = Valet.valet(with: Identifier(nonEmpty: "Druidia-old")!, accessibility: .afterFirstUnlock)
        try oldValet.setString("kept", forKey: "legacy")
        try myValet.migrateObjects(from: oldValet, removeOnCompletion: true)
        let oldKeys = try oldValet.allKeys()
        results["migrateObjects"] = (try? myValet.string(forKey: "legacy")) == "kept" && oldKeys.isEmpty

        try myValet.removeAllObjects()
        results["removeAllObjects"] = (try myValet.allKeys()).isEmpty
        return results
    }
}
