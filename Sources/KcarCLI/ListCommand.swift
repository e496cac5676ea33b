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
        // Rows are made a run of items at a time and written here in order: for a large version 2 vault on every
        // core, a leaf of its items tree each (Vault.mapItemRuns); otherwise while another core reads and decodes
        // the items (pipelined). A vault damaged part way prints every row before the damage, then the error
        // (exit 4), as `tar tf` does.
        func writeRuns(separator: String = "", _ rows: @escaping @Sendable ([Item]) throws -> [UInt8]) throws {
            var text: [UInt8] = []
            text.reserveCapacity(1 << 17)
            var first = true
            func hand(_ run: [UInt8]) throws {
                guard !run.isEmpty else { return }
                if !first { text.append(contentsOf: separator.utf8) }
                first = false
                // A large run (an item of megabytes of attributes) is written as it is, not copied first.
                guard run.count < 1 << 16 else {
                    Output.out.write(bytes: &text)
                    return try run.withUnsafeBytes { try Output.out.writeBytes($0) }
                }
                text.append(contentsOf: run)
                if text.count >= 1 << 16 { Output.out.write(bytes: &text) }
            }
            defer { Output.out.write(bytes: &text) }
            // The items named, a version 1 vault's or a small tree's go an item at a time: a batch of a version 1
            // vault's items, whose attributes may be megabytes each, would be held whole as rows (a leaf, the
            // run of a walk by leaves, has bounded plaintext).
            if let selected {
                for item in selected { try hand(try rows([item])) }
            } else if try !vault.mapItemRuns(rows, hand) {
                try pipelined(produce: { emit in try vault.forEachItem(emit) }) { items in
                    for item in items { try hand(try rows([item])) }
                }
            }
        }
        if args.flag("json") {
            // JSON.printArray's output, written as bytes: no String per item or per value.
            Output.out.write("[")
            try writeRuns(separator: ",\n ") { items in
                var json = JSONBytes(capacity: items.count * 256)
                for (i, item) in items.enumerated() {
                    if i > 0 { json.raw(",\n ") }
                    ExtractCommand.write(item, into: &json)
                }
                return json.bytes
            }
            Output.out.write("]\n")
        } else {
            // One line per item (a vault may hold millions): the widths are fixed first, SIZE's from the largest
            // size (a first pass over the items), MODIFIED's that of a date. The name is the last column, never
            // cut: it is what extract takes.
            // `--long` adds a MODE column (`-rw-r--r--`, as tar -tv prints it). A folder is named with a trailing
            // `/`, a link `name -> target`, as tar lists them.
            let long = args.flag("long")
            let columns: [Table.Column] =
                (long ? [.init(title: "MODE")] : []) + [
                    .init(title: "SIZE", rightAligned: true),
                    .init(title: "MODIFIED (UTC)"), .init(title: "NAME")
                ]
            // The first pass reads only each item's size (not the item). It checks only what it reads: a vault
            // whose damage it does not see prints the rows read before the damage, then the error.
            let largest = try selected.map { $0.map(\.size).max() ?? 0 } ?? vault.largestItemSize()
            let sizeWidth = max(4, decimalDigits(largest))
            let widths = (long ? [10] : []) + [sizeWidth, 20, 0]
            Output.out.line(Table.line(columns.map(\.title), widths, columns))
            try writeRuns { items in
                var text: [UInt8] = []
                text.reserveCapacity(items.count * 64)
                for item in items { appendRow(item, long: long, sizeWidth: sizeWidth, to: &text) }
                return text
            }
        }
        return .success
    }

    /// A row of the table, as Table.line would write it. A name's %XX encoding covers C0 controls only: C1 and
    /// bidirectional controls are escaped here.
    static func appendRow(_ item: Item, long: Bool, sizeWidth: Int, to text: inout [UInt8]) {
        func pad(_ n: Int) { if n > 0 { text.append(contentsOf: repeatElement(0x20, count: n)) } }
        let kind = PackedKind.lenient(item)
        if long {
            let mode = kind.modeString
            text.append(contentsOf: mode.utf8)
            pad(10 - mode.unicodeScalars.count + 2)
        }
        pad(sizeWidth - decimalDigits(item.size))
        appendDecimal(item.size, to: &text)
        pad(2)
        if let ns = item.modified {
            let (secs, frac) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
            if !appendISO8601(seconds: frac < 0 ? secs - 1 : secs, nanoseconds: 0, to: &text) {
                let date = tableDate(nanoseconds: ns)
                text.append(contentsOf: date.utf8)
                pad(20 - date.unicodeScalars.count)
            }
        } else {
            text.append(0x2D)
            pad(19)
        }
        pad(2)
        // terminalSafe escapes character by character: the two parts of a plain name are escaped alone.
        if let s = item.service, let a = item.account, ItemPath.plain(s, slash: true),
            ItemPath.plain(a, slash: false), !ItemPath.isFolder(item)
        {
            text.append(contentsOf: terminalSafe(s).utf8)
            text.append(0x2F)
            text.append(contentsOf: terminalSafe(a).utf8)
        } else {
            text.append(contentsOf: terminalSafe(ItemPath.name(item)).utf8)
        }
        if case .link(let target) = kind.kind { text.append(contentsOf: (" -> " + terminalSafe(target)).utf8) }
        if item.itemClass != .genericPassword {
            text.append(contentsOf: "  [\(terminalSafe(item.itemClass.rawValue))]".utf8)
        }
        text.append(0x0A)
    }
}
