import FoundationEssentials
import KcarKeychain
import KeyedArchive
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// What the keychain commands share (`kcar init`, `add`, `get`, `find`, `update`, `delete`, `groups`, `import`,
/// each in its own NAMECommand.swift): SecItem semantics from the shell over a keychain directory (SPEC.md
/// Part 3): opening the store and a group's vault, selecting items from options, reading values, printing.
enum ItemCommands {
    static func directory(_ args: Arguments) throws -> KeychainDirectory {
        KeychainDirectory(path: try args.value("keychain") ?? KeychainDirectory.defaultPath())
    }

    static func store(_ args: Arguments) throws -> KeychainStore {
        let groups = try args.value("groups").map(KeychainStore.parseGroupList)
        var timeout = 10.0
        if let t = args.value("lock-timeout") {
            guard let v = Double(t), v >= 0, v <= 86_400 else {
                throw CLIError.usage("--lock-timeout takes seconds (0 to 86400)")
            }
            timeout = v
        }
        return try KeychainStore(directory: try directory(args), accessGroups: groups, lockTimeout: timeout)
    }

    // MARK: Vault commands on a keychain's group

    /// The vault file of a group the process is entitled to, after every check a keychain makes on opening
    /// a group: its files are trusted (§K1), its key opens it and it is not rolled back (§K6). Someone who
    /// opens it with a passphrase and cannot read the group's key cannot check the record; they are told so.
    static func groupVaultPath(_ args: Arguments, _ group: String) throws -> String {
        let s = try store(args)
        try s.entitle(group)
        guard s.directory.exists(group) else {
            throw KeychainError(.itemNotFound, "no access group \(group) in \(s.directory.path)")
        }
        do {
            // The checks only: the command reads the items itself (a 100,000-item `list --group` decoded them twice).
            try s.withVault(group: group, loadingItems: false) { _ in }
        } catch let e as KeychainError where e.status == .missingEntitlement && e.reason == nil && givesSecret(args) {
            try s.directory.checkVault(group)
            warn("cannot read the key of group \(group): its generation record (rollback check) is not checked")
        } catch let e as KeychainError where e.status == .decode && args.flag("drop-damaged") {
            // `recover --drop-damaged` is for a vault that does not open: its file is checked as opening checks it.
            try s.directory.checkVault(group)
        }
        // The command opens the vault itself; this store's copy is closed first.
        s.close()
        let path = s.directory.vaultPath(group)
        args.context.group = (s, group, FileVersion(path))
        return path
    }

    /// Whether a secret other than the group's key is given (`--key-file`, `--passphrase-file`, ...).
    private static func givesSecret(_ args: Arguments) -> Bool {
        args.value("key-file") != nil || args.value("passphrase-file") != nil || args.value("passphrase-fd") != nil
    }

    /// After a vault command on a group: its generation record advances to what the command committed (a
    /// rekey, a compaction, a recovery), and in a shared keychain the file keeps the group's mode. Called by
    /// `CLI.main` whether the command succeeded or not; a failure here is a warning.
    static func finishGroupCommand(_ context: CommandContext) {
        guard let (s, group, before) = context.group else { return }
        context.group = nil
        guard FileVersion(s.directory.vaultPath(group)) != before else { return }
        do {
            try s.finishVaultCommand(group: group)
        } catch let e as KeychainError where e.status == .missingEntitlement && e.reason == nil {
            // Opened with a passphrase by someone who cannot read the key: nothing to advance.
        } catch {
            warn("group \(group): \(error)")
        }
    }

    /// The key of a group the process is entitled to.
    static func groupKey(_ args: Arguments, _ group: String) throws -> SecureBytes {
        let s = try store(args)
        try s.entitle(group)
        return try s.directory.readKey(group)
    }

    /// With `--group`: the vault the command opened must hold that group (SPEC.md §K1), and must not be older
    /// than the generation the keychain last saw (§K6), like the one checked before the command ran.
    static func checkRollback(_ vault: Vault, _ args: Arguments) throws {
        guard let group = args.value("group") else { return }
        guard vault.header.group == group else {
            throw KeychainError(.decode, "\(vault.path) holds group \(vault.header.group), not \(group)")
        }
        let dir = try directory(args)
        guard let key = try? dir.readKey(group) else { return }
        try dir.checkGeneration(vault, group: group, key: key)
    }

