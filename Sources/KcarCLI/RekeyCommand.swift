import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar rekey VAULT`: the vault re-sealed under a new vault key.
enum RekeyCommand {
    /// A new vault key, wrapped for every slot kcar can wrap it for: each slot
    /// whose secret is given (`--key-file`, `--identity`, a passphrase, the group's key, `--add-key-file`)
    /// is kept, re-wrapped. A slot whose secret is not given is never dropped silently: rekey refuses and
    /// names it, unless --drop-slots says to drop it (named again on standard error).
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("rekey"))
        let path = try vaultArguments(args, ["VAULT"])[0]
        try refuseStandardInput(path)
        let given = try SecretInput.givenSecrets(args)
        let (vault, secret) = try SecretInput.unlockVault(path, args, mode: .write, given: given)
        // Checked again on the vault opened: one swapped in after the group's checks must not be re-sealed.
        try ItemCommands.checkRollback(vault, args)
        let plan = try Keys.carry(
            vault, opened: secret, given: given, args, remove: [],
            add: try Keys.addedSlots(args, passphraseWanted: false))
        if !plan.lost.isEmpty {
            let names = Keys.slotNames(vault, plan.lost)
            guard args.flag("drop-slots") else {
                throw CLIError.usage(
                    "rekey would drop \(names): their secrets are not given, so the new vault key cannot be "
                        + "wrapped for them. Give each secret (--identity, --key-file, --passphrase-file; one "
                        + "passphrase per run), add replacements with --add-*, or pass --drop-slots to drop them")
            }
            warn("\(path): dropping \(names) (--drop-slots): their secrets no longer open the vault")
        }
        try vault.rekey(slots: plan.slots)
        warn(
            "\(path): new vault key; \(count(vault.count, "item")) re-sealed; \(count(vault.header.slots.count, "key slot")) "
                + "(\(vault.header.slots.map(\.kindName).joined(separator: ", ")))")
        return .success
    }
}
