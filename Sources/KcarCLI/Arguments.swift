/// A small, strict command-line parser: long options (`--name VALUE`, `--name=VALUE`), a few short aliases
/// (`-C DIR`, or `-CDIR` with the value attached as getopt reads it), repeatable options, positionals, and
/// `--` to end options. Unknown options are errors.
struct Arguments {
    enum Kind { case flag, value, repeated }
    struct Spec {
        let name: String
        let kind: Kind
        var short: Character? = nil
    }

    private(set) var positionals: [String] = []
    private var flags = Set<String>()
    private var values: [String: [String]] = [:]

    /// The run these arguments were given to (``Invocation``): what the helpers that open files record into.
    let context: CommandContext

    /// The arguments of `call`, parsed by `specs`.
    init(_ call: Invocation, specs: [Spec]) throws {
        try self.init(call.arguments, specs: specs, context: call.context)
    }

    init(_ args: [String], specs: [Spec], context: CommandContext) throws {
        self.context = context
        var byName: [String: Spec] = [:]
        var byShort: [Character: Spec] = [:]
        for s in specs {
            byName[s.name] = s
            if let c = s.short { byShort[c] = s }
        }
        var i = 0
        var optionsEnded = false
        while i < args.count {
            let a = args[i]
            i += 1
            if optionsEnded || a == "-" || !a.hasPrefix("-") {
                positionals.append(a)
                continue
            }
            if a == "--" {
                optionsEnded = true
                continue
            }
            var name: String
            var inline: String?
            if a.hasPrefix("--") {
                name = String(a.dropFirst(2))
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
            } else {
                // Only the option letter is echoed: `-pSECRET` (a password option elsewhere) must not reach a log.
                let letter = a[a.index(after: a.startIndex)]
                guard let s = byShort[letter] else { throw CLIError.usage("unknown option \(a.prefix(2))") }
                name = s.name
                // `-Cdir` is `-C dir`, as tar and getopt read an option's value attached to its letter.
                if a.count > 2 {
                    guard s.kind != .flag else {
                        throw CLIError.usage("-\(letter) takes no value (and flags are not combined): \(a.prefix(2))")
                    }
                    inline = String(a.dropFirst(2))
                }
            }
            guard let spec = byName[name] else { throw CLIError.usage("unknown option --\(name)") }
            switch spec.kind {
            case .flag:
                guard inline == nil else { throw CLIError.usage("--\(name) takes no value") }
                flags.insert(name)
            case .value, .repeated:
                let v: String
                if let inline {
                    v = inline
                } else {
                    guard i < args.count else { throw CLIError.usage("--\(name) needs a value") }
                    v = args[i]
                    i += 1
                }
                if spec.kind == .value, values[name] != nil { throw CLIError.usage("--\(name) given twice") }
                values[name, default: []].append(v)
            }
        }
    }

    /// The names of the options given (flags and options with values).
    var given: Set<String> { flags.union(values.keys) }

    /// These arguments with option `name` given `value` (a selector a positional argument stands for).
    func setting(_ name: String, to value: String) -> Arguments {
        var a = self
        a.values[name] = [value]
        return a
    }

    /// These arguments without their positionals (once a command has read them as options).
    func droppingPositionals() -> Arguments {
        var a = self
        a.positionals = []
        return a
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }

    func int(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let v = value(name) else { return nil }
        guard let n = Int(v), range.contains(n) else {
            throw CLIError.usage("--\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    /// Exactly `count` positionals (or between min and max), named for the usage message.
    func positionals(_ names: [String], optional: Int = 0) throws -> [String] {
        guard positionals.count >= names.count - optional, positionals.count <= names.count else {
            if positionals.count > names.count {
                let extra = positionals[names.count]
                throw CLIError.usage(
                    names.isEmpty
                        ? "unexpected argument '\(extra)': this command takes options only"
                        : "unexpected argument '\(extra)' after \(names.joined(separator: " "))")
            }
            throw CLIError.usage("expected \(names.joined(separator: " "))")
        }
        return positionals
    }
}
