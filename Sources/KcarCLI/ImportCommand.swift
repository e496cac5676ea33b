import KcarKeychain
import KeyedArchive
import VaultFormat

/// `kcar import`: an NSKeyedArchiver plist as one item, or the items of a `find --json`/export file.
enum ImportCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("import"))
        _ = try args.positionals([])
        let s = try ItemCommands.store(args)
        switch (args.value("nskeyed"), args.value("items")) {
        case (let file?, nil):
            let (value, wasNSKeyed) = try ArchiveCommand.loadDetecting(file, args.context)
            guard wasNSKeyed else { throw CLIError.usage("\(file) is not an NSKeyedArchiver archive") }
            let bytes = try ArchiveSerialization.bytes(from: value, options: .deterministic)
            let (c, attributes) = try ItemCommands.newItem(args)
            try s.add(class: c, attributes: attributes, value: bytes, group: args.value("group"))
            warn("imported \(file) as a kcar archive of \(bytes.count) bytes")
        case (nil, let file?):
            // One transaction around the streaming read: an item the file refuses after others were added
            // ends it, and nothing is imported. The file's own error leaves as it is (the store would report
            // an error it does not know as an I/O failure). In bulk (a group's vault keyed by primary key, as
            // kcar makes them), the items leave memory as they are added, so any number imports in bounded
            // memory; an item whose key is stored or was taken by one of the items just before it is refused
            // as it is read, two items of the file with one key further apart when the commit merges them.
            var fileError: CLIError?
            var read = false
            let imported: Int
            do {
                imported = try s.transaction(group: args.value("group")) { tx in
                    // A group that cannot take items in bulk (its vault keyed otherwise than by §K4's primary
                    // keys) holds them all until the commit: as many as pack --items takes.
                    let bulk = tx.addInBulk(spillEvery: DebugSeam.spillEvery ?? 65_536)
                    let limit = bulk ? ItemFile.itemsMax : ItemFile.packItemsMax
                    var n = 0
                    // The file is parsed on a second core while the items are added here. Once an add fails the
                    // rest of the file is still read and checked, and an invalid file is reported as such
                    // whatever an item before its fault did (the file's error first).
                    var parsed: Result<Int, Error> = .success(0)
                    var failed: Error?
                    do {
                        try pipelined(batch: 256, inFlight: 4) { emit in
                            parsed = Result { try ItemFile.read(file, itemsMax: limit) { _ = emit($0) } }
                        } consume: { entries in
                            for e in entries {
                                n += 1
                                do {
                                    try tx.add(class: e.itemClass, attributes: e.attributes, value: e.value)
                                } catch let error as KeychainError where error.status == .duplicateItem {
                                    // Which of the file's items: its place in the file and the attributes that
                                    // name it.
                                    throw KeychainError(
                                        .duplicateItem,
                                        "item \(n) of \(file) (\(describe(e.itemClass, e.attributes))): "
                                            + "\(error.message); nothing was imported")
                                }
                            }
                        }
                    } catch {
                        failed = error
                    }
                    let count: Int
                    do { count = try parsed.get() } catch let error as CLIError {
                        fileError = error
                        throw error
                    }
                    if let failed { throw failed }
                    // Every item read and added: a duplicate from here on is two of the file's items.
                    read = true
                    return count
                }
            } catch let error as KeychainError where read && error.status == .duplicateItem {
                let prefix = "two items of this commit have the key "
                let key =
                    error.message.hasPrefix(prefix) ? String(error.message.dropFirst(prefix.count)) : error.message
                throw KeychainError(
                    .duplicateItem, "two items of \(file) have one primary key, \(key); nothing was imported")
            } catch {
                throw fileError ?? error
            }
            warn("imported \(count(imported, "item"))")
        default:
            throw CLIError.usage("give --nskeyed FILE or --items FILE.json")
        }
        return .success
    }
}
