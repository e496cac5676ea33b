import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar compact VAULT`: the vault rewritten without dead bytes, with the retention rule given (SPEC.md Part 4, V8).
enum CompactCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("compact"))
        let path = try vaultArguments(args, ["VAULT"])[0]
        let vault = try openVault(path, args, mode: .write)
        let before = vault.bodyLength + vault.incompleteBytes
        let retention = try retention(args, vault)
        let rewind = args.flag("rewind-clock")
        try vault.compact(retention: retention, droppingHistoryOf: [], rewindingClock: rewind)
        warn(
            "\(path): body \(before) -> \(vault.bodyLength) bytes" + (retention.map { "; " + describe($0) } ?? "")
                + (rewind ? "; versions ahead of this machine's clock renumbered just above it" : ""))
        return .success
    }

    /// The retention rule `--history`, `--history-days` and `--tombstone-days` give (SPEC.md Part 4, V8), the
    /// vault's own for those not given; nil if none is. A version 1 vault keeps neither history nor tombstones.
    static func retention(_ args: Arguments, _ vault: Vault) throws -> Retention? {
        let keep = try args.int("history", in: 0...Retention.keepMax)
        let days = try args.int("history-days", in: 0...1_048_576)
        let tombstones = try args.int("tombstone-days", in: 0...1_048_576)
        guard keep != nil || days != nil || tombstones != nil else { return nil }
        guard var r = vault.retention else {
            throw CLIError.usage(
                "\(vault.path) is vault format version 1, which keeps no history or tombstones (kcar upgrade makes it version 2)"
            )
        }
        r.keep = keep ?? r.keep
        r.days = days ?? r.days
        r.tombstoneDays = tombstones ?? r.tombstoneDays
        return r
    }

    /// A retention rule in words.
    static func describe(_ r: Retention) -> String {
        (r.keep == 0
            ? "history: none kept"
            : "history: the \(count(r.keep, "latest earlier version")) of each item, of the last \(count(r.days, "day"))")
            + "; deletions remembered \(count(r.tombstoneDays, "day"))"
    }
}
