import KcarKeychain
import VaultFormat

/// `kcar get`: the value of one item (SecItemCopyMatching with one match and its data).
enum GetCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try ItemCommands.named(try Arguments(argv, specs: CLI.specs("get")))
        let s = try ItemCommands.store(args)
        let r = try ItemCommands.searchClasses(s, args, limit: 2)
        let found = r.items
        guard let item = found.first else {
            guard r.skipped.isEmpty else { return ItemCommands.reportSkipped(r.skipped) }
            throw ItemCommands.noMatch(s, args)
        }
        guard found.count == 1 else {
            throw CLIError.usage("more than one item matches; narrow the selection (`kcar find` lists them)")
        }
        var value = try s.value(of: item)
        defer { wipe(&value) }
        let name = describe(item.itemClass, item.attributes)
        if args.flag("clip") {
            let seconds = try args.int("clip-seconds", in: 0...86_400) ?? Clipboard.defaultSeconds
            try Clipboard.copy(value, clearAfter: seconds)
            warn("copied \(name) to the clipboard" + (seconds > 0 ? "; it is cleared in \(seconds) s" : ""))
        } else {
            guard args.value("clip-seconds") == nil else { throw CLIError.usage("--clip-seconds goes with --clip") }
            try StandardStreams.writeValue(value, name: name, force: args.flag("force"))
        }
        return ItemCommands.reportSkipped(r.skipped)
    }
}
