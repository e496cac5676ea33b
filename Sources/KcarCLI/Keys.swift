import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// A file written in full under a temporary name next to its path (`.BASE.<12 hex>.tmp`, created
/// exclusively, never through a link, locked while written), synced, and only then given its name: readers
/// never see a partial file, and a failure leaves nothing (the temporary name is removed on failure, when the
/// value is dropped unplaced, and on a fatal signal; one a killed kcar left is removed by the next run that
/// stages a file of that name, as nobody locks it).
final class StagedFile {
    let path: String
    let temp: String
    private var fd: Int32
    /// Whether the temporary name is still ours to remove (not yet renamed into place).
    private var tempExists = true
    private let registration: Int?

    init(_ path: String, mode: mode_t) throws {
        self.path = path
        let dir = directoryOf(path)
        let base = path.split(separator: "/").last.map(String.init) ?? path
        let dirFD = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirFD >= 0 else { throw CLIError(.io, "cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(dirFD) }
        let form = LockedTemporary.staged(base)
        form.removeStale(in: dirFD)
        let (fd, name, registration) = try form.create(in: dirFD, mode: mode, display: path) {
            TemporaryFiles.register(dir + "/" + $0)
        }
        self.fd = fd
        temp = dir + "/" + name
        self.registration = registration
    }

    convenience init(_ path: String, mode: mode_t, bytes: [UInt8]) throws {
        try self.init(path, mode: mode)
        var data = bytes
        defer { wipe(&data) }
        try append(data)
    }

    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw CLIError(.io, "cannot write \(path): \(String(cString: strerror(errno)))") }
            done += n
        }
    }

    /// Syncs and gives the file its name: with `force` by rename (replacing what is there), else by link
    /// (failing with exit 7 if the name exists, so a concurrent creator is never overwritten).
    func place(force: Bool) throws {
        guard fsync(fd) == 0 else { throw CLIError(.io, "cannot write \(path): \(String(cString: strerror(errno)))") }
        let ok = force ? rename(temp, path) == 0 : link(temp, path) == 0
        let err = errno
        if ok, force { tempExists = false }
        discard()
        guard ok else {
            if err == EEXIST { throw CLIError(.exists, "\(path) exists (--force replaces it)") }
            throw CLIError(.io, "cannot create \(path): \(String(cString: strerror(err)))")
        }
    }

    private func discard() {
        if fd >= 0 {
            close(fd)
            fd = -1
        }
        if tempExists { unlink(temp) }
        tempExists = false
        TemporaryFiles.unregister(registration)
    }

    deinit { discard() }
}

