import KcarKeychain
import KeyedArchive
import VaultFormat

/// The `kcar` command line: dispatch, help, and the mapping of errors to exit codes.
public enum CLI {
    /// One command: its name, its help page (options included: the parser reads them from it) and its code.
    struct Command: Sendable {
        let name: String
        let page: Help.Page
        let run: @Sendable (Invocation) throws -> ExitCode
        init(_ name: String, _ page: Help.Page, _ run: @escaping @Sendable (Invocation) throws -> ExitCode) {
            self.name = name
            self.page = page
            self.run = run
        }
    }

    /// Every command, in the order help lists them; dispatch, help, the man page and the completions come from here.
    static let commands: [Command] = [
        Command("pack", Help.pack, PackCommand.run),
        Command("list", Help.list, ListCommand.run),
        Command("extract", Help.extract, ExtractCommand.run),
        Command("verify", Help.verify, VerifyCommand.run),
        Command("info", Help.info, VerifyCommand.info),
        Command("keygen", Help.keygen, KeygenCommand.run),
        Command("passwd", Help.passwd, PasswdCommand.run),
        Command("rekey", Help.rekey, RekeyCommand.run),
        Command("compact", Help.compact, CompactCommand.run),
        Command("recover", Help.recover, RecoverCommand.run),
        Command("upgrade", Help.upgrade, UpgradeCommand.run),
        Command("merge", Help.merge, MergeCommand.run),
        Command("git", Help.git, GitCommand.run),
        Command("sync", Help.sync, SyncCommand.run),
        Command("history", Help.history, HistoryCommand.history),
        Command("restore", Help.restore, HistoryCommand.restore),
        Command("archive", Help.archive, ArchiveCommand.run),
        Command("init", Help.initPage, InitCommand.run),
        Command("add", Help.add, AddCommand.run),
        Command("get", Help.get, GetCommand.run),
        Command("generate", Help.generate, GenerateCommand.run),
        Command("find", Help.find, FindCommand.run),
        Command("update", Help.update, UpdateCommand.run),
        Command("edit", Help.edit, EditCommand.run),
        Command("delete", Help.delete, DeleteCommand.run),
        Command("groups", Help.groups, GroupsCommand.run),
        Command("import", Help.importPage, ImportCommand.run),
        Command("credential", Help.credential, Credential.run),
        Command("docker-credential", Help.dockerCredential, DockerCredential.run),
        Command("secret-service", Help.secretService, SecretServiceCommand.run),
        Command("help", Help.helpPage, CLI.help),
        Command("version", Help.versionPage, CLI.version),
        Command("completion", Help.completionPage, Completion.run)
    ]

    static func command(_ name: String) -> Command? { commands.first { $0.name == name } }

    /// Runs the subcommand `argv[0]` of `name` (`archive show`, `git setup`): one of `table`, in the order
    /// their usage lists them.
    static func subcommand(
        _ name: String, _ argv: Invocation,
        _ table: [(name: String, usage: String, run: (Invocation) throws -> ExitCode)]
    ) throws -> ExitCode {
        let known = table.map(\.name).joined(separator: ", ")
        guard let sub = argv.arguments.first else {
            throw CLIError.usage(
                "expected " + table.map { "`\(name) \($0.name) \($0.usage)`" }.joined(separator: " or "))
        }
        guard let entry = table.first(where: { $0.name == sub }) else {
            throw CLIError.usage("unknown \(name) command '\(terminalSafe(String(sub.prefix(64))))' (\(known))")
        }
        return try entry.run(argv.rest)
    }

    /// The parser's specs of `command` (of its subcommand `sub`): the options its help page lists.
    static func specs(_ name: String, _ sub: String? = nil) -> [Arguments.Spec] {
        command(name)?.page.specs(sub) ?? []
    }