    /// Warns about each group a search of the implicit list skipped (SPEC.md §K2), and gives the exit code
    /// of the first: the result printed may be incomplete.
    static func reportSkipped(_ skipped: [SkippedGroup]) -> ExitCode {
        for g in skipped { warn("skipped group \(g.group): \(g.error.message)") }
        return skipped.first.map { ExitCode.of($0.error) } ?? .success
    }

    // MARK: Selecting items

    static let classNames: [String: ItemClass] = [
        "genp": .genericPassword, "generic-password": .genericPassword, "inet": .internetPassword,
        "internet-password": .internetPassword, "cert": .certificate, "certificate": .certificate, "keys": .key,
        "key": .key,
        "idnt": .identity, "identity": .identity
    ]

    static func itemClass(_ args: Arguments) throws -> ItemClass {
        guard let name = args.value("class") else { return .genericPassword }
        guard let c = classNames[name] else {
            throw CLIError.usage("--class takes \(Help.classes.joined(separator: ", "))")
        }
        return c
    }

    /// The attributes the selector options name.
    static func selection(_ args: Arguments, class c: ItemClass) throws -> Attributes {
        var a = Attributes()
        for (option, name) in [
            ("service", AttributeName.service), ("account", AttributeName.account), ("label", "labl"),
            ("server", "srvr"),
            ("protocol", "ptcl"), ("path", "path")
        ] {
            if let v = args.value(option) { a[name] = .string(v) }
        }
        if let p = args.value("port") {
            guard let n = Int64(p), (0...65_535).contains(n) else { throw CLIError.usage("--port takes 0 to 65535") }
            a["port"] = .integer(n)
        }
        for text in args.all("attr") {
            let (name, value) = try parseAttribute(text, class: c)
            a[name] = value
        }
        return a
    }

    /// `NAME[:TYPE]=VALUE`: NAME is a user attribute, or Apple's when written as a `kSecAttr...` constant name;
    /// TYPE (user attributes only) is string (default), int, bool, date (RFC 3339 UTC), data (base64) or hex.
    static func parseAttribute(_ text: String, class c: ItemClass) throws -> (String, AttributeValue) {
        guard let eq = text.firstIndex(of: "=") else {
            throw CLIError.usage("--attr takes NAME=VALUE or NAME:TYPE=VALUE")
        }
        var name = String(text[..<eq])
        let raw = String(text[text.index(after: eq)...])
        var type = "string"
        if name.hasPrefix("kSecAttr") {
            guard let index = Schema.indexName(name) else {
                throw CLIError.usage("\(name) is not an attribute kcar knows")
            }
            guard let kind = Schema.kindOf(index, class: c) else {
                throw CLIError.usage("\(name) is not an attribute of \(c) items")
            }
            return (index, try typed(raw, kind: kind, name: name))
        }
        if let colon = name.lastIndex(of: ":") {
            type = String(name[name.index(after: colon)...])
            name = String(name[..<colon])
        }
        guard !name.isEmpty else { throw CLIError.usage("--attr needs a name before =") }
        let kinds: [String: AttributeKind] = [
            "string": .string, "int": .integer, "bool": .bool, "date": .date, "data": .data, "hex": .data
        ]
        guard let kind = kinds[type] else {
            throw CLIError.usage("attribute type \(type): use string, int, bool, date, data or hex")
        }
        if type == "hex" {
            guard let b = Hex.decode(raw) else { throw CLIError.usage("\(name): not hexadecimal") }
            return ("@" + name, .data(b))
        }
        return ("@" + name, try typed(raw, kind: kind, name: name))
    }

    static func typed(_ raw: String, kind: AttributeKind, name: String) throws -> AttributeValue {
        switch kind {
        case .string: return .string(raw)
        case .integer:
            guard let n = Int64(raw) else { throw CLIError.usage("\(name) takes an integer") }
            return .integer(n)
        case .bool:
            guard raw == "true" || raw == "false" else { throw CLIError.usage("\(name) takes true or false") }
            return .bool(raw == "true")
        case .date:
            guard let ns = parseISO8601(raw) else {
                throw CLIError.usage("\(name) takes a date as 2026-11-30T12:00:00Z")
            }
            return .date(nanoseconds: ns)
        case .data:
            guard let d = Base64.decode(Array(raw.utf8)) else {
                throw CLIError.usage("\(name) takes base64 (standard, padded)")
            }
            return .data(d)
        }
    }

    static let accessibilityNames: [String: String] = [
        "when-unlocked": "ak", "after-first-unlock": "ck", "always": "dk", "when-unlocked-this-device-only": "aku",
        "after-first-unlock-this-device-only": "cku", "always-this-device-only": "dku",
        "when-passcode-set-this-device-only": "akpu"
    ]

