import Crafting
import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Reading a vault from the CLI safely: a trailer's huge item count is a damaged index (not an allocation that
/// kills the process), extract checks every name against the others before writing anything, and every name
/// `list` prints (`%id/...` included) reads back with extract. Each test failed before its fix.
final class VaultReadingCLITests: XCTestCase {
    var dir: String!
    var keyFile: String { CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-review-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// Runs kcar; returns (exit status, whether it died of a signal, stderr).
    func run(_ args: [String]) throws -> (code: Int32, signalled: Bool, err: String) {
        let p = kcarProcess(args, cwd: dir)
        let err = Pipe()
        p.standardError = err
        try p.run()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, p.terminationReason == .uncaughtSignal, String(decoding: e, as: UTF8.self))
    }

    /// `TailReader.load` calls `state.reserveCapacity(Int(t.itemCount))` for a checkpoint before the
    /// count is checked against ITEMS_MAX (SPEC.md §3: limits are checked before allocating). A checkpoint
    /// trailer with item count 0xFFFFFFFF makes the reader allocate storage for 4.3 billion items: the process
    /// dies instead of reporting a damaged index (exit 4).
    func testHugeTrailerItemCountIsADamagedIndexNotACrash() throws {
        var v = try CraftedVault(
            keyFile: Recipes.keyFile, group: "g", random: DeterministicRandom(seed: Recipes.seed(80)))
        let itemID = [UInt8](repeating: 0xA1, count: 16)
        let recordID = [UInt8](repeating: 0xB1, count: 16)
        let rec = v.appendRecord(
            id: recordID, blocks: [.stored(CraftedVault.recordPlaintext([(itemID, [7])]), index: 0, last: true)])
        let entry = CraftedVault.entry(
            strings: [("acct", "a"), ("svce", "s")], size: 1, recordID: recordID, offset: rec.0, length: rec.1)
        let idx = v.appendIndex(CraftedVault.indexPlaintext([(1, itemID, entry)]), generation: 1)
        v.appendTrailer(
            generation: 1, commitStart: 0, index: idx, previous: nil, itemCount: .max, checkpoint: true, chain: 0)
        let path = dir + "/count.kcv"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(v.bytes)))
        let r = try run(["list", path, "--key-file", keyFile])
        XCTAssertFalse(r.signalled, "kcar list died of signal \(r.code): \(r.err)")
        XCTAssertEqual(r.code, 4, r.err)
    }

    /// README "Extraction safety": existing files are refused with exit 7, "checked for every item
    /// before anything is written". Two items of a vault that map to the same file are not checked against each
    /// other: extract writes the first, then fails on the second (exit 7), leaving a partial extraction.
    func testExtractRefusesConflictingNamesBeforeWritingAnything() throws {
        let path = dir + "/dup.kcv"
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: .version1
        ) { tx in
            for v in ["first", "second"] {
                var a = Attributes()
                a[AttributeName.service] = .string("svc")
                a[AttributeName.account] = .string("token")
                try tx.add(attributes: a, value: .bytes(Array(v.utf8)), ifKeyExists: .keepBoth)
            }
        }
        let out = dir + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let r = try run(["extract", path, "-C", out, "--key-file", keyFile])
        XCTAssertFalse(r.signalled)
        if r.code != 0 {
            XCTAssertFalse(
                FileManager.default.fileExists(atPath: out + "/svc/token"),
                "exit \(r.code) after writing svc/token: \(r.err)")
        }
    }

    /// README: "An ITEM is a name as `list` prints it". `list` prints `%id/<hex id>` for items
    /// without service and account, but `ItemPath.parse` cannot decode `%id` (`%` followed by non-hex), so
    /// `extract --stdout %id/<hex>` answers "no item named" (exit 6): such an item cannot be read with kcar.
    func testExtractStdoutTakesTheIdNameThatListPrints() throws {
        let path = dir + "/noname.kcv"
        var id: ItemID!
        try Vault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: .version1
        ) { tx in
            var a = Attributes()
            a[AttributeName.label] = .string("no service or account")
            id = try tx.add(attributes: a, value: .bytes(Array("value".utf8)))
        }
        let r = try run(["extract", path, "--stdout", "%id/\(id!)", "--key-file", keyFile])
        XCTAssertEqual(r.code, 0, r.err)
    }
}
