import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// The golden and malformed vaults of Fixtures/: reproduced byte for byte, read back, and rejected as written.
final class FixtureTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func fixture(_ name: String) -> String { root.appendingPathComponent("Fixtures/vault/\(name)").path }

    func testGoldenVaultsAreReproducedByteForByte() throws {
        for g in Recipes.goldens {
            let golden = try Recipes.read(Self.fixture("\(g.name).kcv"))
            XCTAssertEqual(try Recipes.bytes(of: g), golden, "\(g.name).kcv differs from what the code writes")
        }
    }

    func testGoldenVaultsReadBack() throws {
        for g in Recipes.goldens {
            let vault = try Vault.open(path: Self.fixture("\(g.name).kcv"), secret: g.secret)
            let items = vault.items
            XCTAssertEqual(items.count, g.contents.count, g.name)
            let expected = g.contents.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            let got = items.sorted { ($0.service!, $0.account!) < ($1.service!, $1.account!) }
            for (item, want) in zip(got, expected) {
                XCTAssertEqual(item.service, want.0)
                XCTAssertEqual(item.account, want.1)
                XCTAssertEqual(try vault.read(item), want.2, "\(g.name): \(want.0)/\(want.1)")
            }
            let report = vault.verify()
            XCTAssertTrue(report.isIntact, "\(g.name): \(report.problems)")
        }
    }

    func testEverySlotOfTheSlotsVaultOpensIt() throws {
        let path = Self.fixture("slots.kcv")
        let secrets: [UnlockSecret] = [
            .passphrase(SecureBytes(copying: Array(Recipes.passphrase.utf8))),
            .keyFile(SecureBytes(copying: Recipes.keyFile)),
            .keyFile(SecureBytes(copying: Recipes.x25519Secret))
        ]
        for (i, s) in secrets.enumerated() {
            let v = try Vault.open(path: path, secret: s)
            XCTAssertEqual(v.unlockedSlot, i)
            XCTAssertEqual(try v.read(v.items[0]), Array("hunter2".utf8))
        }
    }

    /// MANIFEST.tsv gives what a reader of format version 1 reports. `version-2` claims version 2 in a header
    /// whose MAC covers version 1: a reader that knows version 2 (``Vault``) finds the MAC wrong instead.
    func testMalformedVaultsFailAsTheManifestSays() throws {
        let count = try Self.checkMalformed(
            Recipes.malformed, fixture: Self.fixture, expect: { $0.name == "version-2" ? .tamperedHeader : $0.expect }
        ) {
            try Vault.open(path: $0, secret: Recipes.keySecret).verify()
        }
        XCTAssertGreaterThanOrEqual(count, 40)
    }

    /// Every malformed file is what its recipe writes, is listed in MANIFEST.tsv with its stage and error, and
    /// fails so: opening it (`open` stage), or verifying it (`verify`: the first problem). Returns how many.
    static func checkMalformed(
        _ malformed: [Malformed], fixture: (String) -> String, expect: (Malformed) -> VaultError.Code = { $0.expect },
        openAndVerify: (String) throws -> VerifyReport
    ) throws -> Int {
        let manifest = String(decoding: try Recipes.read(fixture("malformed/MANIFEST.tsv")), as: UTF8.self)
        let lines = manifest.split(separator: "\n").filter { !$0.hasPrefix("#") }
        XCTAssertEqual(lines.count, malformed.count)
        for m in malformed {
            let path = fixture("malformed/\(m.name).kcv")
            XCTAssertEqual(try m.build(), try Recipes.read(path), "\(m.name).kcv differs from its recipe")
            XCTAssertTrue(
                lines.contains { $0.hasPrefix("\(m.name)\t\(m.stage.rawValue)\t\(m.expect.rawValue)\t") }, m.name)
            do {
                let report = try openAndVerify(path)
                XCTAssertEqual(m.stage, .verify, "\(m.name): opened, but should fail at open with \(m.expect)")
                XCTAssertEqual(report.problems.first?.code, expect(m), "\(m.name): \(report.problems)")
            } catch let e as VaultError {
                XCTAssertEqual(m.stage, .open, "\(m.name): \(e)")
                XCTAssertEqual(e.code, expect(m), "\(m.name): \(e)")
            }
        }
        return lines.count
    }

    func testSpecVectorIsTheOneItemFixture() throws {
        let spec = String(decoding: try Recipes.read(Self.root.appendingPathComponent("SPEC.md").path), as: UTF8.self)
        let block = spec.components(separatedBy: "<!-- vector:one-item.kcv -->\n```\n")[1].components(
            separatedBy: "```")[0]
        let hex = block.split(separator: "\n").joined()
        XCTAssertEqual(Hex.decode(hex), try Recipes.read(Self.fixture("one-item.kcv")))
    }

    func testTornCommitLeavesThePreviousGeneration() throws {
        let vault = try Vault.open(path: Self.fixture("malformed/torn-commit.kcv"), secret: Recipes.keySecret)
        XCTAssertEqual(vault.generation, 4)
        XCTAssertGreaterThan(vault.incompleteBytes, 0)
        XCTAssertNil(vault.items.first { $0.attributes.string(AttributeName.label) == "third" })
    }
}

