import Foundation
import XCTest

/// Issue 13, items 1 and 2: `make install`, the man page and the completions made from the command table, and
/// one help page per command. The command and option lists come from the binary (`kcar help`, `kcar CMD
/// --help`), whose parser reads its options from the same pages; the tests check that the parser accepts every
/// listed option and that each appears in the man page and in every completion, so a new command or option
/// that is not documented (or documented but not parsed) fails here.
final class InstallHelpTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-install-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// kcar as this class runs it (`KcarRunner`); HOME here too: `kcar git setup --global` writes the git
    /// config of whoever HOME says.
    var kcar: KcarRunner {
        KcarRunner(
            dir: dir,
            env: [
                "KCAR_KEYCHAIN": dir + "/kc", "KCAR_ACCESS_GROUPS": "", "HOME": dir, "GIT_CONFIG_NOSYSTEM": "1",
                "XDG_STATE_HOME": dir + "/state"
            ])
    }

    /// A program on PATH, or nil.
    func tool(_ name: String) -> String? {
        for d in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let p = "\(d)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// The commands `kcar help` lists.
    func commands() throws -> [String] {
        let text = try kcar(["help"]).out
        let list = text.components(separatedBy: "commands:\n")[1].components(separatedBy: "\n\n")[0]
        return list.split(separator: "\n").map { String($0.split(separator: " ")[0]) }
    }

    struct Listed: Hashable {
        let name: String
        let short: String?
        let takesValue: Bool
    }

    /// The options of `kcar CMD --help`: `  --name ARG   meaning` or `  -C ARG, --name ARG   meaning`.
    func options(_ command: String) throws -> [Listed] {
        let text = try kcar([command, "--help"]).out
        guard let section = text.components(separatedBy: "\noptions:\n").dropFirst().first else { return [] }
        var out: [Listed] = []
        for line in section.components(separatedBy: "\n\n")[0].split(separator: "\n") where line.hasPrefix("  -") {
            let label = line.dropFirst(2).components(separatedBy: "  ")[0]
            let parts = label.components(separatedBy: ", ")
            let long = parts.last!.split(separator: " ")
            let short = parts.count > 1 ? String(parts[0].split(separator: " ")[0]) : nil
            out.append(Listed(name: String(long[0]), short: short, takesValue: long.count > 1))
        }
        return out
    }

    func testEveryCommandHasItsOwnPageWithExamplesAndHelpCMDIsCMDHelp() throws {
        let names = try commands()
        XCTAssertEqual(names.count, Set(names).count)
        XCTAssertTrue(names.contains("pack") && names.contains("import") && names.contains("completion"))
        var pages = Set<String>()
        for c in names {
            let a = try kcar(["help", c]).out
            let b = try kcar([c, "--help"]).out
            let h = try kcar([c, "-h"]).out
            XCTAssertEqual(a, b, "kcar help \(c) and kcar \(c) --help differ")
            XCTAssertEqual(a, h)
            XCTAssertTrue(a.hasPrefix("usage: kcar \(c)"), c)
            XCTAssertTrue(a.contains("\nexamples:\n  $ kcar \(c)"), "\(c) has no examples")
            pages.insert(a)
        }
        XCTAssertEqual(pages.count, names.count, "two commands share a page")
        for c in [
            "list", "verify", "info", "extract", "passwd", "rekey", "compact", "recover", "add", "get", "find",
            "update",
            "delete", "groups", "import"
        ] {
            XCTAssertTrue(try options(c).contains { $0.name == "--group" }, "\(c) --help does not mention --group")
        }
    }

    func testVersionSpellingsAndDidYouMean() throws {
        let v = try kcar(["--version"]).out
        XCTAssertTrue(v.hasPrefix("kcar ") && v.contains("formats 1 and 2"))
        XCTAssertEqual(try kcar(["-V"]).out, v)
        XCTAssertEqual(try kcar(["version"]).out, v)
        for (typo, meant) in [("pakc", "pack"), ("lsit", "list"), ("extrat", "extract"), ("grups", "groups")] {
            let r = try kcar([typo], expect: 2)
            XCTAssertTrue(r.err.contains("did you mean `\(meant)`?"), r.err)
        }
        XCTAssertFalse(try kcar(["frobnicate"], expect: 2).err.contains("did you mean"))
        XCTAssertTrue(try kcar(["help", "pakc"], expect: 2).err.contains("did you mean `pack`?"))
        XCTAssertEqual(try kcar(["completion", "tcsh"], expect: 2).code, 2)
    }

    /// Every option a help page lists is one the command's parser accepts (never "unknown option"), and an
    /// option no page lists is refused: the pages are the parser's option list.
    /// The commands whose options each belong to one of their subcommands.
    static let subcommands = ["archive": ["show", "convert"], "git": ["setup", "textconv"]]

    func testTheParserAcceptsExactlyTheListedOptions() throws {
        for c in try commands() {
            let listed = try options(c)
            // All at once: the parser reads every option before the command looks at any (and then fails for
            // want of its positionals, or on the value x); only archive's and git's subcommands each take a part.
            let subcommands = Self.subcommands[c]
            var runs: [[String]] =
                subcommands.map { subs in
                    listed.flatMap { o in subs.map { [c, $0, o.name] + (o.takesValue ? ["x"] : []) } }
                }
                ?? [[c] + listed.flatMap { [$0.name] + ($0.takesValue ? ["x"] : []) }]
            for o in listed { if let s = o.short { runs.append([c, s] + (o.takesValue ? ["x"] : [])) } }
            var refused: [String] = []
            for args in runs {
                let r = try kcar(args, stdin: Data(), expect: nil)
                if r.err.contains("unknown option") || r.err.contains("given twice") {
                    refused.append(args.joined(separator: " ") + ": " + r.err)
                }
            }
            if subcommands != nil {
                XCTAssertEqual(refused.count, listed.count, "each \(c) option belongs to one subcommand: \(refused)")
            } else {
                XCTAssertEqual(refused, [], "kcar \(c) refuses an option its help lists")
            }
            // docker's protocol: every failure of its helper is exit 1 with the message on standard output.
            let docker = c == "docker-credential"
            let r = try kcar([c] + (subcommands?.prefix(1) ?? []) + ["--no-such-option"], expect: docker ? 1 : 2)
            XCTAssertTrue((docker ? r.out : r.err).contains("unknown option"), "\(c): \(r.out) \(r.err)")
        }
    }

    /// `make install DESTDIR=... PREFIX=/usr` (with the test's binary, without rebuilding) installs the binary,
    /// a man page that renders without warnings, and completions each shell loads; `make uninstall` removes them.
    /// `--group G` completes to the keychain's groups (issue 22, point 14), asked of `kcar groups --names`, which
    /// opens no vault: in bash and fish, run as the shells run them; zsh's script at least parses.
    func testGroupNamesComplete() throws {
        let home = dir + "/home"
        for g in ["team.backend", "team.ops", "personal"] {
            let r = try runKcar(
                ["add", "--group", g, "--service", "s", "--account", "a"], in: dir, stdin: Data("x".utf8),
                env: ["HOME": home])
            XCTAssertEqual(r.code, 0, r.err)
        }
        XCTAssertEqual(
            try runKcar(["groups", "--names"], in: dir, env: ["HOME": home]).out,
            "personal\nteam.backend\nteam.ops\n")
        let bin = URL(fileURLWithPath: CLITests.binary).deletingLastPathComponent().path
        let path = bin + ":/usr/bin:/bin"
        if let bash = tool("bash") {
            try kcar(["completion", "bash"]).out.write(toFile: dir + "/c.bash", atomically: true, encoding: .utf8)
            let r = try runProcess(
                bash,
                [
                    "-c",
                    "source c.bash; COMP_WORDS=(kcar get --group team.); COMP_CWORD=3; _kcar; printf '%s\\n' \"${COMPREPLY[@]}\""
                ], env: ["HOME": home, "PATH": path], cwd: dir)
            XCTAssertEqual(r.out, "team.backend\nteam.ops\n", r.err)
        }
        if let fish = tool("fish") {
            try kcar(["completion", "fish"]).out.write(toFile: dir + "/c.fish", atomically: true, encoding: .utf8)
            let r = try runProcess(
                fish, ["--no-config", "-c", "source c.fish; complete -C 'kcar list --group pe'"],
                env: ["HOME": home, "PATH": path], cwd: dir)
            XCTAssertEqual(
                r.out.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }, ["personal"], r.err)
        }
        if let zsh = tool("zsh") {
            try kcar(["completion", "zsh"]).out.write(toFile: dir + "/_kcar", atomically: true, encoding: .utf8)
            XCTAssertEqual(try runProcess(zsh, ["-n", "_kcar"], cwd: dir).code, 0)
        }
    }

    func testMakeInstallManPageAndCompletionsCoverEveryCommandAndOption() throws {
        guard let make = tool("make") else { throw XCTSkip("no make") }
        let root = dir + "/root"
        let r = try runProcess(
            make,
            [
                "-C", CLITests.repo.path, "-o", "build", "install", "DESTDIR=\(root)", "PREFIX=/usr",
                "KCAR=\(CLITests.binary)"
            ], cwd: dir)
        XCTAssertEqual(r.code, 0, r.err)
        let files = [
            "bin/kcar", "share/man/man1/kcar.1", "share/bash-completion/completions/kcar",
            "share/zsh/site-functions/_kcar",
            "share/fish/vendor_completions.d/kcar.fish", "share/dbus-1/services/org.freedesktop.secrets.service",
            "lib/systemd/user/kcar-secret-service.service", "bin/kcar-secret-service"
        ].map { root + "/usr/" + $0 }
        for f in files { XCTAssertTrue(FileManager.default.fileExists(atPath: f), f) }
        // Clients start kcar secret-service on demand: the activation file names the installed binary.
        XCTAssertEqual(
            try String(contentsOfFile: files[5], encoding: .utf8),
            "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=/usr/bin/kcar secret-service\n"
                + "SystemdService=kcar-secret-service.service\n")
        XCTAssert(
            try String(contentsOfFile: files[6], encoding: .utf8).contains("ExecStart=/usr/bin/kcar secret-service\n"))
        let installed = try runProcess(files[0], ["--version"], cwd: dir)
        XCTAssertEqual(installed.out, try kcar(["--version"]).out)
        // The credential helpers' names are links to kcar, which reads its role from argv[0].
        for helper in ["git-credential-kcar", "docker-credential-kcar"] {
            XCTAssertEqual(
                try FileManager.default.destinationOfSymbolicLink(atPath: root + "/usr/bin/" + helper), "kcar", helper)
        }
        let docker = try runProcess(root + "/usr/bin/docker-credential-kcar", ["version"], cwd: dir)
        XCTAssertEqual(docker.code, 0, docker.err)
        let man = try String(contentsOfFile: files[1], encoding: .utf8)
        let bash = try String(contentsOfFile: files[2], encoding: .utf8)
        let zsh = try String(contentsOfFile: files[3], encoding: .utf8)
        let fish = try String(contentsOfFile: files[4], encoding: .utf8)
        XCTAssertEqual(man, try kcar(["help", "--man"]).out)
        XCTAssertEqual(bash, try kcar(["completion", "bash"]).out)

        // The man page: every command, its options, examples, exit codes, environment and files.
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES"] {
            XCTAssertTrue(man.contains(".SH \(section)\n"), section)
        }
        for code in 0...15 { XCTAssertTrue(man.contains(".TP\n.B \(code)\n"), "exit code \(code)") }
        let commands = try commands()
        for c in commands {
            let roffSection =
                man.components(separatedBy: ".SS \"kcar \(c)\"\n").dropFirst().first?.components(separatedBy: "\n.S")[0]
                ?? ""
            XCTAssertTrue(roffSection.contains("Examples:"), "man: \(c) has no examples")
            let bashCase = bash.components(separatedBy: "\n    \(c))\n").dropFirst().first ?? ""
            let bashOpts =
                bashCase.components(separatedBy: "opts=\"").dropFirst().first?.components(separatedBy: "\"")[0]
                .split(separator: " ").map(String.init) ?? []
            let zshCase =
                zsh.components(separatedBy: "\n  \(c))\n").dropFirst().first?.components(separatedBy: "\n    ;;")[0]
                ?? ""
            XCTAssertTrue(zsh.contains("    '\(c):"), "zsh: no command \(c)")
            XCTAssertTrue(fish.contains(" -a \(c) -d "), "fish: no command \(c)")
            for o in try options(c) {
                let long = String(o.name.dropFirst(2))
                XCTAssertTrue(
                    roffSection.contains("\\fB\\-\\-" + long.replacingOccurrences(of: "-", with: "\\-") + "\\fR"),
                    "man: kcar \(c) lacks \(o.name)")
                XCTAssertTrue(bashOpts.contains(o.name), "bash: kcar \(c) lacks \(o.name)")
                XCTAssertTrue(
                    zshCase.contains(o.name + "'[") || zshCase.contains("{\(o.name),"), "zsh: kcar \(c) lacks \(o.name)"
                )
                XCTAssertTrue(
                    fish.contains("-n '__fish_seen_subcommand_from \(c)' -l \(long)"), "fish: kcar \(c) lacks \(o.name)"
                )
                if let s = o.short {
                    XCTAssertTrue(bashOpts.contains(s), "bash: kcar \(c) lacks \(s)")
                    XCTAssertTrue(fish.contains("-l \(long) -s \(s.dropFirst())"), "fish: kcar \(c) lacks \(s)")
                }
            }
        }

        // groff (man -l) renders it without a warning.
        if let groff = tool("groff") {
            let g = try runProcess(groff, ["-man", "-ww", "-z", files[1]], cwd: dir)
            XCTAssertEqual(g.code, 0)
            XCTAssertEqual(g.err, "", "groff warns about the man page")
        }
        if let manTool = tool("man") {
            let m = try runProcess(
                manTool, ["--warnings", "-l", files[1]], env: ["MANPAGER": "cat", "MANWIDTH": "100"], cwd: dir)
            XCTAssertEqual(m.code, 0)
            XCTAssertEqual(m.err, "", "man -l warns about the man page")
            XCTAssertTrue(m.out.contains("EXIT STATUS") && m.out.contains("kcar pack"))
        }

        // bash loads the completion and completes `kcar pa` to pack, options, and option values.
        if let bashTool = tool("bash") {
            let script = """
                source "$1"
                complete -p kcar
                complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _kcar; echo "${COMPREPLY[*]}"; }
                complete_words kcar pa
                complete_words kcar find --cl
                complete_words kcar find --class in
                complete_words kcar archive co
                complete_words kcar help ver
                """
            let b = try runProcess(bashTool, ["--norc", "-c", script, "bash", files[2]], cwd: dir)
            XCTAssertEqual(b.code, 0, b.err)
            XCTAssertEqual(
                b.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init),
                [
                    "complete -o filenames -F _kcar kcar", "pack passwd", "--class", "inet", "convert",
                    "verify version", ""
                ])
        }
        if let zshTool = tool("zsh") {
            let z = try runProcess(zshTool, ["-n", files[3]], cwd: dir)
            XCTAssertEqual(z.code, 0, "zsh -n: \(z.err)")
        }
        if let fishTool = tool("fish") {
            let f = try runProcess(
                fishTool,
                [
                    "--no-config", "-c", "source $argv[1]; complete -C 'kcar pa'; complete -C 'kcar extract -'",
                    files[4]
                ], cwd: dir)
            XCTAssertEqual(f.code, 0, f.err)
            let lines = f.out.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
            XCTAssertEqual(Array(lines.prefix(2)), ["pack", "passwd"], f.out)
            XCTAssertTrue(lines.contains("-C"), f.out)
        }

        let u = try runProcess(
            make, ["-C", CLITests.repo.path, "uninstall", "DESTDIR=\(root)", "PREFIX=/usr"], cwd: dir)
        XCTAssertEqual(u.code, 0, u.err)
        for f in files { XCTAssertFalse(FileManager.default.fileExists(atPath: f), f) }
        for helper in ["git-credential-kcar", "docker-credential-kcar"] {
            XCTAssertThrowsError(
                try FileManager.default.destinationOfSymbolicLink(atPath: root + "/usr/bin/" + helper), helper)
        }
    }
}
