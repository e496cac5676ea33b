import KeyedArchive

// Target `cli`: the command-line parser (Sources/KcarCLI/Arguments.swift) and the pure helpers that take
// its results (KDF options, item names, recipients). Input: NUL-separated arguments; when the first names a
// command, the rest are parsed with that command's options, otherwise with all options at once.
// Nothing here touches files, descriptors or the terminal.
@testable import KcarCLI
@testable import VaultFormat

typealias Spec = Arguments.Spec

/// The option lists of the commands, from the command table the parser reads them from; archive's two
/// subcommands by their own names.
let commands: [(name: String, specs: [Spec])] =
    CLI.commands.map { ($0.name, $0.page.specs()) }
    + ["show", "convert"].map { ($0, CLI.specs("archive", $0)) }
let allSpecs: [Spec] = {
    var seen = Set<String>()
    return commands.flatMap(\.specs).filter { seen.insert($0.name).inserted }
}()

func fuzzOne(_ input: [UInt8]) {
    let argv = input.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    let specs: [Spec]
    let rest: [String]
    if let first = argv.first, let c = commands.first(where: { $0.name == first }) {
        (specs, rest) = (c.specs, Array(argv.dropFirst()))
    } else {
        (specs, rest) = (allSpecs, argv)
    }
    let args: Arguments
    do {
        args = try Arguments(rest, specs: specs, context: CommandContext())
    } catch let e as CLIError {
        precondition(e.code == .usage && !e.message.isEmpty)
        return
    } catch {
        fatalError("not a CLIError: \(error)")
    }
    precondition(args.positionals.count <= rest.count)
    for p in args.positionals { precondition(rest.contains(p), "positional \(p) is not an argument") }
    for s in specs {
        switch s.kind {
        case .flag: precondition(args.value(s.name) == nil)
        case .value: precondition(!args.flag(s.name) && args.all(s.name).count <= 1)
        case .repeated: precondition(!args.flag(s.name))
        }
    }
    _ = try? args.int("level", in: 0...12)
    _ = try? SecretInput.kdf(args)
    _ = try? args.positionals(["VAULT", "DIR"], optional: 1)
    for name in ["passphrase-fd", "new-passphrase-fd"] { _ = args.value(name).flatMap { Int32($0) } }
    for r in args.all("recipient") + args.all("add-recipient") { _ = Hex.decode(r) }
    // Text from files as the terminal is shown it: nothing a terminal acts on survives the escaping.
    let shown = terminalSafe(String(decoding: input, as: UTF8.self))
    precondition(
        !shown.unicodeScalars.contains { u in
            u.value < 0x20 || (0x7F...0x9F).contains(u.value) || (0x2028...0x202E).contains(u.value)
                || (0x2066...0x2069).contains(u.value)
        }, "terminalSafe let a control character through")
    precondition(
        !JSON.string(String(decoding: input, as: UTF8.self)).unicodeScalars.contains(where: isTerminalControl),
        "JSON.string let a control character through")
    // Item files: the reader never traps, and what it accepts is within its limits and Stream-Safe.
    var parser = ItemFile.Parser(input)
    if let count = try? parser.document({ e in
        precondition(e.attributes.count <= Limits.attrsMax && StreamSafe.isStreamSafe(e.itemClass.rawValue))
        for (name, _) in e.attributes {
            precondition(StreamSafe.isStreamSafe(name) && name.utf8.count <= Limits.attrNameMax)
        }
    }) {
        precondition(count <= ItemFile.itemsMax)
    }
    // Base64 as item files carry values: encoding always decodes back.
    precondition(Base64.decode(Array(Base64.encode(input).utf8)) == input, "base64 does not round-trip")
    // Item names: parsing never traps, and encoding a component decodes back to it.
    for p in args.positionals {
        _ = ItemPath.parse(p)
        for slash in [true, false] {
            guard ItemPath.decode(ItemPath.component(p, slash: slash)) == p else {
                fatalError("item name component \(p) does not round-trip")
            }
        }
    }
}

func seeds(repo: String) -> [[UInt8]] {
    let lines: [[String]] = [
        [
            "pack", "v.kcv", "dir", "--key-file", "k", "--level=9", "--exclude", "*.tmp", "--exclude=x", "-q",
            "--recipient", String(repeating: "ab", count: 32)
        ],
        ["pack", "-", "dir", "--passphrase-fd", "3", "--kdf-memory", "64", "--kdf-passes=2", "--group", "com.example"],
        [
            "extract", "v.kcv", "-C", "out", "svc/%2541", "example.com/alice", "%id/00112233445566778899aabbccddeeff",
            "--", "--force"
        ],
        ["list", "v.kcv", "--json", "--passphrase-file=p"],
        [
            "passwd", "v.kcv", "--key-file", "k", "--add-key-file", "k2", "--remove-slot", "0", "--new-passphrase-fd",
            "4"
        ],
        ["verify", "v.kcv", "--no-key", "--json"],
        ["keygen", "k", "--x25519"],
        ["convert", "a.kca", "b.plist", "--to=nskeyed", "--deterministic"],
        ["show", "-", "--json", "--json"],
        ["svc/a%2Fb/%/%2E%2E", "-C", "--unknown", "-x"]
    ]
    let itemFiles = [
        #"{"format": "kcar-items", "version": 1, "group": "g", "x": [[1.5e3, null, {"a": true}]], "items": [{"class": "genp", "attributes": {"svce": "s\u00e9", "port": -1, "mdat": {"$date": "2026-11-30T12:00:00Z"}, "gena": {"$data": "AAE="}}, "value": "c2VjcmV0"}]}"#,
        "{\"format\": \"kcar-items\", \"version\": 1, \"items\": [{\"class\": \"genp\", \"attributes\": {\"a\u{301}\u{302}\": \"\u{1B}[2J\"}, \"value\": \"\"}]}"
    ]
    return lines.map { Array($0.joined(separator: "\u{0}").utf8) } + itemFiles.map { Array($0.utf8) }
}