    static var usage: String {
        let width = (commands.map(\.name.count).max() ?? 0) + 2
        return "usage: kcar COMMAND [OPTIONS]\n\ncommands:\n"
            + commands.map { "  " + Help.pad($0.name, width) + $0.page.summary }.joined(separator: "\n")
            + "\n\n" + Help.overviewFooter
    }

    static let versionText = "kcar 0.1 (vault formats 1 and 2 read; new vaults are format 2)"

    static func help(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: specs("help"))
        let p = try args.positionals(["COMMAND"], optional: 1)
        if args.flag("man") {
            guard p.isEmpty else { throw CLIError.usage("--man prints the one page of every command; give no COMMAND") }
            Output.out.write(ManPage.render())
            return .success
        }
        guard let name = p.first else {
            Output.out.write(usage + "\n")
            return .success
        }
        guard let c = command(name) else { throw unknownCommand(name) }
        Output.out.write(Help.text(c.name, c.page) + "\n")
        return .success
    }

    static func version(_ argv: Invocation) throws -> ExitCode {
        _ = try Arguments(argv, specs: specs("version")).positionals([])
        Output.out.line(versionText)
        return .success
    }

    /// "unknown command", with the nearest command (edit distance at most 2) suggested.
    static func unknownCommand(_ name: String) -> CLIError {
        let scored = commands.map { (name: $0.name, distance: editDistance(name, $0.name)) }.filter { $0.distance <= 2 }
        let safe = terminalSafe(String(name.prefix(64)))
        if let best = scored.min(by: { $0.distance < $1.distance }) {
            return CLIError.usage(
                "unknown command '\(safe)'; did you mean `\(best.name)`? (`kcar help` lists the commands)")
        }
        return CLIError.usage("unknown command '\(safe)'; `kcar help` lists the commands")
    }

    /// Levenshtein distance over Unicode scalars; a name longer than 64 scalars is never near a command.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a.unicodeScalars)
        let y = Array(b.unicodeScalars)
        guard x.count <= 64 else { return Int.max }
        guard !x.isEmpty, !y.isEmpty else { return x.count + y.count }
        var row = Array(0...y.count)
        for i in 1...x.count {
            var next = [i] + Array(repeating: 0, count: y.count)
            for j in 1...y.count {
                next[j] = min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1))
            }
            row = next
        }
        return row[y.count]
    }

    /// The commands kcar runs when installed under a credential helper's name (a link to kcar): git runs
    /// `git-credential-NAME` for `credential.helper NAME`, docker `docker-credential-NAME` for `credsStore`.
    static let helperNames = ["git-credential-kcar": "credential", "docker-credential-kcar": "docker-credential"]

    /// Runs `kcar` with `arguments` (without the program name) and returns the exit status. Run as a
    /// credential helper's name (`program`, argv[0]), it is that helper's command.
    public static func main(_ arguments: [String], program: String = "kcar") -> Int32 {
        let base = program.split(separator: "/").last.map(String.init) ?? program
        if let command = helperNames[base] { return main([command] + arguments) }
        SecretInput.prepareProcess()
        defer {
            Output.out.flush()
            Output.err.flush()
        }
        guard let name = arguments.first else {
            Output.err.write(usage + "\n")
            return ExitCode.usage.rawValue
        }
        if name == "--help" || name == "-h" {
            Output.out.write(usage + "\n")
            return 0
        }
        if name == "--version" || name == "-V" {
            Output.out.line(versionText)
            return 0
        }
        guard let command = command(name) else {
            let e = unknownCommand(name)
            warn(e.message)
            return e.code.rawValue
        }
        let rest = Array(arguments.dropFirst())
        // `-h` is help unless the command has it as an option (pack -h is tar's --dereference); alone it is help everywhere.
        let dashH = rest == ["-h"] || (rest.contains("-h") && !command.page.options.contains { $0.short == "h" })
        if rest.contains("--help") || dashH {
            Output.out.write(Help.text(command.name, command.page) + "\n")
            return 0
        }
        let context = CommandContext()
        // A vault command given --group G advances the group's generation record when it ends (SPEC.md §K6).
        defer {
            ItemCommands.finishGroupCommand(context)
            StandardStreams.finish()
        }
        do {
            // A commit whose automatic compaction failed still succeeded (exit 0): said where it happens.
            return try Vault.reportingCompactionFailures(to: { path, e in
                warn(
                    "\(path): committed, but the automatic compaction after it failed (\(e)); deleted values stay in the file until `kcar compact` succeeds"
                )
            }) {
                try command.run(Invocation(arguments: rest, context: context))
            }.rawValue
        } catch let e as CLIError {
            warn(e.message)
            if e.code == .usage, name != "help" { Output.err.line("`kcar \(name) --help` shows the options") }
            return e.code.rawValue
        } catch let e as VaultError {
            // An error names its file (the field; standard input's temporary copy is "standard input"); one from
            // inside a file the command was reading, which names none, is preceded by that file.
            if let p = e.path {
                warn(e.described(as: StandardStreams.shown(p) == "-" ? "standard input" : p))
            } else {
                warn(context.naming(e.description))
            }
            // A command that can replace what exists says how.
            if e.code == .exists, CLI.specs(name).contains(where: { $0.name == "force" }) {
                Output.err.line("`kcar \(name) --force` replaces it")
            }
            return ExitCode.of(e.code).rawValue
        } catch let e as KeychainError {
            // An unsafe file is said in kcar's words (Apple's status is for Swift callers); the message names the
            // file, the rule it breaks and the command that fixes it.
            warn(e.reason == .unsafeFile ? e.message : e.description)
            if e.status == .duplicateItem, name == "add" {
                Output.err.line(
                    "`kcar update` with the same selectors changes its value and attributes (`kcar delete` removes it)")
            }
            return ExitCode.of(e).rawValue
        } catch let e as ArchiveError {
            warn(context.naming(e.description))
            return ExitCode.damaged.rawValue
        } catch {
            warn("\(error)")
            return ExitCode.failure.rawValue
        }
    }
}