/// `kcar keygen`, `passwd`, `rekey`, `compact`, `recover`.
enum Keys {
    static func keygen(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("keygen"))
        let path = try args.positionals(["FILE"])[0]
        if path == "-" { return try keygenToStdout(x25519: args.flag("x25519")) }
        let force = args.flag("force")
        let pubPath = path + ".pub"
        // Both or neither: both names are checked and both files written in full before
        // either is given its name; if the second cannot be placed the first is removed again.
        if !force {
            for p in args.flag("x25519") ? [path, pubPath] : [path] where exists(p) {
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
    static func keygenToStdout(x25519: Bool) throws -> ExitCode {
        guard !Output.out.isTerminal else {
            throw CLIError.usage(
                "refusing to write a secret key to a terminal; redirect standard output or give a FILE")
        }
        let key = SecureBytes(copying: randomBytes(32))
        try key.withUnsafeBytes { try Output.out.writeBytes($0) }
        if x25519 { Output.err.line("public key: " + AgeKey.recipientString(X25519.publicKey(secretKey: key))) }
        return .success
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Writes a new file, refusing to replace one unless `force`.
    static func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t, force: Bool) throws {
        if !force, exists(path) { throw CLIError(.exists, "\(path) exists (--force replaces it)") }
        let staged = try StagedFile(path, mode: mode)
        try staged.append(bytes)
        try staged.place(force: force)
    }

    /// The slots named by --add-* options.
    static func addedSlots(_ args: Arguments, passphraseWanted: Bool) throws -> [SlotSecret] {
        var slots: [SlotSecret] = []
        for k in args.all("add-key-file") { slots.append(.keyFile(try Secrets.readKeyFile(k))) }
        for r in args.all("add-recipient") { slots.append(.recipient(try Secrets.parseRecipient(r))) }
        for f in args.all("add-recipients-file") { slots += try Secrets.readRecipientsFile(f).map { .recipient($0) } }
        if passphraseWanted || args.flag("add-passphrase") {
            slots.append(.passphrase(try newPassphrase(args), try Secrets.kdf(args)))
        }
        return slots
    }

    static func newPassphrase(_ args: Arguments) throws -> SecureBytes {
        if let f = args.value("new-passphrase-file") {
            return try Secrets.passphrase(
                from: try Secrets.readFileSecret(f, what: "passphrase file", allowPipe: true), source: f)
        }
        if let fdText = args.value("new-passphrase-fd") {
            guard let fd = Int32(fdText), fd >= 0 else {
                throw CLIError.usage("--new-passphrase-fd takes a file descriptor number")
            }
            return try Secrets.passphrase(from: try Secrets.readDescriptor(fd, what: "fd \(fd)"), source: "fd \(fd)")
        }
        // Without a terminal, what is missing is the new passphrase (the old one opened the vault already).
        return try Secrets.prompt(
            "New passphrase: ", confirm: true,
            missing: "no new passphrase given and no terminal to ask on: "
                + "give it with --new-passphrase-file FILE or --new-passphrase-fd N")
    }

    static func passwd(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("passwd"))
        let path = try vaultArguments(args, ["VAULT"])[0]
        try refuseStandardInput(path)
        let given = try Secrets.givenSecrets(args)
        let (vault, secret) = try Secrets.unlockVault(path, args, mode: .write, given: given)
        try ItemCommands.checkRollback(vault, args)
        var remove = Set<Int>()
        for r in args.all("remove-slot") {
            guard let n = Int(r), vault.header.slots.indices.contains(n) else {
                throw CLIError.usage("--remove-slot takes a slot number from 0 to \(vault.header.slots.count - 1)")
            }
            if args.value("group") != nil, case .keyFile = vault.header.slots[n] {
                throw CLIError.usage(
                    "slot \(n) is the key-file slot the keychain opens group \(vault.header.group) with; it stays")
            }
            remove.insert(n)
        }
        let explicit =
            !remove.isEmpty || args.flag("add-passphrase") || !args.all("add-key-file").isEmpty
            || !args.all("add-recipient").isEmpty
            || !args.all("add-recipients-file").isEmpty
        if !explicit {
            // Change the passphrase that opened the vault.
            guard case .passphrase = vault.header.slots[vault.unlockedSlot] else {
                throw CLIError.usage(
                    "the vault was opened with a key, not a passphrase: say what to change (--add-passphrase, --remove-slot N, ...)"
                )
            }
            remove.insert(vault.unlockedSlot)
        }
        let add = try addedSlots(args, passphraseWanted: !explicit)
        guard remove.count < vault.header.slots.count || !add.isEmpty else {
            throw CLIError.usage("refusing to remove every key slot")
        }
        if args.flag("revoke") { return try revoke(vault, path, secret, given, args, remove: remove, add: add) }
        let removedNames = remove.sorted().map { "\($0) (\(vault.header.slots[$0].kindName))" }
        try vault.changeSlots(remove: remove.sorted(), add: add)
        warn(
            "\(path): \(count(vault.header.slots.count, "key slot")) (\(vault.header.slots.map(\.kindName).joined(separator: ", ")))"
        )
        if !removedNames.isEmpty {
            warn(
                "\(path): removed slot \(removedNames.joined(separator: ", ")) from this file only: the vault key is unchanged, so a "
                    + "copy of the old header or file (a backup, or one kept by whoever held the removed secret) still opens "
                    + "the vault with it; `kcar passwd --revoke` makes a new vault key so that no old copy opens the current file"
            )
        }
        return .success
    }

    /// The slots a new vault key is wrapped for when `vault` is re-keyed: every slot not in `remove` that one
    /// of the secrets kcar holds opens (the one that opened it, every other secret given, the group's key
    /// file, the key files and identities being added), wrapped again for that secret, followed by `add`
    /// without the ones it repeats; and the slots kept that no secret held opens (`lost`), which cannot be
    /// wrapped again (a passphrase or X25519 slot stores no secret; its secret must be given).
    struct Carried {
        var slots: [SlotSecret] = []
        var lost: [Int] = []
    }

    static func carry(
        _ vault: Vault, opened: UnlockSecret, given: [UnlockSecret], _ args: Arguments, remove: Set<Int>,
        add: [SlotSecret]
    ) throws -> Carried {
        var known = [opened] + given
        let groupKey = try args.value("group").map { try ItemCommands.groupKey(args, $0) }
        if let groupKey { known.append(.keyFile(groupKey)) }
        for case .keyFile(let k) in add { known.append(.keyFile(k)) }
        var out = Carried()
        var keptGroupKey = false
        for (i, slot) in vault.header.slots.enumerated() where !remove.contains(i) {
            // The slot that opened the vault is known to open with `opened` (no second Argon2id run).
            let secret =
                i == vault.unlockedSlot
                ? opened
                : known.first { s in
                    switch (slot, s) {
                    case (.passphrase, .passphrase), (.keyFile, .keyFile), (.recipient, .keyFile):
                        return slot.opens(with: s, vaultID: vault.header.vaultID)
                    default: return false
                    }
                }
            guard let secret, let again = reopening(slot, secret).first else {
                out.lost.append(i)
                continue
            }
            if case .keyFile(let k) = again, let g = groupKey, k.constantTimeEquals(g) { keptGroupKey = true }
            out.slots.append(again)
        }
        // A keychain's group keeps a slot for its key file, whatever secret opened it (SPEC.md §K1).
        if let g = groupKey, !keptGroupKey { out.slots.append(.keyFile(g)) }
        // An added key file or recipient that a kept slot already holds would be a second slot for it.
        out.slots += add.filter { a in !out.slots.contains { same($0, a) } }
        return out
    }

    /// Whether two new slots are for the same key file or recipient (passphrases are never merged).
    static func same(_ a: SlotSecret, _ b: SlotSecret) -> Bool {
        switch (a, b) {
        case (.keyFile(let x), .keyFile(let y)): return x.constantTimeEquals(y)
        case (.recipient(let x), .recipient(let y)): return x == y
        default: return false
        }
    }

    /// `slot i (kind)`, as messages name slots.
    static func slotNames(_ vault: Vault, _ indices: [Int]) -> String {
        indices.map { "slot \($0) (\(vault.header.slots[$0].kindName))" }.joined(separator: ", ")
    }

    /// `passwd --revoke`: the slot change, under a new vault key (SPEC.md §9, rekey), so that an old header
    /// spliced onto the new file opens nothing. A slot kept needs its secret to be wrapped again (see
    /// ``carry(_:opened:given:_:remove:add:)``); any other kept slot is refused before anything is written
    /// (remove it, and add it again with --add-*).
    static func revoke(
        _ vault: Vault, _ path: String, _ secret: UnlockSecret, _ given: [UnlockSecret], _ args: Arguments,
        remove: Set<Int>, add: [SlotSecret]
    ) throws -> ExitCode {
        let plan = try carry(vault, opened: secret, given: given, args, remove: remove, add: add)
        if let i = plan.lost.first {
            let s = vault.header.slots[i]
            throw CLIError.usage(
                "slot \(i) (\(s.kindName)) cannot be kept under a new vault key without its secret: "
                    + "--remove-slot \(i), and give it again with --add-\(addOption(s)) if it should stay")
        }
        try vault.rekey(slots: plan.slots)
        warn(
            "\(path): revoked slot \(remove.sorted().map(String.init).joined(separator: ", ")): new vault key, \(count(vault.count, "item")) "
                + "re-sealed; no copy of the old header or file opens the vault as it is now (copies still open what they hold); "
                + "\(count(vault.header.slots.count, "key slot")) (\(vault.header.slots.map(\.kindName).joined(separator: ", ")))"
        )
        return .success
    }

    /// The slot that `secret`, which opened `slot`, gives for a new vault key (none for a mismatch).
    static func reopening(_ slot: KeySlot, _ secret: UnlockSecret) -> [SlotSecret] {
        switch (slot, secret) {
        case (.passphrase(let params, _, _, _), .passphrase(let p)): return [.passphrase(p, params)]
        case (.keyFile, .keyFile(let k)): return [.keyFile(k)]
        case (.recipient, .keyFile(let sk)): return [.recipient(X25519.publicKey(secretKey: sk))]
        default: return []
        }
    }

    /// The --add-* option that makes a slot of this kind.
    static func addOption(_ s: KeySlot) -> String {
        switch s {
        case .passphrase: return "passphrase"
        case .keyFile: return "key-file"
        case .recipient: return "recipient"
        }
    }

    /// `rekey`: a new vault key, wrapped for every slot kcar can wrap it for: each slot
    /// whose secret is given (`--key-file`, `--identity`, a passphrase, the group's key, `--add-key-file`)
    /// is kept, re-wrapped. A slot whose secret is not given is never dropped silently: rekey refuses and
    /// names it, unless --drop-slots says to drop it (named again on standard error).
    static func rekey(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("rekey"))
        let path = try vaultArguments(args, ["VAULT"])[0]
        try refuseStandardInput(path)
        let given = try Secrets.givenSecrets(args)
        let (vault, secret) = try Secrets.unlockVault(path, args, mode: .write, given: given)
        // Checked again on the vault opened: one swapped in after the group's checks must not be re-sealed.
        try ItemCommands.checkRollback(vault, args)
        let plan = try carry(
            vault, opened: secret, given: given, args, remove: [], add: try addedSlots(args, passphraseWanted: false))
        if !plan.lost.isEmpty {
            let names = slotNames(vault, plan.lost)
            guard args.flag("drop-slots") else {
                throw CLIError.usage(
                    "rekey would drop \(names): their secrets are not given, so the new vault key cannot be "
                        + "wrapped for them. Give each secret (--identity, --key-file, --passphrase-file; one "
                        + "passphrase per run), add replacements with --add-*, or pass --drop-slots to drop them")
            }
            warn("\(path): dropping \(names) (--drop-slots): their secrets no longer open the vault")
        }
        try vault.rekey(slots: plan.slots)
        warn(
            "\(path): new vault key; \(count(vault.count, "item")) re-sealed; \(count(vault.header.slots.count, "key slot")) "
                + "(\(vault.header.slots.map(\.kindName).joined(separator: ", ")))")
        return .success
    }

