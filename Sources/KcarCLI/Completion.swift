/// `kcar completion bash|zsh|fish`: completion scripts made from `CLI.commands`, so every command and every
/// option the parser accepts completes, and nothing else does.
enum Completion {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("completion"))
        let shell = try args.positionals(["SHELL"])[0]
        switch shell {
        case "bash": Output.out.write(bash())
        case "zsh": Output.out.write(zsh())
        case "fish": Output.out.write(fish())
        default: throw CLIError.usage("completion takes bash, zsh or fish")
        }
        return .success
    }

    /// The words a command's positionals complete to: subcommands, or (for help) the commands.
    static func words(_ c: CLI.Command) -> [String] {
        c.name == "help" ? CLI.commands.map(\.name) : c.page.positionalWords
    }

    static func optionWords(_ o: Help.Option) -> [String] {
        ["--" + o.name] + (o.short.map { ["-\($0)"] } ?? [])
    }

    // MARK: bash

    static func bash() -> String {
        var out = """
            # bash completion for kcar, made by `kcar completion bash`
            _kcar() {
                local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} opts="" words=""
                if [ "$COMP_CWORD" -eq 1 ]; then
                    COMPREPLY=($(compgen -W "\(CLI.commands.map(\.name).joined(separator: " "))" -- "$cur"))
                    return
                fi
                case "${COMP_WORDS[1]}" in

            """
        for c in CLI.commands {
            out += "    \(c.name))\n        case \"$prev\" in\n"
            for o in c.page.options where o.kind != .flag {
                let action = o.completes.action(
                    file: "COMPREPLY=($(compgen -f -- \"$cur\"))",
                    directory: "COMPREPLY=($(compgen -d -- \"$cur\"))",
                    words: { "COMPREPLY=($(compgen -W \"\($0)\" -- \"$cur\"))" },
                    group: "COMPREPLY=($(compgen -W \"$(kcar groups --names 2>/dev/null)\" -- \"$cur\"))",
                    nothing: "COMPREPLY=()")
                out += "        \(optionWords(o).joined(separator: "|"))) \(action); return ;;\n"
            }
            out += "        esac\n"
            out += "        opts=\"\(c.page.options.flatMap(optionWords).joined(separator: " "))\"\n"
            out += "        words=\"\(words(c).joined(separator: " "))\" ;;\n"
        }
        out += """
                esac
                if [[ $cur == -* ]]; then
                    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
                elif [ -n "$words" ] && [ "$COMP_CWORD" -eq 2 ]; then
                    COMPREPLY=($(compgen -W "$words" -- "$cur"))
                else
                    COMPREPLY=($(compgen -f -- "$cur"))
                fi
            }
            complete -o filenames -F _kcar kcar

            """
        return out
    }

    // MARK: zsh

    /// Text inside a single-quoted zsh word and an `_arguments` description: no quote, bracket or colon.
    static func zshText(_ s: String) -> String {
        String(s.map { "'[]:\\".contains($0) ? " " : $0 })
    }

    static func zsh() -> String {
        var out = """
            #compdef kcar
            # zsh completion for kcar, made by `kcar completion zsh`
            _kcar_groups() {
              local -a groups
              groups=(${(f)"$(kcar groups --names 2>/dev/null)"})
              _describe 'group' groups
            }
            _kcar() {
              local -a commands
              commands=(

            """
        for c in CLI.commands { out += "    '\(c.name):\(zshText(c.page.summary))'\n" }
        out += """
              )
              if (( CURRENT == 2 )); then
                _describe 'command' commands
                return
              fi
              local cmd=$words[2]
              shift words
              (( CURRENT-- ))
              case $cmd in

            """
        for c in CLI.commands {
            out += "  \(c.name))\n    _arguments -s \\\n"
            for o in c.page.options {
                let names = optionWords(o)
                let prefix =
                    o.kind == .repeated ? "'*'" : (names.count > 1 ? "'(\(names.joined(separator: " ")))'" : "")
                let name = names.count > 1 ? "{\(names.joined(separator: ","))}" : names[0]
                var spec = prefix + name + "'[\(zshText(o.meaning))]"
                if let arg = o.argument {
                    let action = o.completes.action(
                        file: "_files", directory: "_files -/", words: { "(\($0))" }, group: "_kcar_groups",
                        nothing: " ")
                    spec += ":\(zshText(arg)):\(action)"
                }
                out += "      \(spec)' \\\n"
            }
            let w = words(c)
            out +=
                w.isEmpty
                ? "      '*:file:_files'\n" : "      '1:subcommand:(\(w.joined(separator: " ")))' '*:file:_files'\n"
            out += "    ;;\n"
        }
        out += """
              esac
            }
            _kcar "$@"

            """
        return out
    }

    // MARK: fish

    static func fishQuote(_ s: String) -> String {
        "'" + s.map { $0 == "\\" || $0 == "'" ? "\\" + String($0) : String($0) }.joined() + "'"
    }

    static func fish() -> String {
        var out = "# fish completion for kcar, made by `kcar completion fish`\ncomplete -c kcar -f\n"
        let all = CLI.commands.map(\.name).joined(separator: " ")
        for c in CLI.commands {
            out +=
                "complete -c kcar -n 'not __fish_seen_subcommand_from \(all)' -a \(c.name) -d \(fishQuote(c.page.summary))\n"
        }
        for c in CLI.commands {
            let when = "-n '__fish_seen_subcommand_from \(c.name)'"
            let w = words(c)
            out +=
                w.isEmpty
                ? "complete -c kcar \(when) -F\n"
                : "complete -c kcar \(when) -a \(fishQuote(w.joined(separator: " ")))\n"
            for o in c.page.options {
                var line = "complete -c kcar \(when) -l \(o.name)"
                if let s = o.short { line += " -s \(s)" }
                if o.argument != nil {
                    line += o.completes.action(
                        file: " -r -F", directory: " -x -a '(__fish_complete_directories)'",
                        words: { " -x -a " + fishQuote($0) }, group: " -x -a '(kcar groups --names 2>/dev/null)'",
                        nothing: " -x")
                }
                out += line + " -d \(fishQuote(o.meaning))\n"
            }
        }
        return out
    }
}
