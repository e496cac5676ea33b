import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar list VAULT [ITEM...]`: the items of a vault, by name, as a table or JSON.
enum ListCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("list"))
        var positionals = args.positionals
        if let group = args.value("group") {
            // `list VAULT --group G` gives the vault twice: a first word that is a file or ends in .kcv is taken as a
            // VAULT, not an ITEM (names of items are service/account; a name ending in .kcv can be given as %id/).
            if let first = positionals.first, first.hasSuffix(".kcv") || access(first, F_OK) == 0 {
                throw CLIError.usage(
                    "--group \(group) names the vault (the group's vault in the keychain): give VAULT \(first) or --group, not both"
                )
            }
            positionals.insert(try ItemCommands.groupVaultPath(args, group), at: 0)
        }
        guard let path = try positionals.first.map(StandardStreams.vaultInput) else {
            throw CLIError.usage("expected VAULT [ITEM...]")
        }
        // Streamed: a version 2 vault's items are read from its trees one page at a time, in key
        // order, never all held (a version 1 vault's index is in memory anyway). ITEM arguments select as
        // extract's do (tar tf ARCHIVE NAME...): only the selected items are held.
        let vault = try openVault(path, args, itemsOnDemand: true)
        let selected = positionals.count > 1 ? try ExtractCommand.select(vault, Array(positionals.dropFirst())) : nil
        func forEachItem(inOrder: Bool = true, _ body: (Item) throws -> Bool) throws {
            guard let selected else { return try vault.forEachItem(inOrder: inOrder, body) }
            for item in selected where try !body(item) { return }
        }
        if args.flag("json") {
            try JSON.printArray { element in
                try forEachItem { item in
                    element(ExtractCommand.json(item))
                    return true
                }
            }
        } else {
            // One line per item (a vault may hold millions): the widths are fixed first, SIZE's from the largest
            // size (a first pass over the items), MODIFIED's that of a date. The name is the last column, never
            // cut: it is what extract takes. A name's %XX encoding covers C0 controls only: C1 and
            // bidirectional controls are escaped here.
            // `--long` adds a MODE column (`-rw-r--r--`, as tar -tv prints it). A folder is named with a trailing
            // `/`, a link `name -> target`, as tar lists them.
            let long = args.flag("long")
            let columns: [Table.Column] =
                (long ? [.init(title: "MODE")] : []) + [
                    .init(title: "SIZE", rightAligned: true),
                    .init(title: "MODIFIED (UTC)"), .init(title: "NAME")
                ]
            var largest: UInt64 = 0
            try forEachItem(inOrder: false) { item in
                largest = max(largest, item.size)
                return true
            }
            let widths = (long ? [10] : []) + [max(4, String(largest).count), 20, 0]
            Output.out.line(Table.line(columns.map(\.title), widths, columns))
            try forEachItem { item in
                let kind = PackedKind.lenient(item)
                let cls = item.itemClass == .genericPassword ? "" : "  [\(terminalSafe(item.itemClass.rawValue))]"
                var name = terminalSafe(ItemPath.name(item))
                if case .link(let target) = kind.kind { name += " -> " + terminalSafe(target) }
                Output.out.line(
                    Table.line(
                        (long ? [kind.modeString] : []) + [
                            String(item.size), item.modified.map { tableDate(nanoseconds: $0) } ?? "-",
                            name + cls
                        ], widths, columns))
                return true
            }
        }
        return .success
    }
}