    static func accessibility(_ args: Arguments) throws -> AttributeValue? {
        guard let a = args.value("accessible") else { return nil }
        if let code = accessibilityNames[a] { return .string(code) }
        guard Schema.accessibility.contains(a) else {
            throw CLIError.usage(
                "--accessible takes \(accessibilityNames.keys.sorted().joined(separator: ", ")) (or Apple's codes ak, cku, ...)"
            )
        }
        return .string(a)
    }

    /// The value for add/update: `--value-file FILE` (`-` for standard input), else standard input, or a
    /// no-echo prompt when standard input is a terminal. The newline rule: a value from
    /// standard input is a line of text, as `echo tok | kcar add` and `kcar add < token.txt` mean it, so one
    /// trailing newline (LF or CRLF) is dropped, as from a passphrase file and as `pass insert` does;
    /// `--keep-newline` keeps it. `--value-file FILE` is stored byte for byte (binary values come from files).
    static func readValue(_ args: Arguments, required: Bool) throws -> [UInt8]? {
        let file = args.value("value-file")
        if file == nil, !required { return nil }
        guard let file, file != "-" else {
            if isatty(0) == 1 {
                return try SecretInput.prompt("Value: ", confirm: true, what: "values").withUnsafeBytes { Array($0) }
            }
            return try readStandardInput(args)
        }
        // Never blocks: a named FIFO, device or folder is refused (exit 15), an anonymous pipe (`<(cmd)`) read.
        let fd = try SecretInput.openInput(file, what: "value file", allowPipe: true)
        defer { close(fd) }
        return try readAll(fd: fd, what: file)
    }

    /// Standard input as a value: one trailing newline dropped unless --keep-newline.
    static func readStandardInput(_ args: Arguments) throws -> [UInt8] {
        var value = try readAll(fd: 0, what: "standard input")
        if !args.flag("keep-newline") { dropNewline(&value) }
        return value
    }

    /// Drops one trailing LF or CRLF.
    static func dropNewline(_ value: inout [UInt8]) {
        guard value.last == 10 else { return }
        value[value.count - 1] = 0
        value.removeLast()
        if value.last == 13 {
            value[value.count - 1] = 0
            value.removeLast()
        }
    }

    static let valueMax = 256 << 20

    static func readAll(fd: Int32, what: String) throws -> [UInt8] {
        var st = stat()
        var out: [UInt8] = []
        // Sized up front when the input is a file, so growing does not leave copies of the value behind.
        if fstat(fd, &st) == 0, st.st_size > 0 { out.reserveCapacity(min(Int(st.st_size), valueMax) + 1) }
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        defer { wipe(&buf) }
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw CLIError(.io, "cannot read \(what): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            out += buf[0..<n]
            guard out.count <= valueMax else {
                throw CLIError.usage("\(what): a keychain value is at most 256 MiB (use pack for files)")
            }
        }
        return out
    }

    // MARK: What several commands share

    /// The class and attributes of a new item: the selectors, `--accessible` and `--synchronizable`.
    static func newItem(_ args: Arguments) throws -> (ItemClass, Attributes) {
        let c = try itemClass(args)
        var attributes = try selection(args, class: c)
        if let a = try accessibility(args) { attributes["pdmn"] = a }
        if args.flag("synchronizable") { attributes["sync"] = .bool(true) }
        return (c, attributes)
    }

    /// The query the selector options make.
    static func query(_ args: Arguments) throws -> ItemQuery {
        let c = try itemClass(args)
        let attributes = try selection(args, class: c)
        // Synchronizable and local items alike, unless the selection names kSecAttrSynchronizable.
        return ItemQuery(
            class: c, attributes: attributes, group: args.value("group"),
            caseInsensitive: args.flag("ignore-case"), synchronizableAny: attributes["sync"] == nil)
    }

    static let allClasses = ItemClass.keychainClasses

