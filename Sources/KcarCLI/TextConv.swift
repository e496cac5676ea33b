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
            let given = try Secrets.givenSecrets(args)
            guard !given.isEmpty else {
                Output.out.line(terminalSafe(head + ": no key given (set \(Secrets.keyFileVariable) to its key file to see the items)"))
                return .success
            }
            if header.formatVersion == 1 {
                let (vault, _) = try Secrets.unlockVault(path, args, given: given, ask: false)
                let items = vault.items.sorted { ($0.itemClass.rawValue, ItemPath.name($0), $0.id) < ($1.itemClass.rawValue, ItemPath.name($1), $1.id) }
                Output.out.line(terminalSafe(head + ": \(count(items.count, "item"))"))
                for item in items { Output.out.line(try line(item, version: nil, value: values ? { try vault.read(item) } : nil)) }
            } else {
                let vault = try Secrets.unlockPaged(path, args, given: given, ask: false)
                Output.out.line(terminalSafe(head + ": \(count(vault.count, "item"))"))
                // The items tree's order: class, key attributes, item id.
                try vault.forEachLiveState { s in
                    guard let item = s.item else { return true }
                    Output.out.line(try line(item, version: s.version, value: values ? { try vault.read(item) } : nil))
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

    /// `CLASS NAME size=N [version=TIME/WRITER] {other attributes} [value=...]`; control characters escaped.
    static func line(_ item: Item, version: Version?, value: (() throws -> [UInt8])?) throws -> String {
        var attributes = item.attributes
        if item.service != nil, item.account != nil {
            attributes["svce"] = nil
            attributes["acct"] = nil
        }
        var out = "\(item.itemClass.rawValue) \(ItemPath.name(item)) size=\(item.size)"
        if let version { out += " version=" + describe(version) }
        out += " " + ItemJSON.attributes(attributes)
        if let value {
            let bytes = try value()
            if let text = String(validating: bytes, as: UTF8.self) { out += " value=" + JSON.string(text) } else {
                out += " value-base64=" + Base64.encode(bytes)
            }
        }
        return terminalSafe(out)
    }

    /// A version as `TIME/WRITER`: its clock's milliseconds as ISO 8601 UTC and the writer id in hex.
    static func describe(_ v: Version) -> String {
        let ms = v.hlc >> 16
        let writer = Hex.encode((0..<8).map { UInt8(truncatingIfNeeded: v.writer >> (56 - 8 * UInt64($0))) })
        return iso8601(seconds: Int64(ms / 1000), nanoseconds: Int64(ms % 1000) * 1_000_000) + "/" + writer
    }
}
