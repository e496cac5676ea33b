import Foundation
import XCTest

/// `kcar credential` (git's credential helper) and `kcar docker-credential` (docker's), run as the built
/// binary and through the real git and docker clients where they are installed (issue 13, items 11-12).
final class CredentialHelperTests: XCTestCase {
    var dir: String!
    var kc: String { dir + "/kc" }
    var bin: String { dir + "/bin" }
    var servers: [Process] = []

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-cred-\(UUID().uuidString)"
        for d in [dir!, dir + "/home", bin] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        }
        // The helper names as `make install` links them.
        for name in ["git-credential-kcar", "docker-credential-kcar"] {
            try FileManager.default.createSymbolicLink(atPath: bin + "/" + name, withDestinationPath: CLITests.binary)
        }
    }

    override func tearDownWithError() throws {
        for p in servers where p.isRunning {
            p.terminate()
            p.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A private HOME (git's and docker's configuration), keychain and state, and the helper links on PATH.
    var environment: [String: String] {
        [
            "HOME": dir + "/home", "KCAR_KEYCHAIN": kc, "KCAR_ACCESS_GROUPS": "", "XDG_STATE_HOME": dir + "/state",
            "XDG_CONFIG_HOME": dir + "/home/.config", "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "", "DOCKER_CONFIG": dir + "/home/.docker",
            "PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        ]
    }

    @discardableResult
    func run(
        _ executable: String, _ args: [String], stdin: String? = nil, expect: Int32? = 0,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProcessResult {
        // Every client run is bounded in time (a hang guard, not a timed assertion).
        let r = try runProcess(
            executable, args, stdin: stdin.map { Data($0.utf8) }, env: environment, cwd: dir,
            prefix: ["/usr/bin/timeout", "60"])
        if let expect {
            XCTAssertEqual(
                r.code, expect, "\(executable) \(args.joined(separator: " ")): \(r.out) \(r.err)", file: file,
                line: line)
        }
        return r
    }

    @discardableResult
    func kcar(
        _ args: [String], stdin: String? = nil, expect: Int32? = 0, file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProcessResult {
        try run(CLITests.binary, args, stdin: stdin, expect: expect, file: file, line: line)
    }

    @discardableResult
    func git(
        _ args: [String], stdin: String? = nil, expect: Int32? = 0, file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProcessResult {
        try run("/usr/bin/env", ["git"] + args, stdin: stdin, expect: expect, file: file, line: line)
    }

    /// The internet-password items of a group, as `kcar find --class inet --json` prints them.
    func items(_ group: String) throws -> [[String: Any]] {
        let r = try kcar(["find", "--class", "inet", "--group", group, "--json"], expect: nil)
        guard r.code == 0 else { return [] }
        let list = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]] ?? []
        return list.map { $0["attributes"] as? [String: Any] ?? [:] }
    }

    func requireGit() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/git") else {
            throw XCTSkip("git is not installed")
        }
    }

    // MARK: git

    func testGitApproveFillRejectThroughKcarCredential() throws {
        try requireGit()
        try git(["config", "--global", "credential.helper", "\(CLITests.binary) credential"])
        try git(
            ["credential", "approve"],
            stdin: "protocol=https\nhost=example.com:8443\nusername=alice\npassword=s3cret\n\n")
        let fill = try git(["credential", "fill"], stdin: "protocol=https\nhost=example.com:8443\n\n")
        XCTAssertEqual(fill.out, "protocol=https\nhost=example.com:8443\nusername=alice\npassword=s3cret\n")
        let found = try items("git-credentials")
        XCTAssertEqual(found.count, 1)
        XCTAssertEqual(found.first?["srvr"] as? String, "example.com")
        XCTAssertEqual(found.first?["port"] as? Int, 8443)
        XCTAssertEqual(found.first?["ptcl"] as? String, "htps")
        XCTAssertEqual(found.first?["acct"] as? String, "alice")
        XCTAssertNil(found.first?["path"])
        let table = try kcar(["find", "--class", "inet"]).out
        XCTAssertTrue(
            table.contains("git-credentials") && table.contains("example.com") && table.contains("alice"), table)
        XCTAssertFalse(table.contains("s3cret"))
        // Another port or protocol is another server: git is asked for a password, and has no terminal.
        XCTAssertNotEqual(
            try git(["credential", "fill"], stdin: "protocol=https\nhost=example.com\n\n", expect: nil).code, 0)
        XCTAssertNotEqual(
            try git(["credential", "fill"], stdin: "protocol=http\nhost=example.com:8443\n\n", expect: nil).code, 0)
        // A second approve for the same server and user replaces the password.
        try git(
            ["credential", "approve"], stdin: "protocol=https\nhost=example.com:8443\nusername=alice\npassword=new\n\n")
        XCTAssertEqual(try items("git-credentials").count, 1)
        XCTAssertTrue(
            try git(["credential", "fill"], stdin: "protocol=https\nhost=example.com:8443\n\n").out.contains(
                "password=new\n"))
        try git(
            ["credential", "reject"], stdin: "protocol=https\nhost=example.com:8443\nusername=alice\npassword=new\n\n")
        XCTAssertEqual(try items("git-credentials").count, 0)
    }

    func testGitHelperByNameWithUseHttpPath() throws {
        try requireGit()
        // `credential.helper kcar` makes git run git-credential-kcar from PATH: kcar by its argv[0].
        try git(["config", "--global", "credential.helper", "kcar"])
        try git(["config", "--global", "credential.useHttpPath", "true"])
        try git(
            ["credential", "approve"], stdin: "url=https://git.example.org/team/a.git\nusername=bob\npassword=pa\n\n")
        try git(
            ["credential", "approve"], stdin: "url=https://git.example.org/team/b.git\nusername=bob\npassword=pb\n\n")
        let a = try git(["credential", "fill"], stdin: "url=https://git.example.org/team/a.git\n\n").out
        let b = try git(["credential", "fill"], stdin: "url=https://git.example.org/team/b.git\n\n").out
        XCTAssertTrue(a.contains("username=bob\npassword=pa\n"), a)
        XCTAssertTrue(b.contains("username=bob\npassword=pb\n"), b)
        XCTAssertEqual(
            Set(try items("git-credentials").compactMap { $0["path"] as? String }), ["team/a.git", "team/b.git"])
        try git(["credential", "reject"], stdin: "url=https://git.example.org/team/a.git\nusername=bob\n\n")
        XCTAssertEqual(try items("git-credentials").compactMap { $0["path"] as? String }, ["team/b.git"])
        // --group in the helper's configuration, as git passes it before the action.
        try git(["config", "--global", "credential.helper", "kcar --group work"])
        try git(["credential", "approve"], stdin: "url=https://work.example.org/x.git\nusername=w\npassword=pw\n\n")
        XCTAssertEqual(try items("work").count, 1)
    }

    func testCredentialProtocolDirectly() throws {
        // No match (and no group yet): nothing on standard output, exit 0, as git's protocol asks.
        let none = try kcar(["credential", "get"], stdin: "protocol=https\nhost=nowhere.example\n\n")
        XCTAssertEqual(none.out, "")
        // Unknown and newer keys are ignored; the expiry comes back; what follows the empty line is not read.
        try kcar(
            ["credential", "store"],
            stdin: "capability[]=authtype\ncapability[]=state\nprotocol=https\nhost=h.example\n"
                + "username=u\npassword=p1\npassword_expiry_utc=4102444800\nwwwauth[]=Basic realm=\"x\"\nstate[]=a:b\n"
                + "ephemeral=false\nfuture_key=1\n\nusername=ignored\n")
        XCTAssertEqual(
            try kcar(["credential", "get"], stdin: "protocol=https\nhost=h.example\nwwwauth[]=Basic\n").out,
            "username=u\npassword=p1\npassword_expiry_utc=4102444800\n")
        XCTAssertEqual(try items("git-credentials").first?["@password_expiry_utc"] as? String, "4102444800")
        // An OAuth refresh token comes back, but is kept as a value (a genp item beside), never as an attribute.
        try kcar(
            ["credential", "store"],
            stdin: "protocol=https\nhost=o.example\nusername=o\npassword=access\noauth_refresh_token=refresh-secret\n\n"
        )
        XCTAssertEqual(
            try kcar(["credential", "get"], stdin: "protocol=https\nhost=o.example\n\n").out,
            "username=o\npassword=access\noauth_refresh_token=refresh-secret\n")
        let listed =
            try kcar(["find", "--group", "git-credentials", "--json"]).out
            + (try kcar(["find", "--class", "inet", "--json"]).out)
        XCTAssertTrue(listed.contains("git-oauth-refresh-token"), listed)
        XCTAssertFalse(listed.contains("refresh-secret"), listed)
        // A new credential without one drops the old token; erase removes it with its credential.
        try kcar(["credential", "store"], stdin: "protocol=https\nhost=o.example\nusername=o\npassword=access2\n\n")
        XCTAssertEqual(
            try kcar(["credential", "get"], stdin: "protocol=https\nhost=o.example\n\n").out,
            "username=o\npassword=access2\n")
        try kcar(
            ["credential", "store"],
            stdin: "protocol=https\nhost=o.example\nusername=o\npassword=access3\noauth_refresh_token=r3\n\n")
        try kcar(["credential", "erase"], stdin: "protocol=https\nhost=o.example\n\n")
        try kcar(["find", "--group", "git-credentials", "--service", "git-oauth-refresh-token"], expect: 6)
        // A store without a password keeps nothing.
        try kcar(["credential", "store"], stdin: "protocol=https\nhost=other.example\nusername=u\n\n")
        XCTAssertEqual(try items("git-credentials").count, 1)
        // erase with another password than the stored one (it has changed since) keeps the item.
        try kcar(["credential", "erase"], stdin: "protocol=https\nhost=h.example\nusername=u\npassword=old\n\n")
        XCTAssertEqual(try items("git-credentials").count, 1)
        try kcar(["credential", "erase"], stdin: "protocol=https\nhost=h.example\nusername=u\npassword=p1\n\n")
        XCTAssertEqual(try items("git-credentials").count, 0)
        // The environment names the group; the items are made with the usual modes.
        try run(
            "/usr/bin/env", ["KCAR_CREDENTIAL_GROUP=ci", CLITests.binary, "credential", "store"],
            stdin: "protocol=http\nhost=[::1]:8080\nusername=ci\npassword=c\n\n")
        let ci = try items("ci")
        XCTAssertEqual(ci.first?["srvr"] as? String, "::1")
        XCTAssertEqual(ci.first?["port"] as? Int, 8080)
        XCTAssertEqual(ci.first?["ptcl"] as? String, "http")
        for f in ["ci.kcv", "ci.key"] {
            XCTAssertEqual(
                try FileManager.default.attributesOfItem(atPath: kc + "/" + f)[.posixPermissions] as? Int, 0o600)
        }
        // An action git may add later is ignored silently, as git's protocol asks.
        let future = try kcar(["credential", "list"], stdin: "protocol=https\nhost=h.example\n\n")
        XCTAssertEqual(future.out + future.err, "")
        // Refused: a request over 1 MiB, a line without '='.
        let big = try kcar(
            ["credential", "get"], stdin: "protocol=https\nhost=" + String(repeating: "a", count: 1 << 20) + "\n",
            expect: 2)
        XCTAssertTrue(big.err.contains("larger than 1 MiB"), big.err)
        try kcar(["credential", "get"], stdin: "protocol https\n\n", expect: 2)
        XCTAssertTrue(try kcar(["credential", "--help"]).out.contains("git's credential helper"))
        XCTAssertTrue(try kcar(["docker-credential", "--help"]).out.contains("docker's credential helper"))
    }

    /// A loopback HTTP server (python3) that asks for Basic auth: `git` serves a repository through
    /// `git http-backend`, `registry` answers docker's `/v2/` login probe. Returns its port.
    func startServer(_ mode: String, user: String, password: String) throws -> Int {
        guard (try? runProcess("/usr/bin/env", ["python3", "-c", "1"], cwd: dir).code) == 0 else {
            throw XCTSkip("python3 is not installed")
        }
        let script = dir + "/server.py"
        try Self.serverScript.write(toFile: script, atomically: true, encoding: .utf8)
        let portFile = dir + "/port-\(mode)"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", script, mode, portFile, dir + "/srv", user, password]
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        servers.append(p)
        for _ in 0..<200 {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), text.hasSuffix("\n"),
                let port = Int(text.dropLast())
            {
                return port
            }
            guard p.isRunning else { break }
            usleep(50_000)
        }
        throw XCTSkip("the loopback HTTP server did not start")
    }

    static let serverScript = #"""
        import base64, http.server, os, subprocess, sys, threading
        mode, port_file, root, user, password = sys.argv[1:6]
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a): pass
            def authorized(self):
                if self.headers.get("Authorization") == expected: return True
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="kcar-test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return False
            def do_GET(self): self.handle_any()
            def do_POST(self): self.handle_any()
            def handle_any(self):
                if not self.authorized(): return
                if mode == "registry":
                    self.send_response(200)
                    self.send_header("Docker-Distribution-API-Version", "registry/2.0")
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                    return
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path, QUERY_STRING=query,
                           REQUEST_METHOD=self.command, CONTENT_TYPE=self.headers.get("Content-Type", ""),
                           CONTENT_LENGTH=str(length), REMOTE_USER=user, REMOTE_ADDR="127.0.0.1",
                           GIT_PROTOCOL=self.headers.get("Git-Protocol", ""))
                out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=30).stdout
                head, _, rest = out.partition(b"\r\n\r\n")
                status, headers = 200, []
                for line in head.split(b"\r\n"):
                    k, _, v = line.decode().partition(":")
                    if k.lower() == "status": status = int(v.strip().split()[0])
                    elif k: headers.append((k, v.strip()))
                self.send_response(status)
                for k, v in headers: self.send_header(k, v)
                self.send_header("Content-Length", str(len(rest)))
                self.end_headers()
                self.wfile.write(rest)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Timer(120, server.shutdown).start()
        with open(port_file + ".tmp", "w") as f: f.write(f"{server.server_address[1]}\n")
        os.rename(port_file + ".tmp", port_file)
        server.serve_forever()
        """#

    func testGitCloneGetsItsPasswordFromKcar() throws {
        try requireGit()
        guard FileManager.default.isExecutableFile(atPath: "/usr/lib/git-core/git-http-backend") else {
            throw XCTSkip("no git http-backend")
        }
        let src = dir + "/src"
        try git(["init", "-q", src])
        try "hello\n".write(toFile: src + "/README", atomically: true, encoding: .utf8)
        try git(["-C", src, "add", "README"])
        try git(["-C", src, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "first"])
        try FileManager.default.createDirectory(atPath: dir + "/srv", withIntermediateDirectories: true)
        try git(["clone", "-q", "--bare", src, dir + "/srv/repo.git"])
        let port = try startServer("git", user: "alice", password: "clone-pw")
        try git(["config", "--global", "credential.helper", "kcar"])
        // Without a credential git cannot clone (no terminal to ask on).
        XCTAssertNotEqual(
            try git(["clone", "-q", "http://127.0.0.1:\(port)/repo.git", dir + "/c0"], expect: nil).code, 0)
        try git(
            ["credential", "approve"],
            stdin: "protocol=http\nhost=127.0.0.1:\(port)\nusername=alice\npassword=clone-pw\n\n")
        try git(["clone", "-q", "http://127.0.0.1:\(port)/repo.git", dir + "/c1"])
        XCTAssertEqual(try String(contentsOfFile: dir + "/c1/README", encoding: .utf8), "hello\n")
        XCTAssertEqual(try items("git-credentials").first?["port"] as? Int, port)
    }
}
