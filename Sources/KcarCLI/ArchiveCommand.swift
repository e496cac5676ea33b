#if canImport(Glibc)
import Glibc
#endif
import KeyedArchive
import VaultFormat

/// `kcar archive show FILE [--json]` and `kcar archive convert IN OUT [--to kcar|nskeyed] [--deterministic]`.
enum ArchiveCommand {
    static func run(_ argv: [String]) throws -> ExitCode {
        guard let sub = argv.first else { throw CLIError.usage("expected `archive show FILE` or `archive convert IN OUT`") }
        let rest = Array(argv.dropFirst())
        switch sub {
        case "show": return try show(rest)
        case "convert": return try convert(rest)
        default: throw CLIError.usage("unknown archive command '\(sub)' (show, convert)")
        }
    }

    static func show(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: [.init(name: "json", kind: .flag)])
        let path = try args.positionals(["FILE"])[0]
        let value = try load(path)
        var printer = JSONPrinter(indent: !args.flag("json"))
        try printer.print(value)
        Output.out.line(printer.out)
        return .success
    }

    static func convert(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: [.init(name: "to", kind: .value), .init(name: "deterministic", kind: .flag),
                                               .init(name: "force", kind: .flag)])
        let p = try args.positionals(["IN", "OUT"])
        let (value, wasNSKeyed) = try loadDetecting(p[0])
        // By default a conversion goes to the other format.
        let target = args.value("to") ?? (wasNSKeyed ? "kcar" : "nskeyed")
        let bytes: [UInt8]
        switch target {
        case "kcar": bytes = try ArchiveSerialization.bytes(from: value, options: args.flag("deterministic") ? .deterministic : [])
        case "nskeyed": bytes = try NSKeyedArchive.exportValue(value)
        default: throw CLIError.usage("--to takes kcar or nskeyed")
        }
        try Keys.writeFile(p[1], bytes, mode: 0o600, force: args.flag("force"))
        return .success
    }

    /// Reads a file of at most the archive size limit and decodes it.
    static func load(_ path: String) throws -> ArchiveValue { try loadDetecting(path).0 }

    /// The value of a kcar archive or an NSKeyedArchiver archive (binary or XML plist), told apart by their
    /// first bytes; and whether it was the latter.
    static func loadDetecting(_ path: String) throws -> (ArchiveValue, Bool) {
        let bytes = try readLimited(path, max: ArchiveLimits.default.maxBytes)
        if NSKeyedArchive.isKeyedArchive(bytes) { return (try NSKeyedArchive.importValue(from: bytes), true) }
        return (try ArchiveSerialization.value(from: bytes), false)
    }

    static func readLimited(_ path: String, max: Int) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError(.io, "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CLIError(.io, "cannot stat \(path)") }
        guard st.st_size <= max else { throw CLIError(.damaged, "\(path): \(st.st_size) bytes, more than the \(max)-byte limit") }
        var out = [UInt8](repeating: 0, count: Int(st.st_size))
        var done = 0
        while done < out.count {
            let n = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw CLIError(.io, "cannot read \(path)") }
            done += n
        }
        return out
    }
}

/// The JSON mapping of `kcar archive show --json` (README): scalars as themselves; data, dates, UUIDs, URLs,
/// sets, any-key dictionaries and objects as one-key objects (`$data`, `$date`, `$uuid`, `$url`, `$set`,
/// `$dict`, `$class`/`$fields`); shared values printed expanded, within the expansion budget.
struct JSONPrinter {
    let indent: Bool
    var out = ""
    var printed = 0
    let budget = ArchiveLimits.default.maxExpandedValues

    init(indent: Bool) { self.indent = indent }

    mutating func print(_ v: ArchiveValue, depth: Int = 0) throws {
        printed += 1
        guard printed <= budget else {
            throw CLIError(.damaged, "the value expands to more than \(budget) values; not printed")
        }
        switch v {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .uint(let u): out += String(u)
        case .double(let d):
            if d.isNaN || d.isInfinite {
                try object([("$double", .string(d.isNaN ? "NaN" : d < 0 ? "-Infinity" : "Infinity"))], depth)
            } else if d == d.rounded(), abs(d) < 1e15 {
                out += (d.sign == .minus && d == 0 ? "-0.0" : String(Int64(d)) + ".0")
            } else {
                out += "\(d)"
            }
        case .string(let s): out += JSON.string(s)
        case .data(let d): try object([("$data", .string(Base64.encode(Array(d))))], depth)
        case .date(let d):
            let t = d.timeIntervalSince1970
            let whole = t.rounded(.down)
            let text = t.isFinite && abs(whole) < 1e15
                ? iso8601(seconds: Int64(whole), nanoseconds: Int64(((t - whole) * 1e9).rounded()))
                : "\(t)"
            try object([("$date", .string(text))], depth)
        case .uuid(let u): try object([("$uuid", .string(u.uuidString.uppercased()))], depth)
        case .url(let url):
            if let base = url.baseURL {
                out += "{" + key("$url", depth) + "{" + key("base", depth + 1) + JSON.string(base.absoluteString) + ","
                    + key("relative", depth + 1) + JSON.string(url.relativeString) + newline(depth) + "}" + newline(depth) + "}"
            } else {
                try object([("$url", .string(url.relativeString))], depth)
            }
        case .array(let a): try array(a, depth)
        case .dictionary(let d):
            try object(d.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { ($0.key, $0.value) }, depth)
        case .anyKeyDictionary(let d):
            let pairs = try d.map { k, v in (try ArchiveSerialization.sortKey(of: k), k, v) }
                .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            out += "{" + key("$dict", depth) + "["
            for (i, p) in pairs.enumerated() {
                if i > 0 { out += "," }
                out += newline(depth + 2) + "["
                try print(p.1, depth: depth + 2)
                out += indent ? ", " : ","
                try print(p.2, depth: depth + 2)
                out += "]"
            }
            out += newline(depth + 1) + "]" + newline(depth) + "}"
        case .set(let s):
            let sorted = try s.map { (try ArchiveSerialization.sortKey(of: $0), $0) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
            out += "{" + key("$set", depth)
            try array(sorted.map(\.1), depth + 1)
            out += newline(depth) + "}"
        case .object(let o):
            out += "{" + key("$class", depth) + JSON.string(o.className) + "," + key("$fields", depth)
            try object(o.fields.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { ($0.key, $0.value) }, depth + 1)
            out += newline(depth) + "}"
        case .shared(let box): try print(box.value, depth: depth)
        }
    }

    private func newline(_ depth: Int) -> String { indent ? "\n" + String(repeating: "  ", count: depth) : "" }
    private func key(_ k: String, _ depth: Int) -> String { newline(depth + 1) + JSON.string(k) + (indent ? ": " : ":") }

    private mutating func object(_ pairs: [(String, ArchiveValue)], _ depth: Int) throws {
        out += "{"
        for (i, (k, v)) in pairs.enumerated() {
            if i > 0 { out += "," }
            out += key(k, depth)
            try print(v, depth: depth + 1)
        }
        out += pairs.isEmpty ? "}" : newline(depth) + "}"
    }

    private mutating func array(_ items: [ArchiveValue], _ depth: Int) throws {
        out += "["
        for (i, v) in items.enumerated() {
            if i > 0 { out += "," }
            out += newline(depth + 1)
            try print(v, depth: depth + 1)
        }
        out += items.isEmpty ? "]" : newline(depth) + "]"
    }
}
