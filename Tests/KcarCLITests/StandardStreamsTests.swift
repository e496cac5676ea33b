import Foundation
import XCTest

/// Issue 13, item 3: `-` is standard input for what a command reads and standard output for what it writes,
/// and binary is never written to a terminal unless --force.
extension CLITests {
    /// Runs kcar with standard output (and input) on a pseudo-terminal, through script(1); nil without it.
    func onTerminal(_ args: [String]) throws -> ProcessResult? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { return nil }
        let line = ([Self.binary] + args).map { "'" + $0 + "'" }.joined(separator: " ")
        return try runProcess("/usr/bin/script", ["-qec", line, "/dev/null"], cwd: dir)
    }

    func testDashReadsAVaultFromStandardInput() throws {
        _ = try makeTree()
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile])
        let vault = Data(try read("v.kcv"))
        let tmp = dir + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        let env = ["TMPDIR": tmp]
        XCTAssertEqual(
            try kcar(["list", "-", "--key-file", keyFile], stdin: vault, env: env).out,
            try kcar(["list", "v.kcv", "--key-file", keyFile]).out)
        XCTAssertTrue(
            try kcar(["verify", "-", "--key-file", keyFile], stdin: vault, env: env).out.hasPrefix("-: intact: "))
        XCTAssertTrue(
            try kcar(["verify", "-", "--no-key"], stdin: vault, env: env).out.hasPrefix(
                "-: header checksum and structure intact"))
        XCTAssertTrue(try kcar(["info", "-"], stdin: vault, env: env).out.hasPrefix("vault:      -\n"))
        try kcar(["extract", "-", "-C", "out", "--key-file", keyFile], stdin: vault, env: env)
        XCTAssertEqual(regularFiles(dir + "/out"), regularFiles(dir + "/src"))
        XCTAssertEqual(
            try kcar(
                ["extract", "-", "--stdout", "svc.alpha/nested/token", "--key-file", keyFile], stdin: vault, env: env
            ).out,
            "hunter2\n")
        // A cut vault from a pipe is damaged (exit 4), as the same bytes in a file are.
        try kcar(["list", "-", "--key-file", keyFile], stdin: vault.prefix(vault.count - 10), env: env, expect: 4)
        // Commands that change the file in place refuse it (before reading it: a short input, so the pipe never fills).
        for c in ["compact", "recover", "rekey", "passwd"] {
            XCTAssertTrue(
                try kcar([c, "-", "--key-file", keyFile], stdin: vault.prefix(100), env: env, expect: 2).err.contains(
                    "VAULT - (standard input)"))
        }
        // The temporary copies are gone.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp), [])
    }

    func testDashForArchivesItemFilesAndKeys() throws {
        let kca = Self.repo.appendingPathComponent("Fixtures/archive/distinct.kca").path
        let bytes = try Data(contentsOf: URL(fileURLWithPath: kca))
        XCTAssertEqual(try kcar(["archive", "show", "-"], stdin: bytes).out, try kcar(["archive", "show", kca]).out)
        try kcar(["archive", "convert", kca, "a.plist"])
        XCTAssertEqual(try kcar(["archive", "convert", kca, "-"]).data, Data(try read("a.plist")))
        try kcar(["archive", "convert", "-", "b.kca"], stdin: Data(try read("a.plist")))
        XCTAssertEqual(Data(try read("b.kca")), bytes)

        _ = try makeTree()
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile])
        let items = try kcar(["extract", "v.kcv", "--items", "-", "--key-file", keyFile]).data
        let env = ["KCAR_KEYCHAIN": dir + "/kc", "KCAR_ACCESS_GROUPS": ""]
        try kcar(["init"], env: env)
        try kcar(["import", "--items", "-", "--group", "g"], stdin: items, env: env)
        XCTAssertEqual(
            try kcar(["find", "--group", "g", "--json"], env: env).out.components(separatedBy: "\"group\"").count - 1,
            regularFiles(dir + "/src").count)

        let key = try kcar(["keygen", "-"])
        XCTAssertEqual(key.data.count, 32)
        let x = try kcar(["keygen", "-", "--x25519"])
        XCTAssertEqual(x.data.count, 32)
        let pub = try XCTUnwrap(
            x.err.components(separatedBy: "public key: ").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertTrue(pub.hasPrefix("age1") && pub.count == 62, pub)
        try x.data.write(to: URL(fileURLWithPath: dir + "/x.key"))
        try kcar(["pack", "r.kcv", "src", "--recipient", pub])
        try kcar(["verify", "r.kcv", "--key-file", dir + "/x.key"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/-"), "keygen - wrote a file named -")
    }

    func testBinaryIsRefusedOnATerminal() throws {
        _ = try makeTree()
        try write("src/svc.alpha/blob", [0xFF, 0x00, 0x1B, 0x5B, 0x32, 0x4A])
        try kcar(["pack", "v.kcv", "src", "--key-file", keyFile])
        let kca = Self.repo.appendingPathComponent("Fixtures/archive/distinct.kca").path
        guard let pack = try onTerminal(["pack", "-", "src", "--key-file", keyFile]) else {
            throw XCTSkip("no script(1)")
        }
        XCTAssertEqual(pack.code, 2)
        XCTAssertTrue(pack.out.contains("refusing to write a vault to a terminal"), pack.out)
        let key = try XCTUnwrap(try onTerminal(["keygen", "-", "--force"]))
        XCTAssertEqual(key.code, 2)
        XCTAssertTrue(key.out.contains("refusing to write a secret key to a terminal"), key.out)
        let convert = try XCTUnwrap(try onTerminal(["archive", "convert", kca, "-"]))
        XCTAssertEqual(convert.code, 2)
        let blob = try XCTUnwrap(
            try onTerminal(["extract", "v.kcv", "--stdout", "svc.alpha/blob", "--key-file", keyFile]))
        XCTAssertEqual(blob.code, 2)
        XCTAssertTrue(blob.out.contains("refusing to write svc.alpha/blob to a terminal"), blob.out)
        XCTAssertFalse(blob.out.contains("\u{1B}[2J"))
        // Text is shown; --force shows the rest.
        let text = try XCTUnwrap(
            try onTerminal(["extract", "v.kcv", "--stdout", "svc.alpha/nested/token", "--key-file", keyFile]))
        XCTAssertEqual(text.code, 0)
        XCTAssertTrue(text.out.contains("hunter2"))
        XCTAssertEqual(
            try XCTUnwrap(
                try onTerminal(["extract", "v.kcv", "--stdout", "svc.alpha/blob", "--force", "--key-file", keyFile])
            ).code, 0)
        XCTAssertEqual(try XCTUnwrap(try onTerminal(["archive", "convert", kca, "-", "--force"])).code, 0)
    }
}
