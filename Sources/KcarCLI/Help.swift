/// The help of every command as data: one `Page` per command, from which `kcar CMD --help`, `kcar help CMD`,
/// the man page (`kcar help --man`) and the shell completions (`kcar completion bash|zsh|fish`) are all made,
/// and whose options are the ones the command's parser accepts, so none of them can drift from the parser.
enum Help {
    /// What an option's value completes to in a shell.
    enum Completes: Sendable, Equatable {
        case nothing, file, directory
        case words([String])
        /// The access groups of the keychain, asked of `kcar groups --names` when completing.
        case group

        /// A shell's text for each case (`words` gets the words joined by spaces).
        func action(
            file: String, directory: String, words: (String) -> String, group: String, nothing: String
        ) -> String {
            switch self {
            case .file: return file
            case .directory: return directory
            case .words(let w): return words(w.joined(separator: " "))
            case .group: return group
            case .nothing: return nothing
            }
        }
    }

    /// One option of a command: its parser spec and its one-line documentation.
    struct Option: Sendable {
        let name: String
        let kind: Arguments.Kind
        var short: Character? = nil
        /// The value's name in the documentation (nil for a flag).
        var argument: String? = nil
        let meaning: String
        var completes: Completes = .nothing
        /// The subcommand the option belongs to (`archive show` / `archive convert`), nil for all of them.
        var only: String? = nil

        var spec: Arguments.Spec { Arguments.Spec(name: name, kind: kind, short: short) }

        /// `--name ARG` (and `-s ARG`), as the documentation spells it.
        var label: String {
            let long = "--" + name + (argument.map { " " + $0 } ?? "")
            guard let short else { return long }
            return "-\(short)" + (argument.map { " " + $0 } ?? "") + ", " + long
        }

        func meaning(_ text: String) -> Option {
            var o = Option(
                name: name, kind: kind, short: short, argument: argument, meaning: text, completes: completes)
            o.only = only
            return o
        }

        func only(_ sub: String) -> Option {
            var o = self
            o.only = sub
            return o
        }
    }

    /// One example: the command line and what it does.
    struct Example: Sendable {
        let command: String
        let meaning: String
    }

    /// The help page of one command.
    struct Page: Sendable {
        /// The usage lines, without `kcar `.
        let synopsis: [String]
        /// One line for the command list.
        let summary: String
        /// Paragraphs, each one string (wrapped when printed).
        let description: [String]
        let options: [Option]
        let examples: [Example]
        /// Words a positional argument completes to (subcommands), else files.
        var positionalWords: [String] = []

        /// The parser's specs: every option of the page (of subcommand `sub` when given).
        func specs(_ sub: String? = nil) -> [Arguments.Spec] {
            options.filter { $0.only == nil || sub == nil || $0.only == sub }.map(\.spec)
        }
    }

    /// The page `kcar help NAME` and `kcar NAME --help` print.
    static func text(_ name: String, _ page: Page) -> String {
        var out = ""
        for (i, s) in page.synopsis.enumerated() { out += (i == 0 ? "usage: kcar " : "       kcar ") + s + "\n" }
        out += "\n" + wrap(page.summary, indent: 2)
        for p in page.description { out += "\n" + wrap(p, indent: 2) }
        if !page.options.isEmpty {
            out += "\noptions:\n"
            let width = min(26, (page.options.map(\.label.count).max() ?? 0) + 2)
            for o in page.options {
                let label = "  " + o.label
                let pad =
                    label.count < width + 2
                    ? String(repeating: " ", count: width + 2 - label.count)
                    : "\n" + String(repeating: " ", count: width + 2)
                out += label + pad + o.meaning + "\n"
            }
        }
        if !page.examples.isEmpty {
            out += "\nexamples:\n"
            for e in page.examples { out += "  $ kcar " + e.command + "\n" + wrap(e.meaning, indent: 6) }
        }
        out += "\nExit codes: `kcar help` lists them; `man kcar` has everything."
        return out
    }

