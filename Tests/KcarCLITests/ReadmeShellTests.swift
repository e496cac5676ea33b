import Foundation
import XCTest

/// Every shell block README.md shows runs as written, pasted into bash in a fresh folder with a fresh HOME and
/// nothing else in the environment but PATH (with the built `kcar` first) and a git identity, as a new user's
/// shell has. The blocks of `make` targets are the exception: CI runs `make test` itself, and `make install`
/// is run by `InstallHelpTests`.
final class ReadmeShellTests: XCTestCase {
    /// The ```sh blocks of README.md, each with the heading it stands under.
    static func shellBlocks() throws -> [(heading: String, script: String)] {
        let text = try String(contentsOf: CLITests.repo.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [(String, String)] = []
        var heading = ""
        var current: [String]?
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("#"), current == nil {
                heading = line
            } else if line == "```sh", current == nil {
                current = []
            } else if line == "```", let c = current {
                blocks.append((heading, c.joined(separator: "\n")))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// The Secret Service's block runs where a desktop session would have a session bus: under
    /// `dbus-run-session`, which the README names for a machine without one (the daemon it starts stops with
    /// that bus).
    static let needsSessionBus = "## Every application's keyring"

    func run(_ script: String, sessionBus: Bool = false) throws -> ProcessResult {
        let dir = NSTemporaryDirectory() + "kcar-readme-sh-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/work", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bin = URL(fileURLWithPath: CLITests.binary).deletingLastPathComponent().path
        let path = bin + ":/usr/local/bin:/usr/bin:/bin"
        let identity =
            ["GIT_AUTHOR_NAME=Reader", "GIT_AUTHOR_EMAIL=reader@example.com"]
            + ["GIT_COMMITTER_NAME=Reader", "GIT_COMMITTER_EMAIL=reader@example.com"]
        return try runProcess(
            "/usr/bin/env",
            ["-i", "HOME=\(dir)/home", "PATH=\(path)"] + identity + (sessionBus ? ["dbus-run-session", "--"] : [])
                + ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd: dir + "/work")
    }

    func testEveryShellBlockRunsAsWritten() throws {
        let blocks = try Self.shellBlocks()
        let runnable = blocks.filter { block in
            !block.script.split(separator: "\n").allSatisfy { $0.hasPrefix("make ") }
        }
        XCTAssertEqual(blocks.count - runnable.count, 1, "the make block")
        let expected: [String: [String]] = [
            "## Quick start: a folder of secrets in one file": [
                "db-password", "github.com/ci-token", "intact", "ghp_example"
            ],
            "## Quick start: a keychain": ["s3cr3t", "api", "db", "VERSION", "restored as a new version"],
            "## Quick start: secrets in git": ["1 item taken from THEIRS", "db/app", "github.com/ci"],
            Self.needsSessionBus: ["serving org.freedesktop.secrets", "hunter2hunter2"]
        ]
        XCTAssertEqual(Set(runnable.map(\.heading)), Set(expected.keys))
        for block in runnable {
            let r = try run(block.script, sessionBus: block.heading == Self.needsSessionBus)
            XCTAssertEqual(r.code, 0, "\(block.heading):\n\(r.out)\n\(r.err)")
            for word in expected[block.heading] ?? [] {
                XCTAssertTrue((r.out + r.err).contains(word), "\(block.heading): no \(word) in\n\(r.out)\n\(r.err)")
            }
        }
    }
}
