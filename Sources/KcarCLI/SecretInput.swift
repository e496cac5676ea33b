import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Where secrets come from: never argv. A passphrase from `--passphrase-file`, `--passphrase-fd`,
/// `KCAR_PASSPHRASE` (taken out of the environment at start-up, so no child sees it) or a no-echo prompt on
/// the terminal; keys from `--key-file`.
enum SecretInput {
    nonisolated(unsafe) private static var environmentPassphrase: SecureBytes?

    /// Called first thing in main: takes `KCAR_PASSPHRASE` out of the environment and turns core dumps off.
    static func prepareProcess() {
        if let p = getenv("KCAR_PASSPHRASE") {
            let n = strlen(p)
            environmentPassphrase = SecureBytes(copying: UnsafeRawBufferPointer(start: p, count: n))
            memset(p, 0, n)
            unsetenv("KCAR_PASSPHRASE")
        }
        // An interrupted pack or extract removes its temporary files.
        TemporaryFiles.installHandlers()
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        setrlimit(Int32(RLIMIT_CORE.rawValue), &limit)
        // Chunk buffers (up to 1 MiB) come and go by the thousand: keep them in the heap instead of mapping
        // and unmapping fresh pages each time (page faults were a third of extract's time).
        let mmapThreshold: Int32 = -3
        let trimThreshold: Int32 = -1  // M_MMAP_THRESHOLD, M_TRIM_THRESHOLD (malloc.h)
        _ = glibcMallopt(mmapThreshold, 64 << 20)
        _ = glibcMallopt(trimThreshold, 128 << 20)
    }

    /// Opens the vault at `path` with every secret given, tried in turn (`--key-file` and a
    /// passphrase together, or several `--identity` files, as age tries its identities), else with a passphrase
    /// asked on the terminal (unless `ask` is false: then exit 10). A missing vault is reported before any
    /// secret is read, so a wrong vault path is not reported as a missing key file. Returns the vault and the
    /// secret that opened it.
    /// `given`: the secrets, when the caller read them already (a descriptor is read only once).
    static func unlockVault(
        _ path: String, _ args: Arguments, mode: OpenMode = .read, given: [UnlockSecret]? = nil,
        ask: Bool = true, itemsOnDemand: Bool = false
    ) throws -> (Vault, UnlockSecret) {
        // Opened to write, its version 2 commits name this user's writer (as the keychain's do).
        let writer = mode == .write ? WriterIdentity.current() : nil
        return try unlock(path, args, given: given, ask: ask) {
            try Vault.open(path: path, secret: $0, mode: mode, itemsOnDemand: itemsOnDemand, writerID: writer)
        }
    }

    /// As ``unlockVault(_:_:mode:given:ask:itemsOnDemand:)``, for the commands that work on items' versions
    /// (history, restore, merge, sync): the vault's ``Versioning``, its items looked up as needed. A vault whose
    /// format keeps no versions is refused; callers that can say more check ``Header/keepsVersions`` first.
    static func unlockVersioned(
        _ path: String, _ args: Arguments, mode: OpenMode = .read, given: [UnlockSecret]? = nil,
        ask: Bool = true
    ) throws -> Versioning {
        let (vault, _) = try unlockVault(path, args, mode: mode, given: given, ask: ask, itemsOnDemand: true)
        guard let versioning = vault.versioning else {
            throw CLIError(
                .damaged,
                "\(path) is a version 1 vault, which keeps no versions: `kcar upgrade \(path)` makes it version 2")
        }
        return versioning
    }

    /// `kcar recover --drop-damaged`: ``Vault/dropDamagedTail(path:secret:lockTimeout:)`` with the secrets given, in turn.
    static func dropDamagedTail(_ path: String, _ args: Arguments) throws -> (dropped: UInt64, generation: UInt64) {
        try unlock(path, args, given: nil, ask: true) { try Vault.dropDamagedTail(path: path, secret: $0) }.0
    }

