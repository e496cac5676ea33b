import Foundation
import TestSupport
import XCTest

/// `kcar secret-service` with a real client, `secret-tool` (libsecret), on a private session bus, as a user
/// runs it (issue 25): store, lookup, search and clear; what is stored is a generic password that `kcar get`
/// and `kcar find` see; it survives a restart; `--replace` takes the name over. Skipped only where
/// secret-tool or dbus-daemon is missing, and never in CI (`CI` set), which installs both.
final class SecretServiceCLITests: XCTestCase {
    var bus: PrivateBus!
    var dir = ""
    var env: [String: String] = [:]
    var daemons: [Process] = []

    override func setUpWithError() throws {
        for tool in ["/usr/bin/secret-tool", PrivateBus.daemon]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            if ProcessInfo.processInfo.environment["CI"] != nil { XCTFail("\(tool) is missing in CI") }
            throw XCTSkip("\(tool) is not installed")
        }
        bus = try PrivateBus()
        dir = NSTemporaryDirectory() + "/kcar-ss-\(UUID())"
        try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: true)
        env = ["HOME": dir + "/home", "KCAR_KEYCHAIN": dir + "/kc", "DBUS_SESSION_BUS_ADDRESS": bus.address]
    }

    override func tearDownWithError() throws {
        for d in daemons where d.isRunning {
            d.terminate()
            d.waitUntilExit()
        }
        bus = nil
        try? FileManager.default.removeItem(atPath: dir)
    }

    @discardableResult
    func run(_ executable: String, _ args: [String], stdin: String? = nil, expect: Int32? = 0, line: UInt = #line)
        throws
        -> ProcessResult
    {
        let r = try runProcess(executable, args, stdin: stdin.map { Data($0.utf8) }, env: env, cwd: dir)
        if let expect { XCTAssertEqual(r.code, expect, "\(executable) \(args): \(r.err)", line: line) }
        return r
    }

    @discardableResult
    func secretTool(_ args: [String], stdin: String? = nil, expect: Int32? = 0, line: UInt = #line) throws
        -> ProcessResult
    {
        try run("/usr/bin/secret-tool", args, stdin: stdin, expect: expect, line: line)
    }

    @discardableResult
    func kcar(_ args: [String], expect: Int32? = 0, line: UInt = #line) throws -> ProcessResult {
        try run(CLITests.binary, args, expect: expect, line: line)
    }

    /// Starts `kcar secret-service` and waits until it owns the name (it says so on standard error).
    @discardableResult
    func startDaemon(_ extra: [String] = []) throws -> (Process, String) {
        let log = dir + "/daemon-\(daemons.count).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let p = kcarProcess(["secret-service"] + extra, cwd: dir, env: env)
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try p.run()
        daemons.append(p)
        for _ in 0..<200 {
            if let text = try? String(contentsOfFile: log, encoding: .utf8), text.contains("serving") || !p.isRunning {
                break
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return (p, log)
    }

    func testSecretToolStoresLooksUpSearchesAndClearsThroughKcar() throws {
        try startDaemon()
        try secretTool(["store", "--label=GitHub token", "service", "github", "user", "bob"], stdin: "hunter2")
        XCTAssertEqual(try secretTool(["lookup", "service", "github", "user", "bob"]).out, "hunter2")
        // The same attributes again: secret-tool replaces the item.
        try secretTool(["store", "--label=GitHub token", "service", "github", "user", "bob"], stdin: "hunter3")
        XCTAssertEqual(try secretTool(["lookup", "service", "github", "user", "bob"]).out, "hunter3")
        try secretTool(["store", "--label=GitLab", "service", "gitlab", "user", "bob"], stdin: "other")
        // secret-tool prints each item's label and secret on standard output, its attributes on standard error.
        let search = try secretTool(["search", "--all", "user", "bob"])
        XCTAssertEqual(search.out.components(separatedBy: "label = ").count - 1, 2, search.out)
        XCTAssert(search.out.contains("secret = hunter3"), search.out)
        XCTAssert(search.err.contains("attribute.service = github"), search.err)

        // kcar sees generic passwords with the attributes as user attributes.
        XCTAssertEqual(try kcar(["get", "--attr", "service=github", "--attr", "user=bob"]).out, "hunter3")
        let found = try kcar(["find", "--attr", "user=bob", "--json"]).out
        XCTAssertEqual(found.components(separatedBy: "\"@user\"").count - 1, 2, found)
        // secret-tool gives no schema: the items have the generic one, as their service (SPEC.md K10).
        let generic = try kcar(["find", "--service", "org.freedesktop.Secret.Generic", "--attr", "user=bob"]).out
        XCTAssertEqual(generic.components(separatedBy: "\n").filter { $0.contains("genp") }.count, 2, generic)

        // A restart serves the same items.
        for d in daemons {
            d.terminate()
            d.waitUntilExit()
        }
        try startDaemon()
        XCTAssertEqual(try secretTool(["lookup", "service", "gitlab", "user", "bob"]).out, "other")

        try secretTool(["clear", "service", "github", "user", "bob"])
        XCTAssertEqual(try secretTool(["lookup", "service", "github", "user", "bob"], expect: 1).out, "")
        try kcar(["get", "--attr", "service=github"], expect: 6)
        XCTAssertEqual(try secretTool(["lookup", "service", "gitlab", "user", "bob"]).out, "other")
    }

    /// With the activation file `make install` writes (here naming the built binary), a client starts
    /// `kcar secret-service` itself: no daemon runs until secret-tool asks for the name.
    func testAClientStartsTheServiceOnDemand() throws {
        let services = dir + "/data/dbus-1/services"
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        try "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=\(CLITests.binary) secret-service\n".write(
            toFile: services + "/org.freedesktop.secrets.service", atomically: true, encoding: .utf8)
        bus = nil
        bus = try PrivateBus(environment: [
            "XDG_DATA_HOME": dir + "/data", "HOME": env["HOME"]!, "KCAR_KEYCHAIN": env["KCAR_KEYCHAIN"]!
        ])
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        try secretTool(["store", "--label=on demand", "app", "demo"], stdin: "started")
        XCTAssertEqual(try secretTool(["lookup", "app", "demo"]).out, "started")
        XCTAssertEqual(try kcar(["get", "--attr", "app=demo"]).out, "started")
    }

    /// python3-secretstorage over the API (an encrypted session, create with and without replace, search in a
    /// collection and in the service, secrets with any bytes, label, attributes, dates, delete): its script
    /// prints a line per check and exits 1 at the first that fails.
    func testSecretStorageOverTheWholeAPI() throws {
        let python = "/usr/bin/python3"
        let probe = try runProcess(python, ["-c", "import secretstorage"], cwd: dir)
        if probe.code != 0 {
            if ProcessInfo.processInfo.environment["CI"] != nil { XCTFail("python3-secretstorage is missing in CI") }
            throw XCTSkip("python3-secretstorage is not installed")
        }
        try startDaemon()
        let script = CLITests.repo.appendingPathComponent("scripts/secret-service/secretstorage_client.py").path
        let r = try run(python, [script], expect: 0)
        XCTAssert(r.out.hasSuffix("done\n"), r.out + r.err)
        XCTAssertFalse(r.out.contains("FAIL"), r.out)
    }

    /// The same script against gnome-keyring-daemon, the reference: what it checks is the API, not kcar.
    func testTheSameScriptPassesAgainstGnomeKeyring() throws {
        let daemon = "/usr/bin/gnome-keyring-daemon"
        guard FileManager.default.isExecutableFile(atPath: daemon),
            try runProcess("/usr/bin/python3", ["-c", "import secretstorage"], cwd: dir).code == 0
        else {
            if ProcessInfo.processInfo.environment["CI"] != nil {
                XCTFail("gnome-keyring or secretstorage is missing in CI")
            }
            throw XCTSkip("gnome-keyring-daemon or python3-secretstorage is not installed")
        }
        env["XDG_DATA_HOME"] = dir + "/home/.local/share"
        // It makes and unlocks a login keyring with the password on standard input, then leaves for the
        // background (its output at /dev/null, so that it holds no pipe of the test's); it stops with the bus.
        // posix_spawn and waitpid, not Process: Foundation waits for descriptors that the daemon it forks keeps.
        let command = "printf pw | \(daemon) --unlock --components=secrets >/dev/null 2>&1"
        let pairs = ProcessInfo.processInfo.environment.merging(env) { $1 }.map { "\($0)=\($1)" }
        let environment: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0) } + [nil]
        let words: [String] = ["/bin/sh", "-c", command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { for p in environment + argv { free(p) } }
        var pid = pid_t()
        XCTAssertEqual(posix_spawn(&pid, "/bin/sh", nil, nil, argv, environment), 0)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        // The login keyring is written once it is made and unlocked; before that, a client would ask for a new
        // default collection, which only a prompt (no desktop here) could make.
        let login = env["XDG_DATA_HOME"]! + "/keyrings/login.keyring"
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: login) { Thread.sleep(forTimeInterval: 0.05) }
        let script = CLITests.repo.appendingPathComponent("scripts/secret-service/secretstorage_client.py").path
        let r = try run("/usr/bin/python3", [script], expect: nil)
        XCTAssertEqual(r.code, 0, r.out + r.err)
        XCTAssert(r.out.hasSuffix("done\n"), r.out + r.err)
    }

    /// A second daemon does not take the name (exit 7) unless told to; with `--replace` it does, and the first
    /// stops serving (exit 0) and says why.
    func testReplaceTakesTheNameOver() throws {
        let (first, firstLog) = try startDaemon()
        XCTAssert(first.isRunning)
        let refused = try kcar(["secret-service"], expect: 7)
        XCTAssert(refused.err.contains("--replace"), refused.err)
        let (second, _) = try startDaemon(["--replace"])
        first.waitUntilExit()
        XCTAssertEqual(first.terminationStatus, 0)
        XCTAssert(try String(contentsOfFile: firstLog, encoding: .utf8).contains("another program took"))
        XCTAssert(second.isRunning)
        try secretTool(["store", "--label=x", "k", "v"], stdin: "s")
        XCTAssertEqual(try secretTool(["lookup", "k", "v"]).out, "s")
    }
}
