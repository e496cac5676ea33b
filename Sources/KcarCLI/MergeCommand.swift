import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar merge BASE OURS THEIRS` (git's merge-driver order, `%O %A %B`) and `kcar merge --into VAULT OTHER`:
/// THEIRS's changes merged into OURS item by item (SPEC.md Part 4, V9), in one commit appended to OURS.
enum MergeCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("merge"))
        guard let name = args.value("name") else { return try merge(args) }
        // Run by git (--name %P): a failure leaves the vault conflicted, and git's own message names neither kcar
        // nor how to finish, so both are said here.
        do {
            return try merge(args)
        } catch {
            let (code, message): (ExitCode, String)
            switch error {
            case let e as CLIError: (code, message) = (e.code, e.message)
            case let e as VaultError: (code, message) = (ExitCode.of(e.code), e.description)
            case let e as KeychainError: (code, message) = (ExitCode.of(e), e.description)
            default: throw error
            }
            let file = MergeReporting.shellWord(name)
            throw CLIError(
                code,
                "merge of \(name) (git's merge driver, kcar merge): \(message). git leaves \(name) conflicted: once "
                    + "that is fixed, `git checkout -m \(file)` runs this merge again, then `git add \(file)` and commit"
            )
        }
    }

    static func merge(_ args: Arguments) throws -> ExitCode {
        let paths: (base: String?, ours: String, theirs: String)
        if let into = args.value("into") {
            paths = (nil, into, try args.positionals(["OTHER"])[0])
        } else {
            let p = try args.positionals(["BASE", "OURS", "THEIRS"])
            paths = (p[0], p[1], p[2])
        }
        try refuseStandardInput(paths.ours)
        // One secret (or one passphrase asked once) opens all three: they are copies of one vault.
        var given = try SecretInput.givenSecrets(args, orKeyOfGroup: try? Vault.inspect(path: paths.ours).header.group)
        if given.isEmpty { given = [.passphrase(try SecretInput.prompt("Passphrase: ", confirm: false))] }
        let base = try paths.base.flatMap { try open(.base, $0, args, given) }
        guard let ours = try open(.ours, paths.ours, args, given, mode: .write),
            let theirs = try open(.theirs, paths.theirs, args, given)
        else { return .failure }
        let report: MergeReport
        do {
            report = try ours.merge(base: base, theirs: theirs, policy: .deviceOnly, listingTaken: args.flag("verbose"))
        } catch let e as VaultError {
            // The library's own refusals that name one side stand as they are; anything else (a comparison of
            // both sides, a failure while writing) is said as OURS's, which is unchanged.
            let namesOneSide = e.side != nil && e.side != .both
            throw CLIError(
                ExitCode.of(e.code),
                namesOneSide ? e.context : "OURS (\(shown(paths.ours))): merge failed, OURS unchanged: \(e)")
        }
        warnOfAge(report, theirs: "THEIRS (\(shown(paths.theirs)))", ours: "OURS")
        // Named as the user knows it: git passes the vault's path in the repository (%P) as --name, since OURS is
        // git's temporary file.
        let vault = args.value("name") ?? paths.ours
        let restore = { (item: String, n: Int) in
            "kcar restore \(MergeReporting.shellWord(vault)) \(MergeReporting.shellWord(item)) --version \(n)"
        }
        for line in MergeReporting.conflicts(report, in: ours, ours: "OURS", theirs: "THEIRS", restore: restore) {
            Output.err.line(terminalSafe("kcar merge: \(shown(vault)): " + line))
        }
        if args.flag("verbose") {
            for line in MergeReporting.taken(report, from: "THEIRS") {
                Output.err.line(terminalSafe("kcar merge: \(shown(vault)): " + line))
            }
        }
        if report.keptOwn > 0 {
            warn(
                "\(count(report.keptOwn, "item")) of THEIRS left out: OURS holds the item, or its primary key, as ThisDeviceOnly "
                    + "(kept in the item's history)")
        }
        if !args.flag("quiet") { Output.err.line(terminalSafe("kcar merge: " + summary(report, ours: shown(vault)))) }
        return .success
    }

    /// The warning every merge that takes a copy gives (merge, and sync's pull and push): THEIRS was last
    /// changed before OURS's tombstone horizon (SPEC.md Part 4, V8). A copy whose clock runs ahead is refused
    /// instead (V5.1), by the library, the same way everywhere.
    static func warnOfAge(_ report: MergeReport, theirs: String, ours: String) {
        guard report.theirsOlderThanTombstones else { return }
        warn(
            "warning: \(theirs) was last changed before \(ours)'s tombstone horizon: an item \(ours) deleted long ago (its "
                + "tombstone expired) and \(theirs) still holds has come back")
    }

    /// The one line `kcar merge` prints (git shows it during a pull).
    static func summary(_ r: MergeReport, ours: String) -> String {
        guard r.taken + r.sharedKeys + r.historyCopied + r.keptInHistory > 0 else {
            return "\(ours): nothing to merge (OURS already holds THEIRS's changes)"
        }
        var parts = ["\(count(r.taken, "item")) taken from THEIRS"]
        if r.conflicts > 0 { parts.append("\(count(r.conflicts, "conflict")) (the newer change won)") }
        if r.sharedKeys > 0 {
            parts.append("\(count(r.sharedKeys, "item")) added on both sides under one name (the newer kept)")
        }
        if r.keptInHistory > 0 {
            parts.append("\(count(r.keptInHistory, "losing version")) kept in history (kcar history)")
        }
        if r.historyCopied > 0 { parts.append("\(count(r.historyCopied, "kept version")) copied") }
        return "\(ours): " + parts.joined(separator: ", ")
    }

    /// Opens one side, every error naming it. An empty BASE is no base (git gives an empty file when the two
    /// branches share no ancestor); a version 1 file is refused with the way forward.
    static func open(
        _ side: MergeSide, _ path: String, _ args: Arguments, _ given: [UnlockSecret], mode: OpenMode = .read
    ) throws -> Versioning? {
        let name = "\(side.rawValue) (\(shown(path)))"
        do {
            try SecretInput.requireVaultFile(path)
            var st = stat()
            if side == .base, stat(path, &st) == 0, st.st_size == 0 { return nil }
            if try !Vault.inspect(path: path).header.keepsVersions {
                throw CLIError(
                    .damaged,
                    "\(name) is a version 1 vault: merging needs version 2 (per-item versions); "
                        + "upgrade the vault with `kcar upgrade VAULT` and commit that first", file: path)
            }
            return try SecretInput.unlockVersioned(path, args, mode: mode, given: given)
        } catch let e as VaultError {
            throw CLIError(ExitCode.of(e.code), "\(name): \(e)", file: path)
        } catch let e as CLIError where e.file != path {
            throw CLIError(e.code, "\(name): \(e.message)", file: path)
        }
    }

    static func shown(_ path: String) -> String { StandardStreams.shown(path) }
}