    /// `text` cut into lines of at most 100 columns, each indented by `indent` spaces.
    static func wrap(_ text: String, indent: Int, width: Int = 100) -> String {
        let pad = String(repeating: " ", count: indent)
        var out = ""
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if !line.isEmpty, pad.count + line.count + 1 + word.count > width {
                out += pad + line + "\n"
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { out += pad + line + "\n" }
        return out
    }

    /// The exit codes (README's table, the man page's EXIT STATUS).
    static let exitCodes: [(code: Int32, meaning: String)] = [
        (0, "success"),
        (1, "an unexpected internal failure"),
        (2, "usage: an unknown command or option, a missing or malformed argument"),
        (3, "wrong passphrase or key"),
        (
            4,
            "damaged or invalid vault or archive (not a vault, unsupported version, tampered, truncated, a damaged last commit: kcar recover --drop-damaged)"
        ),
        (5, "incomplete last commit (an interrupted write; kcar recover cuts it off)"),
        (6, "item not found"),
        (7, "refusing to overwrite an existing file (--force replaces it)"),
        (8, "I/O error (missing file, permission, full disk, symlinked output folder)"),
        (
            9,
            "pack, add or extract skipped inputs it cannot store or name, or unsafe links (each named on standard error)"
        ),
        (10, "no secret given and no terminal to ask on"),
        (11, "duplicate item"),
        (12, "missing entitlement: the access group is outside the process's list, or its key is unreadable"),
        (13, "lock timeout: another process held the vault's lock"),
        (14, "the group's vault was rolled back to an older copy (kcar groups --accept-rollback G)"),
        (15, "unsafe file: owner, mode, symlink or file type kcar refuses"),
        (16, "clock ahead: a copy to merge, sync or join holds versions more than a day ahead of this machine's clock")
    ]

    /// The environment variables kcar reads.
    static let environment: [(name: String, meaning: String)] = [
        ("KCAR_PASSPHRASE", "a passphrase; taken out of the environment at start-up, so no child process sees it"),
        (
            "KCAR_KEY_FILE",
            "a key file used when no other secret is given (how git's merge driver and diff find the key)"
        ),
        ("KCAR_KEYCHAIN", "the keychain directory when --keychain is not given"),
        ("KCAR_ACCESS_GROUPS", "this process's access groups (A,B) when --groups is not given"),
        ("XDG_DATA_HOME", "the keychain is $XDG_DATA_HOME/kcar when neither --keychain nor KCAR_KEYCHAIN is set"),
        ("HOME", "the keychain is ~/.local/share/kcar when XDG_DATA_HOME is not set either")
    ]

    /// The files kcar uses.
    static let files: [(name: String, meaning: String)] = [
        ("~/.local/share/kcar/", "the default keychain directory (mode 0700)"),
        ("KEYCHAIN/G.kcv", "the vault of access group G"),
        ("KEYCHAIN/G.key", "the key file of access group G (mode 0600; who can read it may use G)"),
        ("KEYCHAIN/.kcar-shared", "names the Unix group a keychain is shared with (kcar init --shared-group)")
    ]

    /// The text `kcar help` and `kcar --help` print after the command list.
    static var overviewFooter: String {
        """
        secrets (never on the command line): --key-file FILE, --identity FILE (-i: an age or X25519 identity),
        --passphrase-file FILE, --passphrase-fd N, KCAR_PASSPHRASE (removed from the environment once read),
        KCAR_KEY_FILE (a key file's path), otherwise a no-echo prompt on the terminal.
        Every vault command takes --group G [--keychain DIR] instead of VAULT: the access group's vault.

        `kcar help COMMAND` (or `kcar COMMAND --help`) shows a command's options and examples; `man kcar` all of them.
        exit codes:
        """ + "\n" + exitCodes.map { "  " + pad(String($0.code), 3) + $0.meaning }.joined(separator: "\n")
    }

    static func pad(_ s: String, _ n: Int) -> String {
        s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count)
    }
}
