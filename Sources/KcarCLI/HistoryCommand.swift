import KcarKeychain
import VaultFormat

/// `kcar history VAULT ITEM` and `kcar restore VAULT ITEM --version N`: an item's kept versions (SPEC.md
/// Part 4, V8: from updates, deletions and lost merges) and bringing one back.
enum HistoryCommand {
    /// What each kept version's `why` (V3.4) says happened to it.
    static let reasons: [UInt8: String] = [1: "updated", 2: "merged", 3: "deleted"]

    static func history(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("history"))
        let p = try itemVault(args)
        if args.flag("clear") { return try clear(p[0], p[1], args) }
        let vault = try open(p[0], args, mode: .read)
        let (item, state, kept) = try resolve(vault, p[1])
        // This user's versions are marked in the table: a writer is 8 bytes in the file, kept once per user
        // (WriterIdentity); JSON gives the id alone.
        let me = WriterIdentity.existing()
        func marked(_ v: Version) -> (String, String) {
            let (time, writer) = split(v)
            return (time, v.writer == me ? writer + " (you)" : writer)
        }
        if args.flag("json") {
            // The rows of the table, as JSON: the current version (if the item has an entry), then the kept ones.
            func row(_ version: String, _ v: Version, _ why: String, _ size: UInt64?) -> String {
                let (time, writer) = split(v)
                return JSON.object([
                    ("version", JSON.string(version)), ("time", JSON.string(time)), ("writer", JSON.string(writer)),
                    ("why", JSON.string(why)), ("size", size.map { String($0) } ?? "null")
                ])
            }
            var rows =
                state.map { [row("current", $0.version, $0.item == nil ? "deleted" : "live", $0.item?.size)] } ?? []
            for (n, k) in kept.reversed().enumerated() {
                rows.append(row(String(n + 1), k.version, reasons[k.why] ?? "?", k.item.size))
            }
            Output.out.line(
                JSON.object([
                    ("name", JSON.string(ItemPath.name(item))), ("id", JSON.string("\(item.id)")),
                    ("class", JSON.string(item.itemClass.rawValue)), ("versions", JSON.array(rows))
                ]))
            return .success
        }
        Output.out.line(terminalSafe("\(ItemPath.name(item)) (item \(item.id), class \(item.itemClass.rawValue))"))
        var table = Table([
            .init(title: "VERSION"), .init(title: "TIME (UTC)"), .init(title: "WRITER"), .init(title: "WHY"),
            .init(title: "SIZE", rightAligned: true)
        ])
        if let state {
            let (time, writer) = marked(state.version)
            table.add([
                "current", time, writer, state.item == nil ? "deleted" : "live",
                state.item.map { String($0.size) } ?? "-"
            ])
        }
        for (n, k) in kept.reversed().enumerated() {
            let (time, writer) = marked(k.version)
            table.add([String(n + 1), time, writer, reasons[k.why] ?? "?", String(k.item.size)])
        }
        table.lines().forEach { Output.out.line($0) }
        if kept.isEmpty {
            Output.out.line("no kept versions (the vault's retention keeps them from updates, deletions and merges)")
        }
        return .success
    }

    /// `kcar history VAULT ITEM --clear`: the item's kept versions dropped by a compaction, their values out of the file.
    static func clear(_ path: String, _ name: String, _ args: Arguments) throws -> ExitCode {
        try refuseStandardInput(path)
        let vault = try open(path, args, mode: .write)
        let (item, _, kept) = try resolve(vault, name)
        try vault.dropHistory(of: [item.id])
        if !args.flag("quiet") {
            Output.out.line(
                terminalSafe(
                    "\(ItemPath.name(item)): \(count(kept.count, "kept version")) dropped; their values have left the file"
                ))
        }
        return .success
    }

    static func restore(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("restore"))
        let p = try itemVault(args)
        guard let n = try args.int("version", in: 1...1000) else {
            throw CLIError.usage("--version N names the kept version (kcar history numbers them)")
        }
        try refuseStandardInput(p[0])
        let vault = try open(p[0], args, mode: .write)
        let (_, state, kept) = try resolve(vault, p[1])
        guard n <= kept.count else {
            throw CLIError(
                .notFound, "\(p[1]) has \(count(kept.count, "kept version")); no version \(n) (kcar history lists them)"
            )
        }
        let k = kept[kept.count - n]
        let value = try vault.read(k.item)
        try vault.restore(k.item, value: value, over: state)
        if !args.flag("quiet") {
            Output.out.line(
                terminalSafe(
                    "\(ItemPath.name(k.item)): version \(n) (\(GitCommand.describe(k.version))) restored as a new version"
                ))
        }
        return .success
    }

    /// A version's time and writer, as two columns.
    static func split(_ v: Version) -> (String, String) {
        let parts = GitCommand.describe(v).split(separator: "/").map(String.init)
        return (parts[0], parts.count > 1 ? parts[1] : "")
    }

    /// VAULT and ITEM: as given, or the group's vault with `--group G ITEM`, or, for ITEM alone, the vault of
    /// the one access group this process may use that holds an item of that name, live or kept (as `get`
    /// searches every group): `kcar history api/bob`.
    static func itemVault(_ args: Arguments) throws -> [String] {
        guard args.value("group") == nil, args.positionals.count == 1 else {
            return try vaultArguments(args, ["VAULT", "ITEM"])
        }
        let name = args.positionals[0]
        let s = try ItemCommands.store(args)
        var holders: [(group: String, path: String)] = []
        for group in try s.directory.groups() where (try? s.entitle(group)) != nil {
            let path = try ItemCommands.groupVaultPath(args, group)
            guard (try? resolve(try open(path, args, mode: .read), name)) != nil else { continue }
            holders.append((group, path))
        }
        guard let first = holders.first else {
            throw CLIError(.notFound, "no item \(name), live or kept, in the access groups of \(s.directory.path)")
        }
        guard holders.count == 1 else {
            throw CLIError.usage(
                "groups \(holders.map(\.group).joined(separator: ", ")) each hold an item \(name): give --group G")
        }
        return [first.path, name]
    }

    /// Opens a version 2 vault; a version 1 file keeps no history and is told how to change that.
    static func open(_ path: String, _ args: Arguments, mode: OpenMode) throws -> Versioning {
        try SecretInput.requireVaultFile(path)
        args.context.reading(path)
        let header = try Vault.inspect(path: path).header
        if !header.keepsVersions {
            throw CLIError(
                .damaged,
                "\(path) is a version 1 vault, which keeps no versions: `kcar upgrade \(path)` makes it version 2")
        }
        return try SecretInput.unlockVersioned(
            path, args, mode: mode, given: try SecretInput.givenSecrets(args, orKeyOfGroup: header.group))
    }

    /// The item ITEM names: a name as `list` prints it (service/account) or `%id/` and its id, among the live
    /// items, else among the kept versions of deleted ones. Returns the item (live, or as last kept), its
    /// items-tree entry and its kept versions (oldest first).
    static func resolve(_ vault: Versioning, _ name: String) throws -> (Item, ItemState?, [KeptVersion]) {
        let id = name.hasPrefix("%id/") ? ItemID(hex: String(name.dropFirst(4))) : nil
        func named(_ item: Item) -> Bool { id.map { item.id == $0 } ?? (ItemPath.name(item) == name) }
        var live: [Item] = []
        try vault.forEachItem { item in
            if named(item) { live.append(item) }
            return true
        }
        var found = live
        if found.isEmpty {
            // A deleted item: its last kept version (the history tree is ordered by item id, then version).
            var last: [ItemID: Item] = [:]
            try vault.forEachKeptVersion { k in
                if named(k.item) { last[k.item.id] = k.item }
                return true
            }
            found = last.keys.sorted().compactMap { last[$0] }
        }
        guard let item = found.first else {
            throw CLIError(.notFound, "no item \(name) in \(vault.path), live or kept")
        }
        guard found.count == 1 else {
            throw CLIError.usage(
                "\(name) names \(found.count) items; name one by its id: "
                    + found.map { "%id/\($0.id)" }.joined(separator: ", "))
        }
        return (item, try vault.state(of: item), try vault.keptVersions(of: item.id))
    }
}
