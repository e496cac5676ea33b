import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Files kcar opens that a FIFO could stand in for (archives, value files, a rewrite's stale temporary), and
/// names `list` prints with C1 and bidirectional controls escaped. Each test failed before its fix (adf9b07).
extension HardeningCLITests {
    /// Beyond vaults and key files: an archive (`archive show`/`convert`, `import --nskeyed`)
    /// and a `--value-file` (`add`, `update`) that are FIFOs are refused at once (exit 15, naming the path);
    /// before, each blocked forever in open(). An anonymous pipe stays a fine value file (`<(cmd)`).
    func testArchiveAndValueFilesNeverBlock() throws {
        XCTAssertEqual(mkfifo(path("a.fifo"), 0o600), 0)
        XCTAssertTrue(try kcar(["archive", "show", "a.fifo"], expect: 15).err.contains("a.fifo"))
        try kcar(["archive", "convert", "a.fifo", "out.kca"], expect: 15)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("out.kca")))
        try kcar(["archive", "show", "/dev/zero"], expect: 15)
        let env = ["KCAR_KEYCHAIN": path("kc"), "KCAR_ACCESS_GROUPS": "", "XDG_STATE_HOME": path("state")]
        try kcar(["init"], env: env, expect: 0)
        try kcar(
            ["add", "--group", "g", "--service", "s", "--account", "a"], stdin: Data("v".utf8), env: env, expect: 0)
        XCTAssertTrue(
            try kcar(["add", "--group", "g", "--service", "s2", "--value-file", "a.fifo"], env: env, expect: 15).err
                .contains("a.fifo"))
        try kcar(["update", "--group", "g", "--service", "s", "--value-file", "a.fifo"], env: env, expect: 15)
        try kcar(["import", "--nskeyed", "a.fifo", "--group", "g", "--service", "s3"], env: env, expect: 15)
        try kcar(
            ["add", "--group", "g", "--service", "s4", "--value-file", "/dev/stdin"], stdin: Data("piped".utf8),
            env: env, expect: 0)
        XCTAssertEqual(try kcar(["get", "--group", "g", "--service", "s4"], env: env, expect: 0).out, "piped")
        XCTAssertEqual(try kcar(["get", "--group", "g", "--service", "s"], env: env, expect: 0).out, "v")
        // A device that never ends is refused; the null device (an empty value, a common idiom) is not.
        try kcar(["add", "--group", "g", "--service", "s5", "--value-file", "/dev/zero"], env: env, expect: 15)
        try kcar(["add", "--group", "g", "--service", "s6", "--value-file", "/dev/null"], env: env, expect: 0)
        XCTAssertEqual(try kcar(["get", "--group", "g", "--service", "s6"], env: env, expect: 0).out, "")
    }

    /// A FIFO planted under the name of a rewrite's stale temporary (`.v.kcv.<12 hex>.tmp`, in a folder others
    /// can write) is not a killed writer's file: the rewrite neither waits on it (before, `compact` and `pack
    /// --force` blocked forever opening it) nor removes it.
    func testRewriteIgnoresAFIFOPlantedAsItsStaleTemporary() throws {
        try makeVault(items: [(.genericPassword, ["svce": "s", "acct": "a"], [1, 2, 3])])
        XCTAssertEqual(mkfifo(path(".v.kcv.000000000000.tmp"), 0o600), 0)
        try kcar(["compact", "v.kcv", "--key-file", keyFile], expect: 0)
        try kcar(["rekey", "v.kcv", "--key-file", keyFile], expect: 0)
        var st = stat()
        XCTAssertEqual(lstat(path(".v.kcv.000000000000.tmp"), &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFIFO)
        XCTAssertTrue(try kcar(["list", "v.kcv", "--key-file", keyFile], expect: 0).out.contains("s/a"))
    }

    /// `list` prints names with C1 controls (U+009B is CSI to many terminals) and bidirectional overrides
    /// (U+202E makes `evil\u{202E}txt.exe` read as `evilexe.txt`) escaped, like every other printer of file
    /// text; before, the %XX encoding of names let through everything above U+007F.
    func testListEscapesC1AndBidiControlsInNames() throws {
        try makeVault(items: [
            (.genericPassword, ["svce": "c1\u{9B}2J", "acct": "a"], [1]),
            (.genericPassword, ["svce": "evil\u{202E}txt.exe", "acct": "b\u{2067}"], [2])
        ])
        let out = try kcar(["list", "v.kcv", "--key-file", keyFile], expect: 0).out
        for raw in ["\u{9B}", "\u{202E}", "\u{2067}"] { XCTAssertFalse(out.contains(raw), out.debugDescription) }
        XCTAssertTrue(out.contains("c1\\x9B2J/a"), out)
        XCTAssertTrue(out.contains("evil\\u{202E}txt.exe/b\\u{2067}"), out)
    }
}
