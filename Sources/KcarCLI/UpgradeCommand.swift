import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar upgrade VAULT`: a version 1 vault rewritten as version 2 (SPEC.md Part 4, V1), atomically.
enum UpgradeCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("upgrade"))
        if let group = args.value("group") {
            // A keychain group is upgraded by the keychain, with its schema (SPEC.md Part 3 on Part 4's V4), as
            // its first change would; the group's files are checked first.
            _ = try vaultArguments(args, ["VAULT"])
            let store = try ItemCommands.store(args)
            let current = try Vault.inspect(path: store.directory.vaultPath(group)).header.isCurrentFormat
            try store.upgradeGroup(group)
            if !args.flag("quiet") {
                Output.out.line(
                    terminalSafe(
                        current
                            ? "group \(group): already vault format version \(Header.currentFormatVersion); nothing to do"
                            : "group \(group): upgraded to vault format version \(Header.currentFormatVersion)"))
            }
            return .success
        }
        let path = try args.positionals(["VAULT"])[0]
        try refuseStandardInput(path)
        try SecretInput.requireVaultFile(path)
        args.context.reading(path)
        if try Vault.inspect(path: path).header.isCurrentFormat {
            Output.out.line(
                terminalSafe("\(path): already vault format version \(Header.currentFormatVersion); nothing to do"))
            return .success
        }
        let (vault, _) = try SecretInput.unlockVault(path, args, mode: .write)
        let items = vault.count
        try vault.upgrade(schema: Schema.packed, writerID: WriterIdentity.current())  // as pack writes them
        if !args.flag("quiet") {
            Output.out.line(
                terminalSafe(
                    "\(path): upgraded to vault format version \(Header.currentFormatVersion) (\(count(items, "item"))); "
                        + "a kcar that reads only version 1 can no longer open it"))
        }
        return .success
    }
}
