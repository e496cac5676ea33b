import KeyedArchive
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar archive show FILE [--json]` and `kcar archive convert IN OUT [--to kcar|nskeyed] [--deterministic]`.
enum ArchiveCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        try CLI.subcommand("archive", argv, [("show", "FILE", show), ("convert", "IN OUT", convert)])
    }

    static func show(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("archive", "show"))
        let path = try args.positionals(["FILE"])[0]
        let indent = !args.flag("json")
        // The order of every set and any-key dictionary is worked out once, for both passes.
        let value = try ArchiveSortKeys().ordered(load(path, args.context))
        // A first pass counts the bytes, so nothing is printed unless all of it fits `SHOW_OUTPUT_MAX`.
        var counter = JSONPrinter(indent: indent, sink: JSONCounter())
        do {
            try counter.print(value)
        } catch is JSONCounter.Full {
            throw CLIError(
                .damaged,
                "\(path): the value prints to more than \(JSONPrinter<JSONCounter>.outputMax) bytes of JSON; not printed"
            )
        }
        var printer = JSONPrinter(indent: indent, sink: JSONWriter())
        try printer.print(value)
        printer.sink.finish()
        return .success
    }

    static func convert(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("archive", "convert"))
        let p = try args.positionals(["IN", "OUT"])
        let (value, wasNSKeyed) = try loadDetecting(p[0], args.context)
        // By default a conversion goes to the other format.
        let target = args.value("to") ?? (wasNSKeyed ? "kcar" : "nskeyed")
        let bytes: [UInt8]
        switch target {
        // Always in canonical order: the output never depends on the process's hash seed (`--deterministic`
        // is accepted, and is the default).
        case "kcar": bytes = try ArchiveSerialization.bytes(from: value, options: .deterministic)
        case "nskeyed": bytes = try NSKeyedArchive.exportValue(value)
        default: throw CLIError.usage("--to takes kcar or nskeyed")
        }
        if p[1] == "-" {
            try StandardStreams.refuseTerminal("an archive", force: args.flag("force"))
            try bytes.withUnsafeBytes { try Output.out.writeBytes($0) }
        } else {
            try Keys.writeFile(p[1], bytes, mode: 0o600, force: args.flag("force"))
        }
        return .success
    }

    /// Reads a file of at most the archive size limit and decodes it.
    static func load(_ path: String, _ context: CommandContext) throws -> ArchiveValue {
        try loadDetecting(path, context).0
    }

    /// The value of a kcar archive or an NSKeyedArchiver archive (binary or XML plist), told apart by their
    /// first bytes; and whether it was the latter.
    static func loadDetecting(_ path: String, _ context: CommandContext) throws -> (ArchiveValue, Bool) {
        context.reading(path)
        let bytes = try readLimited(path, max: ArchiveLimits.default.maxBytes)
        if NSKeyedArchive.isKeyedArchive(bytes) { return (try NSKeyedArchive.importValue(from: bytes), true) }
        return (try ArchiveSerialization.value(from: bytes), false)
    }

    static func readLimited(_ path: String, max: Int) throws -> [UInt8] {
        if path == "-" { return try StandardStreams.readAll(max: max, what: "the archive") }
        // Regular files only, opened without blocking: a FIFO would hang the command.
        let fd = try SecretInput.openInput(path, what: "archive", allowPipe: false)
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CLIError(.io, "cannot stat \(path)") }
        guard st.st_size <= max else {
            throw CLIError(.damaged, "\(path): \(st.st_size) bytes, more than the \(max)-byte limit")
        }
        guard let out = StandardStreams.readExactly(fd, Int(st.st_size)) else {
            throw CLIError(.io, "cannot read \(path)")
        }
        return out
    }
}

/// Where ``JSONPrinter`` puts its bytes.
protocol JSONSink {
    mutating func write(_ s: String) throws
    /// `data` in base64 (RFC 4648 §4, padded).
    mutating func writeBase64(_ data: [UInt8]) throws
}

extension JSONSink {
    mutating func writeBase64(_ data: [UInt8]) throws { try write(Base64.encode(data)) }
}

/// Counts the bytes a print would write, and stops once they pass `limit` (``JSONPrinter/outputMax`` unless
/// told: `git textconv --values` counts its lines against its own).
struct JSONCounter: JSONSink {
    struct Full: Error {}
    var count = 0
    var limit = JSONPrinter<JSONCounter>.outputMax

    mutating func write(_ s: String) throws {
        count += s.utf8.count
        guard count <= limit else { throw Full() }
    }

    /// The length of the base64, without encoding it.
    mutating func writeBase64(_ data: [UInt8]) throws {
        count += (data.count + 2) / 3 * 4
        guard count <= limit else { throw Full() }
    }
}

/// Writes to standard output through its 64 KiB buffer: output is streamed, never built whole.
struct JSONWriter: JSONSink {
    mutating func write(_ s: String) { Output.out.write(s) }
    func finish() { Output.out.write("\n") }
}

/// The JSON form of a value, `kcar archive show` (SPEC.md Part 2 §A12): scalars as themselves; data, dates,
/// UUIDs, URLs, sets, any-key dictionaries, objects, non-finite doubles and dictionaries with a key starting
/// with `$` as objects of one `$` key (objects: `$class` and `$fields`); shared values printed at every use.
/// Recursion is bounded: a value read from an archive is at most `DEPTH_MAX` deep, references expanded. Sets and
/// any-key dictionaries come in the order ``ArchiveSortKeys/ordered(_:)`` works out, once for the whole value,
/// however often a shared value holding them is printed.
struct JSONPrinter<Sink: JSONSink> {
    /// `SHOW_OUTPUT_MAX`: bytes of JSON `archive show` prints at most (a value that would print more is
    /// refused before anything is printed: exit 4).
    static var outputMax: Int { 67_108_864 }

    let indent: Bool
    var sink: Sink
    /// One `SORT_KEYS_MAX` budget for the order of every set and any-key dictionary printed.
    let sortKeys = ArchiveSortKeys()

    /// A newline and the indentation of each depth up to 64, made once: every line of an indented print
    /// starts with one (made anew for each line, they were a fifth of the time of a large print).
    private let newlines: [String]

    init(indent: Bool, sink: Sink) {
        self.indent = indent
        newlines = indent ? (0...64).map { "\n" + String(repeating: "  ", count: $0) } : []
        self.sink = sink
    }

    /// Prints `v`, whose order is worked out first.
    mutating func print(_ v: ArchiveValue) throws { try print(sortKeys.ordered(v)) }

    mutating func print(_ o: ArchiveOrderedValue, depth: Int = 0) throws {
        switch o.value {
        case .null: try sink.write("null")
        case .bool(let b): try sink.write(b ? "true" : "false")
        case .int(let i): try sink.write(String(i))
        case .uint(let u): try sink.write(String(u))
        case .double(let d): try double(d, depth)
        case .string(let s): try sink.write(JSON.string(s))
        case .data(let d):
            try sink.write("{" + key("$data", depth) + "\"")
            try sink.writeBase64(Array(d))
            try sink.write("\"" + newline(depth) + "}")
        case .date(let d):
            let t = d.timeIntervalSinceReferenceDate
            if let iso = Self.iso8601(sinceReferenceDate: t) {
                try text("$date", iso, depth)
            } else {
                try sink.write("{" + key("$date", depth) + "{" + key("$seconds", depth + 1))
                try double(t, depth + 2)
                try sink.write(newline(depth + 1) + "}" + newline(depth) + "}")
            }
        case .uuid(let u): try text("$uuid", u.uuidString.uppercased(), depth)
        case .url(let url):
            if let base = url.baseURL {
                try sink.write(
                    "{" + key("$url", depth) + "{" + key("base", depth + 1) + JSON.string(base.absoluteString) + ","
                        + key("relative", depth + 1) + JSON.string(url.relativeString) + newline(depth + 1) + "}"
                        + newline(depth) + "}")
            } else {
                try text("$url", url.relativeString, depth)
            }
        case .array: try array(o.items, depth)
        case .dictionary(let d):
            let pairs = o.fields.map { ($0.key, $0.value) }
            // A key starting with `$` could be read as one of the forms above: such a dictionary is wrapped.
            if d.keys.contains(where: { $0.utf8.first == UInt8(ascii: "$") }) {
                try sink.write("{" + key("$dictionary", depth))
                try object(pairs, depth + 1)
                try sink.write(newline(depth) + "}")
            } else {
                try object(pairs, depth)
            }
        case .anyKeyDictionary:
            try sink.write("{" + key("$dict", depth) + "[")
            for (i, p) in o.entries.enumerated() {
                if i > 0 { try sink.write(",") }
                try sink.write(newline(depth + 2) + "[")
                try print(p.key, depth: depth + 2)
                try sink.write(indent ? ", " : ",")
                try print(p.value, depth: depth + 2)
                try sink.write("]")
            }
            try sink.write(newline(depth + 1) + "]" + newline(depth) + "}")
        case .set:
            try sink.write("{" + key("$set", depth))
            try array(o.elements, depth + 1)
            try sink.write(newline(depth) + "}")
        case .object(let x):
            try sink.write("{" + key("$class", depth) + JSON.string(x.className) + "," + key("$fields", depth))
            try object(o.fields.map { ($0.key, $0.value) }, depth + 1)
            try sink.write(newline(depth) + "}")
        case .shared: try print(o.contents, depth: depth)
        }
    }

    /// A finite double as a JSON number (`1.0`, `-0.0`, `0.1`, `1e+15`: Swift's shortest form that reads back
    /// the same, with `.0` on integral values below 10^15); NaN and the infinities as `{"$double": ...}`.
    private mutating func double(_ d: Double, _ depth: Int) throws {
        if d.isNaN || d.isInfinite {
            try text("$double", d.isNaN ? "NaN" : d < 0 ? "-Infinity" : "Infinity", depth)
        } else if d == d.rounded(), abs(d) < 1e15 {
            try sink.write(d.sign == .minus && d == 0 ? "-0.0" : String(Int64(d)) + ".0")
        } else {
            try sink.write("\(d)")
        }
    }

    /// ISO 8601 in UTC, to the nearest nanosecond, of a date `t` seconds after 2001-01-01T00:00:00Z, for the
    /// years 0000 to 9999; nil for any other date (earlier, later, NaN or infinite).
    static func iso8601(sinceReferenceDate t: Double) -> String? {
        // 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z, in seconds since 2001-01-01.
        let first = -63_145_526_400.0
        let end = 252_423_993_600.0
        guard t.isFinite, t >= first, t < end else { return nil }
        let whole = t.rounded(.down)
        var seconds = Int64(whole)  // within the range above: exact
        var nanoseconds = Int64(((t - whole) * 1e9).rounded())  // t - whole is exact, in [0, 1)
        if nanoseconds == 1_000_000_000 {
            seconds += 1
            nanoseconds = 0
        }
        guard Double(seconds) < end else { return nil }
        return KcarCLI.iso8601(seconds: seconds + 978_307_200, nanoseconds: nanoseconds)
    }

    private func newline(_ depth: Int) -> String {
        guard indent else { return "" }
        return depth < newlines.count ? newlines[depth] : "\n" + String(repeating: "  ", count: depth)
    }
    private func key(_ k: String, _ depth: Int) -> String {
        newline(depth + 1) + JSON.string(k) + (indent ? ": " : ":")
    }

    /// `{"<name>": "<string>"}`.
    private mutating func text(_ name: String, _ string: String, _ depth: Int) throws {
        try object([(name, ArchiveOrderedValue(unordered: .string(string)))], depth)
    }

    private mutating func object(_ pairs: [(String, ArchiveOrderedValue)], _ depth: Int) throws {
        try sink.write("{")
        for (i, (k, v)) in pairs.enumerated() {
            if i > 0 { try sink.write(",") }
            try sink.write(key(k, depth))
            try print(v, depth: depth + 1)
        }
        try sink.write(pairs.isEmpty ? "}" : newline(depth) + "}")
    }

    private mutating func array(_ items: [ArchiveOrderedValue], _ depth: Int) throws {
        try sink.write("[")
        for (i, v) in items.enumerated() {
            if i > 0 { try sink.write(",") }
            try sink.write(newline(depth + 1))
            try print(v, depth: depth + 1)
        }
        try sink.write(items.isEmpty ? "]" : newline(depth) + "]")
    }
}
