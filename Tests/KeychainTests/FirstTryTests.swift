import Foundation
import KcarKeychain
import XCTest

/// Issue 12, item 1: the README's examples and the seeds' delete-then-add work on the first try, in a fresh
/// environment (no variables but a new HOME), as a whole process: `kcar-keychain-examples` and the built `kcar`.
final class FirstTryTests: XCTestCase {
    var home: String!
    var keychain: String { home + "/.local/share/kcar" }

    override func setUpWithError() throws {
        home = NSTemporaryDirectory() + "kcar-keychain-examples-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: home) }

    func binary(_ name: String) throws -> String {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let path = repo.appendingPathComponent(".build/debug/\(name)").path
        guard FileManager.default.isExecutableFile(atPath: path) else { throw XCTSkip("\(path) is not built") }
        return path
    }

    /// Runs a program with HOME alone in its environment (plus `env`).
    func run(_ name: String, _ args: [String], env: [String: String] = [:], withHome: Bool = true) throws -> (
        code: Int32, out: String, err: String
    ) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try binary(name))
        p.arguments = args
        p.currentDirectoryURL = URL(fileURLWithPath: home)
        p.environment = (withHome ? ["HOME": home] : [:]).merging(env) { $1 }
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    func testReadmeExamplesWorkInAFreshEnvironment() throws {
        let r = try run("kcar-keychain-examples", ["readme"])
        XCTAssertEqual(r.code, 0, r.out + r.err)
        XCTAssertTrue(r.out.contains("SecItemAdd: 0\n"), r.out)
        XCTAssertTrue(r.out.contains("subscript get: x\n"), r.out)
        // The default group is the program's name (SPEC.md §K2.1).
        XCTAssertTrue(r.out.contains("default group: kcar-keychain-examples\n"), r.out)
        XCTAssertTrue(FileManager.default.fileExists(atPath: keychain + "/kcar-keychain-examples.kcv"))
        XCTAssertEqual(r.err, "")
    }

    /// The seeds' save deletes the old item then adds: it must never delete and then fail, even when another
    /// group exists and the process sets no list.
    func testDeleteThenAddKeepsTheValueWhenAnotherGroupExists() throws {
        let add = try run(
            "kcar", ["add", "--group", "com.example.other", "--service", "elsewhere", "--value-file", "/dev/null"])
        XCTAssertEqual(add.code, 0, add.err)
        for value in ["first", "second"] {
            let r = try run("kcar-keychain-examples", ["seed", value])
            XCTAssertEqual(r.code, 0, r.out + r.err)
            XCTAssertTrue(r.out.contains("load: \(value)\n"), r.out)
        }
        let groups = try run("kcar", ["groups"])
        XCTAssertEqual(groups.code, 0, groups.err)
        XCTAssertTrue(groups.out.contains("kcar-keychain-examples"), groups.out)
        XCTAssertTrue(groups.out.contains("com.example.other"), groups.out)
    }

    /// `kcar init --default-group G` sends every program's adds to G; KCAR_ACCESS_GROUPS still comes first.
    func testRecordedDefaultGroupAndListOrder() throws {
        let i = try run("kcar", ["init", "--default-group", "com.example.team"])
        XCTAssertEqual(i.code, 0, i.err)
        let r = try run("kcar-keychain-examples", ["readme"])
        XCTAssertEqual(r.code, 0, r.out + r.err)
        XCTAssertTrue(r.out.contains("default group: com.example.team\n"), r.out)
        XCTAssertTrue(FileManager.default.fileExists(atPath: keychain + "/com.example.team.kcv"))
        let listed = try run("kcar-keychain-examples", ["seed"], env: ["KCAR_ACCESS_GROUPS": "com.example.list"])
        XCTAssertEqual(listed.code, 0, listed.out + listed.err)
        XCTAssertTrue(FileManager.default.fileExists(atPath: keychain + "/com.example.list.kcv"))
        // The CLI's add follows the same rule.
        let add = try run("kcar", ["add", "--service", "cli", "--value-file", "/dev/null"])
        XCTAssertEqual(add.code, 0, add.err)
        let found = try run("kcar", ["find", "--group", "com.example.team", "--service", "cli"])
        XCTAssertEqual(found.code, 0, found.err)
        // A group name with a line feed is a group name, but the file holds one line: refused, the file kept.
        let twoLines = try run("kcar", ["init", "--default-group", "two\nlines"])
        XCTAssertEqual(twoLines.code, 2, twoLines.err)
        XCTAssertTrue(twoLines.err.contains("line feed"), twoLines.err)
        XCTAssertEqual(
            try String(contentsOfFile: keychain + "/.kcar-default-group", encoding: .utf8), "com.example.team\n")
    }

    /// A default-group file anyone but the owner could have written is refused, not followed.
    func testUnsafeDefaultGroupFileIsRefused() throws {
        XCTAssertEqual(try run("kcar", ["init", "--default-group", "com.example.team"]).code, 0)
        chmod(keychain + "/.kcar-default-group", 0o666)
        let r = try run("kcar-keychain-examples", ["seed"])
        XCTAssertNotEqual(r.code, 0)
        XCTAssertTrue(r.out.contains("save: \(errSecMissingEntitlement)\n"), r.out)
        let add = try run("kcar", ["add", "--service", "cli", "--value-file", "/dev/null"])
        XCTAssertEqual(add.code, 15, add.err)
        XCTAssertTrue(add.err.contains(".kcar-default-group"), add.err)
    }

    /// A subscript write that fails is visible: `lastError`, and one line on standard error without the value.
    func testFailedSubscriptWriteIsVisible() throws {
        let r = try run("kcar-keychain-examples", ["refused"], env: ["KCAR_ACCESS_GROUPS": "com.example.app"])
        XCTAssertEqual(r.code, 0, r.out + r.err)
        XCTAssertTrue(r.err.contains("[\"token\"] was not written: errSecMissingEntitlement"), r.err)
        XCTAssertFalse(r.err.contains("hunter2"), r.err)
    }

    /// A program that declares Apple's sample `KeychainError` still names kcar's as `KcarKeychain.KeychainError`
    /// (this compiles only since the module is no longer named like its type `Keychain`).
    func testKeychainErrorQualifiesBesideApplesSample() throws {
        let r = try run("kcar-keychain-examples", ["naming"])
        XCTAssertEqual(r.code, 0, r.out + r.err)
        XCTAssertEqual(
            r.out,
            "apple: unhandledError(status: -25300)\nkcar: errSecItemNotFound (-25300)\nkeychain: com.example.app\n")
    }

    /// With no HOME (nor XDG_DATA_HOME, KCAR_KEYCHAIN) there is no keychain: refused, and nothing is made
    /// under the current directory (issue 12, item 10).
    func testNoHomeIsRefusedNotGuessed() throws {
        let r = try run("kcar-keychain-examples", ["seed"], withHome: false)
        XCTAssertNotEqual(r.code, 0)
        XCTAssertTrue(r.out.contains("save: \(errSecNotAvailable)\n"), r.out)
        let add = try run("kcar", ["add", "--service", "cli", "--value-file", "/dev/null"], withHome: false)
        XCTAssertEqual(add.code, 2, add.err)
        XCTAssertTrue(add.err.contains("errSecNotAvailable (-25291): no keychain folder: HOME"), add.err)
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: home), [], "nothing created in the current directory")
        XCTAssertEqual(
            try run(
                "kcar", ["add", "--service", "cli", "--value-file", "/dev/null"], env: ["KCAR_KEYCHAIN": home + "/kc"],
                withHome: false
            ).code, 0)
    }
}
