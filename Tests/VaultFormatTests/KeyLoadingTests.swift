import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Issue 26: a program loads its key as `kcar` does (`--key-file`, `--identity`, `--passphrase-file`), with the
/// same checks, instead of reading bytes itself.
final class KeyLoadingTests: VaultTestCase {
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = dir + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func vault(_ slots: [SlotSecret]) throws -> String {
        let path = dir + "/v.kcv"
        try Vault.create(path: path, group: "g", slots: slots, overwrite: true) { tx in
            try tx.add(attributes: Attributes(["svce": .string("s")]), value: .bytes([42]))
        }
        return path
    }

    func expect(_ code: VaultError.Code, _ text: String, _ body: () throws -> Void, line: UInt = #line) {
        XCTAssertThrowsError(try body(), line: line) {
            XCTAssertEqual(($0 as? VaultError)?.code, code, "\($0)", line: line)
            XCTAssertTrue("\($0)".contains(text), "\($0)", line: line)
        }
    }

    func testAKeyFileOpensTheVaultAndAnythingElseIsRefusedByName() throws {
        let path = try vault([.keyFile(SecureBytes(copying: Recipes.keyFile))])
        let key = try write("app.key", Recipes.keyFile)
        XCTAssertEqual(try Vault.open(path: path, secret: .keyFile(atPath: key)).count, 1)

        let short = try write("short.key", Array(Recipes.keyFile.prefix(31)))
        expect(.invalidArgument, "must hold exactly 32 bytes") { _ = try UnlockSecret.keyFile(atPath: short) }
        let identity = try write("age.txt", Array("# created: now\nAGE-SECRET-KEY-1QQQ\n".utf8))
        expect(.invalidArgument, "is an age identity file") { _ = try UnlockSecret.keyFile(atPath: identity) }
        expect(.unsafeFile, "a folder") { _ = try UnlockSecret.keyFile(atPath: self.dir) }
        let fifo = dir + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        // Refused before it is opened: no writer ever comes, and nothing waits.
        expect(.unsafeFile, "a FIFO") { _ = try UnlockSecret.keyFile(atPath: fifo) }
        do {
            _ = try UnlockSecret.keyFile(atPath: dir + "/none.key")
            XCTFail("read a missing key file")
        } catch let e as VaultError {
            XCTAssertEqual(e.code, .io)
            XCTAssertEqual(e.errnoCode, ENOENT)
            XCTAssertEqual(e.path, dir + "/none.key")
        }
    }

    func testAnAgeIdentityFileOpensAVaultForItsRecipient() throws {
        let secret = SecureBytes(copying: [UInt8](repeating: 0x42, count: 32))
        let path = try vault([.recipient(X25519.publicKey(secretKey: secret))])
        let line = Bech32.encode(hrp: "age-secret-key-", Array(repeating: 0x42, count: 32)).uppercased()
        let file = try write("identity.txt", Array("# created by age-keygen\n\n\(line)\n".utf8))
        let identities = try UnlockSecret.identities(atPath: file)
        XCTAssertEqual(identities.count, 1)
        XCTAssertEqual(try Vault.open(path: path, secret: identities[0]).count, 1)

        let bad = try write("bad.txt", Array("\(line)\nnot an identity\n".utf8))
        expect(.invalidArgument, "line 2: not an age X25519 identity") { _ = try UnlockSecret.identities(atPath: bad) }
        let empty = try write("empty.txt", Array("# nothing\n".utf8))
        expect(.invalidArgument, "holds no identity") { _ = try UnlockSecret.identities(atPath: empty) }
    }

    func testAPassphraseFileLosesOneTrailingNewlineOnly() throws {
        let path = try vault([.passphrase(SecureBytes(copying: Array("correct horse".utf8)), .minimum)])
        for text in ["correct horse\n", "correct horse\r\n", "correct horse"] {
            let file = try write("pass", Array(text.utf8))
            XCTAssertEqual(try Vault.open(path: path, secret: .passphraseFile(atPath: file)).count, 1, text)
        }
        let twoNewlines = try write("pass2", Array("correct horse\n\n".utf8))
        expect(.wrongKey, "no key slot") {
            _ = try Vault.open(path: path, secret: .passphraseFile(atPath: twoNewlines))
        }
        let empty = try write("empty", Array("\n".utf8))
        expect(.invalidArgument, "is empty") { _ = try UnlockSecret.passphraseFile(atPath: empty) }
        let big = try write("big", [UInt8](repeating: 65, count: 70_000))
        expect(.invalidArgument, "larger than 64 KiB") { _ = try UnlockSecret.passphraseFile(atPath: big) }
    }
}
