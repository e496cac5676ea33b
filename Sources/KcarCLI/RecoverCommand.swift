import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar recover VAULT`: an interrupted commit cut off, or with `--drop-damaged` a damaged last commit dropped.
enum RecoverCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("recover"))
        let path = try vaultArguments(args, ["VAULT"])[0]
        if args.flag("drop-damaged") {
            try refuseStandardInput(path)
            let (dropped, generation) = try SecretInput.dropDamagedTail(path, args)
            warn(
                dropped == 0
                    ? "\(path): nothing to recover"
                    : "\(path): dropped the last \(dropped) bytes (an incomplete or damaged commit); generation \(generation) is the last"
                        + (args.value("group").map {
                            "; the group reads as rolled back until kcar groups --accept-rollback \($0)"
                        } ?? ""))
            return .success
        }
        let vault = try openVault(path, args, mode: .write)
        let cut = vault.incompleteBytes
        try vault.cutIncomplete()
        warn(
            cut == 0
                ? "\(path): nothing to recover"
                : "\(path): cut off \(cut) bytes of an incomplete commit; generation \(vault.generation) is the last")
        return .success
    }
}
