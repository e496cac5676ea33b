import Foundation
import KcarKeychain

// kcar's own additions a ported app takes up next: async calls off the cooperative pool, and a batch read of
// many models (issue 12, items 5 and 7).
public enum KcarAPIUsage {
    struct Model: Codable, Equatable, Sendable {
        var name: String
        var category: String
    }

    public static func run() async throws -> [String: Bool] {
        var results: [String: Bool] = [:]
        let keychain = Keychain(service: "com.example.models")
        for n in 0..<200 {
            try keychain.set(Model(name: "m\(n)", category: n % 2 == 0 ? "even" : "odd"), forKey: "model-\(n)",
                             attributes: ["category": n % 2 == 0 ? "even" : "odd"])
        }
        let even = try keychain.getAll(Model.self, where: ["category": "even"])
        results["getAll"] = even.count == 100 && even["model-42"]?.name == "m42"

        let all = try await keychain.async.getAll(Model.self)
        results["async getAll"] = all.count == 200
        let tokens = Keychain(service: "com.example.tokens")
        try await tokens.async.set("async", forKey: "token")
        let token = try await tokens.async.get(String.self, forKey: "token")
        results["async"] = token == "async"
        try await tokens.async.removeAll()

        try await keychain.async.set("v", forKey: "tagged", attributes: ["a": 1, "b": 2])
        try await keychain.async.set("v", forKey: "tagged", attributes: ["a": .int(3)], replacingAttributes: true)
        let tags = try keychain.allItems().first { $0.account == "tagged" }?.userAttributes
        results["replacingAttributes"] = tags == ["a": 3]
        try await keychain.async.removeAll()
        return results
    }
}
