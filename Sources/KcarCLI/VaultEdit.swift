import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar add VAULT PATH...` and `kcar delete VAULT ITEM...`: files added to and items deleted from a packed
/// vault, without a keychain, as `7z a`/`7z d` and `tar -r` do. The keychain's `add` and
/// `delete` take options only, so a positional argument is what tells a packed vault's command apart.
enum VaultEdit {
    /// Options both forms of `add`/`delete` take.
    static let shared: Set<String> = ["lock-timeout", "dry-run", "purge", "value-file", "keep-newline"]

    /// Runs `run` when `args` name a packed vault (positionals given), after refusing the keychain's options;
    /// otherwise refuses the packed vault's options and returns nil, for the keychain command to go on.
    static func route(
        _ args: Arguments, _ command: String, vaultOptions: [Help.Option],
        run: (Arguments) throws -> ExitCode
    ) throws -> ExitCode? {
        let vaultNames = Set(vaultOptions.map(\.name))
        let all = Set(CLI.command(command)?.page.options.map(\.name) ?? [])
        let given = args.given
        if args.positionals.isEmpty {
            if let o = given.intersection(vaultNames).sorted().first {
                throw CLIError.usage(
                    "--\(o) is for `kcar \(command) VAULT ...` (a packed vault); the keychain's \(command) takes selectors"
                )
            }
            return nil
        }
        if let o = given.intersection(all.subtracting(vaultNames).subtracting(shared)).sorted().first {
            throw CLIError.usage(
                "--\(o) is for the keychain's \(command), which takes no VAULT; `kcar \(command) VAULT ...` changes a packed vault"
            )
        }
        return try run(args)
    }

    /// The name of an item in a vault, as bytes (as extract compares names).
    struct Name: Hashable {
        let service: [UInt8]
        let account: [UInt8]
        init(_ service: String, _ account: String) {
            (self.service, self.account) = (Array(service.utf8), Array(account.utf8))
        }
    }

    /// `PATH` below `-C DIR` as components: `.` and empty components dropped (`.` alone is all of DIR);
    /// absolute paths and `..` are refused, as nothing outside DIR can be named in a vault.
    static func components(_ path: String) throws -> [String] {
        guard path != "-" else {
            throw CLIError.usage(
                "PATH - (standard input) is not a file to add; add takes files below -C DIR (pack VAULT --items - reads an item file)"
            )
        }
        guard !path.startsWithSlash else {
            throw CLIError.usage("\(path): a PATH is relative to -C DIR (default .), not absolute")
        }
        let parts = path.slashSeparated(omittingEmpty: true).filter { $0 != "." }
        guard !parts.contains("..") else { throw CLIError.usage("\(path): a PATH below -C DIR cannot contain ..") }
        return parts
    }

    /// VAULT (a file changed in place: not -) and the names after it, at least one (else `usage`).
    static func vaultAndNames(_ args: Arguments, _ usage: String) throws -> (String, [String]) {
        let p = args.positionals
        guard p.count >= 2 else { throw CLIError.usage(usage + "; the keychain's command takes no VAULT") }
        try refuseStandardInput(p[0])
        return (p[0], Array(p.dropFirst()))
    }

    /// `kcar add VAULT NAME --value-file FILE` (`-`: standard input): one item named NAME (service/account, as
    /// list prints it) given its value directly, so that changing a packed vault needs no plaintext file; it is
    /// replaced if it exists, stored as pack stores a file of mode 0600. One commit.
    static func addValue(_ args: Arguments) throws -> ExitCode {
        let (vaultPath, names) = try vaultAndNames(
            args, "add VAULT NAME --value-file FILE: give the item's name (service/account)")
        // A name without `/` is a top-level item (SPEC.md §7.1), as list prints it.
        guard names.count == 1, let parsed = ItemPath.parse(names[0]) else { throw valueUsage }
        let (service, account) =
            parsed.account == nil && !names[0].containsSlash
            ? ("", parsed.service) : (parsed.service, parsed.account ?? "")
        guard !account.isEmpty, !service.isEmpty || ItemPath.isTopLevel(service: service, account: account) else {
            throw valueUsage
        }
        guard args.value("directory") == nil, args.all("exclude").isEmpty, !args.flag("dereference") else {
            throw CLIError.usage(
                "--value-file gives one item's value: -C, --exclude and -h are for files below a folder")
        }
        var value = try ItemCommands.readValue(args, required: true) ?? []
        defer { wipe(&value) }
        let options = WriteOptions(level: Int32(try args.int("level", in: 0...12) ?? 6))
        let attributes = Attributes([
            AttributeName.service: .string(service), AttributeName.account: .string(account),
            PackedKind.modeAttribute: .integer(0o600),
            AttributeName.modificationDate: .date(
                nanoseconds: Int64(HybridClock.nowMilliseconds()) * 1_000_000)
        ])
        // No vault yet: made with the item, as `tar rf` and `7z a` make their archive (the secrets as pack takes
        // them; a half-made vault is never left).
        if !Keys.exists(vaultPath) {
            try PackCommand.createVault(
                vaultPath, group: "default", slots: try SecretInput.newSlots(args), options: options, args
            ) {
                try $0.add(attributes: attributes, value: .bytes(value))
            }
            if !args.flag("quiet") { warn("added \(names[0]) in \(vaultPath), a new vault") }
            return .success
        }
        let vault = try openVault(vaultPath, args, mode: .write)
        let name = Name(service, account)
        let parts = ItemPath.components(service: service, account: account)
        var replaced = false
        try vault.commit(options: options) { tx in
            var old: ItemID?
            var taken = ExtractCommand.PathSet()
            for item in tx.items {
                guard let s = item.service, let a = item.account, let p = ItemPath.components(item) else { continue }
                if Name(s, a) == name { old = item.id } else { _ = taken.insert(p, folder: ItemPath.isFolder(item)) }
            }
            if let c = taken.insert(parts, folder: false) {
                throw CLIError(.exists, "nothing added to \(vaultPath): " + c.message(root: "VAULT"))
            }
            if let old {
                try tx.update(old, class: .genericPassword, attributes: attributes, value: .bytes(value))
                replaced = true
            } else {
                try tx.add(attributes: attributes, value: .bytes(value))
            }
        }
        if !args.flag("quiet") { warn((replaced ? "replaced " : "added ") + "\(names[0]) in \(vaultPath)") }
        return .success
    }

    static let valueUsage = CLIError.usage(
        "add VAULT NAME --value-file FILE takes one NAME, service/account (or a top-level item's name) "
            + "as kcar list prints it")

    static func add(_ args: Arguments) throws -> ExitCode {
        if args.value("value-file") != nil { return try addValue(args) }
        let (vaultPath, rest) = try vaultAndNames(
            args, "add VAULT PATH...: give the files or folders to add, below -C DIR (default .)")
        let dir = args.value("directory") ?? "."
        let level = Int32(try args.int("level", in: 0...12) ?? 6)
        let paths = try rest.map(components)
        // Listed before the vault is opened: a PATH that is missing changes nothing and asks for no secret.
        let (entries, folders, problems) = try PackCommand.walk(
            dir, excludes: args.all("exclude"), dereference: args.flag("dereference"), only: paths)
        for problem in problems { warn("skipped \(problem)") }
        let vault = try openVault(vaultPath, args, mode: .write)
        let opener = try PackCommand.Opener(root: dir, folders: folders)
        let progress = Progress(label: "add", total: PackCommand.totalSize(entries))
        defer { progress.finish() }
        let listing = verboseListing(args, dataOnStdout: false)
        var skipped = 0
        var replaced = 0
        try vault.commit(options: WriteOptions(level: level)) { tx in
            // Same name: replaced (as 7z a). Every other item stays, and none may need a new item's path as a
            // folder, or the reverse (extract could not write both).
            let added = Set(entries.map { Name($0.service, $0.account) })
            var existing: [Name: ItemID] = [:]
            var taken = ExtractCommand.PathSet()
            var named = Set<[UInt8]>()
            for item in tx.items {
                guard let s = item.service, let a = item.account, let parts = ItemPath.components(item) else {
                    continue
                }
                let name = Name(s, a)
                existing[name] = item.id
                named.insert(Array(parts[0].utf8))
                if !added.contains(name) { _ = taken.insert(parts, folder: ItemPath.isFolder(item)) }
            }
            for hint in likelyWrong(rest, paths, dir: dir, entries: entries, named: named, vault: vaultPath) {
                warn("warning: " + hint)
            }
            for e in entries {
                if let c = taken.insert(e.parts, folder: e.isFolder) {
                    throw CLIError(.exists, "nothing added to \(vaultPath): " + c.message(root: "VAULT"))
                }
            }
            for e in entries {
                let old = existing[Name(e.service, e.account)]
                let problem = try PackCommand.store(e, opener: opener, progress: progress) { attributes, value in
                    if let old {
                        try tx.update(old, class: .genericPassword, attributes: attributes, value: value)
                    } else {
                        try tx.add(attributes: attributes, value: value)
                    }
                }
                if let problem {
                    warn("skipped \(problem)")
                    skipped += 1
                } else {
                    if old != nil { replaced += 1 }
                    listing?.line(terminalSafe(e.listedName))
                }
            }
        }
        progress.finish()
        let new = entries.count - skipped - replaced
        if !args.flag("quiet") {
            warn(
                "added \(count(new, "item")) to \(vaultPath)"
                    + (replaced > 0 ? ", replaced \(count(replaced, "item"))" : ""))
        }
        return problems.isEmpty && skipped == 0 ? .success : .skipped
    }

    /// Why a PATH is likely relative to the wrong folder (`add VAULT secrets/x` typed in the
    /// folder above the one VAULT was packed from makes a service `secrets`). A PATH is flagged when its first
    /// component S becomes a new service (no item of the vault is named S or below S) and the folder DIR/S
    /// holds a name the vault already has as a first component (a service or a top-level item): S is then
    /// likely the folder VAULT was packed from. `named`: the first components of the vault's item names.
    static func likelyWrong(
        _ given: [String], _ paths: [[String]], dir: String, entries: [PackCommand.Entry], named: Set<[UInt8]>,
        vault: String
    ) -> [String] {
        guard !named.isEmpty else { return [] }
        var hints: [String] = []
        var seen = Set<String>()
        for (path, parts) in zip(given, paths) {
            guard let s = parts.first, seen.insert(s).inserted,
                !named.contains(Array(ItemPath.component(s, slash: true).utf8)),
                entries.contains(where: { !$0.service.isEmpty && $0.service == s })
            else { continue }
            let folder = dir + "/" + s
            let fd = open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard let inside = try? PackCommand.listDirectory(fd, path: folder),
                let known = inside.first(where: { named.contains(Array(ItemPath.component($0.1, slash: true).utf8)) })
            else { continue }
            let rest = parts.count > 1 ? parts.dropFirst().joined(separator: "/") : "."
            let c = dir == "." ? s : folder
            hints.append(
                "\(path) makes a new service \(s), but \(c)/ holds \(known.1), which \(vault) already has: if \(vault) was packed "
                    + "from \(s), the path is below it (kcar add \(vault) -C \(c) \(rest))")
        }
        return hints
    }

    static func delete(_ args: Arguments) throws -> ExitCode {
        let (vaultPath, names) = try vaultAndNames(
            args, "delete VAULT ITEM...: name the items to delete, as kcar list names them")
        let vault = try openVault(vaultPath, args, mode: .write)
        // Every ITEM must name something (exit 6), checked before anything changes.
        let selected = try ExtractCommand.select(vault, names)
        if args.flag("dry-run") {
            for item in selected { Output.out.line(terminalSafe(ItemPath.name(item))) }
            warn("would delete \(count(selected.count, "item")) (--dry-run: nothing changed)")
            return .success
        }
        try vault.commit { tx in
            for item in selected { try tx.delete(item.id) }
        }
        let listing = verboseListing(args, dataOnStdout: false)
        for item in selected { listing?.line(terminalSafe(ItemPath.name(item))) }
        let deleted = "deleted \(count(selected.count, "item")) from \(vaultPath)"
        let one = selected.count == 1
        let (values, stay, kept) =
            one ? ("its value", "stays", "its kept versions") : ("their values", "stay", "their kept versions")
        if args.flag("purge") {
            try vault.compact(retention: nil, droppingHistoryOf: Set(selected.map(\.id)))
            warn(deleted + " and compacted it: \(values), and \(kept), have left the file")
        } else if let r = vault.retention, r.keep > 0 {
            warn(
                deleted
                    + "; \(values) \(stay) in the file, encrypted, as \(one ? "a kept version" : "kept versions") (kcar history) for "
                    + "\(count(r.days, "day")): --purge removes \(one ? "it" : "them") now")
        } else {
            warn(
                deleted
                    + "; \(values) \(stay) in the file, encrypted, until it is compacted (`kcar compact \(vaultPath)`)")
        }
        return .success
    }
}
