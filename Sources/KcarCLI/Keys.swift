import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// What the commands that change keys share: key slots to add (`--add-*`), a new passphrase, the slots a new
/// vault key is wrapped for, and new files written whole.
enum Keys {
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
        for k in args.all("add-key-file") { slots.append(.keyFile(try SecretInput.readKeyFile(k))) }
        for r in args.all("add-recipient") { slots.append(.recipient(try SecretInput.parseRecipient(r))) }
        for f in args.all("add-recipients-file") {
            slots += try SecretInput.readRecipientsFile(f).map { .recipient($0) }
        }
        if passphraseWanted || args.flag("add-passphrase") {
            slots.append(.passphrase(try newPassphrase(args), try SecretInput.kdf(args)))
        }
        return slots
    }

    static func newPassphrase(_ args: Arguments) throws -> SecureBytes {
        if let f = args.value("new-passphrase-file") {
            return try SecretInput.passphrase(
                from: try SecretInput.readFileSecret(f, what: "passphrase file", allowPipe: true), source: f)
        }
        if let fdText = args.value("new-passphrase-fd") {
            guard let fd = Int32(fdText), fd >= 0 else {
                throw CLIError.usage("--new-passphrase-fd takes a file descriptor number")
            }
            return try SecretInput.passphrase(
                from: try SecretInput.readDescriptor(fd, what: "fd \(fd)"), source: "fd \(fd)")
        }
        // Without a terminal, what is missing is the new passphrase (the old one opened the vault already).
        return try SecretInput.prompt(
            "New passphrase: ", confirm: true,
            missing: "no new passphrase given and no terminal to ask on: "
                + "give it with --new-passphrase-file FILE or --new-passphrase-fd N")
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

}
