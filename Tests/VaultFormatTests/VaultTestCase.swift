import Foundation
import TestSupport
import VaultFormat
import XCTest

/// A temporary folder per test, the fixtures' key file, and attributes for service/account items.
class VaultTestCase: XCTestCase {
    var dir: String!
    let key = SecureBytes(copying: Recipes.keyFile)
    var secret: UnlockSecret { .keyFile(key) }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// Runs `body` once for each way a vault is written to (version 1, version 2 with its items read, version 2
    /// on demand) on a new vault at `dir/v.kcv` holding what `seed` adds, with a way to open it for writing.
    func eachWayOfWriting(
        seed: (Transaction) throws -> Void = { _ in },
        _ body: (_ name: String, _ open: () throws -> Vault) throws -> Void
    ) throws {
        for (name, format, onDemand) in [
            ("version 1", NewVaultFormat.version1, false), ("version 2", .current(), false),
            ("version 2 on demand", .current(), true)
        ] {
            let path = dir + "/v.kcv"
            try Vault.create(path: path, group: "g", slots: [.keyFile(key)], format: format, overwrite: true, seed)
            try body(name) { try Vault.open(path: path, secret: self.secret, mode: .write, itemsOnDemand: onDemand) }
        }
    }

    func attrs(_ s: String, _ a: String) -> Attributes {
        var x = Attributes()
        x[AttributeName.service] = .string(s)
        x[AttributeName.account] = .string(a)
        return x
    }
}
