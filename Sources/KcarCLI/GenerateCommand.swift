import VaultFormat

/// `kcar generate` and `add --generate`: a random password (pass generate, KeePassXC's generator), drawn
/// uniformly from an alphabet with no bias (bytes past the last whole multiple of its size are drawn again).
enum GenerateCommand {
    /// Letters and digits: 62 symbols, 5.95 bits each (24 of them: 142 bits).
    static let alphanumeric = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
    /// With `--symbols`: every printable ASCII character but space (94 symbols, 6.55 bits each).
    static let printable = Array(UInt8(0x21)...UInt8(0x7E))
    static let defaultLength = 24
    static let lengths = 8...4096

    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("generate"))
        _ = try args.positionals([])
        var value = try password(args)
        defer { wipe(&value) }
        try StandardStreams.writeValue(value, name: "the password", force: false)
        return .success
    }

    /// Whether `add` or `update` is to store a generated password (`--generate`, which `--length` and `--symbols`
    /// need and `--value-file` excludes).
    static func requested(_ args: Arguments) throws -> Bool {
        let generate = args.flag("generate")
        guard generate || (args.value("length") == nil && !args.flag("symbols")) else {
            throw CLIError.usage("--length and --symbols shape a generated password: give --generate")
        }
        guard !generate || args.value("value-file") == nil else {
            throw CLIError.usage("--generate makes the value: give it or --value-file, not both")
        }
        return generate
    }

    /// A password as `--length` and `--symbols` ask.
    static func password(_ args: Arguments, random: RandomSource = SystemRandom.shared) throws -> [UInt8] {
        let length = try args.int("length", in: lengths) ?? defaultLength
        return password(length: length, alphabet: args.flag("symbols") ? printable : alphanumeric, random: random)
    }

    /// `length` symbols of `alphabet` (at most 256), each equally likely.
    static func password(length: Int, alphabet: [UInt8], random: RandomSource) -> [UInt8] {
        precondition(!alphabet.isEmpty && alphabet.count <= 256)
        let accepted = 256 - 256 % alphabet.count  // bytes below this map to symbols evenly
        var out: [UInt8] = []
        out.reserveCapacity(length)
        var pool = [UInt8](repeating: 0, count: 64)
        defer { wipe(&pool) }
        while out.count < length {
            pool.withUnsafeMutableBytes { random.fill($0) }
            for b in pool where Int(b) < accepted && out.count < length {
                out.append(alphabet[Int(b) % alphabet.count])
            }
        }
        return out
    }
}
