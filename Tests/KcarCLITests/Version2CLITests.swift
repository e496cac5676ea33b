import Crafting
import Foundation
import TestSupport
import VaultFormat
import XCTest

/// What the `kcar` command does with a version 2 file (SPEC.md Part 4): `info` reads its header, `verify`
/// checks it whole with a key (or its structure without one), and the other commands read and change it as
/// they do a version 1 file.
final class Version2CLITests: XCTestCase {
    let v2 = CLITests.repo.appendingPathComponent("Fixtures/vault-v2").path
    let key = CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path

    func testVerifyChecksGoldenAndMalformedVersion2Files() throws {
        for name in ["one-item", "many-items", "history", "compacted", "keychain"] {
            let r = try runKcar(["verify", "--key-file", key, "\(v2)/\(name).kcv"], in: NSTemporaryDirectory())
            XCTAssertEqual(r.code, 0, "\(name): \(r.output)")
            XCTAssertTrue(r.output.contains("intact"), r.output)
            XCTAssertEqual(
                try runKcar(["verify", "--no-key", "\(v2)/\(name).kcv"], in: NSTemporaryDirectory()).code, 0, name)
        }
        // Every malformed file fails, with the error its manifest gives, named once.
        let manifest = try String(contentsOfFile: "\(v2)/malformed/MANIFEST.tsv", encoding: .utf8)
        var checked = 0
        for line in manifest.split(separator: "\n") where !line.hasPrefix("#") {
            let f = line.split(separator: "\t").map(String.init)
            let r = try runKcar(
                ["verify", "--key-file", key, "\(v2)/malformed/\(f[0]).kcv"], in: NSTemporaryDirectory())
            XCTAssertNotEqual(r.code, 0, f[0])
            XCTAssertTrue(r.output.contains(f[2]), "\(f[0]): expected \(f[2]), got \(r.output)")
            XCTAssertEqual(r.output.components(separatedBy: f[2]).count, 2, "\(f[0]): named once: \(r.output)")
            checked += 1
        }
        XCTAssertGreaterThan(checked, 20)
    }

    func testInfoReadsTheHeaderAndCommandsReadAndWrite() throws {
        let dir = NSTemporaryDirectory() + "kcar-v2cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/in/svc", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let vault = dir + "/m.kcv"
        try FileManager.default.copyItem(atPath: "\(v2)/many-items.kcv", toPath: vault)
        let info = try runKcar(["info", vault], in: dir)
        XCTAssertEqual(info.code, 0, info.output)
        XCTAssertTrue(info.output.contains("version:    2"), info.output)
        let list = try runKcar(["list", "--key-file", key, vault], in: dir)
        XCTAssertEqual(list.code, 0, list.output)
        XCTAssertTrue(list.output.contains("svc.0/user100"), list.output)
        try Data("fresh".utf8).write(to: URL(fileURLWithPath: dir + "/in/svc/new"))
        XCTAssertEqual(try runKcar(["add", "--key-file", key, vault, "-C", dir + "/in", "svc/new"], in: dir).code, 0)
        XCTAssertEqual(try runKcar(["delete", "--key-file", key, vault, "svc.0/user100"], in: dir).code, 0)
        let after = try runKcar(["list", "--key-file", key, vault], in: dir)
        XCTAssertTrue(after.output.contains("svc/new"), after.output)
        XCTAssertFalse(after.output.contains("svc.0/user100\n"), after.output)
        XCTAssertEqual(try runKcar(["compact", "--key-file", key, vault], in: dir).code, 0)
        let out = dir + "/out"
        XCTAssertEqual(try runKcar(["extract", "--key-file", key, "-C", out, vault], in: dir).code, 0)
        XCTAssertEqual(try String(contentsOfFile: out + "/svc/new", encoding: .utf8), "fresh")
        let verify = try runKcar(["verify", "--key-file", key, vault], in: dir)
        XCTAssertEqual(verify.code, 0, verify.output)
        XCTAssertTrue(verify.output.contains("2000 items"), verify.output)
        XCTAssertTrue(
            try runKcar(["info", vault], in: dir).output.contains("version:    2"), "commands keep the version")
    }

    /// Issue 10: list, extract and verify read a version 2 vault's items tree page by page, in key order (for
    /// this packed-style vault service, then account, as before), and a damaged leaf in its middle stops each
    /// with exit 4, naming the page.
    func testListExtractAndVerifyStreamTheItemsTree() throws {
        let dir = NSTemporaryDirectory() + "kcar-v2stream-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let vault = dir + "/m.kcv"
        try FileManager.default.copyItem(atPath: "\(v2)/many-items.kcv", toPath: vault)
        let json = try runKcar(["list", "--json", "--key-file", key, vault], in: dir)
        XCTAssertEqual(json.code, 0, json.err)
        let objects = try XCTUnwrap(JSONSerialization.jsonObject(with: json.data) as? [[String: Any]])
        XCTAssertEqual(objects.count, 2000)
        let names = objects.map { o in [o["service"], o["account"], o["id"]].map { Array(($0 as? String ?? "").utf8) } }
        XCTAssertEqual(names, names.sorted { $0.lexicographicallyPrecedes($1) { $0.lexicographicallyPrecedes($1) } })
        let table = try runKcar(["list", "--key-file", key, vault], in: dir)
        XCTAssertEqual(table.code, 0, table.err)
        let rows = table.out.split(separator: "\n")
        XCTAssertEqual(rows.count, 2001)
        XCTAssertEqual(
            rows.dropFirst().map { String($0.split(separator: " ").last ?? "") },
            objects.map { $0["name"] as? String ?? "" })
        let items = try runKcar(["extract", "--key-file", key, vault, "--items", dir + "/all.json"], in: dir)
        XCTAssertEqual(items.code, 0, items.err)
        let file = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/all.json")))
                as? [String: Any])
        XCTAssertEqual((file["items"] as? [Any])?.count, 2000)
        XCTAssertEqual(try runKcar(["extract", "--key-file", key, "-C", dir + "/out", vault], in: dir).code, 0)
        XCTAssertEqual(regularFiles(dir + "/out").count, 2000)

        // A leaf in the middle of the items tree, damaged.
        let crafted = try CraftedPagedVault(path: vault, secret: Recipes.keySecret, random: SystemRandom.shared)
        guard case .branch(let children) = try crafted.page(try XCTUnwrap(crafted.root.items)).content else {
            return XCTFail("the top is a leaf")
        }
        let leaf = children[children.count / 2].child
        let bytes = try Data(contentsOf: URL(fileURLWithPath: vault))
        var damaged = bytes
        damaged[try Vault.inspect(path: vault).header.length + Int(leaf.offset + leaf.length / 2)] ^= 0x40
        try damaged.write(to: URL(fileURLWithPath: vault))
        let page = "page \(Hex.encode(leaf.id.bytes))"
        for args in [
            ["list"], ["list", "--json"], ["verify"], ["extract", "-C", dir + "/again"],
            ["extract", "--items", dir + "/again.json"]
        ] {
            let r = try runKcar(args + ["--key-file", key, vault], in: dir)
            XCTAssertEqual(r.code, 4, "\(args): \(r.output)")
            XCTAssertTrue(r.output.contains(page), "\(args): \(r.output)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/again.json"), "no item file from a damaged vault")
    }
}