    /// Opens `path` with each secret given in turn (or one asked for), going on past a wrong key.
    private static func unlock<V>(
        _ path: String, _ args: Arguments, given: [UnlockSecret]?, ask: Bool,
        open: (UnlockSecret) throws -> V
    ) throws -> (V, UnlockSecret) {
        try requireVaultFile(path)
        args.context.reading(path)
        var candidates = try given ?? givenSecrets(args)
        if candidates.isEmpty {
            guard ask else { throw CLIError(.noSecret, "no secret given for \(path)") }
            candidates = [.passphrase(try prompt("Passphrase: ", confirm: false))]
        }
        for secret in candidates.dropLast() {
            do {
                return (try open(secret), secret)
            } catch let e as VaultError where e.code == .wrongKey {
                continue
            }
        }
        guard let last = candidates.last else { throw CLIError(.noSecret, "no secret given for \(path)") }
        return (try open(last), last)
    }

    /// Fails with an I/O error (exit 8), naming the vault, if there is nothing at `path` to open.
    static func requireVaultFile(_ path: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw VaultError(path: path, errno: errno, "cannot open vault \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Every secret given, in the order they are tried: the group's key (with --group and no other secret),
    /// each --identity (all the keys of each file), --key-file, then a passphrase (--passphrase-file,
    /// --passphrase-fd or KCAR_PASSPHRASE), else the key file KCAR_KEY_FILE names. Empty when none is (nothing is
    /// asked).
    static func givenSecrets(_ args: Arguments) throws -> [UnlockSecret] {
        if let group = args.value("group"), args.value("key-file") == nil, args.value("passphrase-file") == nil,
            args.value("passphrase-fd") == nil, args.all("identity").isEmpty
        {
            return [.keyFile(try ItemCommands.groupKey(args, group))]
        }
        var out: [UnlockSecret] = []
        for path in args.all("identity") { out += try readIdentities(path).map { .keyFile($0) } }
        if let path = args.value("key-file") { out.append(.keyFile(try readKeyFile(path))) }
        if let p = try givenPassphrase(args) { out.append(.passphrase(p)) }
        // git runs `kcar merge` and `kcar git textconv` with the options its config gives, which hold no key:
        // the variable names the key file instead.
        if out.isEmpty, let path = environmentKeyFile { out.append(.keyFile(try readKeyFile(path))) }
        return out
    }

    /// As ``givenSecrets(_:)``; when none is given, the key of keychain group `group` (the vault's header group),
    /// if this user's keychain has it and it can be read: a group's shared copy (SPEC.md Part 3, §K9) opens with
    /// it, so git's merge driver and diff find it with no variable set. The file is authenticated with it as with
    /// any key: a file that only claims the group does not open. Only a group this process may use (its
    /// `KCAR_ACCESS_GROUPS` list, SPEC.md §K2) lends its key, as only those give their items to `kcar get`.
    static func givenSecrets(_ args: Arguments, orKeyOfGroup group: String?) throws -> [UnlockSecret] {
        let given = try givenSecrets(args)
        guard given.isEmpty, let group, let dir = try? ItemCommands.directory(args),
            (try? KeychainStore(directory: dir).entitle(group)) != nil, dir.exists(group), dir.canRead(group),
            let key = try? dir.readKey(group)
        else { return given }
        return [.keyFile(key)]
    }

    /// `KCAR_KEY_FILE`: a key file used when no other secret is given (a path, never a key).
    static let keyFileVariable = "KCAR_KEY_FILE"
    static var environmentKeyFile: String? {
        guard let p = getenv(keyFileVariable), p.pointee != 0 else { return nil }
        return String(cString: p)
    }

    /// The first secret given (see ``givenSecrets(_:)``), nil when none is.
    static func givenSecret(_ args: Arguments) throws -> UnlockSecret? { try givenSecrets(args).first }

    /// Slots for a new vault (pack): key file, recipients, and a passphrase when one is given or when
    /// nothing else is (then asked for twice on the terminal).
    static func newSlots(_ args: Arguments) throws -> [SlotSecret] {
        var slots: [SlotSecret] = []
        if let path = args.value("key-file") { slots.append(.keyFile(try readKeyFile(path))) }
        for r in args.all("recipient") { slots.append(.recipient(try parseRecipient(r))) }
        for f in args.all("recipients-file") { slots += try readRecipientsFile(f).map { .recipient($0) } }
        if let p = try givenPassphrase(args) {
            slots.append(.passphrase(p, try kdf(args)))
        } else if slots.isEmpty, let path = environmentKeyFile {
            // As when opening: the key file KCAR_KEY_FILE names when no secret is given.
            slots.append(.keyFile(try readKeyFile(path)))
        } else if slots.isEmpty {
            slots.append(.passphrase(try prompt("New passphrase: ", confirm: true), try kdf(args)))
        }
        return slots
    }

    static func kdf(_ args: Arguments) throws -> KDFParameters {
        let mem = try args.int("kdf-memory", in: Int(Limits.kdfMemMinKiB / 1024)...Int(Limits.kdfMemMaxKiB / 1024))
        let ops = try args.int("kdf-passes", in: Int(Limits.kdfOpsMin)...Int(Limits.kdfOpsMax))
        return KDFParameters(
            ops: ops.map(UInt32.init) ?? KDFParameters.default.ops,
            memKiB: mem.map { UInt32($0 * 1024) } ?? KDFParameters.default.memKiB)
    }

    static func givenPassphrase(_ args: Arguments) throws -> SecureBytes? {
        if let path = args.value("passphrase-file") {
            return try passphrase(
                from: try readFileSecret(path, what: "passphrase file", allowPipe: true), source: path)
        }
        if let fdText = args.value("passphrase-fd") {
            guard let fd = Int32(fdText), fd >= 0 else {
                throw CLIError.usage("--passphrase-fd takes a file descriptor number")
            }
            return try passphrase(from: try readDescriptor(fd, what: "passphrase fd \(fd)"), source: "fd \(fd)")
        }
        if let p = environmentPassphrase {
            guard p.count > 0 else { throw CLIError.usage("KCAR_PASSPHRASE is empty") }
            return p
        }
        return nil
    }

    /// Strips one trailing newline; refuses an empty passphrase.
    static func passphrase(from raw: SecureBytes, source: String) throws -> SecureBytes {
        try cli { try SecretFiles.passphrase(from: raw, source: source) }
    }

    static func readKeyFile(_ path: String) throws -> SecureBytes { try cli { try SecretFiles.keyFile(path) } }

    static func readFileSecret(_ path: String, what: String, allowPipe: Bool) throws -> SecureBytes {
        try cli { try SecretFiles.read(path, what: what, allowPipe: allowPipe) }
    }

    /// A file opened without blocking (``SecretFiles/open(_:what:allowPipe:)``: a regular file, or with
    /// `allowPipe` an anonymous pipe or the null device).
    static func openInput(_ path: String, what: String, allowPipe: Bool) throws -> Int32 {
        try cli { try SecretFiles.open(path, what: what, allowPipe: allowPipe) }
    }

    /// Reads at most 64 KiB into locked memory.
    static func readDescriptor(_ fd: Int32, what: String) throws -> SecureBytes {
        try cli { try SecretFiles.read(fd, what: what) }
    }

    /// `body`, its ``VaultError`` said as the command line says errors: the message alone, with the exit code
    /// of its code (an unsafe file 15, a secret of the wrong shape 2, a failed system call 5).
    private static func cli<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as VaultError { throw CLIError(ExitCode.of(e.code), e.context) }
    }

    /// Asks on /dev/tty with echo off; twice when `confirm`, and the two answers must be the same `what`
    /// (passphrases, values).
    static func prompt(
        _ text: String, confirm: Bool, what: String = "passphrases",
        missing: String = "no secret given and no terminal to ask on: use --key-file, --identity, --passphrase-file, "
            + "--passphrase-fd, KCAR_PASSPHRASE or KCAR_KEY_FILE"
    ) throws -> SecureBytes {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard tty >= 0 else { throw CLIError(.noSecret, missing) }
        defer { close(tty) }
        let first = try readHidden(tty, text)
        if confirm {
            let second = try readHidden(tty, "Repeat: ")
            guard first.constantTimeEquals(second) else { throw CLIError(.usage, "the \(what) do not match") }
        }
        guard first.count > 0 else { throw CLIError(.usage, "empty \(what.dropLast())") }
        return first
    }

    private static func readHidden(_ tty: Int32, _ text: String) throws -> SecureBytes {
        _ = text.withCString { write(tty, $0, strlen($0)) }
        var old = termios()
        let isTerminal = tcgetattr(tty, &old) == 0
        if isTerminal {
            var quiet = old
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(tty, TCSAFLUSH, &quiet)
        }
        defer {
            if isTerminal { tcsetattr(tty, TCSAFLUSH, &old) }
            _ = write(tty, "\n", 1)
        }
        let cap = 4096
        let buf = SecureBytesBuilder(capacity: cap)
        var count = 0
        var byte: UInt8 = 0
        while count < cap {
            let n = read(tty, &byte, 1)
            if n < 0, errno == EINTR { continue }
            if n <= 0 || byte == 10 { break }
            buf.pointer[count] = byte
            count += 1
        }
        byte = 0
        return buf.finish(count: count)
    }

    /// A recipient: an age X25519 recipient (`age1...`), 64 hex digits, or a file holding one (as `kcar keygen
    /// --x25519` writes FILE.pub, or `age-keygen -y` prints).
    static func parseRecipient(_ text: String) throws -> [UInt8] {
        if let pk = recipient(text) { return pk }
        var st = stat()
        // A file is read only if it is a regular file (a FIFO there is refused, exit 15, never waited on).
        if stat(text, &st) == 0, let pk = recipient(try readSmallText(text).trimmingWhitespace) { return pk }
        throw CLIError.usage("--recipient takes an X25519 public key (age1... or 64 hex digits) or a file holding one")
    }

    /// The public key of one recipient spelled `age1...` or as 64 hex digits; nil for anything else.
    static func recipient(_ text: String) -> [UInt8]? {
        if let pk = AgeKey.recipient(text) { return pk }
        guard text.utf8.count == 64, let pk = Hex.decode(text), pk.count == 32 else { return nil }
        return pk
    }

    /// A recipients file as age reads one (`-R`): one recipient per line (`age1...` or 64 hex digits), blank
    /// lines and lines starting with `#` ignored; a line that is neither is an error naming it (age's plugin
    /// and SSH recipients are not kcar slots). At least one recipient.
    static func readRecipientsFile(_ path: String) throws -> [[UInt8]] {
        let text =
            path == "-"
            ? String(decoding: try StandardStreams.readAll(max: 1 << 20, what: "the recipients file"), as: UTF8.self)
            : try readSmallText(path)
        var out: [[UInt8]] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw).trimmingWhitespace
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let pk = recipient(line) else {
                throw CLIError.usage(
                    "recipients file \(path), line \(n + 1): not an X25519 recipient (age1... or 64 hex digits); "
                        + "age's SSH and plugin recipients are not supported")
            }
            out.append(pk)
        }
        guard !out.isEmpty else { throw CLIError.usage("recipients file \(path) holds no recipient") }
        return out
    }

    /// The secret keys of an identity file (`--identity`, `-i`): a 32-byte kcar key file (a key file or an
    /// X25519 secret key from `kcar keygen`), or an age identity file (`age-keygen`'s output): one
    /// `AGE-SECRET-KEY-1...` per line, blank lines and `#` comments ignored. Each key is tried on the vault's
    /// key-file and X25519 slots.
    static func readIdentities(_ path: String) throws -> [SecureBytes] { try cli { try SecretFiles.identities(path) } }
}

/// glibc's `mallopt` (malloc.h is not part of the Glibc module).
@_silgen_name("mallopt") func glibcMallopt(_ param: Int32, _ value: Int32) -> Int32

func readSmallText(_ path: String) throws -> String {
    let fd = try SecretInput.openInput(path, what: "file", allowPipe: false)
    defer { close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while out.count < 1 << 20 {
        let n = read(fd, &buf, buf.count)
        if n <= 0 { break }
        out.append(contentsOf: buf[0..<n])
    }
    return String(decoding: out, as: UTF8.self)
}

extension String {
    var trimmingWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
