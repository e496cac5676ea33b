import KcarKeychain
import VaultFormat

/// `kcar groups`: the access groups of the keychain and what each holds.
enum GroupsCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("groups"))
        _ = try args.positionals([])
        let s = try ItemCommands.store(args)
        // Names alone come from the folder: no vault is opened, no key read (shell completion runs this).
        if args.flag("names") {
            for g in try s.directory.groups() { Output.out.line(terminalSafe(g)) }
            return .success
        }
        if let g = args.value("accept-rollback") {
            try s.acceptRollback(group: g)
            warn("group \(g): its vault is accepted as it is now")
        }
        let (counts, skipped) = try s.groupSummary()
        if args.flag("json") {
            Output.out.line(
                JSON.array(
                    counts.map {
                        JSON.object([
                            ("group", JSON.string($0.group)), ("items", String($0.count)),
                            ("vault", JSON.string(s.directory.vaultPath($0.group)))
                        ])
                    }))
        } else {
            var table = Table([.init(title: "ITEMS", rightAligned: true), .init(title: "GROUP")])
            for c in counts { table.add([String(c.count), c.group]) }
            table.print()
        }
        return ItemCommands.reportSkipped(skipped)
    }
}
