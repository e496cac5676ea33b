import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar update`: new attributes or a new value for the items that match (SecItemUpdate).
enum UpdateCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try ItemCommands.named(try Arguments(argv, specs: CLI.specs("update")))
        let generate = try GenerateCommand.requested(args)
        let q = try ItemCommands.query(args)
        var changes: [String: AttributeValue?] = [:]
        if let l = args.value("set-label") { changes["labl"] = .string(l) }
        for text in args.all("set-attr") {
            let (name, value) = try ItemCommands.parseAttribute(text, class: q.itemClass)
            changes[name] = value
        }
        for name in args.all("unset-attr") {
            changes[name.hasPrefix("kSecAttr") ? (Schema.indexName(name) ?? name) : "@" + name] = .some(nil)
        }
        if let a = args.value("set-accessible") {
            changes["pdmn"] = try ItemCommands.accessibility(
                try Arguments(
                    ["--accessible", a], specs: [.init(name: "accessible", kind: .value)], context: args.context))
        }
        // A dry run reads no value: it shows which items the change would reach.
        if args.flag("dry-run") { return try ItemCommands.dryRun(args, q, "update") }
        let s = try ItemCommands.store(args)
        if generate {
            // One password for one item: a selection that matches several is refused before anything changes.
            var two = q
            two.limit = 2
            guard try s.search(two).items.count <= 1 else {
                throw CLIError.usage(
                    "--generate gives one item a password; more than one matches (`kcar find` lists them)")
            }
        }
        var value = generate ? try GenerateCommand.password(args) : try ItemCommands.readValue(args, required: false)
        if value == nil, changes.isEmpty { value = try updateValueFromStandardInput(args) }
        defer { if value != nil { wipe(&value!) } }
        guard !changes.isEmpty || value != nil else {
            throw CLIError.usage(
                "nothing to change: give --set-label, --set-attr, --unset-attr, --set-accessible or --value-file, "
                    + "or pipe the new value in")
        }
        let n = try s.update(q, set: changes, value: value)
        warn("updated \(count(n, "item"))")
        if generate, let value { try StandardStreams.writeValue(value, name: "the password", force: false) }
        return .success
    }

    /// update's value when it names no other change and no --value-file: standard input as add reads it (asked
    /// twice on a terminal), if it is a pipe, socket or file; nil for anything else (`< /dev/null`, closed). An
    /// empty input is refused rather than taken for an empty value. Never read when an attribute changes, so
    /// `update --set-label L` in a script with an inherited standard input neither waits nor changes a value.
    static func updateValueFromStandardInput(_ args: Arguments) throws -> [UInt8]? {
        if isatty(0) == 1 { return try ItemCommands.readValue(args, required: true) }
        var st = stat()
        guard fstat(0, &st) == 0 else { return nil }
        let type = st.st_mode & S_IFMT
        guard type == S_IFIFO || type == S_IFREG || type == S_IFSOCK else { return nil }
        let value = try ItemCommands.readStandardInput(args)
        guard !value.isEmpty else {
            throw CLIError.usage(
                "nothing to change: standard input is empty (--value-file /dev/null sets an empty value)")
        }
        return value
    }
}