/// SPEC.md promises that a reader needs zlib only: every golden vault reads back with zlib's inflater.
final class ZlibReaderTests: XCTestCase {
    func testGoldenVaultsReadWithZlibAlone() throws {
        Deflate.inflater = .zlib
        defer { Deflate.inflater = .libdeflate }
        for g in Recipes.goldens {
            let vault = try Vault.open(path: FixtureTests.fixture("\(g.name).kcv"), secret: g.secret)
            XCTAssertTrue(vault.verify().isIntact, g.name)
        }
    }
}

/// The golden and malformed vaults of format version 2 (released; they never change) (Fixtures/vault-v2/, SPEC.md Part 4): reproduced
/// byte for byte, read back with ``PagedVault`` as their recipes meant them, and rejected as MANIFEST.tsv says.
final class FixtureV2Tests: XCTestCase {
    static func fixture(_ name: String) -> String {
        FixtureTests.root.appendingPathComponent("Fixtures/vault-v2/\(name)").path
    }

    func testGoldenVaultsAreReproducedByteForByte() throws {
        var all: [(String, RecipesV2.Expected)] = []
        for g in RecipesV2.goldens {
            let (bytes, expected) = try RecipesV2.build(g)
            XCTAssertEqual(
                bytes, try Recipes.read(Self.fixture("\(g.name).kcv")),
                "vault-v2/\(g.name).kcv differs from what the code writes")
            all.append((g.name, expected))
        }
        XCTAssertEqual(
            String(decoding: try Recipes.read(Self.fixture("EXPECTED.json")), as: UTF8.self),
            RecipesV2.expectedJSON(all))
    }

    func testGoldenVaultsReadBack() throws {
        for g in RecipesV2.goldens {
            let path = NSTemporaryDirectory() + "kcar-v2-readback-\(UUID().uuidString)"
            let expected = try g.build(path)
            try? FileManager.default.removeItem(atPath: path)
            let vault = try PagedVault.open(path: Self.fixture("\(g.name).kcv"), secret: Recipes.keySecret)
            XCTAssertEqual(vault.incompleteBytes, 0, g.name)
            let report = vault.verify()
            XCTAssertTrue(report.problems.isEmpty, "\(g.name): \(report.problems)")
            XCTAssertEqual(report.items, expected.items.count, g.name)
            var seen = 0
            try vault.forEachItem { item in
                seen += 1
                guard let want = expected.items[item.id] else {
                    XCTFail("\(g.name): unexpected item \(item.id)")
                    return true
                }
                XCTAssertEqual(item.itemClass, want.itemClass, g.name)
                XCTAssertEqual(item.attributes, want.attributes, g.name)
                XCTAssertEqual(try vault.read(item), want.value, g.name)
                // Found again by primary key, by descending the items tree.
                let keys =
                    vault.schema.classes[item.itemClass.rawValue]?.keyAttributes.map {
                        item.attributes[$0.name] ?? $0.defaultValue
                    } ?? []
                XCTAssertTrue(
                    try vault.items(class: item.itemClass, keyValues: keys).contains { $0.id == item.id }, g.name)
                return true
            }
            XCTAssertEqual(seen, expected.items.count, g.name)
        }
    }

    /// A version 1 reader stops at the header of every version 2 file: *unsupported version*; ``Vault``, which
    /// reads both versions, reads each with the items ``PagedVault`` reads.
    func testVersion1ReaderRefusesVersion2AndVaultReadsIt() throws {
        for g in RecipesV2.goldens {
            let bytes = try Recipes.read(Self.fixture("\(g.name).kcv"))
            XCTAssertThrowsError(
                try Header.parse(prefix: bytes, fileSize: UInt64(bytes.count), versions: 1...1) {
                    Array(bytes.prefix($0))
                }
            ) {
                XCTAssertEqual(($0 as? VaultError)?.code, .unsupportedVersion, g.name)
            }
            let v = try Vault.open(path: Self.fixture("\(g.name).kcv"), secret: Recipes.keySecret)
            let p = try PagedVault.open(path: Self.fixture("\(g.name).kcv"), secret: Recipes.keySecret)
            var expected: [ItemID: [UInt8]] = [:]
            try p.forEachItem { item in
                expected[item.id] = try p.read(item)
                return true
            }
            XCTAssertEqual(
                Dictionary(uniqueKeysWithValues: try v.items.map { ($0.id, try v.read($0)) }), expected, g.name)
        }
    }

    func testMalformedVaultsFailAsTheManifestSays() throws {
        _ = try FixtureTests.checkMalformed(RecipesV2.malformed, fixture: Self.fixture) {
            try PagedVault.open(path: $0, secret: Recipes.keySecret).verify()
        }
    }
}
