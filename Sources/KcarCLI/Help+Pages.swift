import VaultFormat

/// The pages of `Help`, one per command of `CLI.commands`, and the option groups several commands share.
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

    // MARK: Vault commands

    static let stdinNote =
        "VAULT - reads the vault from standard input: it is copied first (a vault is read by offset) to a "
        + "0600 temporary file in $TMPDIR, removed when the command ends or is interrupted; at most 4 GiB."

    static let pack = Page(
        synopsis: [
            "pack VAULT DIR [options]", "pack VAULT FILE [options]",
            "pack VAULT --items FILE.json [--group G] [slot options]",
            "pack VAULT --group G [--keychain DIR] [slot options]"
        ],
        summary: "Make a vault from a folder, an item file or a keychain's access group.",
        description: [
            "Every first-level folder of DIR is a service; every regular file below it is a generic-password item whose account is "
                + "its path below the service folder. A file directly in DIR is a top-level item: the default service (the empty one), "
                + "its name as the account; list names it by its name alone and extract writes it back directly in its folder, so "
                + "DIR comes back as it was. pack VAULT FILE stores one regular file that way. A symbolic link is stored as a link (its target, not followed; with -h, "
                + "--dereference, what it points at), and a folder in which nothing is stored as a folder item, so extract makes them "
                + "again. Modification times and permission bits are kept (setuid, setgid and sticky are not); extract restores the "
                + "modes with -p only. Devices, FIFOs, sockets and non-UTF-8 names are reported and skipped (exit 9); so is an input swapped for a link, a FIFO or another file after the listing (nothing is followed or "
                + "waited on). VAULT - writes the vault to standard output, which must not be a terminal (unless --force). --items - "
                + "reads the item file from standard input. kcar add VAULT PATH... adds files to a packed vault later.",
            "With --items, or --group G and no DIR: a vault of the items of an item file (extract --items), or of the keychain's "
                + "access group G (attributes kept; the keychain of --keychain DIR, else $KCAR_KEYCHAIN or the default). ThisDeviceOnly items are left out (exit 9) unless --include-device-only.",
            "The vault gets a slot for each secret given: --key-file, --recipient, and a passphrase (--passphrase-file, "
                + "--passphrase-fd, KCAR_PASSPHRASE; asked twice on the terminal if no other secret is given)."
        ],
        options: secretOptions + [
            O(
                name: "recipient", kind: .repeated, short: "r", argument: "PUBKEY",
                meaning: "add an X25519 slot (age1..., 64 hex digits or a .pub file); repeatable", completes: .file),
            O(
                name: "recipients-file", kind: .repeated, short: "R", argument: "FILE",
                meaning: "add an X25519 slot for each recipient of FILE (one per line, # comments, as age -R)",
                completes: .file),
            O(
                name: "group", kind: .value, argument: "G",
                meaning: "the vault's access group (default \"default\"); with --keychain the group packed",
                completes: .group),
            keychainDir, groupList, lockTimeout,
            level, format,
            exclude, dereference,
            O(
                name: "items", kind: .value, argument: "FILE.json",
                meaning: "pack the items of an item file instead of a folder", completes: .file),
            deviceOnly.meaning("also pack ThisDeviceOnly items"),
            O(name: "quiet", kind: .flag, short: "q", meaning: "print nothing on success"), verbose,
            force.meaning("overwrite an existing VAULT; with VAULT -, write to a terminal")
        ] + kdfOptions,
        examples: [
            Example(
                command: "pack secrets.kcv ./secrets --key-file me.key",
                meaning: "a vault of the folder ./secrets, opened by me.key"),
            Example(
                command: "pack backup.kcv ~/notes --recipient alice.pub --exclude '*.tmp'",
                meaning:
                    "a vault only Alice's X25519 secret key opens, without the .tmp files (files directly in ~/notes included)"
            ),
            Example(
                command: "pack token.kcv ./token.txt --key-file me.key",
                meaning: "one file: extract writes token.txt back"),
            Example(
                command: "pack - ./secrets --passphrase-file pw.txt | ssh host 'cat > s.kcv'",
                meaning: "the vault on standard output")
        ])

    static let list = Page(
        synopsis: [
            "list VAULT [ITEM...] [--json] [secret options]", "list --group G [ITEM...] [--keychain DIR] [--json]"
        ],
        summary: "Print the items of a vault: size, modification date and name (service/account).",
        description: [
            "ITEM... lists only the items named, as extract selects them (tar tf ARCHIVE NAME...): a name as list "
                + "prints it, a service or a folder for everything below it; a name that matches nothing is exit 6.",
            "A folder is named with a trailing /, a symbolic link as name -> target. --long adds a MODE column "
                + "(-rw-r--r--, drwx------, lrwxrwxrwx as tar -tv prints them; ? for a mode not stored, as in vaults packed "
                + "before modes were).",
            "--json prints a JSON array of objects: id, class, service, account, name, size, modified, attributes; an item "
                + "packed with its kind and mode also has type (file, folder or link), mode (octal, \"0644\") and a link's target.",
            "Order: a format version 1 vault's items by service, then account (bytewise), then id; a version 2 vault's in the "
                + "key order of its items tree: class, then the class's key attributes, then id (for a packed vault service, then "
                + "account: the same order). Version 2 items are read and printed one page at a time, never all held, so a vault "
                + "of millions lists in little memory (the table reads them twice: once for the SIZE column's width).",
            stdinNote, groupNote
        ],
        options: vaultOptions + [
            json, O(name: "long", kind: .flag, short: "l", meaning: "add a MODE column (as ls -l)")
        ],
        examples: [
            Example(command: "list secrets.kcv --key-file me.key", meaning: "one line per item"),
            Example(
                command: "list --group personal --json",
                meaning: "the items of the keychain's access group personal, as JSON"),
            Example(command: "ssh host cat s.kcv | kcar list - --key-file me.key", meaning: "a vault read from a pipe")
        ])

    static let extract = Page(
        synopsis: [
            "extract VAULT [-C DIR] [ITEM...] [options]", "extract VAULT --stdout ITEM",
            "extract VAULT --items FILE.json"
        ],
        summary: "Write the items of a vault back as files.",
        description: [
            "Writes items to DIR/service/account, and a top-level item (a file packed directly in its folder, or alone) to "
                + "DIR/name (ITEM as kcar list names it; a service or folder name selects everything below it). Never writes outside DIR, follows no symlink below it, writes each file under a temporary name and renames it "
                + "only once its content authenticated.",
            "Modes: files are 0600 (0700 when the packed file was executable by its owner), folders 0700; -p restores the "
                + "permission bits pack stored (never setuid, setgid or sticky), whatever the umask, folders' last.",
            "Links and folders: packed folders are made again, and links are created after every file, so nothing is ever "
                + "written through a link. A link whose target is absolute or leads out of DIR (.. past DIR, or .. after a name) "
                + "is skipped and named (exit 9) unless --unsafe-links.",
            "--items writes the items, with every attribute and the values in base64, to one JSON file (SPEC.md §K7; mode 0600; - for "
                + "standard output) instead of files, streamed in file order; at most 100,000 items.",
            "--stdout streams the value to a pipe or file byte for byte; a terminal is shown only text (UTF-8 without control "
                + "characters but tab and newlines) of at most 1 MiB, unless --force, followed by a newline (as get).",
            stdinNote, groupNote
        ],
        options: vaultOptions + [
            O(
                name: "directory", kind: .value, short: "C", argument: "DIR", meaning: "output folder (default .)",
                completes: .directory),
            verbose.meaning("name each file as it is written below DIR, on standard output"),
            force.meaning("replace existing files; with --stdout, show any value on a terminal"),
            O(
                name: "preserve-permissions", kind: .flag, short: "p",
                meaning: "give files and folders the permission bits pack stored (as tar -p)"),
            O(
                name: "unsafe-links", kind: .flag,
                meaning: "also create links whose target is absolute or leads out of DIR"),
            O(name: "stdout", kind: .flag, meaning: "write one item's value to standard output"),
            O(
                name: "items", kind: .value, argument: "FILE.json",
                meaning: "write the items and their attributes to one JSON file (- standard output)",
                completes: .file),
            deviceOnly
        ],
        examples: [
            Example(
                command: "extract secrets.kcv -C out --key-file me.key", meaning: "every item as out/service/account"),
            Example(
                command: "extract secrets.kcv --stdout github.com/tokens/ci --key-file me.key",
                meaning: "one value on standard output"),
            Example(
                command: "extract secrets.kcv -p -C /etc/app --key-file me.key",
                meaning: "with the modes the files had when packed"),
            Example(command: "extract --group personal --items - | jq .", meaning: "a group's items as JSON")
        ])

    static let verify = Page(
        synopsis: ["verify VAULT [--json] [--no-key] [secret options]", "verify --group G [--keychain DIR] [--json]"],
        summary: "Check the header, every slot, every commit's trailer and index, and every record.",
        description: [
            "Exit 0 only for an intact vault (4 damaged, 5 incomplete last commit). With --no-key it checks the structure and header "
                + "checksum only, and says so (records are not authenticated). With no secret, no --no-key and no terminal to ask on: "
                + "exit 10, nothing was checked. In a version 2 file (SPEC.md Part 4) it also checks the index's trees, its delta "
                + "chain, the state they make and the kept versions, and prints the dead bytes beside the garbage count of the "
                + "index root (a hint for automatic compaction, never a problem).",
            stdinNote, groupNote
        ],
        options: vaultOptions + [
            json, O(name: "no-key", kind: .flag, meaning: "check the structure only, without a secret")
        ],
        examples: [
            Example(command: "verify secrets.kcv --key-file me.key", meaning: "authenticate every record"),
            Example(command: "verify --group personal --json", meaning: "check a keychain group's vault"),
            Example(command: "verify - --no-key < backup.kcv", meaning: "structure only, of a vault on standard input")
        ])

    static let info = Page(
        synopsis: ["info VAULT [--json] [secret options]", "info --group G [--keychain DIR] [--json]"],
        summary: "Print a vault's version, group, vault id, key slots and KDF; with a secret also its items and space.",
        description: [
            "With a secret also items, generation, body size, dead space and incomplete bytes. Never prompts.",
            "Dead space is a lower bound (deleted members after a shared record's last live one are not counted): only "
                + "kcar compact makes sure a deleted value has left the file.", stdinNote, groupNote
        ],
        options: vaultOptions + [json],
        examples: [
            Example(command: "info secrets.kcv", meaning: "the header alone: slots and KDF parameters"),
            Example(command: "info --group personal --json", meaning: "a keychain group's vault, with its item count")
        ])

    static let keygen = Page(
        synopsis: ["keygen FILE [--x25519] [--force]"],
        summary: "Make a 32-byte key file, or an X25519 key pair.",
        description: [
            "Writes 32 random bytes to FILE (mode 0600): a key file for --key-file. With --x25519 FILE is an X25519 secret key; its "
                + "public key is printed and written to FILE.pub as an age recipient (age1...), for pack --recipient and age -r. Both files or neither: an existing FILE or FILE.pub "
                + "is refused (exit 7) before anything is written; --force replaces both.",
            "FILE - writes the key to standard output, never to a terminal; with --x25519 the public key is then printed on "
                + "standard error."
        ],
        options: [
            O(name: "x25519", kind: .flag, meaning: "make an X25519 key pair (FILE and FILE.pub)"),
            force.meaning("replace FILE (and FILE.pub)")
        ],
        examples: [
            Example(command: "keygen me.key", meaning: "a key file"),
            Example(
                command: "keygen alice --x25519",
                meaning: "alice (secret) and alice.pub (give it to whoever packs for Alice)"),
            Example(
                command: "keygen - | ssh host 'umask 077; cat > ops.key'",
                meaning: "a key file made straight on another machine")
        ])

    static let passwd = Page(
        synopsis: ["passwd VAULT [options] [secret options]"],
        summary: "Change the passphrase; add or remove key slots.",
        description: [
            "Without options: replaces the passphrase slot that opened the vault with a new passphrase. No item is re-encrypted; the "
                + "header is rewritten atomically. Every secret given is tried in turn (--identity, --key-file, then a passphrase).",
            "Removing a slot (or changing a passphrase) is NOT revocation: the vault key is unchanged, so an old copy of the header or "
                + "file still opens the vault with the removed secret, even spliced onto the current file; the command says so. --revoke "
                + "does revoke: the change is made under a new vault key (as rekey). A slot kept under --revoke needs its secret (the one "
                + "given, the group's key file, or --add-key-file again); other kept slots are refused (remove them with --remove-slot and "
                + "add them again with --add-*).",
            groupNote
        ],
        options: vaultOptions + slotOptions + [
            O(
                name: "remove-slot", kind: .repeated, argument: "N",
                meaning: "remove slot N (as kcar info numbers them); repeatable"),
            O(name: "revoke", kind: .flag, meaning: "rekey too, so that no old header opens the vault")
        ],
        examples: [
            Example(command: "passwd secrets.kcv", meaning: "a new passphrase, asked twice"),
            Example(
                command: "passwd secrets.kcv --key-file me.key --add-recipient bob.pub", meaning: "let Bob open it too"),
            Example(
                command: "passwd secrets.kcv --key-file me.key --remove-slot 1 --revoke",
                meaning: "revoke slot 1's secret")
        ])

    static let rekey = Page(
        synopsis: ["rekey VAULT [options] [secret options]"],
        summary: "Make a new vault key and re-seal every record.",
        description: [
            "Makes a new vault key and re-seals every record and the index. Use it when a slot's secret or an old copy of the header "
                + "may have leaked. Unknown non-critical header fields are kept.",
            "Every old slot whose secret is given is kept, wrapped for the new key: the secret that opened the vault, every other "
                + "--identity, --key-file and passphrase given (each is tried), the group's key file, and --add-key-file keys. A slot "
                + "whose secret is not given (another passphrase, an X25519 slot without its identity) cannot be wrapped again: rekey "
                + "names it and refuses (exit 2, nothing written) unless --drop-slots says to drop it. Slots added with --add-* are "
                + "added; one that repeats a kept key file or recipient is not added twice.",
            groupNote
        ],
        options: vaultOptions + slotOptions + [
            O(
                name: "drop-slots", kind: .flag,
                meaning: "drop the slots whose secrets are not given (named on standard error)")
        ],
        examples: [
            Example(
                command: "rekey secrets.kcv --key-file me.key --passphrase-file pw.txt",
                meaning: "a new vault key; both slots kept"),
            Example(
                command: "rekey secrets.kcv -i alice.txt -i bob.txt --key-file me.key",
                meaning: "keep two X25519 slots and a key file"),
            Example(
                command: "rekey secrets.kcv --key-file me.key --drop-slots",
                meaning: "only me.key opens it; the other slots are dropped")
        ])

    static let compact = Page(
        synopsis: ["compact VAULT [secret options]"],
        summary: "Rewrite a vault without dead space (deleted values leave the file).",
        description: [
            "Rewrites the vault atomically without dead space: deleted and replaced values leave the file, except those "
                + "a version 2 vault keeps as earlier versions of its items (kcar history): by default the 10 latest of the last "
                + "90 days of each item, deletions included. --history N, --history-days D and --tombstone-days T set that rule "
                + "(SPEC.md Part 4, V8; recorded in the vault, applied now and by every later compaction); --history 0 keeps "
                + "none, as version 1. kcar delete --purge and kcar history --clear drop one item's versions.",
            "--rewind-clock renumbers the versions (SPEC.md Part 4, V5.1) dated after this machine's clock, keeping their "
                + "order, to just after it: merge, sync and joins refuse (exit 16) a copy whose versions run more than a day ahead, "
                + "as one written on a machine whose clock was wrong, or by a collaborator, would; rewound, it merges again "
                + "(copies of it that still hold the old versions need the same).",
            "Commits compact by themselves only past half the file and 1 MiB of dead space: run this after a delete to make "
                + "sure the value has left the file. A failed automatic compaction is reported on standard error; its commit stood "
                + "(exit 0).", groupNote
        ],
        options: vaultOptions + [
            O(
                name: "history", kind: .value, argument: "N",
                meaning: "version 2: keep the N latest earlier versions of each item (0 to 1000; default 10)"),
            O(
                name: "history-days", kind: .value, argument: "D",
                meaning: "version 2: keep earlier versions D days (default 90)"),
            O(
                name: "tombstone-days", kind: .value, argument: "T",
                meaning: "version 2: remember deletions T days, for merges (default 90)"),
            O(
                name: "rewind-clock", kind: .flag,
                meaning: "version 2: renumber, in order, the versions dated after this machine's clock to "
                    + "just after it (run on a machine whose clock is right)")
        ],
        examples: [
            Example(command: "compact secrets.kcv --key-file me.key", meaning: "rewrite secrets.kcv"),
            Example(
                command: "compact team.kcv --rewind-clock --key-file team.key",
                meaning: "make a copy that merge and sync refuse (exit 16, clock ahead) mergeable again"),
            Example(command: "compact --group personal", meaning: "rewrite a keychain group's vault"),
            Example(
                command: "compact secrets.kcv --history 0 --tombstone-days 30 --key-file me.key",
                meaning: "keep no earlier versions from now on (their values leave the file now), deletions for 30 days"
            )
        ])

    static let recover = Page(
        synopsis: ["recover VAULT [--drop-damaged] [secret options]"],
        summary: "Cut off an incomplete last commit (an interrupted write).",
        description: [
            "Cuts off the bytes of an incomplete last commit (exit 5 of the other commands).",
            "A last commit whose trailer is whole but does not authenticate is damage, not an interrupted write: every "
                + "command refuses the vault (exit 4, damaged index) rather than read the commit before it, which would undo the "
                + "last commit without a word (an item it deleted back). With --drop-damaged, recover cuts the file back to the "
                + "last commit that authenticates, once it loads, and says how many bytes it dropped: what the dropped commit "
                + "changed is lost unless another copy (git, a backup) holds it. A keychain group then reads as rolled back "
                + "(exit 14) until kcar groups --accept-rollback G.", groupNote
        ],
        options: [
            O(
                name: "drop-damaged", kind: .flag,
                meaning:
                    "also cut off a damaged last commit (a whole trailer that does not authenticate), back to the last one that does"
            )
        ]
            + vaultOptions,
        examples: [
            Example(command: "recover secrets.kcv --key-file me.key", meaning: "back to the last complete commit"),
            Example(command: "recover --group personal", meaning: "the same for a keychain group"),
            Example(
                command: "recover secrets.kcv --drop-damaged --key-file me.key",
                meaning: "back past a damaged last commit (exit 4 before), losing it")
        ])

    static let archive = Page(
        synopsis: [
            "archive show FILE [--json]", "archive convert IN OUT [--to kcar|nskeyed] [--deterministic] [--force]"
        ],
        summary: "Show or convert keyed archives (kcar archives and NSKeyedArchiver property lists).",
        description: [
            "FILE is a kcar archive (keyed archiver, SPEC.md Part 2) or an NSKeyedArchiver archive (binary or XML property list), told "
                + "apart by their first bytes.",
            "show prints the value as indented JSON, or as one line with --json: strings, numbers, booleans and null as themselves; "
                + "{\"$data\": base64}, {\"$date\": ISO 8601 UTC}, {\"$uuid\": ...}, {\"$url\": ...}, {\"$set\": [...]}, "
                + "{\"$dict\": [[key, value], ...]} for other keys, {\"$class\": name, \"$fields\": {...}} for objects, "
                + "{\"$double\": \"NaN\"} for non-finite numbers, {\"$dictionary\": {...}} around a dictionary with a key starting with $, "
                + "and {\"$date\": {\"$seconds\": ...}} for a date outside the years 0000-9999 (SPEC.md Part 2 §A12); shared values are "
                + "printed at every use. Nothing is printed if the JSON would pass 64 MiB.",
            "convert writes the value in the other format (kcar <-> NSKeyedArchiver binary plist) or the one --to names; a kcar archive "
                + "is always in canonical order (byte-identical output in every process; --deterministic is the default). OUT is created "
                + "with mode 0600 and never replaced without --force. Malformed or hostile input: a one-line error and exit 4.",
            "FILE or IN - reads standard input; OUT - writes standard output, which must not be a terminal (unless --force)."
        ],
        options: [
            O(name: "json", kind: .flag, meaning: "show: one line of JSON instead of indented JSON", only: "show"),
            O(
                name: "to", kind: .value, argument: "FORMAT",
                meaning: "convert: kcar or nskeyed (default the other format)",
                completes: .words(["kcar", "nskeyed"]), only: "convert"),
            O(name: "deterministic", kind: .flag, meaning: "convert: canonical order (the default)", only: "convert"),
            O(
                name: "force", kind: .flag,
                meaning: "convert: replace an existing OUT; with OUT -, write to a terminal", only: "convert")
        ],
        examples: [
            Example(command: "archive show prefs.plist", meaning: "an NSKeyedArchiver archive as JSON"),
            Example(command: "archive convert prefs.plist prefs.kca", meaning: "the same value as a kcar archive"),
            Example(
                command: "archive convert prefs.kca - --to nskeyed | plutil -p -", meaning: "back, to standard output")
        ],
        positionalWords: ["show", "convert"])

    // MARK: Keychain commands

    static let itemNote =
        "Items live in a keychain directory: each access group is one vault (G.kcv) with its key file (G.key, "
        + "mode 0600); who can read a group's key file may use the group. Selectors match exactly and case-sensitively "
        + "(--ignore-case folds case)."

    static let initPage = Page(
        synopsis: ["init [--keychain DIR] [--shared-group TEAM] [--default-group G]"],
        summary: "Create the keychain directory (mode 0700).",
        description: [
            "Creates the keychain directory (mode 0700, parents too) and prints its path. Groups are created by the first add to them.",
            "--shared-group TEAM shares the directory (yours) with Unix group TEAM on purpose: group TEAM, mode 3770, and .kcar-shared "
                + "naming TEAM; keys are then made 0640 and vaults 0660, so members of TEAM use the groups whose key they can read. "
                + "The sticky bit (the 1000 in 3770) lets a member rename or remove only its own files, so no member can move "
                + "another's group aside and plant its own; a shared directory without it (made by an earlier kcar) is refused "
                + "until you run chmod +t DIR or this command again. Only a vault's owner (or yours) can compact or rekey it.",
            "A member keeps a group to itself with chmod 600 G.key G.kcv G.seen: no other user's kcar uses it, and kcar refuses it "
                + "if its vault or record is someone else's or writable by others. Another member can still take a group name "
                + "first: make your private groups yourself (SPEC.md K1.2 lists what members can do to each other).",
            "--default-group G records G as the keychain's default access group (.kcar-default-group): where adds without a group "
                + "and without KCAR_ACCESS_GROUPS or --groups go (else the program's own name, kcar for this command).",
            "kcar refuses (exit 15) a keychain that anyone but you, root (or TEAM, when shared) can change, and group files that are "
                + "symlinks, FIFOs, another user's, or keys others can read."
        ],
        options: [
            keychainDir,
            O(name: "shared-group", kind: .value, argument: "TEAM", meaning: "share the keychain with Unix group TEAM"),
            O(
                name: "default-group", kind: .value, argument: "G",
                meaning: "record G as the keychain's default access group")
        ],
        examples: [
            Example(command: "init", meaning: "~/.local/share/kcar (or $KCAR_KEYCHAIN)"),
            Example(command: "init --keychain /srv/keys --shared-group ops", meaning: "a keychain the ops group shares")
        ])

    static let valueNote =
        "The value is read from --value-file FILE (- for standard input), else from standard input (asked for "
        + "twice, without echo, on a terminal); never from an argument. Newlines: a value from standard input is a line, so one "
        + "trailing newline (LF or CRLF) is dropped (echo tok | kcar add stores tok) unless --keep-newline; --value-file FILE is "
        + "stored byte for byte. get prints the bytes exactly to a pipe or file, and adds a newline only on a terminal."

    static let keepNewline = O(
        name: "keep-newline", kind: .flag, meaning: "keep the trailing newline of a value from standard input")

    /// The options of `add VAULT PATH...` (a packed vault), which the keychain's `add` does not take.
    static let addToVaultOptions: [Option] =
        secretOptions + [
            identity,
            O(
                name: "directory", kind: .value, short: "C", argument: "DIR",
                meaning: "VAULT PATH...: the folder the PATHs are below (default .)",
                completes: .directory),
            exclude, dereference, level,
            verbose.meaning("VAULT PATH...: name each item as it is added, on standard output"),
            quiet.meaning("VAULT PATH...: print nothing on success (as pack -q)")
        ]

    static let add = Page(
        synopsis: [
            "add SELECTORS [--group G] [--accessible LEVEL] [--synchronizable] [--value-file FILE]",
            "add SELECTORS [--group G] --generate [--length N] [--symbols]",
            "add VAULT PATH... [-C DIR] [--exclude PATTERN] [-h] [-v] [secret options]",
            "add VAULT NAME --value-file FILE|- [secret options]"
        ],
        summary: "Add an item to the keychain, or files to a packed vault.",
        description: [
            valueNote, itemNote,
            "Uniqueness is Apple's: genp service+account, inet server+protocol+port+path+account+..., and synchronizable; "
                + "a duplicate is exit 11.",
            "With VAULT PATH... (as 7z a, tar -r): adds the files, links and empty folders at each PATH below DIR (-C, default "
                + ".) to the packed vault VAULT, as pack would store them (the first component of a PATH is the service, a file "
                + "directly in DIR a top-level item; a folder adds everything below it, . all of DIR). A PATH typed from the wrong "
                + "folder is warned about on standard error (the add goes ahead): one whose first component S becomes a new service "
                + "while the folder DIR/S holds a name VAULT already has (a service or a top-level item), so that S is likely the "
                + "folder VAULT was packed from; the warning gives the -C S form. An item of the same name is replaced. One commit, opened with the "
                + "vault's secret: all of it or, on any failure, nothing (the vault as it was). VAULT must exist (pack makes one) "
                + "and cannot be - (it is changed in place). A new item where the vault has a file that would have to be its "
                + "folder, or the reverse, is refused (exit 7). Exit 9 if inputs were skipped, each named.",
            "With VAULT NAME --value-file FILE (- standard input, one trailing newline dropped unless --keep-newline): the item "
                + "NAME (service/account, or a top-level item's name, as list prints it) gets that value, added or replaced, stored as pack stores a file of "
                + "mode 0600: a packed vault changes one secret with no plaintext file written anywhere. A VAULT that does not "
                + "exist is made with the item (as tar rf and 7z a make their archive), with the secrets pack would take."
        ],
        options: keychainOptions + selectorOptions + [
            O(
                name: "value-file", kind: .value, argument: "FILE",
                meaning: "read the value from FILE, byte for byte (- standard input)",
                completes: .file),
            keepNewline, accessible, synchronizable,
            O(name: "generate", kind: .flag, meaning: "store a generated password (see generate) and print it")
        ] + generateOptions + addToVaultOptions,
        examples: [
            Example(
                command: "add --service github.com --account ci < token.txt", meaning: "a generic password from a file"),
            Example(
                command: "add --class inet --server db.internal --protocol https --account app --group personal",
                meaning: "an internet password, typed twice on the terminal"),
            Example(
                command: "add --service api --account me --attr team=ops --value-file key.bin",
                meaning: "with a user attribute"),
            Example(
                command: "add secrets.kcv -C ./secrets github.com/tokens/new --key-file me.key",
                meaning: "one more file in a packed vault (item github.com/tokens/new)"),
            Example(
                command: "add secrets.kcv github.com/tokens/ci --value-file - --key-file me.key < new-token",
                meaning: "replace one secret of a packed vault from standard input")
        ])

    static let get = Page(
        synopsis: ["get SERVICE/ACCOUNT [SELECTORS]", "get SELECTORS"],
        summary: "Print the value of the one matching item.",
        description: [
            "SERVICE/ACCOUNT names an item in one word, as list and history name it (%2F for a / in the service): the same "
                + "as --service SERVICE --account ACCOUNT; SERVICE alone selects by service.",
            "Searches every class unless --class is given (a class whose attributes the selectors cannot name is left out). More than one match is exit 2; none exit 6.",
            "The value goes to a pipe or file byte for byte, nothing added ($(kcar get ...) and kcar get ... > file are "
                + "exact). On a terminal a newline follows it, and only text (UTF-8 without control characters but tab and "
                + "newlines) of at most 1 MiB is shown unless --force.", itemNote
        ],
        options: queryOptions + [
            O(name: "force", kind: .flag, meaning: "show a binary or large value on a terminal"),
            O(
                name: "clip", kind: .flag,
                meaning: "put the value on the clipboard (wl-copy, xclip or xsel) instead, cleared after 45 s"),
            O(
                name: "clip-seconds", kind: .value, argument: "N",
                meaning: "clear the clipboard after N seconds (0: never), if it still holds the value")
        ],
        examples: [
            Example(command: "get github.com/ci", meaning: "the token on standard output"),
            Example(command: "get --service github.com --account ci", meaning: "the same, by its selectors"),
            Example(command: "get github.com/ci --clip", meaning: "on the clipboard for 45 seconds, as pass -c"),
            Example(
                command: "get --server db.internal --account app", meaning: "an internet password (no --class needed)")
        ])

    /// The options of a generated password (`generate`, `add --generate`).
    static let generateOptions: [Option] = [
        O(
            name: "length", kind: .value, argument: "N",
            meaning: "characters (8 to 4096; default 24: 142 bits of letters and digits)"),
        O(name: "symbols", kind: .flag, meaning: "draw from every printable ASCII character but space (94)")
    ]

    static let generate = Page(
        synopsis: ["generate [--length N] [--symbols]"],
        summary: "Print a random password.",
        description: [
            "Letters and digits (or, with --symbols, every printable ASCII character but space), each drawn uniformly from "
                + "the system's random source. On a pipe or file the password is written with nothing added; on a terminal a "
                + "newline follows it. add --generate stores one instead of reading a value (and prints it)."
        ],
        options: generateOptions,
        examples: [
            Example(command: "generate", meaning: "24 letters and digits"),
            Example(command: "generate --length 32 --symbols", meaning: "32 printable characters"),
            Example(
                command: "add --service db --account app --generate",
                meaning: "a new item with a generated value, printed once")
        ])

    static let edit = Page(
        synopsis: ["edit SERVICE/ACCOUNT [SELECTORS]", "edit SELECTORS"],
        summary: "Edit the value of the one matching item in $VISUAL or $EDITOR.",
        description: [
            "The value is written to a file of mode 0600 in a new private folder (in $XDG_RUNTIME_DIR, else /dev/shm, else "
                + "$TMPDIR), opened in $VISUAL, else $EDITOR, else vi (run by /bin/sh, so EDITOR=\"code --wait\" works), and "
                + "stored as the item's new value if it changed; the file and whatever the editor left beside it are "
                + "overwritten with zeros and removed however the edit ends. A newline the editor added at the end of a value "
                + "that had none is dropped. An editor that exits non-zero, or an item changed by another process during the "
                + "edit, leaves the item as it was (exit 1).", itemNote
        ],
        options: queryOptions,
        examples: [
            Example(command: "edit api/bob", meaning: "the value of service api, account bob, in your editor"),
            Example(command: "edit --server db.internal --account app", meaning: "an internet password's")
        ])

    static let find = Page(
        synopsis: ["find [SELECTORS] [--json] [--limit N]"],
        summary: "List matching items (attributes only, no values).",
        description: [
            "Searches every class unless --class is given (a class whose attributes the selectors cannot name is left out), in the order of the access groups, then genp, inet, cert, keys, idnt. No match is exit 6.",
            itemNote
        ],
        options: queryOptions + [json, O(name: "limit", kind: .value, argument: "N", meaning: "at most N items")],
        examples: [
            Example(
                command: "find --group personal",
                meaning: "every item of a group, of every class (the CLASS column says which)"),
            Example(command: "find --attr team=ops --json", meaning: "items by a user attribute, as JSON"),
            Example(command: "find --class inet --server db.internal", meaning: "internet passwords only")
        ])

    static let update = Page(
        synopsis: [
            "update [SERVICE/ACCOUNT] [SELECTORS] [--set-label L] [--set-attr NAME=VALUE]... [--unset-attr NAME]... "
                + "[--set-accessible LEVEL] [--value-file FILE]",
            "update SERVICE/ACCOUNT|SELECTORS --generate [--length N] [--symbols]"
        ],
        summary: "Change the attributes or the value of every matching item.",
        description: [
            "The value: with no other change, update reads it as add does, from standard input when that is a pipe or a "
                + "file (an empty one is refused) or asked twice on a terminal. With --set-label, --set-attr, --unset-attr or "
                + "--set-accessible, the value changes only with --value-file FILE (- for standard input): update --set-label L "
                + "< /dev/null, or in a script whose standard input is inherited, never waits for nor changes a value.",
            "SERVICE/ACCOUNT selects as get's does. --generate gives the one matching item a new generated password (see "
                + "generate) and prints it: a credential rotated in one command; more than one match is exit 2, before anything "
                + "changes.",
            "Says how many items it changed. --dry-run prints the items it would change (as find does) and their number, "
                + "reads no value and changes nothing.",
            itemNote
        ],
        options: queryOptions + [
            O(name: "set-label", kind: .value, argument: "L", meaning: "the new label"),
            O(
                name: "set-attr", kind: .repeated, argument: "NAME[:TYPE]=VALUE",
                meaning: "set an attribute; repeatable"),
            O(name: "unset-attr", kind: .repeated, argument: "NAME", meaning: "remove an attribute; repeatable"),
            O(
                name: "set-accessible", kind: .value, argument: "LEVEL", meaning: "the new accessibility",
                completes: .words(levels)),
            O(
                name: "value-file", kind: .value, argument: "FILE",
                meaning: "the new value from FILE, byte for byte (- standard input)",
                completes: .file),
            keepNewline, dryRun,
            O(name: "generate", kind: .flag, meaning: "a new generated password as the value, printed")
        ] + generateOptions,
        examples: [
            Example(
                command: "update --service api --set-label 'API key' --dry-run",
                meaning: "the items it would change; nothing changes"),
            Example(
                command: "update --service github.com --account ci < new.txt",
                meaning: "a new value, from standard input"),
            Example(
                command: "update --service github.com --account ci --set-label CI --value-file -",
                meaning: "a new label and value"),
            Example(
                command: "update --service api --set-label 'API key' --set-attr team=dev", meaning: "new attributes")
        ])

    /// The options of `delete VAULT ITEM...` (a packed vault), which the keychain's `delete` does not take.
    static let deleteFromVaultOptions: [Option] =
        secretOptions + [
            identity, verbose.meaning("VAULT ITEM...: name each item as it is deleted, on standard output")
        ]

    static let delete = Page(
        synopsis: [
            "delete SERVICE/ACCOUNT [SELECTORS]", "delete SELECTORS", "delete --all [--class C]",
            "delete VAULT ITEM... [--dry-run] [-v] [secret options]"
        ],
        summary: "Delete items from the keychain, or from a packed vault.",
        description: [
            "Without a selector nothing is deleted unless --all says so. Says how many items it deleted; --dry-run "
                + "prints the items it would delete (as find does) and their number, and deletes nothing. SERVICE/ACCOUNT "
                + "selects as get's does (one word that is not a file).", itemNote,
            "With VAULT ITEM... (as 7z d): deletes the items named as kcar list names them (a service or folder name: "
                + "everything below it) from the packed vault VAULT, in one commit; an ITEM that names nothing is exit 6 and "
                + "nothing is deleted.",
            "A deleted value stays in the file, encrypted: a version 2 vault (and a keychain group) keeps it as the item's "
                + "last version (kcar history, kcar restore) for 90 days by default, then a compaction drops it; version 1 "
                + "until the next compaction. --purge removes the deleted items' values and kept versions from the file at once "
                + "(a compaction). Copies elsewhere keep theirs, and a merge or kcar sync with one brings them back (the copy's "
                + "live version as a losing version, its kept ones as they are): purge or clear them there too."
        ],
        options: queryOptions + [
            O(name: "all", kind: .flag, meaning: "allow an empty selection (every item)"), dryRun,
            O(
                name: "purge", kind: .flag,
                meaning: "also drop the deleted items' kept versions and compact: their values leave the file")
        ]
            + deleteFromVaultOptions,
        examples: [
            Example(command: "delete --service api --dry-run", meaning: "what would be deleted; nothing is"),
            Example(command: "delete github.com/ci", meaning: "one item (--service github.com --account ci)"),
            Example(command: "delete --group scratch --all", meaning: "every item of a group"),
            Example(
                command: "delete secrets.kcv github.com/tokens/old --purge --key-file me.key",
                meaning: "an item out of a packed vault, and its value out of the file")
        ])

    static let groups = Page(
        synopsis: ["groups [--json] [--accept-rollback G]"],
        summary: "Print the access groups and their item counts.",
        description: [
            "Without --group or a list, get, find and groups skip a group they cannot use and name it on standard error (the exit "
                + "code is then that group's).",
            "A group whose vault was replaced by an older copy, or whose record was deleted, is exit 14; "
                + "--accept-rollback G accepts it after a deliberate restore."
        ],
        options: keychainOptions + [
            json,
            O(
                name: "accept-rollback", kind: .value, argument: "G", meaning: "accept group G's vault as it is now",
                completes: .group),
            O(
                name: "names", kind: .flag,
                meaning: "only the names, one a line, without opening any vault (for completion)")
        ],
        examples: [
            Example(command: "groups", meaning: "count and name of every group"),
            Example(command: "groups --accept-rollback personal", meaning: "after restoring personal.kcv from a backup")
        ])

    static let importPage = Page(
        synopsis: ["import --nskeyed FILE SELECTORS", "import --items FILE.json [--group G]"],
        summary: "Add items to a group from an NSKeyedArchiver archive or an item file.",
        description: [
            "--nskeyed FILE adds one item whose value is the archive converted to a kcar archive; --items FILE.json adds the items of "
                + "an item file (extract --items; - for standard input), all or none.",
            itemNote
        ],
        options: keychainOptions + selectorOptions + [
            O(name: "nskeyed", kind: .value, argument: "FILE", meaning: "an NSKeyedArchiver archive", completes: .file),
            O(name: "items", kind: .value, argument: "FILE.json", meaning: "an item file", completes: .file),
            accessible, synchronizable
        ],
        examples: [
            Example(command: "import --nskeyed prefs.plist --service app --account prefs", meaning: "one item"),
            Example(command: "import --items export.json --group personal", meaning: "the items of an export")
        ])

    // MARK: Sharing vaults: merge, git, history

    /// The secret options of a command on vault files only (no keychain group).
    static let keyOptions = secretOptions + [identity]
    static let quiet = O(name: "quiet", kind: .flag, short: "q", meaning: "print nothing on success")
    static let keyNote =
        "Secrets as every vault command takes them (--key-file, --identity, a passphrase), or the key file "
        + "KCAR_KEY_FILE names when none is given: git runs kcar with the options its config holds, and a key never goes there. "
        + "Failing both, a keychain group's shared copy (kcar sync) opens with the group's key from this user's keychain (a group KCAR_ACCESS_GROUPS allows, if set)."

    static let merge = Page(
        synopsis: [
            "merge BASE OURS THEIRS [--name PATH] [-v] [-q] [secret options]",
            "merge --into VAULT OTHER [-v] [-q] [secret options]"
        ],
        summary: "Merge two copies of a version 2 vault item by item (git's merge driver).",
        description: [
            "Merges THEIRS's changes into OURS, given their common ancestor BASE, in git's merge-driver order (%O %A %B): items "
                + "match by item id, and items added on both sides under one primary key (service and account) are one item; a change "
                + "on one side wins over no change; when both sides changed an item (a deletion included), the newer version wins and "
                + "the losing one is kept in the item's history (kcar history). Deterministic, commutative and idempotent (SPEC.md "
                + "Part 4, V9). The result is one commit appended to OURS under its lock: a merge killed at any point leaves OURS as "
                + "it was or fully merged. An empty BASE (git gives one when the branches share no ancestor) is no base; --into "
                + "VAULT OTHER merges without one, from the versions both copies record. ThisDeviceOnly items never cross a merge: "
                + "THEIRS's are not taken, OURS's are not replaced (SPEC.md Part 3, K9).",
            "On any error OURS is left byte for byte as it was and the message names the side: another vault (vault id, vault key "
                + "or schema: exit 2), a wrong key (3) or none (10), a damaged or truncated file or a format version other than 2 "
                + "(4; a version 1 vault: upgrade it with kcar upgrade first), a missing file (8), a THEIRS whose versions run more "
                + "than a day ahead of this machine's clock (16; kcar compact --rewind-clock on a machine whose clock is right makes "
                + "it mergeable). git then reports a conflict and keeps OURS. It warns when THEIRS is older than OURS's tombstone "
                + "horizon (a long-deleted item may come back). A summary line goes to standard error unless -q.",
            "Each conflict is named on standard error, also with -q: the item, which side's change won and why (the newer "
                + "version: its time and writer), and the command that brings the losing version back (kcar restore VAULT ITEM "
                + "--version N), VAULT being the path git gives (--name).",
            keyNote
        ],
        options: keyOptions + [
            O(
                name: "into", kind: .value, argument: "VAULT",
                meaning: "merge OTHER into VAULT, without a common ancestor",
                completes: .file),
            O(
                name: "name", kind: .value, argument: "PATH",
                meaning: "the vault's name in messages (git setup passes git's %P, "
                    + "the path in the repository, since OURS is git's temporary file)"),
            O(
                name: "verbose", kind: .flag, short: "v",
                meaning: "name every item taken from THEIRS, on standard error"), quiet
        ],
        examples: [
            Example(
                command: "merge base.kcv ours.kcv theirs.kcv --key-file team.key",
                meaning: "what git runs during a pull (after kcar git setup)"),
            Example(
                command: "merge --into secrets.kcv ~/Sync/secrets.kcv",
                meaning: "reconcile a copy from a synced folder into the local one")
        ])

    static let sync = Page(
        synopsis: ["sync --group G FILE [--pull] [-v] [-q] [--key-file KEY] [--keychain DIR]"],
        summary: "Reconcile a keychain group with its shared copy FILE (for git, a synced folder, a bucket).",
        description: [
            "A group's vault stays in the keychain; FILE is its shared copy, a vault with the same id and key that holds every item "
                + "of the group except ThisDeviceOnly ones, which never leave (SPEC.md Part 3, K9). sync merges FILE's changes into the "
                + "group, then the group's changes into FILE, each by the rules of kcar merge, each one atomic step: afterwards both hold "
                + "the same shared items, and each keeps its own ThisDeviceOnly items. A missing FILE is written as a new shared copy; a "
                + "second sync with nothing changed writes nothing. Commit FILE to git (after kcar git setup, git pull merges copies "
                + "item by item) or put it in a synced folder. --pull only brings FILE's changes into the group and only reads FILE "
                + "(a server that deploys from a read-only checkout).",
            "A group this keychain lacks is joined from FILE: give the group's key with --key-file KEY (or KCAR_KEY_FILE), passed "
                + "on out of band (never through the repository); it must open FILE, whose group must be G. Errors name FILE: another "
                + "vault or group, or a FILE in the keychain's folder (exit 2), a wrong key (3) or none (10), a damaged file or a version 1 vault (4), no group and no FILE (6), "
                + "a FILE (or, pushing, a group) whose versions run more than a day ahead of this machine's clock (16: kcar compact --rewind-clock)."
        ],
        options: [
            keychainDir,
            O(
                name: "group", kind: .value, argument: "G",
                meaning: "the keychain group FILE is a shared copy of (required)", completes: .group),
            groupList, lockTimeout,
            O(
                name: "key-file", kind: .value, argument: "KEY",
                meaning: "the group's key, to join a group this keychain lacks", completes: .file),
            O(name: "pull", kind: .flag, meaning: "only merge FILE into the group; FILE is only read"),
            O(
                name: "verbose", kind: .flag, short: "v",
                meaning: "name every item pulled and pushed, on standard error"), quiet
        ],
        examples: [
            Example(
                command: "sync --group team secrets/team.kcv",
                meaning: "write, or bring up to date, the shared copy of group team"),
            Example(
                command: "sync --group team secrets/team.kcv --key-file ~/team.key",
                meaning: "on a new machine: join group team from the copy")
        ])

    static let upgrade = Page(
        synopsis: ["upgrade VAULT [-q] [secret options]", "upgrade --group G [--keychain DIR] [-q]"],
        summary: "Rewrite a version 1 vault as version 2 (per-item versions, history, merge).",
        description: [
            "Rewrites VAULT atomically as vault format version 2 (SPEC.md Part 4): the same vault id, key and slots, every item kept "
                + "with one version; a crash leaves the old or the new file. Version 2 keeps per-item versions, deletions and history, "
                + "which kcar merge, kcar history and kcar restore need. A kcar that reads only version 1 can no longer open the file. "
                + "A file that is already version 2 is left as it is (a message, exit 0). --group G upgrades a keychain group made by "
                + "an earlier kcar (with the keychain's schema; its first change would upgrade it anyway)."
        ],
        options: vaultOptions + [quiet],
        examples: [
            Example(command: "upgrade secrets.kcv --key-file team.key", meaning: "secrets.kcv becomes version 2"),
            Example(
                command:
                    "pack secrets.kcv ./secrets --key-file team.key && kcar upgrade secrets.kcv --key-file team.key",
                meaning: "a new version 2 vault of a folder")
        ])

    static let git = Page(
        synopsis: ["git setup [--global]", "git textconv VAULT [--values] [secret options]"],
        summary: "Set up a git repository to merge and diff vaults item by item.",
        description: [
            "setup writes *.kcv merge=kcar diff=kcar into the repository's .gitattributes (once; other lines kept) and sets "
                + "merge.kcar.name, merge.kcar.driver (kcar merge %O %A %B) and diff.kcar.textconv (kcar git textconv) with git config, "
                + "in the repository's config (--global: the user's, and .gitattributes only inside a repository). No key goes into "
                + "the config or the repository: export KCAR_KEY_FILE (a key file of the vaults) where you run git; a keychain group's "
                + "shared copy (kcar sync) needs nothing, its key is found in the keychain. Outside a repository without --global: exit 2.",
            "textconv prints VAULT as text for git diff and git log -p: a line naming the vault, then one line per item in the "
                + "vault's order (class, then service and account, then id): class, name as kcar list prints it, value size, version "
                + "(time and writer, version 2), the other attributes as JSON; the value only with --values. Without a usable key "
                + "(none given, a wrong one) or for a file it cannot read it prints the first line and why, then a line describing "
                + "the file: its size, its BLAKE2b-128 (as b2sum -l 128 prints it) and the generation and item count its last "
                + "trailer claims (unauthenticated), and exits 0: two different files never print the same text, so git diff "
                + "without the key still shows that a vault changed. With --values it counts what it would print first: past 64 MiB "
                + "(TEXTCONV_OUTPUT_MAX; values that compress a thousandfold print far more than the vault's size) it prints "
                + "nothing and exits 4."
        ],
        options: [
            O(
                name: "global", kind: .flag, meaning: "setup: set the user's git config (git config --global)",
                only: "setup"),
            O(
                name: "values", kind: .flag,
                meaning: "textconv: print each value too (text as JSON strings, else base64)", only: "textconv")
        ]
            + keyOptions.map { $0.only("textconv") },
        examples: [
            Example(
                command: "git setup", meaning: "in a repository: git pull merges vaults, git diff shows their items"),
            Example(command: "git textconv secrets.kcv --key-file team.key", meaning: "what git diff compares")
        ],
        positionalWords: ["setup", "textconv"])

    static let history = Page(
        synopsis: [
            "history VAULT ITEM [--json] [secret options]", "history VAULT ITEM --clear [-q] [secret options]",
            "history --group G ITEM [--keychain DIR] [--json | --clear]",
            "history ITEM [--keychain DIR] [--json | --clear]"
        ],
        summary: "List, or clear, the kept versions of an item of a version 2 vault.",
        description: [
            "ITEM is a name as kcar list prints it (service/account) or %id/ and the item's id; a deleted item is found by its kept "
                + "versions. Prints the current version (live or deleted), then each kept version, newest first, numbered for kcar "
                + "restore: its time (UTC) and writer, why it was kept (updated: replaced by an update; deleted; merged: lost a "
                + "merge) and its value's size. Retention (SPEC.md Part 4, V8) keeps the 10 most recent versions of the last 90 days "
                + "(kcar compact --history N --history-days D changes that). No such item: exit 6. ITEM alone, without VAULT or "
                + "--group, is looked for in every access group of the keychain (as get searches): the one group that holds it, "
                + "live or kept.",
            "--clear drops the item's kept versions and compacts the vault, so that their values leave the file (a leaked secret's "
                + "old value, say). Other copies keep theirs, and a merge with one brings them back: clear them there too.",
            keyNote
        ],
        options: vaultOptions + [
            O(name: "clear", kind: .flag, meaning: "drop the item's kept versions; their values leave the file"), quiet,
            O(
                name: "json", kind: .flag,
                meaning: "print the versions as JSON (name, id, class, versions: version, time, writer, why, size)")
        ],
        examples: [
            Example(
                command: "history secrets.kcv github.com/tokens/ci --key-file team.key",
                meaning: "the versions of one item"),
            Example(
                command: "history secrets.kcv github.com/tokens/ci --clear --key-file team.key", meaning: "forget them"),
            Example(
                command: "history --group personal api/bob",
                meaning: "the versions of a keychain item (service api, account bob)")
        ])

    static let restore = Page(
        synopsis: [
            "restore VAULT ITEM --version N [-q] [secret options]",
            "restore --group G ITEM --version N [--keychain DIR] [-q]", "restore ITEM --version N [--keychain DIR] [-q]"
        ],
        summary: "Bring back a kept version of an item as its new version.",
        description: [
            "Makes kept version N (as kcar history numbers them) the item's current version, attributes and value, in one commit: "
                + "the version it replaces is kept in turn. A deleted item comes back under its id. No such item or version: exit 6. "
                + "ITEM alone is found in the keychain's groups as kcar history finds it.",
            keyNote
        ],
        options: vaultOptions + [
            O(name: "version", kind: .value, argument: "N", meaning: "the kept version to restore (kcar history)"),
            quiet
        ],
        examples: [
            Example(
                command: "restore secrets.kcv github.com/tokens/ci --version 1 --key-file team.key",
                meaning: "undo the last change")
        ])

    // MARK: Help itself

    static let helpPage = Page(
        synopsis: ["help [COMMAND]", "help --man"],
        summary: "Print the help of a command, the overview, or the man page.",
        description: [
            "kcar help COMMAND prints what kcar COMMAND --help prints. --man prints the kcar(1) man page (roff)."
        ],
        options: [O(name: "man", kind: .flag, meaning: "print the man page kcar(1) in roff")],
        examples: [
            Example(command: "help pack", meaning: "pack's options and examples"),
            Example(command: "help --man > kcar.1 && man -l kcar.1", meaning: "read the man page without installing it")
        ])

    static let versionPage = Page(
        synopsis: ["version", "--version", "-V"],
        summary: "Print kcar's version and vault format version.",
        description: [], options: [],
        examples: [
            Example(command: "version", meaning: "kcar 0.1 (vault formats 1 and 2 read; new vaults are format 2)")
        ])

    static let completionPage = Page(
        synopsis: ["completion bash|zsh|fish"],
        summary: "Print a shell completion script.",
        description: ["make install installs them; to load one without installing, see the examples."],
        options: [],
        examples: [
            Example(
                command: "completion bash > ~/.local/share/bash-completion/completions/kcar",
                meaning: "bash, for new shells"),
            Example(
                command: "completion zsh > ~/.zfunc/_kcar", meaning: "zsh (with ~/.zfunc in fpath before compinit)"),
            Example(command: "completion fish > ~/.config/fish/completions/kcar.fish", meaning: "fish")
        ],
        positionalWords: ["bash", "zsh", "fish"])

    static let credential = Page(
        synopsis: ["credential [--group G] [--keychain DIR] get|store|erase"],
        summary: "git's credential helper (also run as git-credential-kcar).",
        description: [
            "git's credential helper: git config --global credential.helper kcar (with git-credential-kcar, a link to kcar, on PATH), "
                + "or credential.helper '/path/to/kcar credential'. Reads git's key=value lines on standard input up to an empty line (at "
                + "most 1 MiB); unknown keys are ignored, as git requires. get prints username= and password= of the first match, or "
                + "nothing (exit 0); store adds the credential or replaces the password of the same protocol, host, port, path and "
                + "username; erase deletes the matching items. Any other action is ignored.",
            "Items are internet passwords (class inet) in group G (default git-credentials, or $KCAR_CREDENTIAL_GROUP): srvr the host, "
                + "port, ptcl Apple's protocol code, path, acct the username, the password as the value; kcar find --class inet lists them."
        ],
        options: [
            keychainDir,
            O(name: "group", kind: .value, argument: "G", meaning: "the access group (default git-credentials)"),
            groupList, lockTimeout
        ],
        examples: [
            Example(command: "credential get <<< $'protocol=https\\nhost=example.com\\n'", meaning: "what git asks"),
            Example(command: "find --class inet --group git-credentials", meaning: "the credentials git stored")
        ],
        positionalWords: ["get", "store", "erase"])

    static let dockerCredential = Page(
        synopsis: ["docker-credential [--group G] [--keychain DIR] store|get|erase|list|version"],
        summary: "docker's credential helper (also run as docker-credential-kcar).",
        description: [
            "docker's credential-helper protocol: \"credsStore\": \"kcar\" in ~/.docker/config.json, with docker-credential-kcar (a "
                + "link to kcar) on PATH. store reads {\"ServerURL\", \"Username\", \"Secret\"} as JSON on standard input; get reads the "
                + "server URL and prints that JSON; erase reads the server URL; list prints a JSON object of server URLs and usernames. "
                + "A missing credential prints credentials not found in native keychain and exits 1, as docker expects; every failure "
                + "exits 1 with its message on standard output.",
            "Items are internet passwords (class inet) in group G (default docker-credentials, or $KCAR_DOCKER_CREDENTIAL_GROUP)."
        ],
        options: [
            keychainDir,
            O(name: "group", kind: .value, argument: "G", meaning: "the access group (default docker-credentials)"),
            groupList, lockTimeout
        ],
        examples: [
            Example(command: "docker-credential list", meaning: "the registries docker logged in to"),
            Example(command: "find --class inet --group docker-credentials", meaning: "their items")
        ],
        positionalWords: ["store", "get", "erase", "list", "version"])
}
