/// The man page kcar(1), in roff, made from `CLI.commands` (`kcar help --man`; `make install` installs it).
enum ManPage {
    static func render() -> String {
        var out = """
            .TH KCAR 1 "" "\(esc(CLI.versionText))" "User Commands"
            .nh
            .SH NAME
            kcar \\- a file-based secret store: vaults of items, keyed archives and a keychain directory
            .SH SYNOPSIS
            .B kcar
            .I COMMAND
            [\\fIOPTIONS\\fR]
            .SH DESCRIPTION
            \(esc("kcar keeps secrets in vault files (authenticated, compressed, with key slots for passphrases, key files and "
                  + "X25519 recipients), converts keyed archives, and offers Apple's SecItem semantics over a keychain "
                  + "directory: one vault per access group."))
            .PP
            \(esc("Secrets never come from the command line: --key-file FILE, --passphrase-file FILE, --passphrase-fd N, "
                  + "KCAR_PASSPHRASE, KCAR_KEY_FILE (a key file's path), otherwise a no-echo prompt on the terminal."))
            .SH COMMANDS

            """
        for c in CLI.commands {
            out += ".SS \"kcar \(c.name)\"\n.nf\n"
            for s in c.page.synopsis { out += "\\fBkcar\\fR " + esc(s) + "\n" }
            out += ".fi\n.PP\n" + esc(c.page.summary) + "\n"
            for p in c.page.description { out += ".PP\n" + esc(p) + "\n" }
            if !c.page.options.isEmpty {
                out += ".PP\nOptions:\n.RS\n"
                for o in c.page.options { out += ".TP\n" + label(o) + "\n" + esc(o.meaning) + "\n" }
                out += ".RE\n"
            }
            if !c.page.examples.isEmpty {
                out += ".PP\nExamples:\n.RS\n"
                for e in c.page.examples {
                    out += ".TP\n\\fB$ kcar " + esc(e.command) + "\\fR\n" + esc(e.meaning) + "\n"
                }
                out += ".RE\n"
            }
        }
        out += ".SH EXIT STATUS\n"
        for e in Help.exitCodes { out += ".TP\n.B \(e.code)\n" + esc(e.meaning) + "\n" }
        out += ".SH ENVIRONMENT\n"
        for e in Help.environment { out += ".TP\n.B \(e.name)\n" + esc(e.meaning) + "\n" }
        out += ".SH FILES\n"
        for f in Help.files { out += ".TP\n.I \(esc(f.name))\n" + esc(f.meaning) + "\n" }
        out +=
            ".SH SEE ALSO\nThe README.md, docs/ and SPEC.md of kcar's source: the guides, and the vault, archive and keychain formats.\n"
        return out
    }

    /// `\fB--name\fR \fIARG\fR` (and the short form).
    static func label(_ o: Help.Option) -> String {
        let arg = o.argument.map { " \\fI" + esc($0) + "\\fR" } ?? ""
        let long = "\\fB" + esc("--" + o.name) + "\\fR" + arg
        guard let s = o.short else { return long }
        return "\\fB" + esc("-\(s)") + "\\fR" + arg + ", " + long
    }

    /// Text safe in roff: backslashes and hyphens escaped, no line starting with a control character.
    static func esc(_ s: String) -> String {
        var out = ""
        for ch in s {
            switch ch {
            case "\\": out += "\\e"
            case "-": out += "\\-"
            case "\n": out += "\n"
            default: out.append(ch)
            }
        }
        return out.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(".") || $0.hasPrefix("'") ? "\\&" + $0 : String($0) }.joined(separator: "\n")
    }
}
