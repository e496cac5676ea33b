import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar passwd VAULT`: a vault's key slots changed (a passphrase, slots added or removed; `--revoke` with a new vault key).
enum PasswdCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("passwd"))
        let path = try vaultArguments(args, ["VAULT"])[0]
        try refuseStandardInput(path)
        let given = try SecretInput.givenSecrets(args)
        let (vault, secret) = try SecretInput.unlockVault(path, args, mode: .write, given: given)
        try ItemCommands.checkRollback(vault, args)
        var remove = Set<Int>()
        for r in args.all("remove-slot") {
            guard let n = Int(r), vault.header.slots.indices.contains(n) else {
                throw CLIError.usage("--remove-slot takes a slot number from 0 to \(vault.header.slots.count - 1)")
            }
            if args.value("group") != nil, case .keyFile = vault.header.slots[n] {
                throw CLIError.usage(
                    "slot \(n) is the key-file slot the keychain opens group \(vault.header.group) with; it stays")
            }
            remove.insert(n)
        }
        let explicit =
            !remove.isEmpty || args.flag("add-passphrase") || !args.all("add-key-file").isEmpty
            || !args.all("add-recipient").isEmpty
            || !args.all("add-recipients-file").isEmpty
        if !explicit {
            // Change the passphrase that opened the vault.
            guard case .passphrase = vault.header.slots[vault.unlockedSlot] else {
                throw CLIError.usage(
                    "the vault was opened with a key, not a passphrase: say what to change (--add-passphrase, --remove-slot N, ...)"
                )
            }
            remove.insert(vault.unlockedSlot)
        }
        let add = try Keys.addedSlots(args, passphraseWanted: !explicit)
        guard remove.count < vault.header.slots.count || !add.isEmpty else {
            throw CLIError.usage("refusing to remove every key slot")
        }
        if args.flag("revoke") { return try Keys.revoke(vault, path, secret, given, args, remove: remove, add: add) }
        let removedNames = remove.sorted().map { "\($0) (\(vault.header.slots[$0].kindName))" }
        try vault.changeSlots(remove: remove.sorted(), add: add)
        warn(
            "\(path): \(count(vault.header.slots.count, "key slot")) (\(vault.header.slots.map(\.kindName).joined(separator: ", ")))"
        )
        if !removedNames.isEmpty {
            warn(
                "\(path): removed slot \(removedNames.joined(separator: ", ")) from this file only: the vault key is unchanged, so a "
                    + "copy of the old header or file (a backup, or one kept by whoever held the removed secret) still opens "
                    + "the vault with it; `kcar passwd --revoke` makes a new vault key so that no old copy opens the current file"
            )
        }
        return .success
    }
}
