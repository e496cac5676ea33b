import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar verify` and `kcar info`.
enum VerifyCommand {
    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("verify"))
        let path = try StandardStreams.vaultInput(try vaultArguments(args, ["VAULT"])[0])
        let json = args.flag("json")
        // Only an explicit --no-key checks the structure alone: a `verify v.kcv || alert` that found no secret
        // must not pass a vault whose records it never authenticated.
        if args.flag("no-key") { return try structural(path, json: json, args.context) }
        do {
            try SecretInput.requireVaultFile(path)
        } catch let e as VaultError {
            emit(json: json, path: path, keyed: true, problems: [e], extra: [])
            return ExitCode.of(e.code)
        }
        let given = try SecretInput.givenSecrets(args)
        guard isatty(0) == 1 || !given.isEmpty else {
            throw CLIError(
                .noSecret,
                "no secret given and no terminal to ask on: give --key-file, --identity, --passphrase-file, "
                    + "--passphrase-fd or KCAR_PASSPHRASE to check the records, or --no-key to check only the structure"
            )
        }
        let report: VerifyReport
        do {
            // Either format version (a version 2 file's trees, delta chain and kept versions are checked too).
            // A version 2 vault's items are not read at open: verify reads them, page by page, without holding them.
            let (vault, _) = try SecretInput.unlockVault(path, args, given: given, itemsOnDemand: true)
            try ItemCommands.checkRollback(vault, args)
            report = vault.verify()
        } catch let e as VaultError {
            emit(json: json, path: path, keyed: true, problems: [e], extra: [])
            return ExitCode.of(e.code)
        }
        var extra: [(String, String)] = [
            ("commits", String(report.commits)), ("records", String(report.records)), ("items", String(report.items)),
            ("valueBytes", String(report.valueBytes)), ("deadBytes", String(report.deadBytes)),
            ("incompleteBytes", String(report.incompleteBytes)),
            ("segmentsAuthenticatedOnly", String(report.segmentsAuthenticatedOnly))
        ]
        // Version 2: the root's garbage count beside the exact dead bytes (SPEC.md Part 4, V8.1), never a problem.
        if let g = report.countedGarbage { extra.append(("garbage", String(g))) }
        emit(json: json, path: path, keyed: true, problems: report.problems, extra: extra)
        if !json, report.isIntact {
            Output.out.line(
                terminalSafe(StandardStreams.shown(path))
                    + ": intact: \(count(report.items, "item")) in \(count(report.records, "record")), \(count(report.commits, "commit")) checked, \(report.valueBytes) value bytes authenticated"
            )
            if let g = report.countedGarbage {
                Output.out.line(
                    "  \(report.deadBytes) dead bytes; the index root counts \(g) as garbage (a hint for automatic compaction, not a check)"
                )
            }
            if report.segmentsAuthenticatedOnly > 0 {
                Output.out.line(
                    "  \(report.segmentsAuthenticatedOnly) superseded index segments were authenticated but not parsed (past SUPERSEDED_INDEX_MAX; `kcar compact` drops them)"
                )
            }
        }
        guard let first = report.problems.first else { return .success }
        return report.problems.contains { $0.code != .incompleteCommit }
            ? ExitCode.of(.damagedRecord) : ExitCode.of(first.code)
    }

    /// Without a key: header checksum and fields, and whether the file ends in a trailer's magic.
    static func structural(_ path: String, json: Bool, _ context: CommandContext) throws -> ExitCode {
        var problems: [VaultError] = []
        do {
            context.reading(path)
            if let problem = try Vault.checkWithoutKey(path: path).problem { problems.append(problem) }
        } catch let e as VaultError {
            problems.append(e)
        }
        emit(json: json, path: path, keyed: false, problems: problems, extra: [])
        if !json, problems.isEmpty {
            Output.out.line(
                terminalSafe(StandardStreams.shown(path))
                    + ": header checksum and structure intact; no key given, so slots, index and records were not authenticated"
            )
        }
        return problems.first.map { ExitCode.of($0.code) } ?? .success
    }

    static func emit(json: Bool, path: String, keyed: Bool, problems: [VaultError], extra: [(String, String)]) {
        if json {
            let list = problems.map {
                JSON.object([("code", JSON.string($0.code.rawValue)), ("message", JSON.string($0.context))])
            }
            Output.out.line(
                JSON.object(
                    [
                        ("path", JSON.string(StandardStreams.shown(path))),
                        ("intact", problems.isEmpty ? "true" : "false"),
                        ("authenticated", keyed ? "true" : "false"),
                        ("problems", "[" + list.joined(separator: ", ") + "]")
                    ] + extra))
        } else {
            for p in problems { Output.out.line(terminalSafe("\(StandardStreams.shown(path)): \(p)")) }
        }
    }

    static func info(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("info"))
        let path = try StandardStreams.vaultInput(try vaultArguments(args, ["VAULT"])[0])
        args.context.reading(path)
        let (header, size) = try Vault.inspect(path: path)
        var pairs: [(String, String)] = [
            ("path", JSON.string(StandardStreams.shown(path))), ("version", String(header.formatVersion)),
            ("group", JSON.string(header.group)),
            ("vaultID", JSON.string(Hex.encode(header.vaultID))), ("fileSize", String(size)),
            ("headerSize", String(header.length))
        ]
        var lines = [
            "vault:      \(StandardStreams.shown(path))", "version:    \(header.formatVersion)",
            "group:      \(header.group)",
            "vault id:   \(Hex.encode(header.vaultID))", "file size:  \(size) bytes (header \(header.length))"
        ]
        var slots: [String] = []
        for (i, s) in header.slots.enumerated() {
            var line = "slot \(i):     \(s.kindName)"
            var obj: [(String, String)] = [("index", String(i)), ("kind", JSON.string(s.kindName))]
            if case .passphrase(let p, _, _, _) = s {
                line += " (Argon2id, \(p.memKiB / 1024) MiB, \(p.ops) pass\(p.ops == 1 ? "" : "es"))"
                obj += [("kdfMemoryKiB", String(p.memKiB)), ("kdfPasses", String(p.ops))]
            }
            lines.append(line)
            slots.append(JSON.object(obj))
        }
        pairs.append(("slots", "[" + slots.joined(separator: ", ") + "]"))
        let given = try SecretInput.givenSecrets(args)
        if !given.isEmpty {
            let (v, _) = try SecretInput.unlockVault(path, args, given: given)
            lines += [
                "items:      \(v.count)", "generation: \(v.generation)", "body:       \(v.bodyLength) bytes",
                "dead space: \(v.deadBytes) bytes", "incomplete: \(v.incompleteBytes) bytes",
                "opened by:  slot \(v.unlockedSlot)"
            ]
            pairs += [
                ("items", String(v.count)), ("generation", String(v.generation)), ("bodySize", String(v.bodyLength)),
                ("deadBytes", String(v.deadBytes)), ("incompleteBytes", String(v.incompleteBytes))
            ]
        } else {
            lines.append("(give a secret to see items, generation and dead space)")
        }
        if args.flag("json") {
            Output.out.line(JSON.object(pairs))
        } else {
            lines.forEach { Output.out.line(terminalSafe($0)) }
        }
        return .success
    }
}
