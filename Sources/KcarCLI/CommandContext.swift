import KcarKeychain

/// One run of a command: the arguments it was given and what it learns while it runs that ``CLI`` needs
/// when it ends (the file to name in an error, the keychain group whose generation record to advance).
/// ``CLI/main(_:program:)`` makes one for each run and hands it to the command inside ``Invocation``; the
/// command's ``Arguments`` carry it to the helpers that open files. Nothing of it outlives the run, so runs
/// in one process (the tests run many) cannot see each other's.
final class CommandContext {
    /// The file the command is reading (a vault, an archive), so that an error from inside it names it:
    /// `kcar: v.kcv: not a vault`, not `kcar: not a vault`; `-` is named "standard input".
    private(set) var subject: String?

    /// The group a vault command was given with `--group G`: checked before the command runs
    /// (``ItemCommands/groupVaultPath(_:_:)``) and its generation record advanced after it
    /// (``ItemCommands/finishGroupCommand(_:)``), whichever way the command opens the vault (SPEC.md §K6).
    var group: (store: KeychainStore, name: String, file: FileVersion)?

    /// Records that the command now reads `path`.
    func reading(_ path: String) {
        let shown = StandardStreams.shown(path)
        subject = shown == "-" ? "standard input" : shown
    }

    /// `message`, preceded by the file the command was reading unless it already names it.
    func naming(_ message: String) -> String {
        guard let subject, !message.hasPrefix(subject + ":"), !message.contains(" " + subject) else { return message }
        return subject + ": " + message
    }
}

/// What a command is run with: its arguments (after the command's name) and the context of this run.
struct Invocation {
    let arguments: [String]
    let context: CommandContext

    /// The arguments after the first, for a subcommand (`archive show FILE`), in the same context.
    var rest: Invocation { Invocation(arguments: Array(arguments.dropFirst()), context: context) }
}
