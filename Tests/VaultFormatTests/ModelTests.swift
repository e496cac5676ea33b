import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Seeded random transactions against a plain dictionary model: after every commit the reopened vault
/// holds exactly the model, reads back every value, and verifies.
final class ModelTests: XCTestCase {
    func testRandomTransactionsMatchAModel() throws {
        let dir = NSTemporaryDirectory() + "kcar-model-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/model.kcv"
        let secret = UnlockSecret.keyFile(SecureBytes(copying: Recipes.keyFile))
        var rng = SplitMix64(state: 42)
        var model: [String: [UInt8]] = [:]  // account -> value
        var labels: [String: String] = [:]

        func value() -> [UInt8] {
            let n: Int
            switch rng.next() % 20 {
            case 0: n = Limits.solidMemberMax + Int(rng.next() % 5000)  // a record of its own
            case 1: n = 0
            default: n = Int(rng.next() % 600)
            }
            return (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next() % 7 == 0 ? rng.next() : 65) }
        }
        func attributes(_ account: String, label: String?) -> Attributes {
            var a = Attributes()
            a[AttributeName.service] = .string("model")
            a[AttributeName.account] = .string(account)
            if let label { a[AttributeName.label] = .string(label) }
            return a
        }

        try Vault.create(
            path: path, group: "model", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: .version1
        ) { _ in }
        let vault = try Vault.open(path: path, secret: secret, mode: .write)
        for round in 0..<120 {
            try vault.commit(options: WriteOptions(autoCompact: round % 2 == 0)) { tx in
                for _ in 0..<(1 + rng.next() % 6) {
                    let account = "a\(rng.next() % 25)"
                    let existing = tx.items.first { $0.account == account }
                    switch (existing, rng.next() % 5) {
                    case (nil, _):
                        let v = value()
                        try tx.add(attributes: attributes(account, label: nil), value: .bytes(v))
                        model[account] = v
                        labels[account] = nil
                    case (let e?, 0):
                        try tx.delete(e.id)
                        model[account] = nil
                        labels[account] = nil
                    case (let e?, 1):
                        let label = "label \(round)"
                        try tx.update(e.id, attributes: attributes(account, label: label))
                        labels[account] = label
                    case (let e?, _):
                        let v = value()
                        try tx.update(e.id, value: .bytes(v))
                        model[account] = v
                    }
                }
            }
            if round % 40 == 39 { try vault.compact() }
            let reopened = try Vault.open(path: path, secret: secret)
            XCTAssertEqual(reopened.count, model.count, "round \(round)")
            for item in reopened.items {
                XCTAssertEqual(try reopened.read(item), model[item.account!], "round \(round): \(item.account!)")
                XCTAssertEqual(item.attributes.string(AttributeName.label), labels[item.account!], "round \(round)")
            }
            if round % 10 == 9 {
                let report = reopened.verify()
                XCTAssertTrue(report.isIntact, "round \(round): \(report.problems)")
            }
        }
    }
}
