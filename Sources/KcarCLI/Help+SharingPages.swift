import VaultFormat

/// The pages of merge, sync, upgrade, git, history and restore; help itself; and the credential helpers.
extension Help {
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
