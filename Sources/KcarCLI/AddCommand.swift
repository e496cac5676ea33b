import KcarKeychain
import VaultFormat

/// `kcar add`: one new item in a group (SecItemAdd).
enum AddCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("add"))
        if let code = try VaultEdit.route(args, "add", vaultOptions: Help.addToVaultOptions, run: VaultEdit.add) {
            return code
        }
        let (c, attributes) = try ItemCommands.newItem(args)
        let generate = try GenerateCommand.requested(args)
        let s = try ItemCommands.store(args)
        var value = try generate ? GenerateCommand.password(args) : ItemCommands.readValue(args, required: true)!
        defer { wipe(&value) }
        try s.add(class: c, attributes: attributes, value: value, group: args.value("group"))
        // Printed once the item is stored, so that a refused add shows no password that was never kept.
        if generate { try StandardStreams.writeValue(value, name: "the password", force: false) }
        return .success
    }
}
