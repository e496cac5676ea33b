/// The `--help` text of each command.
enum Help {
    static func text(for command: String) -> String {
        switch command {
        case "pack": return """
            usage: kcar pack VAULT DIR [options]
              Every first-level folder of DIR is a service; every regular file below it is a generic-password
              item whose account is its path below the service folder. Modification times are kept; file
              modes are not (extract writes 0600). Symlinks, devices, FIFOs, non-UTF-8 names and files directly
              in DIR are reported and skipped (exit 9); so is an input swapped for a link, a FIFO or another
              file after the listing (nothing is followed or waited on). VAULT - writes the vault to standard output.
              --group NAME          access group (default: "default")
              --level N             compression level 0 (store) to 12 (default 6; 1 is fastest, 7 about gzip -6's size)
              --exclude PATTERN     skip names matching a shell pattern (a pattern with / matches the path below DIR)
              --key-file FILE       add a key-file slot
              --recipient PUBKEY    add an X25519 slot (64 hex digits or a .pub file); repeatable
              --passphrase-file F, --passphrase-fd N, KCAR_PASSPHRASE
                                    add a passphrase slot (asked twice on the terminal if no other secret)
              --kdf-memory MIB      Argon2id memory, 8-1024 (default 256)
              --kdf-passes N        Argon2id passes, 1-32 (default 3)
              --force               overwrite an existing VAULT
            usage: kcar pack VAULT --items FILE.json [--group G] [slot options]
                   kcar pack VAULT --keychain DIR --group G [slot options]
              A vault of the items of an item file (`extract --items`), or of a keychain's access group G
              (attributes kept). ThisDeviceOnly items are left out (exit 9) unless --include-device-only.
            """
        case "list": return """
            usage: kcar list VAULT [--json] [secret options]
              Prints size, modification date and name (service/account) of every item.
              --json   a JSON array of objects: id, class, service, account, name, size, modified, attributes
            """
        case "extract": return """
            usage: kcar extract VAULT [-C DIR] [ITEM...] [options]
              Writes items to DIR/service/account (ITEM as `kcar list` names it; a service name alone
              selects its items). Never writes outside DIR, follows no symlink below it, writes each file
              under a temporary name and renames it only once its content authenticated; files are 0600.
              -C DIR       output folder (default .)
              --force      replace existing files
              --stdout     write one item's value to standard output
              --items FILE.json   write the items, with every attribute and the values in base64, to one JSON
                           file (SPEC.md §K7; mode 0600; - for standard output) instead of files, streamed in
                           file order; at most 100,000 items
              --include-device-only   also export ThisDeviceOnly items (left out by default, exit 9)
            Every vault command (list, extract, verify, info, passwd, rekey, compact, recover) also takes
            --group G [--keychain DIR] instead of VAULT: the access group's vault, opened with its key file.
            """
        case "verify": return """
            usage: kcar verify VAULT [--json] [--no-key] [secret options]
              Checks the header, every slot's structure, every commit's trailer and index, and every record.
              Exit 0 only for an intact vault (4 damaged, 5 incomplete last commit). With --no-key it checks
              the structure and header checksum only, and says so (records are not authenticated). With no
              secret, no --no-key and no terminal to ask on: exit 10, nothing was checked.
            """
        case "info": return """
            usage: kcar info VAULT [--json] [secret options]
              Version, group, vault id, key slots and KDF parameters; with a secret also items, generation,
              body size, dead space and incomplete bytes. Never prompts. Dead space is a lower bound (deleted
              members after a shared record's last live one are not counted): only `kcar compact` makes sure a
              deleted value has left the file.
            """
        case "keygen": return """
            usage: kcar keygen FILE [--x25519] [--force]
              Writes 32 random bytes to FILE (mode 0600): a key file for --key-file. With --x25519 FILE is an
              X25519 secret key; its public key is printed and written to FILE.pub, for pack --recipient.
              Both files or neither: an existing FILE or FILE.pub is refused (exit 7) before anything is
              written; --force replaces both.
            """
        case "passwd": return """
            usage: kcar passwd VAULT [options] [secret options]
              Without options: replaces the passphrase slot that opened the vault with a new passphrase.
              No item is re-encrypted; the header is rewritten atomically.
              Removing a slot (or changing a passphrase) is NOT revocation: the vault key is unchanged, so an
              old copy of the header or file still opens the vault with the removed secret, even spliced onto
              the current file. --revoke does revoke: the change is made under a new vault key (as rekey).
              --add-passphrase          add a passphrase slot
              --add-key-file FILE       add a key-file slot
              --add-recipient PUBKEY    add an X25519 slot; repeatable
              --remove-slot N           remove slot N (as `kcar info` numbers them); repeatable
              --revoke                  rekey too, so that no old header opens the vault; a slot kept needs
                                        its secret (the one given, the group's key, or --add-key-file),
                                        others must be removed (and added again with --add-*)
              --new-passphrase-file F, --new-passphrase-fd N   the new passphrase (else asked twice)
              --kdf-memory MIB, --kdf-passes N                  its Argon2id cost
            """
        case "rekey": return """
            usage: kcar rekey VAULT [options] [secret options]
              Makes a new vault key and re-seals every record and the index. The new header has a slot for
              the secret that opened the vault, plus those added here; other old slots are dropped (named
              on standard error). Use it when a slot's secret or an old copy of the header may have leaked.
              --add-passphrase, --add-key-file FILE, --add-recipient PUBKEY, --new-passphrase-file F,
              --new-passphrase-fd N, --kdf-memory MIB, --kdf-passes N
            """
        case "compact": return """
            usage: kcar compact VAULT [secret options]
              Rewrites the vault atomically without dead space: deleted and replaced values leave the file.
              Commits compact by themselves only past half the file and 1 MiB of dead space: run this after a
              delete to make sure the value has left the file. A failed automatic compaction is reported on
              standard error; its commit stood (exit 0).
            """
        case "recover": return """
            usage: kcar recover VAULT [secret options]
              Cuts off the bytes of an incomplete last commit (an interrupted write).
            """
        case "archive": return """
            usage: kcar archive show FILE [--json]
                   kcar archive convert IN OUT [--to kcar|nskeyed] [--deterministic] [--force]
              FILE is a kcar archive (keyed archiver, SPEC.md Part 2) or an NSKeyedArchiver archive (binary or XML
              property list), told apart by their first bytes.
              show prints the value as indented JSON, or as one
              line with --json: strings, numbers, booleans and null as themselves; {"$data": base64},
              {"$date": ISO 8601 UTC}, {"$uuid": ...}, {"$url": ...}, {"$set": [...]}, {"$dict": [[key, value], ...]}
              for other keys, {"$class": name, "$fields": {...}} for objects, {"$double": "NaN"} for non-finite
              numbers, {"$dictionary": {...}} around a dictionary with a key starting with $, and
              {"$date": {"$seconds": ...}} for a date outside the years 0000-9999 (SPEC.md Part 2 §A12);
              shared values are printed at every use. Nothing is printed if the JSON would pass 64 MiB.
              convert writes the value in the other format (kcar <-> NSKeyedArchiver binary plist) or the one
              --to names; a kcar archive is always in canonical order (byte-identical output in every
              process; --deterministic is the default).
              OUT is created with mode 0600 and never replaced without --force.
              Malformed or hostile input: a one-line error and exit 4.
            """
        case "init": return """
            usage: kcar init [--keychain DIR] [--shared-group TEAM] [--default-group G]
              Creates the keychain directory (mode 0700, parents too) and prints its path. Groups are created
              by the first add to them. DIR defaults to $KCAR_KEYCHAIN, $XDG_DATA_HOME/kcar, ~/.local/share/kcar.
              --default-group G    record G (in .kcar-default-group) as the group adds go to when a program
                                   names none and sets no KCAR_ACCESS_GROUPS; without it, a program's adds
                                   go to a group named like its executable (myapp, kcar).
              --shared-group TEAM  share the directory (yours) with Unix group TEAM on purpose: group TEAM,
                                   mode 2770, and .kcar-shared naming TEAM; keys are then made 0640 and
                                   vaults 0660, so members of TEAM use the groups whose key they can read.
              kcar refuses (exit 15) a keychain that anyone but you, root (or TEAM, when shared) can change,
              and group files that are symlinks, FIFOs, another user's, or keys others can read.
            """
        case "add", "get", "find", "update", "delete", "groups", "import": return itemHelp
        case "credential": return Credential.help
        case "docker-credential": return DockerCredential.help
        default: return CLI.usage
        }
    }

