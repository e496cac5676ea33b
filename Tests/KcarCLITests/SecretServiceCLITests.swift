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

    /// python3-secretstorage over the API (both sessions, create with and without replace, search in a
    /// collection and in the service, secrets with any bytes, label, attributes, dates, the default alias read
    /// and set, another client's item signalled, delete): its script prints a line per check and exits 1 at
    /// the first that fails.
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

    /// Collections created, used, made the default and deleted through python3-secretstorage, and kcar's own
    /// add heard as a signal (another writer's change, SPEC.md K10): the script prints a line per check.
    func testCollectionsAndAnotherWritersSignalsOverSecretStorage() throws {
        let python = "/usr/bin/python3"
        if try runProcess(python, ["-c", "import secretstorage"], cwd: dir).code != 0 {
            if ProcessInfo.processInfo.environment["CI"] != nil { XCTFail("python3-secretstorage is missing in CI") }
            throw XCTSkip("python3-secretstorage is not installed")
        }
        try startDaemon()
        let script = CLITests.repo.appendingPathComponent("scripts/secret-service/collections_client.py").path
        let r = try run(python, [script, CLITests.binary], expect: 0)
        XCTAssert(r.out.hasSuffix("done\n"), r.out + r.err)
        XCTAssertFalse(r.out.contains("FAIL"), r.out)
    }

    /// An item secret-tool stored merges through git like any other (SPEC.md K9): this machine (the daemon's
    /// keychain) and another share the group through a repository, both change it, git merges the copies, and
    /// each side reads the other's items: secret-tool through the daemon, kcar on the other machine.
    func testASecretToolItemMergesThroughGit() throws {
        let bin = (CLITests.binary as NSString).deletingLastPathComponent
        let git: [String: String] = [
            "GIT_CONFIG_NOSYSTEM": "1",
            "PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@example.com"
        ]
        env.merge(git) { $1 }
        var other = env
        other["HOME"] = dir + "/home-b"
        other["KCAR_KEYCHAIN"] = dir + "/kc-b"
        func onB(_ executable: String, _ args: [String], in cwd: String, stdin: String? = nil) throws -> ProcessResult {
            let r = try runProcess(executable, args, stdin: stdin.map { Data($0.utf8) }, env: other, cwd: cwd)
            XCTAssertEqual(r.code, 0, "B: \(args): \(r.out)\(r.err)")
            return r
        }
        let (a, b) = (dir + "/a", dir + "/b")
        try run("/usr/bin/git", ["init", "-q", "--bare", dir + "/origin.git"])
        try run("/usr/bin/git", ["clone", "-q", dir + "/origin.git", a])
        try startDaemon()
        try secretTool(["store", "--label=GitHub", "service", "github", "user", "bob"], stdin: "hunter2")
        // secret-tool stores to the default collection: the group named after the program, kcar (SPEC.md K2.1).
        func onA(_ args: [String]) throws {
            let r = try runProcess(CLITests.binary, args, env: env, cwd: a)
            XCTAssertEqual(r.code, 0, "A: \(args): \(r.err)")
        }
        func gitA(_ args: [String]) throws { try run("/usr/bin/git", ["-C", a] + args) }
        try onA(["git", "setup"])
        try onA(["sync", "--group", "kcar", "kcar.kcv"])
        try gitA(["add", "."])
        try gitA(["commit", "-qm", "A"])
        try gitA(["push", "-q", "origin", "HEAD"])

        _ = try onB("/usr/bin/git", ["clone", "-q", dir + "/origin.git", b], in: dir)
        _ = try onB(CLITests.binary, ["git", "setup"], in: b)
        _ = try onB(CLITests.binary, ["sync", "--group", "kcar", "kcar.kcv", "--key-file", dir + "/kc/kcar.key"], in: b)
        XCTAssertEqual(try onB(CLITests.binary, ["get", "--attr", "user=bob"], in: b).out, "hunter2")
        _ = try onB(
            CLITests.binary,
            [
                "add", "--group", "kcar", "--service", "org.freedesktop.Secret.Generic", "--account", "c", "--attr",
                "user=carol"
            ],
            in: b, stdin: "from-b\n")
        _ = try onB(CLITests.binary, ["sync", "--group", "kcar", "kcar.kcv"], in: b)
        _ = try onB("/usr/bin/git", ["commit", "-qam", "B"], in: b)
        _ = try onB("/usr/bin/git", ["push", "-q", "origin", "HEAD"], in: b)

        // Meanwhile A stores another; then pulls, and git merges the two copies with kcar's driver.
        try secretTool(["store", "--label=GitLab", "service", "gitlab", "user", "bob"], stdin: "other")
        try onA(["sync", "--group", "kcar", "kcar.kcv"])
        try gitA(["commit", "-qam", "A2"])
        try gitA(["pull", "-q", "--no-rebase", "origin", "HEAD"])
        try onA(["sync", "--group", "kcar", "kcar.kcv"])
        XCTAssertEqual(try secretTool(["lookup", "user", "carol"]).out, "from-b")
        XCTAssertEqual(try secretTool(["lookup", "service", "gitlab"]).out, "other")
        try gitA(["push", "-q", "origin", "HEAD"])
        _ = try onB("/usr/bin/git", ["pull", "-q", "--no-rebase", "origin", "HEAD"], in: b)
        _ = try onB(CLITests.binary, ["sync", "--group", "kcar", "kcar.kcv"], in: b)
        XCTAssertEqual(try onB(CLITests.binary, ["get", "--attr", "service=gitlab"], in: b).out, "other")
    }

    /// Many clients at once, and one that leaves in the middle of its call: sixteen secret-tool processes store
    /// at the same moment while a client sends a CreateItem of a 1 MB secret and exits before the reply; every
    /// store lands and the daemon goes on serving (whether the call that lost its client lands depends on when
    /// the bus delivered it; it is stored whole or not at all).
    func testManyClientsAtOnceAndOneThatLeavesMidCall() throws {
        let (daemon, _) = try startDaemon()
        let gone = """
            import os, secretstorage
            from jeepney import DBusAddress, new_method_call
            from checks import SERVICE
            bus = secretstorage.dbus_init()
            session = bus.send_and_get_reply(new_method_call(SERVICE, "OpenSession", "sv", ("plain", ("s", "")))).body[1]
            default = DBusAddress("/org/freedesktop/secrets/aliases/default", bus_name="org.freedesktop.secrets",
                                  interface="org.freedesktop.Secret.Collection")
            properties = {"org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"who": "gone"})}
            bus.send(new_method_call(default, "CreateItem", "a{sv}(oayays)b",
                                     (properties, (session, b"", b"x" * 1000000, "text/plain"), False)))
            os._exit(0)
            """
        var env = self.env
        env["PYTHONPATH"] = CLITests.repo.appendingPathComponent("scripts/secret-service").path
        var clients: [Process] = []
        for i in 0..<16 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/secret-tool")
            p.arguments = ["store", "--label=client \(i)", "client", "\(i)"]
            p.environment = env
            let input = Pipe()
            p.standardInput = input
            try p.run()
            input.fileHandleForWriting.write(Data("secret \(i)".utf8))
            try input.fileHandleForWriting.close()
            clients.append(p)
        }
        let leaving = try runProcess("/usr/bin/python3", ["-c", gone], env: env, cwd: dir)
        XCTAssertEqual(leaving.code, 0, leaving.err)
        for p in clients {
            p.waitUntilExit()
            XCTAssertEqual(p.terminationStatus, 0)
        }
        XCTAssert(daemon.isRunning)
        for i in 0..<16 {
            XCTAssertEqual(try secretTool(["lookup", "client", "\(i)"]).out, "secret \(i)")
        }
        let stored = try kcar(["find", "--attr", "who=gone"], expect: nil)
        XCTAssert(stored.code == 0 || stored.code == 6, "stored or not, nothing else: \(stored.err)")
    }

    /// Another process holds the group's lock: a store through the daemon fails after the lock timeout (here
    /// 1 s) with a message that names the lock, instead of waiting; once the lock is let go, stores work.
    func testACallWaitsForALockAtMostTheLockTimeout() throws {
        try startDaemon(["--lock-timeout", "1"])
        try secretTool(["store", "--label=x", "k", "v"], stdin: "first")
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        holder.arguments = ["-x", dir + "/kc/kcar.kcv", "sleep", "4"]
        try holder.run()
        defer { holder.waitUntilExit() }
        // Until flock holds it: a non-blocking shared lock fails.
        for _ in 0..<100 {
            let probe = try runProcess("/usr/bin/flock", ["-n", "-s", dir + "/kc/kcar.kcv", "true"], cwd: dir)
            if probe.code != 0 { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let start = Date()
        let refused = try secretTool(["store", "--label=x", "k", "v"], stdin: "second", expect: 1)
        let waited = Date().timeIntervalSince(start)
        XCTAssert(refused.err.contains("locked"), refused.err)
        XCTAssert(waited >= 0.9 && waited < 3.5, "waited \(waited) s")
        holder.waitUntilExit()
        try secretTool(["store", "--label=x", "k", "v"], stdin: "third")
        XCTAssertEqual(try secretTool(["lookup", "k", "v"]).out, "third")
    }

    /// kcar itself does not load libsystemd or libcrypto (every command would pay for them at start, issue
    /// 24): only the daemon it execs, kcar-secret-service, links them.
    func testOnlyTheDaemonLinksTheBusAndSessionLibraries() throws {
        let daemon = (CLITests.binary as NSString).deletingLastPathComponent + "/kcar-secret-service"
        let kcarLibraries = try run("/usr/bin/ldd", [CLITests.binary]).out
        let daemonLibraries = try run("/usr/bin/ldd", [daemon]).out
        for library in ["libsystemd.so", "libcrypto.so"] {
            XCTAssertFalse(kcarLibraries.contains(library), kcarLibraries)
            XCTAssert(daemonLibraries.contains(library), daemonLibraries)
        }
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
