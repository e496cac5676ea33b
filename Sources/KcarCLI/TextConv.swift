import VaultFormat

/// `kcar git textconv VAULT`: a vault as stable text, one line per item in a fixed order, so that `git diff`
/// and `git log -p` show the items that were added, changed or deleted.
extension GitCommand {
    /// `TEXTCONV_OUTPUT_MAX`: bytes `git textconv --values` prints at most. Values that compress a
    /// thousandfold print far more than their vault holds (a 228 KB vault printed 1.25 GB), so the
    /// output is counted first and a vault that would print more is refused before anything is printed (exit 4).
    static let textconvOutputMax = 67_108_864

    /// The refusal of ``textconvOutputMax``: unlike the vault's other problems, it is not printed as a line
    /// (git would diff a truncated text as if it were the vault).
    struct TextConvTooLarge: Error {}

    static func textconv(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("git", "textconv"))
        let path = try args.positionals(["VAULT"])[0]
        let values = args.flag("values")
        // git diff shows whatever this prints: a file it cannot read is described in one line (exit 0), so the
        // diff still says which vault changed instead of git failing.
        let header: Header
        do {
            try SecretInput.requireVaultFile(path)
            header = try Vault.inspect(path: path).header
        } catch {
            Output.out.line(terminalSafe("# not a readable kcar vault: \(error)"))
            if let line = fileLine(path, header: nil) { Output.out.line(line) }
            return .success
        }
        let head =
            "# kcar vault, format \(header.formatVersion), group \(JSON.string(header.group)), vault id \(Hex.encode(header.vaultID))"
        do {
            let given = try SecretInput.givenSecrets(args, orKeyOfGroup: header.group)
            guard !given.isEmpty else {
                Output.out.line(
                    terminalSafe(
                        head + ": no key given (set \(SecretInput.keyFileVariable) to its key file to see the items)"))
                if let line = fileLine(path, header: header) { Output.out.line(line) }
                return .success
            }
            let (opened, _) = try SecretInput.unlockVault(path, args, given: given, ask: false, itemsOnDemand: true)
            if let vault = opened.versioning {
                let first = terminalSafe(head + ": \(count(vault.count, "item"))")
                // The items tree's order: class, key attributes, item id; each item with its version.
                var text = VersionText()
                if values {
                    var lines: [(Item, String?)] = []
                    try vault.forEachLiveState { s in
                        if let item = s.item { lines.append((item, text(s.version))) }
                        return true
                    }
                    try printWithValues(first, lines) { items, begin, bytes, end in
                        try vault.readValues(of: items, begin: begin, bytes: bytes, end: end)
                    }
                } else {
                    Output.out.line(first)
                    // A large tree's lines are made on every core, a leaf at a time, and written in order.
                    let walked = try vault.mapLiveStateRuns { states in
                        var lines = ByteSink()
                        var text = VersionText()
                        for s in states {
                            if let item = s.item {
                                try printLine(item, version: text(s.version), value: nil, to: &lines)
                            }
                        }
                        return lines.bytes
                    } _: { (bytes: [UInt8]) in
                        var bytes = bytes
                        Output.out.write(bytes: &bytes)
                    }
                    if !walked {
                        var out = JSONWriter()
                        try vault.forEachLiveState { s in
                            guard let item = s.item else { return true }
                            try printLine(item, version: text(s.version), value: nil, to: &out)
                            return true
                        }
                    }
                }
            } else {
                // A format without versions: every item, in name order.
                let vault = opened
                let items = vault.items.sorted {
                    ($0.itemClass.rawValue, ItemPath.name($0), $0.id) < (
                        $1.itemClass.rawValue, ItemPath.name($1), $1.id
                    )
                }
                let first = terminalSafe(head + ": \(count(items.count, "item"))")
                if values {
                    try printWithValues(first, items.map { ($0, nil) }) { items, begin, bytes, end in
                        try vault.readValues(of: items, begin: { item, _ in try begin(item) }, bytes: bytes, end: end)
                    }
                } else {
                    Output.out.line(first)
                    var out = JSONWriter()
                    for item in items { try printLine(item, version: nil, value: nil, to: &out) }
                }
            }
        } catch is TextConvTooLarge {
            throw CLIError(
                .damaged,
                "\(path): its values print to more than \(textconvOutputMax) bytes (TEXTCONV_OUTPUT_MAX); nothing printed (without --values the items print)"
            )
        } catch let e as CLIError {
            Output.out.line(terminalSafe(head + ": " + e.message))
            if let line = fileLine(path, header: header) { Output.out.line(line) }
        } catch {
            Output.out.line(terminalSafe(head + ": cannot read the items: \(error)"))
            if let line = fileLine(path, header: header) { Output.out.line(line) }
        }
        return .success
    }

    /// The second line of a vault whose items are not shown (no key, a wrong one, a file it cannot read), so
    /// that two different files never print the same text and `git diff` shows every change: the file's size, its BLAKE2b-128 (as `b2sum -l 128` prints it) and what its last trailer claims, its
    /// generation and item count, which nothing authenticates without the key. Stable: the same bytes give the
    /// same line. Nil if the file cannot be read.
    static func fileLine(_ path: String, header: Header?) -> String? {
        guard let s = try? KeylessSummary(path: path, header: header) else { return nil }
        var line = "# file: \(s.fileSize) bytes, b2sum -l 128: \(Hex.encode(s.digest))"
        if let generation = s.lastGeneration, let items = s.lastItemCount {
            line += "; last trailer (unauthenticated): generation \(generation), \(count(Int(clamping: items), "item"))"
        } else if header != nil {
            line += "; no trailer at its end (an incomplete commit, or damage)"
        }
        return line
    }

    /// Prints `first` and the lines of `lines` with their values, once all of it is known to fit
    /// ``textconvOutputMax``: a first pass reads the values (`read` decodes each record once, in file order,
    /// never more than the limit's bytes of them) and keeps each as it will print, then counts the lines.
    static func printWithValues(
        _ first: String, _ lines: [(Item, String?)],
        read: ([Item], (Item) throws -> Void, (UnsafeRawBufferPointer) throws -> Void, (Item) throws -> Void) throws ->
            Void
    ) throws {
        var counter = JSONCounter(limit: textconvOutputMax)
        do {
            try counter.write(first + "\n")
            var printed: [ItemID: String] = [:]
            var value: [UInt8] = []
            var readBytes = 0
            // A value prints to at least its bytes (JSON) or 4/3 of them (base64): the bytes read are bounded too.
            try read(
                lines.map { $0.0 }, { _ in value = [] },
                { bytes in
                    readBytes += bytes.count
                    guard readBytes <= textconvOutputMax else { throw TextConvTooLarge() }
                    value.append(contentsOf: bytes)
                },
                { item in
                    defer { wipe(&value) }
                    let text = valueText(value)
                    try counter.write(text)
                    printed[item.id] = text
                })
            for (item, version) in lines {
                try printLine(item, version: version, value: printed[item.id], to: &counter)
            }
            var out = JSONWriter()
            out.write(first + "\n")
            for (item, version) in lines { try printLine(item, version: version, value: printed[item.id], to: &out) }
        } catch is JSONCounter.Full {
            throw TextConvTooLarge()
        }
    }

    /// ` value=` and the value as a JSON string when it is UTF-8, else ` value-base64=` and its base64.
    static func valueText(_ bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return " value=" + JSON.string(text) }
        return " value-base64=" + Base64.encode(bytes)
    }

    /// Writes `CLASS NAME size=N [version=TIME/WRITER] {other attributes}`, then `value` (``valueText(_:)``) if
    /// given, to `out`, in pieces (no line string is built: ten thousand items take well under a tenth of a
    /// second); control characters escaped (the JSON parts by JSON's rules).
    static func printLine<Sink: JSONSink>(_ item: Item, version: String?, value: String?, to out: inout Sink) throws {
        try out.write(terminalSafe(item.itemClass.rawValue))
        try out.write(" ")
        try out.write(terminalSafe(ItemPath.name(item)))
        try out.write(" size=")
        try out.write(String(item.size))
        if let version {
            try out.write(" version=")
            try out.write(version)
        }
        try out.write(" ")
        // The name holds service and account when both are strings.
        try out.write(
            ItemJSON.attributes(
                item.attributes,
                excluding: item.service != nil && item.account != nil
                    ? [AttributeName.service, AttributeName.account] : []))
        if let value { try out.write(value) }
        try out.write("\n")
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
            time = (
                ms, iso8601(seconds: Int64(ms / 1000), nanoseconds: Int64(ms % 1000) * 1_000_000, fractionDigits: 3)
            )
        }
        if writer?.id != v.writer {
            writer = (
                v.writer, Hex.encode((0..<8).map { UInt8(truncatingIfNeeded: v.writer >> (56 - 8 * UInt64($0))) })
            )
        }
        return (time?.text ?? "") + "/" + (writer?.text ?? "")
    }
}

/// Lines gathered as bytes: `git textconv` makes a leaf's lines on a worker and writes them in order afterwards.
struct ByteSink: JSONSink {
    private(set) var bytes: [UInt8] = []
    mutating func write(_ s: String) { bytes.append(contentsOf: s.utf8) }
}
