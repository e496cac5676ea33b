import KcarKeychain
import VaultFormat

/// `kcar init`: creates the keychain directory (mode 0700), with `--shared-group` a folder a team shares.
enum InitCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("init"))
        _ = try args.positionals([])
        let dir = try ItemCommands.directory(args)
        let shared = args.value("shared-group")
        let defaultGroup = args.value("default-group")
        let created = try dir.create(sharedGroup: shared)
        if let defaultGroup { try dir.setDefaultGroup(defaultGroup) }
        Output.out.line(dir.path)
        if let shared {
            warn(
                "\(dir.path) is shared with the members of Unix group \(shared): each of them can add groups and read "
                    + "the groups they can read the key of")
        } else if !created, defaultGroup == nil {
            warn("\(dir.path) exists; nothing changed")
        }
        return .success
    }
}
