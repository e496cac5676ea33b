import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar keygen FILE`: a new random 32-byte key file (with `--x25519`, an age identity and its recipient).
enum KeygenCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("keygen"))
        let path = try args.positionals(["FILE"])[0]
        if path == "-" { return try toStandardOutput(x25519: args.flag("x25519")) }
        let force = args.flag("force")
        let pubPath = path + ".pub"
        // Both or neither: both names are checked and both files written in full before
        // either is given its name; if the second cannot be placed the first is removed again.
        if !force {
            for p in args.flag("x25519") ? [path, pubPath] : [path] where Keys.exists(p) {
                throw CLIError(.exists, "\(p) exists (--force replaces it)")
            }
        }
        let key = SecureBytes(copying: randomBytes(32))
        let secret = try key.withUnsafeBytes { try StagedFile(path, mode: 0o600, bytes: Array($0)) }
        guard args.flag("x25519") else {
            try secret.place(force: force)
            return .success
        }
        // The public key as age spells a recipient (age1...), which --recipient, -R files and age itself take.
        let pk = AgeKey.recipientString(X25519.publicKey(secretKey: key))
        let pub = try StagedFile(pubPath, mode: 0o644, bytes: Array((pk + "\n").utf8))
        try secret.place(force: force)
        do { try pub.place(force: force) } catch {
            unlink(path)
            throw error
        }
        Output.out.line(pk)
        return .success
    }

    /// `keygen -`: the 32 bytes to standard output, never to a terminal (not even with --force: a secret key
    /// on a screen has leaked). With --x25519 the public key goes to standard error, as age-keygen prints it.
    static func toStandardOutput(x25519: Bool) throws -> ExitCode {
        guard !Output.out.isTerminal else {
            throw CLIError.usage(
                "refusing to write a secret key to a terminal; redirect standard output or give a FILE")
        }
        let key = SecureBytes(copying: randomBytes(32))
        try key.withUnsafeBytes { try Output.out.writeBytes($0) }
        if x25519 { Output.err.line("public key: " + AgeKey.recipientString(X25519.publicKey(secretKey: key))) }
        return .success
    }
}