    /// The items find and get print: of `--class C`, else of every class, in the access groups' order and then
    /// the classes'. A class whose attributes the selectors cannot name (`--service` of an inet item) has no
    /// match and is left out; if that is every class, the error is genp's. `limit` counts across classes.
    static func searchClasses(_ s: KeychainStore, _ args: Arguments, limit: Int?) throws -> (
        items: [KeychainItem], skipped: [SkippedGroup]
    ) {
        guard args.value("class") == nil else {
            var q = try query(args)
            q.limit = limit
            let r = try s.search(q)
            return (r.items, r.skipped)
        }
        var items: [KeychainItem] = []
        var skipped: [SkippedGroup] = []
        var refusal: Error?
        var searched = false
        for c in allClasses {
            let r: SearchResult
            do {
                let attributes = try selection(args, class: c)
                r = try s.search(
                    ItemQuery(
                        class: c, attributes: attributes, group: args.value("group"), limit: limit,
                        caseInsensitive: args.flag("ignore-case"), synchronizableAny: attributes["sync"] == nil))
            } catch let e as KeychainError where e.status == .param {
                refusal = refusal ?? e
                continue
            } catch let e as CLIError where e.code == .usage {
                refusal = refusal ?? e
                continue
            }
            searched = true
            items += r.items
            for g in r.skipped where !skipped.contains(where: { $0.group == g.group }) { skipped.append(g) }
        }
        if !searched, let refusal { throw refusal }
        let rank = Dictionary(try s.accessGroups().enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let ordered = items.enumerated().sorted {
            (rank[$0.element.group] ?? Int.max, $0.offset) < (rank[$1.element.group] ?? Int.max, $1.offset)
        }.map(\.element)
        return (Array(ordered.prefix(limit ?? Int.max)), skipped)
    }

    /// Why a query found nothing, in the words a user can act on: a group that does not exist (a typo) is named
    /// with the groups there are; an `--attr NAME=VALUE` given without a type compares strings, which never match
    /// a value stored as an int, bool, date or data.
    static func noMatch(_ s: KeychainStore, _ args: Arguments) -> KeychainError {
        if let group = args.value("group"), !s.directory.exists(group) {
            let others = ((try? s.directory.groups()) ?? []).joined(separator: ", ")
            return KeychainError(
                .itemNotFound,
                "no access group \(group) in \(s.directory.path)"
                    + (others.isEmpty ? " (it has none yet)" : " (its groups: \(others))"))
        }
        let untyped = args.all("attr").filter { a in
            a.firstIndex(of: "=").map { !a[..<$0].contains(":") && !a.hasPrefix("kSecAttr") } ?? false
        }
        guard !untyped.isEmpty else { return KeychainError(.itemNotFound, "no item matches") }
        return KeychainError(
            .itemNotFound,
            "no item matches (--attr NAME=VALUE compares a string: a value stored as a number, "
                + "bool, date or data is matched by NAME:int=VALUE, :bool, :date, :data)")
    }

    /// `SERVICE/ACCOUNT`, an item named in one word as `list` and `history` name it (`pass show api/bob`), as the
    /// selectors `--service SERVICE --account ACCOUNT`; `SERVICE` alone selects by service.
    static func named(_ args: Arguments) throws -> Arguments {
        guard let name = try args.positionals(["SERVICE/ACCOUNT"], optional: 1).first else { return args }
        guard args.value("service") == nil, args.value("account") == nil else {
            throw CLIError.usage("\(name) names the item already: give SERVICE/ACCOUNT or --service and --account")
        }
        guard let (service, account) = ItemPath.parse(name) else {
            throw CLIError.usage("\(name) is not an item name: SERVICE/ACCOUNT, with %XX where list writes it")
        }
        let a = args.setting("service", to: service)
        return account.map { a.setting("account", to: $0) } ?? a
    }

    /// Items as find prints them: JSON, or a table whose group, service and account are cut at 40 characters.
    static func printItems(_ found: [KeychainItem], json: Bool) {
        if json {
            JSON.printArray(found) {
                ItemJSON.object(
                    group: $0.group, id: $0.id, class: $0.itemClass, attributes: $0.attributes, size: $0.size)
            }
            return
        }
        // The second column is the service of a generic password and the server of an internet password (JSON
        // gives each under its own name).
        var table = Table([
            .init(title: "GROUP", cap: 40), .init(title: "CLASS"), .init(title: "SERVICE/SERVER", cap: 40),
            .init(title: "ACCOUNT", cap: 40), .init(title: "SIZE", rightAligned: true), .init(title: "MODIFIED (UTC)")
        ])
        for i in found {
            let service =
                i.attributes.string(AttributeName.service) ?? i.attributes.string("srvr") ?? i.attributes.string("labl")
                ?? "-"
            var modified = "-"
            if case .date(let ns)? = i.attributes["mdat"] { modified = tableDate(nanoseconds: ns) }
            table.add([
                i.group, i.itemClass.rawValue, service, i.attributes.string(AttributeName.account) ?? "-",
                String(i.size), modified
            ])
        }
        table.print()
    }

    /// `update --dry-run` and `delete --dry-run`: the items the query matches, printed as find prints them,
    /// and how many would change; nothing is written. A group the real command could not use is named
    /// (the real command would fail on it).
    static func dryRun(_ args: Arguments, _ q: ItemQuery, _ verb: String) throws -> ExitCode {
        let s = try store(args)
        let r = try s.search(q)
        guard !r.items.isEmpty || !r.skipped.isEmpty else { throw noMatch(s, args) }
        printItems(r.items, json: false)
        warn("would \(verb) \(count(r.items.count, "item")) (--dry-run: nothing changed)")
        return reportSkipped(r.skipped)
    }

}

/// An item for a message: its class and the attributes that usually name it (`genp, service api, account bob`).
func describe(_ c: ItemClass, _ a: Attributes) -> String {
    let named = [
        (AttributeName.service, "service"), ("srvr", "server"), (AttributeName.account, "account"), ("labl", "label")
    ].compactMap {
        key, word in
        a.string(key).map { "\(word) \(String($0.prefix(64)))" }
    }
    return ([c.rawValue] + named).joined(separator: ", ")
}

/// An item as `kcar list --json` and `kcar find --json` print it.
enum ItemJSON {
    /// `attributes` as a JSON object, leaving out the names in `excluding`.
    static func attributes(_ attributes: Attributes, excluding: [String] = []) -> String {
        var json = JSONBytes(capacity: 256)
        write(attributes, excluding: excluding, into: &json)
        return json.text
    }

