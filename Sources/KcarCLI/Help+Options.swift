import VaultFormat

/// The option groups and notes several pages of `Help` share (the pages, one per command of `CLI.commands`, are
/// in Help+VaultPages, Help+KeychainPages and Help+SharingPages).
extension Help {
    typealias O = Option

    // MARK: Option groups

    static let secretOptions: [Option] = [
        O(
            name: "key-file", kind: .value, argument: "FILE",
            meaning: "a 32-byte key file (kcar keygen) or an X25519 secret key", completes: .file),
        O(
            name: "passphrase-file", kind: .value, argument: "FILE",
            meaning: "a passphrase (one trailing newline is ignored)", completes: .file),
        O(name: "passphrase-fd", kind: .value, argument: "N", meaning: "a passphrase read from file descriptor N")
    ]

    static let lockTimeout = O(
        name: "lock-timeout", kind: .value, argument: "S",
        meaning: "seconds to wait for another process's lock (default 10; then exit 13)")
    static let keychainDir = O(
        name: "keychain", kind: .value, argument: "DIR",
        meaning: "the keychain (default $KCAR_KEYCHAIN, $XDG_DATA_HOME/kcar, ~/.local/share/kcar)",
        completes: .directory)
    static let groupList = O(
        name: "groups", kind: .value, argument: "A,B",
        meaning: "this process's access groups (else KCAR_ACCESS_GROUPS); a group outside it: exit 12")

    /// The secret options of a vault command and the keychain options that name a group's vault instead of VAULT.
    static let identity = O(
        name: "identity", kind: .repeated, short: "i", argument: "FILE",
        meaning: "a kcar key file or an age identity file (AGE-SECRET-KEY-1...); repeatable, each key tried in turn",
        completes: .file)

    static let vaultOptions: [Option] =
        secretOptions + [
            identity,
            O(
                name: "group", kind: .value, argument: "G",
                meaning: "access group G's vault in the keychain instead of VAULT, opened with its key file",
                completes: .group),
            keychainDir, groupList, lockTimeout
        ]

    static let keychainOptions: [Option] = [
        keychainDir,
        O(
            name: "group", kind: .value, argument: "G",
            meaning:
                "the access group (add: default the first of --groups; others: every group of the list or readable)",
            completes: .group),
        groupList, lockTimeout
    ]

    static let classes = ItemClass.keychainClasses.map(\.rawValue)
    static let levels = [
        "when-unlocked", "after-first-unlock", "always", "when-unlocked-this-device-only",
        "after-first-unlock-this-device-only", "always-this-device-only", "when-passcode-set-this-device-only"
    ]

    static let selectorOptions: [Option] = [
        O(
            name: "class", kind: .value, argument: "C",
            meaning: "genp, inet, cert, keys or idnt (find and get: every class if not given; the others: genp)",
            completes: .words(classes)),
        O(name: "service", kind: .value, argument: "S", meaning: "kSecAttrService"),
        O(name: "account", kind: .value, argument: "A", meaning: "kSecAttrAccount"),
        O(name: "label", kind: .value, argument: "L", meaning: "kSecAttrLabel"),
        O(name: "server", kind: .value, argument: "H", meaning: "kSecAttrServer (inet)"),
        O(name: "port", kind: .value, argument: "N", meaning: "kSecAttrPort (inet)"),
        O(name: "protocol", kind: .value, argument: "P", meaning: "kSecAttrProtocol (inet), e.g. https"),
        O(name: "path", kind: .value, argument: "P", meaning: "kSecAttrPath (inet)"),
        O(
            name: "attr", kind: .repeated, argument: "NAME[:TYPE]=VALUE",
            meaning:
                "a user attribute (TYPE string, int, bool, date, data, hex) or Apple's by name (kSecAttrComment=...)")
    ]

    static let queryOptions: [Option] =
        keychainOptions + selectorOptions + [
            O(name: "ignore-case", kind: .flag, meaning: "match the selectors' strings without regard to case")
        ]

    static let kdfOptions: [Option] = [
        O(
            name: "kdf-memory", kind: .value, argument: "MIB",
            meaning: "Argon2id memory of a new passphrase slot, 8-1024 (default 256)"),
        O(name: "kdf-passes", kind: .value, argument: "N", meaning: "Argon2id passes, 1-32 (default 3)")
    ]

    static let slotOptions: [Option] =
        [
            O(name: "add-passphrase", kind: .flag, meaning: "add a passphrase slot"),
            O(
                name: "add-key-file", kind: .repeated, argument: "FILE", meaning: "add a key-file slot; repeatable",
                completes: .file),
            O(
                name: "add-recipient", kind: .repeated, argument: "PUBKEY",
                meaning: "add an X25519 slot (age1..., 64 hex digits or a .pub file); repeatable", completes: .file),
            O(
                name: "add-recipients-file", kind: .repeated, argument: "FILE",
                meaning: "add an X25519 slot for each recipient of FILE (one per line, # comments, as age -R)",
                completes: .file),
            O(
                name: "new-passphrase-file", kind: .value, argument: "FILE",
                meaning: "the new passphrase (else asked twice)", completes: .file),
            O(
                name: "new-passphrase-fd", kind: .value, argument: "N",
                meaning: "the new passphrase from file descriptor N")
        ] + kdfOptions

    static let format = O(
        name: "format", kind: .value, argument: "N",
        meaning:
            "the vault format: 2 (default: paged index, versions, merge) or 1 (for kcar 0.x readers of format 1 only)")
    static let level = O(
        name: "level", kind: .value, argument: "N",
        meaning: "compression level 0 (store) to 12 (default 6; 1 fastest, 7 about gzip -6's size)")
    static let exclude = O(
        name: "exclude", kind: .repeated, argument: "PATTERN",
        meaning: "skip names matching a shell pattern (with /: the path below DIR)")
    static let dereference = O(
        name: "dereference", kind: .flag, short: "h",
        meaning: "store what symbolic links point at instead of the links (as tar -h)")
    static let json = O(name: "json", kind: .flag, meaning: "print JSON instead of a table")
    static let verbose = O(
        name: "verbose", kind: .flag, short: "v",
        meaning: "name each item as it is written, on standard output (standard error with VAULT -)")
    static let dryRun = O(
        name: "dry-run", kind: .flag, meaning: "print the matching items and their number; change nothing")
    static let force = O(name: "force", kind: .flag, meaning: "replace an existing output")
    static let deviceOnly = O(
        name: "include-device-only", kind: .flag,
        meaning: "also export ThisDeviceOnly items (left out by default, exit 9)")
    static let accessible = O(
        name: "accessible", kind: .value, argument: "LEVEL",
        meaning: "when-unlocked (default), after-first-unlock, always, their -this-device-only forms, ...",
        completes: .words(levels))
    static let synchronizable = O(name: "synchronizable", kind: .flag, meaning: "mark the item kSecAttrSynchronizable")

    static let groupNote =
        "Every vault command (list, extract, verify, info, passwd, rekey, compact, recover, history, restore, upgrade) also takes --group G "
        + "[--keychain DIR] instead of VAULT: the access group's vault in the keychain, opened with its key file."
}
