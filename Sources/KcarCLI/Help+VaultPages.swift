import VaultFormat

/// The pages of the commands on vault files: pack, list, extract, verify, info, the key commands and archive.
extension Help {
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
                + "access group G (attributes kept; the keychain of --keychain DIR, else $KCAR_KEYCHAIN or the default). ThisDeviceOnly items are left out (exit 9) unless --include-device-only. "
                + "--items takes at most 100,000 items (the new vault's items are held in memory until it is written).",
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
                + "account: the same order). Version 2 items are read and printed a page at a time, never all held (on every "
                + "core, at most 64 pages at once), so a vault of millions lists in little memory (the table reads them twice: "
                + "once for the SIZE column's width).",
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
                + "standard output) instead of files, streamed in file order.",
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
}