    static func compact(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("compact"))
        let path = try vaultArguments(args, ["VAULT"])[0]
        let vault = try openVault(path, args, mode: .write)
        let before = vault.bodyLength + vault.incompleteBytes
        let retention = try retention(args, vault)
        let rewind = args.flag("rewind-clock")
        try vault.compact(retention: retention, droppingHistoryOf: [], rewindingClock: rewind)
        warn(
            "\(path): body \(before) -> \(vault.bodyLength) bytes" + (retention.map { "; " + describe($0) } ?? "")
                + (rewind ? "; versions ahead of this machine's clock renumbered just above it" : ""))
        return .success
    }

    /// The retention rule `--history`, `--history-days` and `--tombstone-days` give (SPEC.md Part 4, V8), the
    /// vault's own for those not given; nil if none is. A version 1 vault keeps neither history nor tombstones.
    static func retention(_ args: Arguments, _ vault: Vault) throws -> Retention? {
        let keep = try args.int("history", in: 0...PagedLimits.historyKeepMax)
        let days = try args.int("history-days", in: 0...1_048_576)
        let tombstones = try args.int("tombstone-days", in: 0...1_048_576)
        guard keep != nil || days != nil || tombstones != nil else { return nil }
        guard var r = vault.retention else {
            throw CLIError.usage(
                "\(vault.path) is vault format version 1, which keeps no history or tombstones (kcar upgrade makes it version 2)"
            )
        }
        r.keep = keep ?? r.keep
        r.days = days ?? r.days
        r.tombstoneDays = tombstones ?? r.tombstoneDays
        return r
    }

    /// A retention rule in words.
    static func describe(_ r: Retention) -> String {
        (r.keep == 0
            ? "history: none kept"
            : "history: the \(count(r.keep, "latest earlier version")) of each item, of the last \(count(r.days, "day"))")
            + "; deletions remembered \(count(r.tombstoneDays, "day"))"
    }

    static func recover(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("recover"))
        let path = try vaultArguments(args, ["VAULT"])[0]
        if args.flag("drop-damaged") {
            try refuseStandardInput(path)
            let (dropped, generation) = try Secrets.dropDamagedTail(path, args)
            warn(
                dropped == 0
                    ? "\(path): nothing to recover"
                    : "\(path): dropped the last \(dropped) bytes (an incomplete or damaged commit); generation \(generation) is the last"
                        + (args.value("group").map {
                            "; the group reads as rolled back until kcar groups --accept-rollback \($0)"
                        } ?? ""))
            return .success
        }
        let vault = try openVault(path, args, mode: .write)
        let cut = vault.incompleteBytes
        try vault.cutIncomplete()
        warn(
            cut == 0
                ? "\(path): nothing to recover"
                : "\(path): cut off \(cut) bytes of an incomplete commit; generation \(vault.generation) is the last")
        return .success
    }
}