    static let itemHelp = """
        usage: kcar add    SELECTORS [--accessible LEVEL] [--synchronizable] [--value-file FILE]
               kcar get    SELECTORS                 print the value of the one matching item
               kcar find   [SELECTORS] [--json] [--limit N]
               kcar update SELECTORS [--set-label L] [--set-attr NAME=VALUE]... [--unset-attr NAME]...
                           [--set-accessible LEVEL] [--value-file FILE]
               kcar delete SELECTORS | --all
               kcar groups [--json] [--accept-rollback G]
               kcar import --nskeyed FILE SELECTORS      an NSKeyedArchiver archive, converted to a kcar archive
               kcar import --items FILE.json             the items of an item file (extract --items)
          Items live in a keychain directory: each access group is one vault (G.kcv) with its key file
          (G.key, mode 0600); who can read a group's key file may use the group.
          --keychain DIR     the keychain (default $KCAR_KEYCHAIN, $XDG_DATA_HOME/kcar, ~/.local/share/kcar)
          --group G          the access group. add without it uses the first of --groups/KCAR_ACCESS_GROUPS;
                             the others search every group of that list (or every group whose key is readable)
          --groups A,B       this process's access groups (else KCAR_ACCESS_GROUPS); a group outside it: exit 12
          --lock-timeout S   seconds to wait for another process's lock (default 10; then exit 13)
        SELECTORS (exact, case-sensitive; --ignore-case to fold case):
          --class C          genp (default), inet, cert, keys, idnt
          --service S --account A --label L --server H --port N --protocol P --path P
          --attr NAME=VALUE  a user attribute, kept in the index: find selects by it without decrypting
          --attr NAME:TYPE=VALUE   TYPE string (default), int, bool (true/false), date (2026-11-30T12:00:00Z),
                             data (base64) or hex
          --attr kSecAttrComment=VALUE   any of Apple's attributes by its constant name, typed as Apple types it
        The value of add (and of update with --value-file) is read from --value-file FILE, else from standard
        input (asked for twice, without echo, on a terminal); never from an argument.
        LEVEL: when-unlocked (default), after-first-unlock, always, and their -this-device-only forms,
        when-passcode-set-this-device-only (or Apple's codes ak, ck, dk, aku, cku, dku, akpu).
        ThisDeviceOnly items never leave through extract or pack without --include-device-only.
        Uniqueness is Apple's: genp service+account, inet server+protocol+port+path+account+..., and
        synchronizable. Without --group or a list, get, find and groups skip a group they cannot use and
        name it on standard error (the exit code is then that group's). Exit codes: 6 not found, 11 duplicate
        item, 12 missing entitlement, 13 lock timeout, 14 vault rolled back or replaced, or its record
        deleted (kcar groups --accept-rollback G after a deliberate restore), 15 unsafe keychain file.
        """
}
