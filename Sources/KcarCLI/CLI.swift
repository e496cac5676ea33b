import KcarKeychain
import KeyedArchive
import VaultFormat

/// The `kcar` command line: dispatch, help, and the mapping of errors to exit codes.
public enum CLI {
    static let commands: [(name: String, summary: String, run: @Sendable ([String]) throws -> ExitCode)] = [
        ("pack", "pack VAULT DIR: make a vault from a folder (service folders, item files)", Pack.run),
        ("list", "list VAULT: print the items (--json)", Extract.list),
        ("extract", "extract VAULT [-C DIR] [ITEM...]: write items back as files (--stdout for one)", Extract.run),
        ("verify", "verify VAULT: check header, slots, index and every record (--json)", Verify.run),
        ("info", "info VAULT: version, group, slots, KDF, items, generation, dead space (--json)", Verify.info),
        ("keygen", "keygen FILE [--x25519]: make a 32-byte key file, or an X25519 key pair", Keys.keygen),
        ("passwd", "passwd VAULT: change the passphrase; add or remove key slots", Keys.passwd),
        ("rekey", "rekey VAULT: new vault key, every record re-sealed", Keys.rekey),
        ("compact", "compact VAULT: rewrite without dead space (deleted values leave the file)", Keys.compact),
        ("recover", "recover VAULT: cut off an incomplete last commit", Keys.recover),
        ("archive", "archive show FILE [--json] | archive convert IN OUT: keyed archives", ArchiveCommand.run),
        ("init", "init [--keychain DIR] [--shared-group TEAM] [--default-group G]: create the keychain directory (mode 0700)", ItemCommands.initCommand),
        ("add", "add --service S --account A ...: add an item; its value from stdin or --value-file", ItemCommands.add),
        ("get", "get --service S --account A ...: print one item's value", ItemCommands.get),
        ("find", "find [SELECTORS] [--json] [--limit N]: list matching items (attributes only)", ItemCommands.find),
        ("update", "update SELECTORS --set-label L --set-attr N=V --value-file F: change every match", ItemCommands.update),
        ("delete", "delete SELECTORS: delete every matching item", ItemCommands.delete),
        ("groups", "groups [--json]: the access groups and their item counts", ItemCommands.groups),
        ("import", "import --nskeyed FILE SELECTORS | import --items FILE.json: add items to a group", ItemCommands.importCommand),
        ("credential", "credential get|store|erase: git's credential helper (git-credential-kcar)", Credential.run),
        ("docker-credential", "docker-credential store|get|erase|list: docker's credential helper", DockerCredential.run),
    ]

    static let usage = """
        usage: kcar COMMAND [OPTIONS]

        commands:
        \(commands.map { "  " + $0.summary }.joined(separator: "\n"))

        secrets (never on the command line):
          --key-file FILE         a 32-byte key file (kcar keygen) or X25519 secret key
          --passphrase-file FILE  a passphrase (one trailing newline is ignored)
          --passphrase-fd N       a passphrase read from file descriptor N
          KCAR_PASSPHRASE         a passphrase in the environment (removed once read)
          otherwise a no-echo prompt on the terminal

        keychain (add, get, find, update, delete, groups, import; and the vault commands given
        --group G instead of VAULT):
          --keychain DIR          the keychain directory (default $KCAR_KEYCHAIN, $XDG_DATA_HOME/kcar,
                                  ~/.local/share/kcar); each access group is DIR/G.kcv with its key DIR/G.key
          --group G               the access group; --groups A,B (or KCAR_ACCESS_GROUPS) this process's list
          --class genp|inet|cert|keys|idnt --service S --account A --label L --server H --port N
          --protocol P --path P --attr NAME[:TYPE]=VALUE (TYPE string, int, bool, date, data, hex;
                                  NAME a user attribute, or Apple's as kSecAttrComment=...)

        `kcar COMMAND --help` shows a command's options. Exit codes: 0 ok, 2 usage, 3 wrong passphrase or key,
        4 damaged or invalid vault, 5 incomplete last commit, 6 item not found, 7 refusing to overwrite,
        8 I/O error, 9 pack skipped some inputs, 10 no secret and no terminal, 11 duplicate item,
        12 missing entitlement (access group), 13 lock timeout, 14 vault rolled back to an older copy,
        15 unsafe file (owner, mode, symlink or file type kcar refuses).
        """

    /// The commands kcar runs when installed under a credential helper's name (a link to kcar): git runs
    /// `git-credential-NAME` for `credential.helper NAME`, docker `docker-credential-NAME` for `credsStore`.
    static let helperNames = ["git-credential-kcar": "credential", "docker-credential-kcar": "docker-credential"]

    /// Runs `kcar` with `arguments` (without the program name) and returns the exit status. Run as a
    /// credential helper's name (`program`, argv[0]), it is that helper's command.
    public static func main(_ arguments: [String], program: String = "kcar") -> Int32 {
        let base = program.split(separator: "/").last.map(String.init) ?? program
        if let command = helperNames[base] { return main([command] + arguments) }
        Secrets.prepareProcess()
        defer {
            Output.out.flush()
            Output.err.flush()
        }
        guard let name = arguments.first else {
            Output.err.write(usage + "\n")
            return ExitCode.usage.rawValue
        }
        if name == "--help" || name == "-h" || name == "help" {
            Output.out.write(usage + "\n")
            return 0
        }
        if name == "--version" {
            Output.out.line("kcar 0.1 (vault format 1)")
            return 0
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            warn("unknown command '\(name)'; `kcar --help` lists them")
            return ExitCode.usage.rawValue
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            Output.out.write(Help.text(for: name) + "\n")
            return 0
        }
        // A vault command given --group G advances the group's generation record when it ends (SPEC.md §K6).
        defer { ItemCommands.finishGroupCommand() }
        // A commit whose automatic compaction failed still succeeded (exit 0): said where it happens.
        Vault.reportCompactionFailures { path, e in
            warn("\(path): committed, but the automatic compaction after it failed (\(e)); deleted values stay in the file until `kcar compact` succeeds")
        }
        do {
            return try command.run(rest).rawValue
        } catch let e as CLIError {
            warn(e.message)
            if e.code == .usage { Output.err.line("`kcar \(name) --help` shows the options") }
            return e.code.rawValue
        } catch let e as VaultError {
            warn(e.description)
            return ExitCode.of(e.code).rawValue
        } catch let e as KeychainError {
            warn(e.description)
            return ExitCode.of(e).rawValue
        } catch let e as ArchiveError {
            warn(e.description)
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
    let rest = try args.positionals(Array(names.dropFirst()), optional: optional)
    return [try ItemCommands.groupVaultPath(args, group)] + rest
}

/// Opens a vault for a command, mapping errors to the CLI's and warning about an incomplete commit. A
/// keychain's vault (`--group`) is also checked against rollback (SPEC.md §K6).
func openVault(_ path: String, _ args: Arguments, mode: OpenMode = .read) throws -> Vault {
    let secret = try Secrets.unlock(args)
    let vault = try Vault.open(path: path, secret: secret, mode: mode)
    try ItemCommands.checkRollback(vault, args)
    if vault.incompleteBytes > 0, mode == .read {
        warn("\(path): \(vault.incompleteBytes) bytes of an incomplete commit follow generation \(vault.generation); " +
             "working on the last complete commit (`kcar recover` cuts them off)")
    }
    return vault
}