/// The positionals of a vault command, VAULT first: the vault of access group `--group G` in the keychain,
/// or VAULT from the command line.
func vaultArguments(_ args: Arguments, _ names: [String], optional: Int = 0) throws -> [String] {
    guard let group = args.value("group") else { return try args.positionals(names, optional: optional) }
    guard args.positionals.count < names.count else {
        throw CLIError.usage(
            "--group \(group) names the vault (the group's vault in the keychain): give VAULT \(args.positionals[0]) or --group, not both"
        )
    }
    let rest = try args.positionals(Array(names.dropFirst()), optional: optional)
    return [try ItemCommands.groupVaultPath(args, group)] + rest
}

/// Opens a vault for a command, mapping errors to the CLI's and warning about an incomplete commit. A
/// keychain's vault (`--group`) is also checked against rollback (SPEC.md §K6).
func openVault(_ path: String, _ args: Arguments, mode: OpenMode = .read, itemsOnDemand: Bool = false) throws -> Vault {
    if mode == .write { try refuseStandardInput(path) }
    let (vault, _) = try SecretInput.unlockVault(path, args, mode: mode, itemsOnDemand: itemsOnDemand)
    try ItemCommands.checkRollback(vault, args)
    if vault.incompleteBytes > 0, mode == .read {
        warn(
            "\(path): \(vault.incompleteBytes) bytes of an incomplete commit follow generation \(vault.generation); "
                + "working on the last complete commit (`kcar recover` cuts them off)")
    }
    return vault
}

/// A command that changes a vault file in place has no use for `-`.
func refuseStandardInput(_ path: String) throws {
    guard path == "-" else { return }
    throw CLIError.usage(
        "VAULT - (standard input) is for list, extract, verify and info; this command changes a vault file in place")
}
