import VaultFormat
import XCTest

@testable import SecretService

/// The encrypted session of SPEC.md §K10 against vectors computed apart from kcar, by a Python client written
/// from the algorithm's description (big integers, HKDF from HMAC by hand, AES from `cryptography`), as
/// libsecret and python3-secretstorage compute them: the prime it used is checked there to be a 1024-bit safe
/// prime, and must here be OpenSSL's RFC 2409 group for the service's public value to match.
final class SessionCryptoTests: XCTestCase {
    /// Hands out given bytes in order, then zeros: the service's exponent, then IVs.
    final class FixedRandom: RandomSource {
        var queue: [UInt8]
        init(_ bytes: [UInt8]) { queue = bytes }
        func fill(_ buffer: UnsafeMutableRawBufferPointer) {
            for i in buffer.indices { buffer[i] = queue.isEmpty ? 0 : queue.removeFirst() }
        }
    }

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    let clientPublic = hex(
        "a9453044685fb9a3a65f095cb0af24f1b9aa3bfa38318fc1796cecd1442e4fcd73ab6cad153a5b5c5407421cb0bd7f112770ca50"
            + "e6377a9ff50a01035efdd928c353c61aeab8a35eee5017fafd5e438953731eeffb5a88a8e0a24f7bbda540c7051f707f0be8af41"
            + "0aa4aa70975d87a55aade9a3c4ae55d7f418fa8fa39854b7")
    let exponent = hex(
        "910102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f30313233"
            + "3435363738393a3b3c3d3e3f")
    let servicePublic = hex(
        "e04199c1071cbd81683cb57c3b893e98a51eed60c4e3574767e08e661c0d09b08f358d09ddbf1327ad7916d0930f1f45d29a48e2"
            + "22e0a9d3f3529050681614b1bb6028ac707bdaf5f648d648ae5c382ed93f635c275ef7be3a5bc75552755e15c80bf5f47b6e7a"
            + "49aebc014bfe4aca0cc8a33d912e64491855402362cd840b9d")
    let iv = [UInt8](0..<16)

    func session() throws -> DHSession {
        try DHSession(clientPublic: clientPublic, random: FixedRandom(exponent))
    }

    func testTheServicePublicValueAndCiphertextsAreTheClientsVectors() throws {
        let s = try session()
        XCTAssertEqual(s.servicePublic, servicePublic)
        for (plain, expected) in [
            ("hunter2", "823637a8a5a312629cfb4547f7794d23"),
            ("0123456789abcdef", "be029d58dcd0ee8b0a39c9f66360dcd197d81893e2ed2a099172e5f37cb41077"),
            ("", "f0377380e0d0e0def5ee43933a383cf8")
        ] {
            let sealed = Array(plain.utf8).withUnsafeBytes { s.encrypt($0, random: FixedRandom(iv)) }
            XCTAssertEqual(sealed.iv, iv)
            XCTAssertEqual(sealed.value, Self.hex(expected), plain)
            let opened = try s.decrypt(iv: iv, value: Self.hex(expected))
            XCTAssertEqual(opened.withUnsafeBytes { Array($0) }, Array(plain.utf8), plain)
        }
    }

    /// What a client sends that cannot be a session or a secret of one is *InvalidArgs*, never a crash: public
    /// values outside 1 < y < p - 1 or longer than the prime, IVs not of 16 bytes, ciphertexts not of whole
    /// blocks, and padding that does not check (every last byte of a block decrypted under another IV).
    func testMalformedClientInputIsInvalidArgs() throws {
        let pMinus1 = Self.hex(
            "ffffffffffffffffc90fdaa22168c234c4c6628b80dc1cd129024e088a67cc74020bbea63b139b22514a08798e3404ddef9519b3"
                + "cd3a431b302b0a6df25f14374fe1356d6d51c245e485b576625e7ec6f44c42e9a637ed6b0bff5cb6f406b7edee386bfb5a89"
                + "9fa5ae9f24117c4b1fe649286651ece65381fffffffffffffffe")
        for bad: [UInt8] in [[], [0], [1], [0, 1], pMinus1, [UInt8](repeating: 0xFF, count: 128), [1] + pMinus1] {
            XCTAssertThrowsError(try DHSession(clientPublic: bad, random: FixedRandom(exponent)), "\(bad.count) bytes")
            {
                XCTAssertEqual(($0 as? SecretServiceError)?.name, "org.freedesktop.DBus.Error.InvalidArgs")
            }
        }
        XCTAssertNoThrow(try DHSession(clientPublic: [2], random: FixedRandom(exponent)))
        let s = try session()
        let good = Self.hex("823637a8a5a312629cfb4547f7794d23")
        var refused = 0
        for (iv, value) in [([UInt8](0..<15), good), (iv, []), (iv, Array(good.prefix(15))), (iv, good + [0])] {
            XCTAssertThrowsError(try s.decrypt(iv: iv, value: value)) {
                XCTAssertEqual(($0 as? SecretServiceError)?.name, "org.freedesktop.DBus.Error.InvalidArgs")
            }
        }
        for last in 0..<256 {
            var other = iv
            other[15] = UInt8(last)
            if (try? s.decrypt(iv: other, value: good)) == nil { refused += 1 }
        }
        XCTAssertGreaterThan(refused, 200, "most changed IVs break the padding")
    }
}
