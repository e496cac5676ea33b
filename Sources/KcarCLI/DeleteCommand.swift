import KcarKeychain
import VaultFormat

/// `kcar delete`: the items that match (SecItemDelete).
enum DeleteCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        var args = try Arguments(argv, specs: CLI.specs("delete"))
        // One word that is no file: SERVICE/ACCOUNT in the keychain (`kcar delete api/bob`); a vault alone is
        // still told that it needs ITEM.
        if args.positionals.count == 1, !Keys.exists(args.positionals[0]) {
            let word = args.positionals[0]
            args = try ItemCommands.named(args).droppingPositionals()
            // A service alone would delete every item of it: that has to be said with --service.
            guard args.value("account") != nil else {
                throw CLIError.usage(
                    "delete \(terminalSafe(word)): name one item as SERVICE/ACCOUNT"
                        + " (--service S deletes every item of service S)")
            }
        }
        if let code = try VaultEdit.route(
            args, "delete", vaultOptions: Help.deleteFromVaultOptions, run: VaultEdit.delete)
        {
            return code
        }
        let q = try ItemCommands.query(args)
        guard q.attributes.count > 0 || args.flag("all") else {
            throw CLIError.usage("no selection: this would delete every \(q.itemClass) item; add --all to mean it")
        }
        if args.flag("dry-run") { return try ItemCommands.dryRun(args, q, "delete") }
        let s = try ItemCommands.store(args)
        // --purge: the items' kept versions are dropped by a compaction of each group they were in.
        let found = args.flag("purge") ? Dictionary(grouping: try s.find(q), by: \.group) : [:]
        let n = try s.delete(q)
        for (group, items) in found.sorted(by: { $0.key < $1.key }) {
            try s.withVault(group: group, write: true) {
                try $0.compact(retention: nil, droppingHistoryOf: Set(items.map(\.id)))
            }
            try s.finishVaultCommand(group: group)
        }
        warn(
            "deleted \(count(n, "item"))"
                + (args.flag("purge") ? "; their values, and their kept versions, have left the files" : ""))
        return .success
    }
}
