import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension Vault {
    /// Checks what every new vault needs (a group name, 1 to `SLOTS_MAX` slots, no file at `path` unless
    /// `overwrite`) and opens the temporary file it is written to.
    static func startCreating(path: String, group: String, slots: [SlotSecret], overwrite: Bool) throws -> AtomicReplace
    {
        try Header.checkGroup(group)
        guard !slots.isEmpty, slots.count <= Limits.slotsMax else {
            throw VaultError(.invalidArgument, "a vault needs 1 to \(Limits.slotsMax) key slots")
        }
        if !overwrite, fileExists(path) { throw VaultError(.exists, path) }
        return try AtomicReplace(path: path)
    }

    /// Draws a new vault id and vault key, wraps the key for `slots` and writes the header at the start of
    /// `tmp`; returns the id, the subkeys and the header's bytes.
    static func writeNewHeader(
        _ tmp: AtomicReplace, group: String, slots: [SlotSecret], formatVersion: UInt16,
        random: RandomSource
    ) throws -> (vaultID: [UInt8], keys: Subkeys, headerBytes: [UInt8], header: Header, vaultKey: SecureBytes) {
        let vaultID = random.bytes(16)
        let vk = random.secureBytes(32)
        let keySlots = try slots.map { try KeySlot.make(for: $0, vaultKey: vk, vaultID: vaultID, random: random) }
        try Header.checkKDFBudget(keySlots, .invalidArgument)
        let header = Header(vaultID: vaultID, group: group, slots: keySlots, formatVersion: formatVersion)
        let keys = Subkeys(vaultKey: vk)
        let headerBytes = header.encode(macKey: keys.header)
        guard headerBytes.count <= Limits.headerMax else { throw VaultError(.invalidArgument, "header too large") }
        try tmp.file.write(headerBytes, at: 0)
        return (vaultID, keys, headerBytes, header, vk)
    }

    /// Creates a new version 1 vault at `path` (SPEC.md Part 1) holding what `body` adds, as one checkpoint
    /// commit; ``create(path:group:slots:format:options:overwrite:random:_:)`` with `.version1` calls it.
    static func createVersion1(
        path: String, group: String, slots: [SlotSecret], options: WriteOptions,
        overwrite: Bool, random: RandomSource, _ body: (Transaction) throws -> Void
    ) throws {
        try options.check()
        let tmp = try startCreating(path: path, group: group, slots: slots, overwrite: overwrite)
        do {
            let (vaultID, keys, headerBytes, _, _) = try writeNewHeader(
                tmp, group: group, slots: slots, formatVersion: 1, random: random)
            let writer = CommitWriter(
                file: tmp.file, headerLength: UInt64(headerBytes.count), vaultID: vaultID, keys: keys,
                random: random, level: options.level, solidMembers: options.solidMembers, at: 0)
            let changes = LogChanges(writer: writer, random: random, state: [:])
            try body(Transaction(changes, stamp: options.stampTime))
            let ops = try changes.finalize()
            _ = try writer.finish(
                ops: ops, checkpoint: true, generation: 1, previous: nil, itemCount: changes.state.count)
            try tmp.commit(overwrite: overwrite)
        } catch {
            tmp.abandon()
            throw error
        }
    }

    /// Appends one commit with the changes `body` makes. Needs a vault opened with `.write`. Cuts off an
    /// incomplete commit first. On any error the file is cut back to the last complete commit, so a failed
    /// commit leaves the vault as it was.
    public func commit(
        options: WriteOptions = .init(), random: RandomSource = SystemRandom.shared,
        _ body: (Transaction) throws -> Void
    ) throws {
        try options.check()
        try naming { try engine.commit(self, options: options, random: random, body) }
    }

    /// ``commit(options:random:_:)`` of a version 1 file.
    func commit(
        _ log: LogEngine, options: WriteOptions, random: RandomSource, _ body: (Transaction) throws -> Void
    ) throws {
        let compactNow: Bool
        do {
            compactNow = try commitLocked(log, options: options, random: random, body)
        } catch {
            // Another process upgraded the file to version 2 while it was open: nothing was written.
            guard engine !== log else { throw error }
            return try engine.commit(self, options: options, random: random, body)
        }
        // The commit is durable now; a failed compaction leaves the vault as it was (it is atomic), so it
        // must not turn a successful commit into an error. It is tried again after the next commit, and
        // reported: in ``lastCompactionError`` and to ``reportingCompactionFailures(to:_:)``'s handler.
        if compactNow {
            lastCompactionError = Vault.compactAfterCommit(path: path) { try compact(random: random, options: options) }
        }
    }

    /// A version 1 commit; returns whether to compact now.
    private func commitLocked(
        _ log: LogEngine, options: WriteOptions, random: RandomSource, _ body: (Transaction) throws -> Void
    ) throws -> Bool {
        try exclusively(log) {
            let tail = log.tail
            // Before anything is written: a refused commit leaves no bytes behind.
            let nextGeneration = try Vault.nextGeneration(after: tail.trailer.generation, path)
            try cutIncompleteLocked(log)
            let writer = CommitWriter(
                file: file, headerLength: UInt64(header.length), vaultID: header.vaultID, keys: keys,
                random: random, level: options.level, solidMembers: options.solidMembers, at: tail.end)
            let changes = LogChanges(writer: writer, random: random, state: state)
            do {
                try body(Transaction(changes, stamp: options.stampTime))
                let ops = try changes.finalize()
                guard !ops.isEmpty else {
                    // Nothing to commit, but values may have been written (added, then deleted): cut them off.
                    if writer.position != tail.end { try file.truncate(to: fileOffset(tail.end)) }
                    return false
                }
                let chain = Int(tail.trailer.chain) + 1
                let deltaSize = IndexCodec.encode(ops).count
                // A checkpoint also before the chain would pass what a reader accepts of it in all.
                let checkpoint =
                    chain >= Limits.chainMax || tail.deltaBytes + UInt64(deltaSize) > tail.checkpointBytes
                    || deltaSize > Limits.chainIndexMax - tail.chainPlainBytes
                    || ops.count > Limits.chainOpsMax - tail.chainOps
                let finalOps =
                    checkpoint ? changes.state.keys.sorted().map { IndexOperation.put(changes.state[$0]!) } : ops
                try ensureStillAtPath("a commit")
                log.tail = try writer.finish(
                    ops: finalOps, checkpoint: checkpoint, generation: nextGeneration,
                    previous: tail, itemCount: changes.state.count)
                state = changes.state
            } catch {
                try? file.truncate(to: fileOffset(tail.end))
                throw error
            }
            return options.autoCompact && log.shouldCompact(in: self)
        }
    }

    /// Runs the automatic compaction after a commit that stood (both format versions): a failure is returned
    /// (the caller's `lastCompactionError`) and told to the ``reportingCompactionFailures(to:_:)`` handler, never
    /// thrown.
    static func compactAfterCommit(path: String, _ compact: () throws -> Void) -> VaultError? {
        do {
            try compact()
            return nil
        } catch {
            let e = error as? VaultError ?? VaultError(.io, "\(error)")
            (compactionFailures ?? processCompactionFailures.withLock { $0 })?(path, e)
            return e
        }
    }

    /// The automatic-compaction threshold of both format versions (SPEC.md §9, Part 4 V8.1): more than
    /// 1 MiB dead and more than half of the body.
    static func passesCompactionThreshold(dead: UInt64, body: UInt64) -> Bool {
        dead > Limits.compactDeadMin && Double(dead) > Double(body) * Limits.compactDeadRatio
    }

    /// Runs `body`, telling `handler` of every automatic compaction that fails after a commit made inside it,
    /// on the committing thread (the commit stood; the dead space, deleted values included, stays in the file
    /// until a compaction succeeds). The handler is bound to `body`'s task, not to the process: commits made by
    /// other tasks or threads, or after `body` returns, are not told to it. The CLI runs each command inside
    /// one that warns on standard error, so a failure is reported whichever layer made the commit.
    public static func reportingCompactionFailures<T>(
        to handler: @escaping @Sendable (_ path: String, _ error: VaultError) -> Void, _ body: () throws -> T
    ) rethrows -> T {
        try $compactionFailures.withValue(handler, operation: body)
    }

    @TaskLocal static var compactionFailures: (@Sendable (String, VaultError) -> Void)?

    /// A handler for every task and thread of the process, told when no
    /// ``reportingCompactionFailures(to:_:)`` handler is bound: one more global a process cannot scope.
    @available(
        *, deprecated, message: "bind a handler to the commits made in a closure: reportingCompactionFailures(to:_:)"
    )
    public static func reportCompactionFailures(to handler: (@Sendable (_ path: String, _ error: VaultError) -> Void)?)
    {
        processCompactionFailures.withLock { $0 = handler }
    }

    static let processCompactionFailures = Mutex<(@Sendable (String, VaultError) -> Void)?>(nil)

    /// The generation of the commit after `generation`: refused at `GENERATION_MAX` (SPEC.md §8), before anything
    /// is written, with the way out (a rewrite, which starts again at 1).
    static func nextGeneration(after generation: UInt64, _ path: String) throws -> UInt64 {
        guard generation < Limits.generationMax else {
            throw VaultError(
                .invalidArgument, path: path,
                "\(path) is at generation \(generation), past GENERATION_MAX (2^48), which no writer reaches: "
                    + "it takes no more commits; `kcar compact` rewrites it with its generations starting again at 1")
        }
        return generation + 1
    }

    /// What verification says of a last generation past `GENERATION_MAX` (SPEC.md §8): no conforming writer makes
    /// one, so the file breaks a writer's MUST (*damaged index*), though readers read it.
    static func generationProblem(_ generation: UInt64) -> VaultError? {
        guard generation > Limits.generationMax else { return nil }
        return VaultError(
            .damagedIndex,
            "generation \(generation) is past GENERATION_MAX (2^48), which no writer reaches: the vault "
                + "takes no more commits; `kcar compact` rewrites it with its generations starting again at 1")
    }

    /// The generation of a whole-file rewrite (§9) of a vault at `generation`: the next one, or 1 for a vault at
    /// or past `GENERATION_MAX`, so that a file whose generation a key holder set at the end can be written again
    /// (a reader that recorded a later generation, SPEC.md §K6, sees the restart as a rollback).
    static func rewriteGeneration(after generation: UInt64) -> UInt64 {
        generation < Limits.generationMax ? generation + 1 : 1
    }

    /// Throws unless `path` still names the file this instance holds locked. Another process may rename a
    /// file over the vault without taking its lock; a change written to the file it replaced must then fail,
    /// not be reported as done (it would be lost, or a rewrite would rename the old vault over the new file).
    func ensureStillAtPath(_ what: String) throws {
        guard try file.isStill(path) else {
            throw VaultError(
                .io, path: path, "\(path) was replaced while \(what) was written; nothing was changed, open it again")
        }
    }

    /// Whether dead space has passed the automatic-compaction threshold (SPEC.md §9).
    public var shouldCompact: Bool { engine.shouldCompact(in: self) }

    /// Cuts off an incomplete commit (what `kcar recover` does). Needs `.write`.
    public func cutIncomplete() throws { try naming { try engine.cutIncomplete(self) } }

    func cutIncompleteLocked(_ log: LogEngine) throws {
        guard incompleteBytes > 0 else { return }
        try file.truncate(to: fileOffset(log.tail.end))
        try file.sync()
        incompleteBytes = 0
    }
}

func fileExists(_ path: String) -> Bool {
    var st = stat()
    return lstat(path, &st) == 0
}
