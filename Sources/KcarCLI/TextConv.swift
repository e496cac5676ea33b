import VaultFormat

/// `kcar git textconv VAULT`: a vault as stable text, one line per item in a fixed order, so that `git diff`
/// and `git log -p` show the items that were added, changed or deleted.
extension GitCommand {
    static func textconv(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("git", "textconv"))
        let path = try args.positionals(["VAULT"])[0]
        let values = args.flag("values")
        // git diff shows whatever this prints: a file it cannot read is described in one line (exit 0), so the
        // diff still says which vault changed instead of git failing.
        let header: Header
        do {
            try Secrets.requireVaultFile(path)
            header = try Vault.inspect(path: path).header
        } catch {
            Output.out.line(terminalSafe("# not a readable kcar vault: \(error)"))
            return .success
        }
        let head = "# kcar vault, format \(header.formatVersion), group \(JSON.string(header.group)), vault id \(Hex.encode(header.vaultID))"
        do {
            let given = try Secrets.givenSecrets(args, orKeyOfGroup: header.group)
            guard !given.isEmpty else {
                Output.out.line(terminalSafe(head + ": no key given (set \(Secrets.keyFileVariable) to its key file to see the items)"))
                return .success
            }
            if header.formatVersion == 1 {
                let (vault, _) = try Secrets.unlockVault(path, args, given: given, ask: false)
                let items = vault.items.sorted { ($0.itemClass.rawValue, ItemPath.name($0), $0.id) < ($1.itemClass.rawValue, ItemPath.name($1), $1.id) }
                Output.out.line(terminalSafe(head + ": \(count(items.count, "item"))"))
                for item in items { try printLine(item, version: nil, value: values ? { try vault.read(item) } : nil) }
            } else {
                let vault = try Secrets.unlockPaged(path, args, given: given, ask: false)
                Output.out.line(terminalSafe(head + ": \(count(vault.count, "item"))"))
                // The items tree's order: class, key attributes, item id.
                var text = VersionText()
                try vault.forEachLiveState { s in
                    guard let item = s.item else { return true }
                    try printLine(item, version: text(s.version), value: values ? { try vault.read(item) } : nil)
                    return true
                }
            }
        } catch let e as CLIError {
            Output.out.line(terminalSafe(head + ": " + e.message))
        } catch {
            Output.out.line(terminalSafe(head + ": cannot read the items: \(error)"))
        }
        return .success
    }

    /// Prints `CLASS NAME size=N [version=TIME/WRITER] {other attributes} [value=...]`, in pieces (no line
    /// string is built: ten thousand items take well under a tenth of a second); control characters
    /// escaped (the JSON parts by JSON's rules).
    static func printLine(_ item: Item, version: String?, value: (() throws -> [UInt8])?) throws {
        let out = Output.out
        out.write(terminalSafe(item.itemClass.rawValue))
        out.write(" ")
        out.write(terminalSafe(ItemPath.name(item)))
        out.write(" size=")
        out.write(String(item.size))
        if let version {
            out.write(" version=")
            out.write(version)
        }
        out.write(" ")
        // The name holds service and account when both are strings.
        out.write(ItemJSON.attributes(item.attributes, excluding: item.service != nil && item.account != nil ? ["svce", "acct"] : []))
        if let value {
            let bytes = try value()
            if let text = String(validating: bytes, as: UTF8.self) {
                out.write(" value=")
                out.write(JSON.string(text))
            } else {
                out.write(" value-base64=")
                out.write(Base64.encode(bytes))
            }
        }
        out.write("\n")
    }

    /// A version as `TIME/WRITER`: its clock's milliseconds as ISO 8601 UTC and the writer id in hex.
    static func describe(_ v: Version) -> String {
        var text = VersionText()
        return text(v)
    }
}

/// Formats versions as `TIME/WRITER`, remembering the last time and writer: the items of one commit share
/// both (their clocks differ in the counter bits only), so a vault's lines format few of them.
struct VersionText {
    private var time: (ms: UInt64, text: String)?
    private var writer: (id: UInt64, text: String)?

    mutating func callAsFunction(_ v: Version) -> String {
        let ms = v.hlc >> 16
        if time?.ms != ms {
            // Milliseconds always (a column of one width in history and diffs).
            time = (ms, iso8601(seconds: Int64(ms / 1000), nanoseconds: Int64(ms % 1000) * 1_000_000, fractionDigits: 3))
        }
        if writer?.id != v.writer {
            writer = (v.writer, Hex.encode((0..<8).map { UInt8(truncatingIfNeeded: v.writer >> (56 - 8 * UInt64($0))) }))
        }
        return (time?.text ?? "") + "/" + (writer?.text ?? "")
    }
}
