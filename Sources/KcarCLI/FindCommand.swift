import KcarKeychain
import VaultFormat

/// `kcar find`: the items that match a query, as a table or JSON (their attributes, never their values).
enum FindCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("find"))
        _ = try args.positionals([])
        let s = try ItemCommands.store(args)
        let r = try ItemCommands.searchClasses(s, args, limit: try args.int("limit", in: 1...Int(Int32.max)))
        let found = r.items
        ItemCommands.printItems(found, json: args.flag("json"))
        let skipped = ItemCommands.reportSkipped(r.skipped)
        if skipped == .success, found.isEmpty, !args.flag("json") { warn(ItemCommands.noMatch(s, args).description) }
        return skipped != .success ? skipped : found.isEmpty ? .notFound : .success
    }
}
