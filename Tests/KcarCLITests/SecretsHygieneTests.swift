import Foundation
import TestSupport
import XCTest

/// Secrets never leave kcar by its output: the built binary is run through its error paths with a
/// distinctive passphrase and key file, and neither appears in standard output or error, raw, in hex or in
/// base64. No option takes a secret on the command line, and `KCAR_PASSPHRASE` is wiped from the process
/// (checked in /proc/PID/environ of a running kcar).
final class SecretsHygieneTests: XCTestCase {
    var dir: String!
    let passphrase = "kcar-hygiene-Pässwörd-7Q9zX"
    let otherPassphrase = "kcar-hygiene-0therPhrase-K3y"
    /// 32 distinctive bytes, not text.
    let key: [UInt8] = (0..<32).map { UInt8(truncatingIfNeeded: 0xC3 &+ $0 &* 29) }
    let kdf = ["--kdf-memory", "8", "--kdf-passes", "1"]

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-hygiene-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/src/svc", withIntermediateDirectories: true)
        try Data("value".utf8).write(to: URL(fileURLWithPath: dir + "/src/svc/a"))
        try Data(key).write(to: URL(fileURLWithPath: dir + "/secret.key"))
        try Data((passphrase + "\n").utf8).write(to: URL(fileURLWithPath: dir + "/pass.txt"))
        try Data(otherPassphrase.utf8).write(to: URL(fileURLWithPath: dir + "/other-pass.txt"))
        try Data(key + [0]).write(to: URL(fileURLWithPath: dir + "/long.key"))
        try Data().write(to: URL(fileURLWithPath: dir + "/empty.txt"))
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// Every spelling of a secret that output could carry.
    func spellings(_ secret: [UInt8]) -> [[UInt8]] {
        let hex = secret.map { String(format: "%02x", $0) }.joined()
        let base64 = Data(secret).base64EncodedString()
        var out = [
            secret, Array(hex.utf8), Array(hex.uppercased().utf8), Array(base64.utf8),
            Array(base64.trimmingCharacters(in: ["="]).utf8),
            Array(base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").utf8)
        ]
        // Parts of it: the first and last 12 bytes (raw and hex).
        for part in [Array(secret.prefix(12)), Array(secret.suffix(12))] {
            out.append(part)
            out.append(Array(part.map { String(format: "%02x", $0) }.joined().utf8))
        }
        return out
    }

    func assertNoSecret(_ r: ProcessResult, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        let output = [UInt8](r.data) + Array(r.err.utf8)
        for secret in [Array(passphrase.utf8), Array(otherPassphrase.utf8), key] {
            for s in spellings(secret) where contains(output, s) {
                XCTFail("\(what): the output holds a secret (\(s.count) bytes): \(r.err)", file: file, line: line)
            }
        }
    }

    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if haystack[i..<i + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }

    @discardableResult
    func kcar(
        _ args: [String], expect: Int32, stdin: Data? = nil, env: [String: String] = [:],
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProcessResult {
        let r = try KcarRunner(dir: dir)(args, stdin: stdin, env: env, expect: expect, file: file, line: line)
        XCTAssertFalse(
            r.output.isEmpty && expect != 0, "kcar \(args.joined(separator: " ")) says nothing", file: file, line: line)
        assertNoSecret(r, "kcar \(args.joined(separator: " "))", file: file, line: line)
        return r
    }

    func testErrorPathsNeverPrintTheSecret() throws {
        let fixtures = CLITests.repo.appendingPathComponent("Fixtures").path
        // v.kcv opens with the key file and the passphrase; other.kcv with neither (the fixtures' key).
        try kcar(["pack", "v.kcv", "src", "--key-file", "secret.key", "--passphrase-file", "pass.txt"] + kdf, expect: 0)
        try kcar(
            [
                "pack", "other.kcv", "src", "--key-file", "\(fixtures)/keys/keyfile.key", "--passphrase-file",
                "other-pass.txt"
            ] + kdf, expect: 0)
        try kcar(["list", "v.kcv", "--key-file", "secret.key"], expect: 0)
        try kcar(["info", "v.kcv", "--key-file", "secret.key", "--json"], expect: 0)
        try kcar(["verify", "v.kcv", "--passphrase-file", "pass.txt", "--json"], expect: 0)

        // Wrong passphrase (file, descriptor, environment) and wrong key file.
        try kcar(["list", "other.kcv", "--passphrase-file", "pass.txt"], expect: 3)
        try kcar(["list", "other.kcv", "--passphrase-fd", "0"], expect: 3, stdin: Data(passphrase.utf8))
        try kcar(["list", "other.kcv"], expect: 3, env: ["KCAR_PASSPHRASE": passphrase])
        try kcar(["extract", "other.kcv", "--stdout", "svc/a", "--key-file", "secret.key"], expect: 3)
        try kcar(["verify", "other.kcv", "--key-file", "secret.key", "--json"], expect: 3)
        try kcar(["passwd", "other.kcv", "--key-file", "secret.key", "--add-key-file", "secret.key"], expect: 3)
        try kcar(["rekey", "other.kcv", "--passphrase-file", "pass.txt"], expect: 3)
        try kcar(["info", "other.kcv", "--key-file", "secret.key"], expect: 3)

        // Damaged and truncated vaults, opened with the right secrets.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/v.kcv")))
        var header = bytes
        header[20] ^= 0x40
        try Data(header).write(to: URL(fileURLWithPath: dir + "/header.kcv"))
        try kcar(["list", "header.kcv", "--key-file", "secret.key"], expect: 4)
        try kcar(["verify", "header.kcv", "--passphrase-file", "pass.txt", "--json"], expect: 4)
        bytes[bytes.count - 150] ^= 0x01  // in the index or the trailer
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/body.kcv"))
        try kcar(["verify", "body.kcv", "--key-file", "secret.key"], expect: 4)
        try kcar(["list", "body.kcv", "--passphrase-file", "pass.txt"], expect: 4)
        for cut in [40, bytes.count / 2, bytes.count - 1] {
            try Data(bytes.prefix(cut)).write(to: URL(fileURLWithPath: dir + "/cut.kcv"))
            let r = try runKcar(["verify", "cut.kcv", "--key-file", "secret.key"], in: dir)
            XCTAssertTrue([4, 5].contains(r.code), "cut at \(cut): \(r.code) \(r.err)")
            assertNoSecret(r, "verify of a vault cut at \(cut)")
            assertNoSecret(
                try runKcar(["list", "cut.kcv", "--passphrase-file", "pass.txt"], in: dir),
                "list of a vault cut at \(cut)")
        }

        // Missing files.
        try kcar(["list", "missing.kcv", "--key-file", "secret.key"], expect: 8)
        try kcar(["list", "v.kcv", "--key-file", "missing.key"], expect: 8)
        try kcar(["list", "v.kcv", "--passphrase-file", "missing.txt"], expect: 8)

        // Usage errors around secrets.
        try kcar(["list", "v.kcv", "--key-file", "long.key"], expect: 2)
        try kcar(["list", "v.kcv", "--key-file", "pass.txt"], expect: 2)
        try kcar(["list", "v.kcv", "--passphrase-file", "empty.txt"], expect: 2)
        try kcar(["list", "v.kcv", "--passphrase-fd", "x"], expect: 2)
        try kcar(["list", "v.kcv", "--key-file", "secret.key", "--bogus"], expect: 2)
        try kcar(["passwd", "v.kcv", "--key-file", "secret.key"], expect: 2)
        try kcar(["passwd", "v.kcv", "--key-file", "secret.key", "--remove-slot", "0", "--remove-slot", "1"], expect: 2)
        try kcar(["passwd", "v.kcv", "--key-file", "secret.key", "--remove-slot", "7"], expect: 2)
        try kcar(["pack", "w.kcv", "src", "--passphrase-file", "pass.txt", "--recipient", "secret.key"], expect: 2)
        try kcar(["pack", "v.kcv", "src", "--key-file", "secret.key"], expect: 7)
        try kcar(["list", "v.kcv"], expect: 10)
        try kcar(["rekey", "v.kcv"], expect: 10)
        try kcar(["list", "v.kcv"], expect: 2, env: ["KCAR_PASSPHRASE": ""])
    }

    /// A secret mistakenly typed as an option's value is not echoed in the usage error.
    func testASecretOnTheCommandLineIsRefusedAndNotEchoed() throws {
        try kcar(["pack", "v.kcv", "src", "--key-file", "secret.key"], expect: 0)
        for args in [
            ["--passphrase", passphrase], ["--passphrase=" + passphrase], ["--password", passphrase],
            ["--key", passphrase], ["-p" + passphrase], ["-P" + passphrase]
        ] {
            try kcar(["list", "v.kcv"] + args, expect: 2)
        }
        // Every option that carries a secret names a file or a descriptor.
        var options = Set<String>()
        for command in [
            "pack", "list", "extract", "verify", "info", "keygen", "passwd", "rekey", "compact", "recover", "archive",
            "init", "add", "get", "find", "update", "delete", "groups", "import"
        ] {
            let help = try kcar([command, "--help"], expect: 0)
            let text = help.out
            for m in text.matches(of: /--[a-z0-9-]+/) { options.insert(String(m.output)) }
        }
        let secretish = options.filter { ["passphrase", "password", "key", "secret"].contains(where: $0.contains) }
        XCTAssertEqual(
            secretish.filter { !$0.hasSuffix("-file") && !$0.hasSuffix("-fd") }.sorted(),
            ["--add-passphrase", "--keychain", "--no-key", "--nskeyed"],
            "flags that take no value, --keychain DIR and --nskeyed FILE")
        XCTAssertTrue(secretish.contains("--passphrase-fd"))
    }

    /// kcar takes `KCAR_PASSPHRASE` out of its environment before anything else: a running kcar's
    /// /proc/PID/environ no longer holds the value (glibc's copy is wiped, and unsetenv keeps it from children).
    func testThePassphraseLeavesTheEnvironment() throws {
        guard FileManager.default.fileExists(atPath: "/proc/self/environ") else { throw XCTSkip("no /proc") }
        try kcar(["pack", "v.kcv", "src", "--key-file", "secret.key"], expect: 0)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLITests.binary)
        // --passphrase-fd 0 comes before the environment: kcar reads standard input until it ends, long after
        // start-up, and the environment value is unused.
        p.arguments = ["list", "v.kcv", "--passphrase-fd", "0"]
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        var env = ProcessInfo.processInfo.environment
        env["KCAR_PASSPHRASE"] = passphrase
        p.environment = env
        let input = Pipe()
        let err = Pipe()
        p.standardInput = input
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        // Once kcar has consumed a byte of standard input, its start-up (where the variable is removed) is over.
        input.fileHandleForWriting.write(Data("x".utf8))
        let writeEnd = input.fileHandleForWriting.fileDescriptor
        var pending: Int32 = 1
        for _ in 0..<1000 {
            guard ioctl(writeEnd, UInt(FIONREAD), &pending) == 0, pending > 0 else { break }
            usleep(5_000)
        }
        XCTAssertEqual(pending, 0, "kcar did not read its standard input")
        let environ = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "/proc/\(p.processIdentifier)/environ")))
        XCTAssertFalse(environ.isEmpty)
        XCTAssertFalse(contains(environ, Array(passphrase.utf8)), "the passphrase is still in kcar's environment")
        XCTAssertFalse(contains(environ, Array("KCAR_PASSPHRASE=k".utf8)))
        input.fileHandleForWriting.closeFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 3)  // "x" is not the passphrase (the vault has none)
        let e = err.fileHandleForReading.readDataToEndOfFile()
        XCTAssertFalse(contains([UInt8](e), Array(passphrase.utf8)))
    }

    /// On a full disk (tmpfs; skipped if mounting is not permitted) the errors name no secret either.
    func testFullDiskErrorsNeverPrintTheSecret() throws {
        let m = try scratchMount(at: dir + "/mnt", size: "256k")
        try Data(Recipes.noise(600_000, seed: 1)).write(to: URL(fileURLWithPath: dir + "/src/svc/big"))
        try kcar(
            ["pack", "mnt/v.kcv", "src", "--key-file", "secret.key", "--passphrase-file", "pass.txt"] + kdf, expect: 8)
        try FileManager.default.removeItem(atPath: dir + "/src/svc/big")
        try kcar(
            ["pack", "mnt/v.kcv", "src", "--key-file", "secret.key", "--passphrase-file", "pass.txt"] + kdf, expect: 0)
        m.fill("filler")
        // Both secrets: rekey keeps both slots (issue 13, item 8), so it reaches the full disk.
        try kcar(["rekey", "mnt/v.kcv", "--passphrase-file", "pass.txt", "--key-file", "secret.key"], expect: 8)
        try kcar(
            ["passwd", "mnt/v.kcv", "--passphrase-file", "pass.txt", "--new-passphrase-file", "other-pass.txt"] + kdf,
            expect: 8)
        try kcar(["compact", "mnt/v.kcv", "--key-file", "secret.key"], expect: 8)
    }
}
