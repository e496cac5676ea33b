import VaultFormat

/// The pages of the keychain commands: init and the item commands.
extension Help {
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

    static let secretService = Page(
        synopsis: ["secret-service [--replace] [--background] [--keychain DIR] [--groups A,B]"],
        summary: "Serve the keychain to every application as the freedesktop Secret Service (org.freedesktop.secrets).",
        description: [
            "Owns org.freedesktop.secrets on the session bus (DBUS_SESSION_BUS_ADDRESS) and serves the keychain's groups as "
                + "collections, their generic passwords as items, until it is stopped or another program takes the name. "
                + "secret-tool, libsecret, Python's secretstorage and keyring store and look up secrets through it; an item they store "
                + "is a generic password whose attributes are user attributes (kcar find --attr NAME=VALUE finds it) and whose "
                + "service is its xdg:schema (SPEC.md K10).",
            "The default alias is the default group (--groups' first, or init --default-group's; a client's SetAlias records it "
                + "as init --default-group does). A collection is unlocked while its group's key file is readable: Unlock needs no "
                + "prompt, Lock drops the key until the next Unlock. Deleting a collection deletes its group's vault, record and "
                + "key (not a shared copy: a sync brings it back).",
            "Changes are signalled (ItemCreated, ItemChanged, ItemDeleted, CollectionCreated, CollectionDeleted): its own when "
                + "made, and other programs' (kcar add, a sync, a git pull) within a second, for the groups a client has listed.",
            "--replace takes the name from a running gnome-keyring-daemon or kcar secret-service, which stops serving. "
                + "--background starts it in a session of its own (its output at /dev/null) and returns once it serves. Exit 7 if "
                + "another program holds the name and does not let it go, 8 if there is no session bus. After make install, a "
                + "client that finds no service starts it (a D-Bus activation file and a systemd user unit). The daemon is the "
                + "program kcar-secret-service, installed beside kcar, which this command runs.",
            "Not served: aliases other than default (there is no session collection), and prompts (none is ever needed: "
                + "SPEC.md K10)."
        ],
        options: [
            keychainDir, groupList, lockTimeout, O(name: "replace", kind: .flag, meaning: "take the bus name over"),
            O(name: "background", kind: .flag, meaning: "run as a daemon; return once it serves")
        ],
        examples: [
            Example(
                command: "secret-service --replace --background", meaning: "serve the keychain instead of gnome-keyring"
            ),
            Example(
                command: "find --attr service=github",
                meaning: "what secret-tool store --label=token service github user bob stored through it")
        ])

    static let importPage = Page(
        synopsis: ["import --nskeyed FILE SELECTORS", "import --items FILE.json [--group G]"],
        summary: "Add items to a group from an NSKeyedArchiver archive or an item file.",
        description: [
            "--nskeyed FILE adds one item whose value is the archive converted to a kcar archive; --items FILE.json adds the items of "
                + "an item file (extract --items; - for standard input), all or none: any number of items (up to a vault's "
                + "4,000,000), in bounded memory (sealed into a temporary file beside the group's vault as they are read). "
                + "An item whose primary key the group (or one of the 65,536 items before it) holds is refused as it is "
                + "read; two items of the file with one key further apart when the commit merges them (exit 11 either way, "
                + "nothing imported).",
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
}
