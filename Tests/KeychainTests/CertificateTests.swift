import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// The DER reader, certificates and keys as items (SPEC.md Part 3 §K3.1), over `Fixtures/certs/` (made by
/// `scripts/certs/make_fixtures.sh`, its expected fields taken with OpenSSL).
final class CertificateTests: KeychainTestCase {
    static let certs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/certs")

    struct Row {
        let file: String
        let fields: [String: String]
        var expect: String { fields["expect"] ?? "" }
    }

    func rows(_ manifest: String) throws -> [Row] {
        let lines = try String(contentsOf: Self.certs.appendingPathComponent(manifest), encoding: .utf8)
            .split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = try XCTUnwrap(lines.first)
        return lines.dropFirst().map { Row(file: $0[0], fields: Dictionary(uniqueKeysWithValues: zip(header, $0))) }
    }

    func bytes(_ file: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: Self.certs.appendingPathComponent(file)))
    }

    func hex(_ s: String?) -> [UInt8]? { s == nil || s == "-" ? nil : Hex.decode(s!) }

    var validCertificates: [(Row, [UInt8])] {
        get throws { try rows("MANIFEST.tsv").filter { $0.expect == "ok" }.map { ($0, try bytes($0.file)) } }
    }

    // MARK: The reader

    func testSHA1Vectors() {
        XCTAssertEqual(Hex.encode(SHA1.hash([])), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        XCTAssertEqual(Hex.encode(SHA1.hash(Array("abc".utf8))), "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(
            Hex.encode(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        // 55 and 56 bytes: the padding fits one block, then needs two.
        XCTAssertEqual(
            Hex.encode(SHA1.hash([UInt8](repeating: 0x61, count: 55))), "c1c8bbdc22796e28c0e15163d20899b65621d65a")
        XCTAssertEqual(
            Hex.encode(SHA1.hash([UInt8](repeating: 0x61, count: 56))), "c2db330f6083854c99d4b5bfb6e8f29f201be699")
    }

    /// Every row of the manifest: the fields OpenSSL found, or the error code.
    func testManifest() throws {
        let all = try rows("MANIFEST.tsv")
        XCTAssertGreaterThanOrEqual(all.filter { $0.expect == "ok" }.count, 13)
        XCTAssertGreaterThanOrEqual(all.filter { $0.expect != "ok" }.count, 16)
        for row in all {
            let der = try bytes(row.file)
            if row.expect != "ok" {
                XCTAssertThrowsError(try Certificate(der: der), row.file) { e in
                    XCTAssertEqual((e as? DERError)?.code.rawValue, row.expect, "\(row.file): \(e)")
                }
                continue
            }
            let c = try Certificate(der: der)
            XCTAssertEqual(String(c.version), row.fields["ctyp"], row.file)
            XCTAssertEqual(c.serialNumber, hex(row.fields["slnr"]), row.file)
            XCTAssertEqual(c.issuer, hex(row.fields["issr"]), row.file)
            XCTAssertEqual(c.subject, hex(row.fields["subj"]), row.file)
            XCTAssertEqual(c.subjectKeyIdentifier, hex(row.fields["skid"]), row.file)
            XCTAssertEqual(Hex.encode(c.publicKeyHash), row.fields["pkhh"], row.file)
            XCTAssertEqual(c.commonName ?? "-", row.fields["labl"], row.file)
            // The generic reader accepts it and writes it back byte for byte.
            XCTAssertEqual(try DERTree.parse(der).encode(), der, row.file)
        }
    }

    /// Every prefix of a certificate fails as truncated, never traps; every single-byte change either
    /// reads or throws a DERError, and what reads writes back to itself.
    func testSweepEdges() throws {
        let (_, der) = try XCTUnwrap(try validCertificates.first)
        for n in 0..<der.count {
            XCTAssertThrowsError(try Certificate(der: Array(der[..<n]))) { e in
                XCTAssertEqual((e as? DERError)?.code, .truncated, "prefix \(n): \(e)")
            }
        }
        var flipped = 0
        for i in der.indices {
            var b = der
            b[i] ^= 0x01
            do {
                _ = try Certificate(der: b)
            } catch is DERError {
                flipped += 1
            }
            if let tree = try? DERTree.parse(b) { XCTAssertEqual(tree.encode(), b, "flip at \(i)") }
        }
        XCTAssertGreaterThan(flipped, 0)
    }

    /// Inputs the fuzz target `der` found (Fixtures/fuzz/README.md).
    func testFuzzRegressions() throws {
        XCTAssertThrowsError(try Certificate(der: try bytes("../fuzz/der/crash-constructed-in-name-value.der"))) { e in
            XCTAssertEqual((e as? DERError)?.code, .unexpectedTag, "\(e)")
        }
    }

    func testTreeLimits() throws {
        var nested: [UInt8] = [0x05, 0x00]
        for _ in 0..<DERLimits.depthMax - 1 { nested = [0x30, UInt8(nested.count)] + nested }
        XCTAssertEqual(try DERTree.parse(nested).nodes.count, DERLimits.depthMax)
        XCTAssertThrowsError(try DERTree.parse([0x30, UInt8(nested.count)] + nested)) { e in
            XCTAssertEqual((e as? DERError)?.code, .depthLimit)
        }
        XCTAssertThrowsError(try DERTree.parse([UInt8](repeating: 0, count: DERLimits.inputMax + 1))) { e in
            XCTAssertEqual((e as? DERError)?.code, .sizeLimit)
        }
        let rejected: [([UInt8], DERError.Code)] = [
            ([0x24, 0x00], .unexpectedTag),  // a constructed OCTET STRING (BER only)
            ([0x02, 0x00], .invalidInteger),
            ([0x01, 0x01, 0x01], .invalidBoolean),
            ([0x05, 0x01, 0x00], .unexpectedTag),  // NULL with content
            ([0x03, 0x02, 0x01, 0x01], .invalidBitString),  // an unused bit set
            ([0x06, 0x01, 0x81], .invalidObjectIdentifier),
            ([0x04, 0x81, 0x01, 0x00], .nonMinimalLength),
            ([0x04, 0x00, 0x00], .trailingBytes)
        ]
        for (input, code) in rejected {
            XCTAssertThrowsError(try DERTree.parse(input), "\(input)") { e in
                XCTAssertEqual((e as? DERError)?.code, code, "\(input): \(e)")
            }
        }
    }

    func testKeys() throws {
        for row in try rows("keys/KEYS.tsv") {
            let k = try KeyInfo(der: try bytes("keys/" + row.file))
            XCTAssertEqual(k.keyClass, row.fields["kcls"], row.file)
            XCTAssertEqual(k.keyType, row.fields["type"], row.file)
            XCTAssertEqual(k.sizeInBits.map(String.init), row.fields["bsiz"], row.file)
            XCTAssertEqual(Hex.encode(k.applicationLabel), row.fields["klbl"], row.file)
        }
        // A key cut from a certificate has the certificate's public key hash as its label (identities pair so).
        let cert = try Certificate(der: try bytes("Amazon_Root_CA_1.der"))
        XCTAssertEqual(try KeyInfo(der: try bytes("keys/rsa2048-spki.der")).applicationLabel, cert.publicKeyHash)
        XCTAssertEqual(try KeyInfo(der: cert.subjectPublicKeyInfo).applicationLabel, cert.publicKeyHash)
        XCTAssertThrowsError(try KeyInfo(der: try bytes("Amazon_Root_CA_1.der")))
        XCTAssertThrowsError(try KeyInfo(der: Array(repeating: 7, count: 32)))
    }

    // MARK: Items

    func testCertificatesGetTheirAttributesAndNeverCollide() throws {
        let s = try store()
        let certs = try validCertificates
        for (_, der) in certs { try s.add(class: .certificate, attributes: Attributes(), value: der) }
        XCTAssertEqual(try s.find(ItemQuery(class: .certificate)).count, certs.count)
        for (row, der) in certs {
            // The same certificate again is the same item.
            assertStatus(.duplicateItem, try s.add(class: .certificate, attributes: Attributes(), value: der))
            let found = try s.find(
                ItemQuery(
                    class: .certificate,
                    attributes: attrs([
                        "issr": .data(try XCTUnwrap(hex(row.fields["issr"]))),
                        "slnr": .data(try XCTUnwrap(hex(row.fields["slnr"])))
                    ])))
            XCTAssertEqual(found.count, 1, row.file)
            let a = try XCTUnwrap(found.first).attributes
            XCTAssertEqual(a["ctyp"], .integer(3))
            XCTAssertEqual(a["cenc"], .integer(3))
            XCTAssertEqual(a["subj"], .data(try XCTUnwrap(hex(row.fields["subj"]))))
            XCTAssertEqual(a["pkhh"], .data(try XCTUnwrap(hex(row.fields["pkhh"]))))
            XCTAssertEqual(a["skid"], hex(row.fields["skid"]).map { .data($0) })
            XCTAssertEqual(a["labl"], .string(try XCTUnwrap(row.fields["labl"])))
        }
    }

    /// Apple's certificate sample, as ported code calls it: kSecValueData alone, then a search by the
    /// derived issuer and serial number.
    func testSecItemAddOfCertificates() throws {
        SecItemConfiguration.use(try store())
        let a = try bytes("Amazon_Root_CA_1.der")
        let b = try bytes("Amazon_Root_CA_3.der")
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassCertificate, kSecValueData: Data(a)], nil), errSecSuccess)
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassCertificate, kSecValueData: Data(b)], nil), errSecSuccess)
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassCertificate, kSecValueData: Data(a)], nil), errSecDuplicateItem)
        let cert = try Certificate(der: b)
        var found: AnyObject?
        XCTAssertEqual(
            SecItemCopyMatching(
                [
                    kSecClass: kSecClassCertificate, kSecAttrIssuer: Data(cert.issuer),
                    kSecAttrSerialNumber: Data(cert.serialNumber), kSecReturnData: true
                ], &found), errSecSuccess)
        XCTAssertEqual(found as? Data, Data(b))
        XCTAssertEqual(
            SecItemCopyMatching(
                [
                    kSecClass: kSecClassCertificate, kSecAttrLabel: "Amazon Root CA 1",
                    kSecReturnAttributes: true
                ], &found), errSecSuccess)
        XCTAssertEqual(
            (found as? [String: Any])?[kSecAttrPublicKeyHash] as? Data, Data(try Certificate(der: a).publicKeyHash))
    }

    func testCallerAttributesWin() throws {
        let s = try store()
        let der = try bytes("ISRG_Root_X1.der")
        try s.add(class: .certificate, attributes: attrs(["labl": .string("mine"), "slnr": .data([9])]), value: der)
        let a = try XCTUnwrap(try s.find(ItemQuery(class: .certificate)).first).attributes
        XCTAssertEqual(a["labl"], .string("mine"))
        XCTAssertEqual(a["slnr"], .data([9]))
        XCTAssertEqual(a["issr"], .data(try Certificate(der: der).issuer))
        // Another serial given by the caller makes another item of the same certificate.
        try s.add(class: .certificate, attributes: Attributes(), value: der)
        XCTAssertEqual(try s.find(ItemQuery(class: .certificate)).count, 2)
    }

    func testValuesThatDoNotParseAreStoredAsGiven() throws {
        let s = try store()
        try s.add(
            class: .certificate, attributes: attrs(["slnr": .data([1])]),
            value: try bytes("malformed/trailing-byte.der"))
        let a = try XCTUnwrap(try s.find(ItemQuery(class: .certificate)).first).attributes
        XCTAssertNil(a["issr"])
        XCTAssertNil(a["ctyp"])
        // Without attributes, two such values are one item, as on Apple's keychain with kSecValueData.
        try s.add(class: .certificate, attributes: Attributes(), value: [1])
        assertStatus(.duplicateItem, try s.add(class: .certificate, attributes: Attributes(), value: [2]))
    }

    func testKeysAndIdentities() throws {
        let s = try store()
        for row in try rows("keys/KEYS.tsv") {
            let value = try bytes("keys/" + row.file)
            // The SPKI and the PKCS #1 form of one RSA key are one key (same label, class, type and size).
            if row.file == "rsa2048-pkcs1-public.der" {
                assertStatus(.duplicateItem, try s.add(class: .key, attributes: Attributes(), value: value))
            } else {
                try s.add(class: .key, attributes: Attributes(), value: value)
            }
        }
        XCTAssertEqual(try s.find(ItemQuery(class: .key)).count, 5)
        let rsa = try s.find(
            ItemQuery(
                class: .key,
                attributes: attrs(["klbl": .data(try Certificate(der: try bytes("Amazon_Root_CA_1.der")).publicKeyHash)]
                )))
        XCTAssertEqual(rsa.count, 1)
        XCTAssertEqual(rsa.first?.attributes["bsiz"], .integer(2048))
        XCTAssertEqual(rsa.first?.attributes["kcls"], .string("0"))
        XCTAssertEqual(rsa.first?.attributes["type"], .string("42"))

        let der = try bytes("ISRG_Root_X2.der")
        try s.add(class: .identity, attributes: Attributes(), value: der)
        let idnt = try XCTUnwrap(try s.find(ItemQuery(class: .identity)).first).attributes
        XCTAssertEqual(idnt["issr"], .data(try Certificate(der: der).issuer))
        XCTAssertEqual(idnt["klbl"], idnt["pkhh"])
        assertStatus(.duplicateItem, try s.add(class: .identity, attributes: Attributes(), value: der))
    }

    /// Every certificate of the system's store, when there is one: each reads, writes back, and no two
    /// share an issuer and serial number (the primary key).
    func testSystemCertificates() throws {
        let dir = "/usr/share/ca-certificates/mozilla"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir), !names.isEmpty else {
            throw XCTSkip("no \(dir)")
        }
        var keys = Set<[UInt8]>()
        for name in names where name.hasSuffix(".crt") {
            let pem = try String(contentsOfFile: dir + "/" + name, encoding: .utf8)
            let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            let der = [UInt8](try XCTUnwrap(Data(base64Encoded: body), name))
            let c = try Certificate(der: der)
            XCTAssertEqual(try DERTree.parse(der).encode(), der, name)
            XCTAssertTrue(keys.insert(c.issuer + [0xFF] + c.serialNumber).inserted, name)
        }
    }
}
