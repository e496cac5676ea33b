import Foundation
import XCTest

/// `docker-credential-kcar` (docker's credential-helper protocol) as the built binary, and under the docker
/// CLI's `credsStore` where it runs without an engine (issue 13, item 12).
extension CredentialHelperTests {
    @discardableResult
    func helper(_ args: [String], stdin: String, expect: Int32? = 0, file: StaticString = #filePath, line: UInt = #line)
        throws -> ProcessResult
    {
        try run(bin + "/docker-credential-kcar", args, stdin: stdin, expect: expect, file: file, line: line)
    }

    func testDockerCredentialProtocol() throws {
        // Not found: docker's exact message on standard output, exit 1.
        let missing = try helper(["get"], stdin: "registry.example.com\n", expect: 1)
        XCTAssertEqual(missing.out, "credentials not found in native keychain\n")
        XCTAssertEqual(try helper(["list"], stdin: "").out, "{}\n")
        try helper(
            ["store"], stdin: #"{"ServerURL":"https://index.docker.io/v1/","Username":"al","Secret":"t\"ok<&>"}"#)
        try helper(["store"], stdin: #"{"ServerURL":"registry.example.com:5000","Username":"bo","Secret":"one"}"#)
        // A new username for a server replaces the old one, as docker keeps one credential per server.
        try helper(["store"], stdin: #"{"ServerURL":"registry.example.com:5000","Username":"cy","Secret":"two"}"#)
        let got = try helper(["get"], stdin: "https://index.docker.io/v1/")
        let obj = try JSONSerialization.jsonObject(with: Data(got.out.utf8)) as? [String: String]
        XCTAssertEqual(obj, ["ServerURL": "https://index.docker.io/v1/", "Username": "al", "Secret": "t\"ok<&>"])
        XCTAssertEqual(
            try helper(["get"], stdin: "registry.example.com:5000").out,
            #"{"ServerURL":"registry.example.com:5000","Username":"cy","Secret":"two"}"# + "\n")
        XCTAssertEqual(
            try helper(["list"], stdin: "").out,
            #"{"https://index.docker.io/v1/":"al","registry.example.com:5000":"cy"}"# + "\n")
        let reg = try items("docker-credentials").first { $0["srvr"] as? String == "registry.example.com" }
        XCTAssertEqual(reg?["port"] as? Int, 5000)
        XCTAssertEqual(reg?["ptcl"] as? String, "htps")
        XCTAssertEqual(reg?["acct"] as? String, "cy")
        XCTAssertEqual(reg?["labl"] as? String, "Docker Credentials")
        XCTAssertEqual(
            try items("docker-credentials").first { $0["srvr"] as? String == "index.docker.io" }?["path"] as? String,
            "/v1/")
        try helper(["erase"], stdin: "registry.example.com:5000\n")
        XCTAssertEqual(
            try helper(["erase"], stdin: "registry.example.com:5000\n", expect: 1).out,
            "credentials not found in native keychain\n")
        XCTAssertEqual(
            try helper(["get"], stdin: "registry.example.com:5000", expect: 1).out,
            "credentials not found in native keychain\n")
        // docker-credential-helpers' messages for an incomplete request, on standard output, exit 1.
        XCTAssertEqual(
            try helper(["store"], stdin: #"{"ServerURL":"","Username":"u","Secret":"s"}"#, expect: 1).out,
            "no credentials server URL\n")
        XCTAssertEqual(
            try helper(["store"], stdin: #"{"ServerURL":"r.example","Secret":"s"}"#, expect: 1).out,
            "no credentials username\n")
        XCTAssertEqual(try helper(["get"], stdin: "\n", expect: 1).out, "no credentials server URL\n")
        XCTAssertEqual(try helper(["get"], stdin: "ftp://r.example", expect: 1).out, "unsupported scheme: ftp\n")
        try helper(["store"], stdin: "not json", expect: 1)
        // The same helper as a kcar command.
        XCTAssertEqual(try kcar(["docker-credential", "list"]).out, #"{"https://index.docker.io/v1/":"al"}"# + "\n")
        XCTAssertFalse(try kcar(["find", "--class", "inet"]).out.contains("t\"ok"))
    }

    func testDockerLoginAndLogoutThroughCredsStore() throws {
        guard (try? runProcess("/usr/bin/env", ["docker", "--version"], cwd: dir).code) == 0 else {
            throw XCTSkip("the docker CLI is not installed")
        }
        let port = try startServer("registry", user: "dock", password: "reg-pw")
        try FileManager.default.createDirectory(atPath: dir + "/home/.docker", withIntermediateDirectories: true)
        try #"{"credsStore": "kcar"}"#.write(
            toFile: dir + "/home/.docker/config.json", atomically: true, encoding: .utf8)
        let server = "127.0.0.1:\(port)"
        // Without an engine the docker CLI logs in from the client; skip if this one cannot.
        let login = try run(
            "/usr/bin/env", ["docker", "login", "-u", "dock", "--password-stdin", server], stdin: "reg-pw\n",
            expect: nil)
        guard login.code == 0 else { throw XCTSkip("docker login does not work here without an engine: \(login.err)") }
        XCTAssertEqual(
            try helper(["get"], stdin: server).out,
            #"{"ServerURL":"\#(server)","Username":"dock","Secret":"reg-pw"}"# + "\n")
        let config = try String(contentsOfFile: dir + "/home/.docker/config.json", encoding: .utf8)
        XCTAssertFalse(
            config.contains("reg-pw") || config.contains(Data("dock:reg-pw".utf8).base64EncodedString()), config)
        try run("/usr/bin/env", ["docker", "logout", server])
        XCTAssertEqual(try helper(["list"], stdin: "").out, "{}\n")
    }
}
