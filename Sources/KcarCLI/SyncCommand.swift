import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar sync --group G FILE`: reconciles a keychain group with its shared copy FILE (SPEC.md Part 3, §K9):
/// FILE's changes merged into the group, then the group's shareable changes merged into FILE (written anew,
/// without ThisDeviceOnly items, if it does not exist). A group not in the keychain is joined from FILE, given
/// its key.
enum SyncCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("sync"))
        guard let group = args.value("group") else {
            throw CLIError.usage("sync needs --group G: the keychain group FILE is a shared copy of")
        }
        guard (try? Header.checkGroupName(group)) != nil else {
            throw CLIError.usage("access group names are 1 to 255 bytes of UTF-8 without NUL")
        }
        let file = try args.positionals(["FILE"])[0]
        try refuseStandardInput(file)
        let quiet = args.flag("quiet")
        let pullOnly = args.flag("pull")
        let store = try ItemCommands.store(args)
        try store.entitle(group)
        try refuseInKeychain(file, store.directory.path)
        let exists = access(file, F_OK) == 0
        if !store.directory.exists(group) {
            guard exists else {
                throw CLIError(
                    .notFound,
                    "no access group \(group) in \(store.directory.path) and no shared copy \(shown(file)): nothing to sync"
                )
            }
            try join(group, file, store, args)
            if !quiet { Output.err.line(terminalSafe("kcar sync: joined group \(group) from \(shown(file))")) }
        }
        // The group's files are checked (trust, rollback) before anything else reads them.
        let path = try ItemCommands.groupVaultPath(args, group)
        // A sync merges, which needs per-item versions: a group made by an earlier kcar is upgraded first.
        if try !Vault.inspect(path: path).header.keepsVersions { try store.upgradeGroup(group) }
        let key: [UnlockSecret] = [.keyFile(try store.directory.readKey(group))]
        let local = try SecretInput.unlockVersioned(path, args, mode: .write, given: key)
        guard exists else {
            guard !pullOnly else {
                throw CLIError(.notFound, "\(shown(file)): no such shared copy to pull from", file: file)
            }
            let left = try deviceOnlyCount(local)
            try named(file) { try local.writeCopy(to: file, keeping: { !Schema.isDeviceOnly($0.attributes) }) }
            if !quiet {
                Output.err.line(
                    terminalSafe(
                        "kcar sync: wrote \(shown(file)), a shared copy of group \(group) (\(count(local.count - left, "item"))"
                            + (left > 0 ? "; \(count(left, "ThisDeviceOnly item")) left out)" : ")")))
            }
            return .success
        }
        let shared = try named(file) { () throws -> Versioning in
            try checkCopy(file, of: group)
            return try SecretInput.unlockVersioned(file, args, mode: pullOnly ? .read : .write, given: key)
        }
        let verbose = args.flag("verbose")
        let pulled = try named(file) {
            try local.merge(base: nil, theirs: shared, policy: .deviceOnly, listingTaken: verbose)
        }
        let pushed =
            pullOnly
            ? MergeReport()
            : try named(file) {
                try shared.merge(base: nil, theirs: local, policy: .deviceOnlyPush, listingTaken: verbose)
            }
        if !quiet {
            var line =
                "kcar sync: group \(group) and \(shown(file)): \(count(pulled.taken, "item")) pulled"
                + (pullOnly ? " (--pull: \(shown(file)) only read)" : ", \(count(pushed.taken, "item")) pushed")
            if pulled.keptInHistory + pushed.keptInHistory > 0 {
                line +=
                    ", \(count(pulled.keptInHistory + pushed.keptInHistory, "losing version")) kept in history (kcar history)"
            }
            Output.err.line(terminalSafe(line))
        }
        for line in MergeReporting.conflicts(
            pulled, in: local, ours: "group \(group)", theirs: shown(file), restore: nil)
            + MergeReporting.conflicts(pushed, in: shared, ours: shown(file), theirs: "group \(group)", restore: nil)
        {
            Output.err.line(terminalSafe("kcar sync: " + line))
        }
        if verbose {
            for line in MergeReporting.taken(pulled, from: shown(file))
                + MergeReporting.taken(pushed, from: "group \(group)")
            {
                Output.err.line(terminalSafe("kcar sync: " + line))
            }
        }
        MergeCommand.warnOfAge(pulled, theirs: shown(file), ours: "group \(group)")
        MergeCommand.warnOfAge(pushed, theirs: "group \(group)", ours: shown(file))
        if pulled.keptOwn > 0 {
            warn(
                "\(count(pulled.keptOwn, "item")) of \(shown(file)) left out: the group holds the item, or its service and account, as "
                    + "ThisDeviceOnly (kept in the item's history)")
        }
        return .success
    }

    /// Joins `group` from its shared copy: the key (--key-file, else KCAR_KEY_FILE) must open `file`, whose header
    /// must name the group; then the key and a copy of `file` become the group's files.
    static func join(_ group: String, _ file: String, _ store: KeychainStore, _ args: Arguments) throws {
        // A file that cannot be the group's copy is refused as such (exit 2 or 4) before a key is asked for.
        try named(file) { try checkCopy(file, of: group) }
        guard let keyPath = args.value("key-file") ?? SecretInput.environmentKeyFile else {
            throw CLIError(
                .noSecret,
                "group \(group) is not in this keychain: joining it from \(shown(file)) needs its key (--key-file FILE or "
                    + "\(SecretInput.keyFileVariable)), passed on out of band")
        }
        let key = try SecretInput.readKeyFile(keyPath)
        // Checked before anything is written, and again on the copy that becomes the group's vault.
        func check(_ path: String) throws {
            try named(file) {
                try checkCopy(path, of: group)
                // A join takes the copy whole: its clock is bounded as a merge's THEIRS is (SPEC.md Part 4, V5.1), and
                // its generation as writers' are (§8), since the group's record then starts from it.
                guard
                    let copy = try Vault.open(path: path, secret: .keyFile(key), itemsOnDemand: true).versioning
                else {
                    throw CLIError(.damaged, "a version 1 vault: a shared copy is version 2 (written by kcar sync)")
                }
                try copy.checkClockTakenWhole(now: HybridClock.now())
                guard copy.generation <= Limits.generationMax else {
                    throw CLIError(
                        .damaged,
                        "generation \(copy.generation) is past GENERATION_MAX (2^48), which no writer reaches: "
                            + "not joined (`kcar compact FILE --key-file KEY` rewrites it from generation 1)")
                }
            }
        }
        try check(file)
        // A joined vault is at the copy's generation, with no record yet: its first record is written for it as it is (§K6).
        if try store.directory.joinGroup(group, key: key, copying: file, check: check) {
            try store.acceptRollback(group: group)
        }
    }

    /// Refuses a file that cannot be a shared copy of `group`, from its header alone (before any key is tried).
    static func checkCopy(_ file: String, of group: String) throws {
        let header = try Vault.inspect(path: file).header
        guard header.keepsVersions else {
            throw CLIError(.damaged, "a version 1 vault: a shared copy is version 2 (written by kcar sync)")
        }
        guard header.group == group else {
            throw CLIError(.usage, "holds group \(header.group), not \(group): not a shared copy of it")
        }
    }

    /// Refuses a FILE in the keychain's folder (itself or the file a symlink names): a copy written there would
    /// be taken for a group's vault without a key (`kcar sync --group team KEYCHAIN/team2.kcv` made a group team2
    /// that no command could use), and the group's own vault is no shared copy of it.
    static func refuseInKeychain(_ file: String, _ keychain: String) throws {
        func real(_ p: String) -> String? {
            guard let r = realpath(p, nil) else { return nil }
            defer { free(r) }
            return String(cString: r)
        }
        guard let folder = real(keychain) else { return }
        let places = [real(directoryOf(file)), real(file).map(directoryOf)]
        if places.contains(folder) {
            throw CLIError(
                .usage,
                "\(shown(file)) is in the keychain (\(keychain)): a shared copy lives outside it, in a repository or a synced folder",
                file: file)
        }
    }

    /// The live ThisDeviceOnly items of a vault.
    static func deviceOnlyCount(_ v: Versioning) throws -> Int {
        var n = 0
        try v.forEachItem { item in
            if Schema.isDeviceOnly(item.attributes) { n += 1 }
            return true
        }
        return n
    }

    /// Runs `body`, every error naming the shared copy.
    static func named<T>(_ file: String, _ body: () throws -> T) throws -> T {
        let name = shown(file)
        do {
            return try body()
        } catch let e as VaultError {
            throw CLIError(ExitCode.of(e.code), "\(name): \(e)", file: file)
        } catch let e as CLIError where e.file != file {
            throw CLIError(e.code, "\(name): \(e.message)", file: file)
        }
    }

    static func shown(_ path: String) -> String { StandardStreams.shown(path) }
}