    /// ``attributes(_:excluding:)`` appended to `json`.
    static func write(_ attributes: Attributes, excluding: [String] = [], into json: inout JSONBytes) {
        json.raw("{")
        var first = true
        for (name, value) in attributes where excluding.isEmpty || !excluding.contains(name) {
            json.member(name, first: &first)
            switch value {
            case .string(let s): json.string(s)
            case .integer(let i): json.integer(i)
            case .bool(let b): json.raw(b ? "true" : "false")
            case .date(let ns):
                json.raw("{\"$date\": ")
                json.date(nanoseconds: ns)
                json.raw("}")
            case .data(let d):
                json.raw("{\"$data\": ")
                json.string(Base64.encode(d))
                json.raw("}")
            }
        }
        json.raw("}")
    }

    /// An item as `list --json`, `find --json` and `get --json` print it: `extra` (name and JSON value) after
    /// its account, before its size.
    static func object(
        group: String? = nil, id: ItemID, class c: ItemClass, attributes a: Attributes, size: UInt64,
        extra: [(String, String)] = []
    ) -> String {
        var json = JSONBytes(capacity: 512)
        write(group: group, id: id, class: c, attributes: a, size: size, into: &json) { json, first in
            for (name, value) in extra {
                json.member(name, first: &first)
                json.raw(value)
            }
        }
        return json.text
    }

    /// ``object(group:id:class:attributes:size:extra:)`` appended to `json`, its extra members written by
    /// `extra`: a list of a million items writes a million of them into one buffer, with no String between.
    static func write(
        group: String? = nil, id: ItemID, class c: ItemClass, attributes a: Attributes, size: UInt64,
        into json: inout JSONBytes, extra: (inout JSONBytes, inout Bool) -> Void
    ) {
        var first = true
        json.raw("{")
        if let group {
            json.member("group", first: &first)
            json.string(group)
        }
        json.member("id", first: &first)
        json.string(id)
        json.member("class", first: &first)
        json.string(c.rawValue)
        json.member("service", first: &first)
        if let s = a.string(AttributeName.service) { json.string(s) } else { json.raw("null") }
        json.member("account", first: &first)
        if let s = a.string(AttributeName.account) { json.string(s) } else { json.raw("null") }
        extra(&json, &first)
        json.member("size", first: &first)
        json.integer(size)
        json.member("modified", first: &first)
        if case .date(let ns)? = a["mdat"] { json.date(nanoseconds: ns) } else { json.raw("null") }
        json.member("attributes", first: &first)
        write(a, into: &json)
        json.raw("}")
    }
}

extension ExitCode {
    /// A keychain error's exit code: its status's, but 15 for a file kcar refuses to trust (SPEC.md §K1),
    /// whose status is errSecMissingEntitlement.
    static func of(_ error: KeychainError) -> ExitCode {
        error.reason == .unsafeFile ? .unsafeFile : of(error.status)
    }
}
