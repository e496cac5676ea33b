/// What `verify` found: every problem, and what was checked.
public struct VerifyReport: Sendable {
    /// Problems found, most fundamental first. Empty for an intact vault.
    public var problems: [VaultError] = []
    /// Commits whose trailers and index segments were checked.
    public var commits = 0
    /// Records and items whose values were read and authenticated in full.
    public var records = 0
    /// Items whose values were read and authenticated in full.
    public var items = 0
    /// Bytes of the values checked.
    public var valueBytes: UInt64 = 0
    /// Bytes of the body no live item or current index needs (``Vault/deadBytes``).
    public var deadBytes: UInt64 = 0
    /// Version 2: the index root's garbage count (SPEC.md Part 4, V8.1), a hint for the compaction policy
    /// that a writer keeps; ``deadBytes`` is the exact figure, and a mismatch is not a problem. Nil for
    /// version 1.
    public var countedGarbage: UInt64?
    /// Bytes after the last complete commit (an interrupted write).
    public var incompleteBytes: UInt64 = 0
    /// Superseded index segments past ``Limits/supersededIndexMax`` that were authenticated but not inflated
    /// and parsed (0 unless older commits hold more index than that; `compact` drops them).
    public var segmentsAuthenticatedOnly = 0
    /// Whether no problem was found.
    public var isIntact: Bool { problems.isEmpty }
}

extension Vault {
    /// Checks the whole vault: every trailer back to the first commit, every index segment, and every live
    /// record in full (member tables against the index). Does not stop at the first problem.
    public func verify() -> VerifyReport { engine.verify(self) }

    /// ``verify()`` of a version 1 file.
    func verify(_ log: LogEngine) -> VerifyReport {
        let tail = log.tail
        var report = VerifyReport()
        report.deadBytes = deadBytes
        report.incompleteBytes = incompleteBytes
        if incompleteBytes > 0 {
            report.problems.append(
                VaultError(
                    .incompleteCommit,
                    "\(incompleteBytes) bytes after the last complete commit (generation \(generation)); `kcar recover` cuts them off"
                ))
        }
        if let e = Vault.generationProblem(tail.trailer.generation) { report.problems.append(e) }
        // Trailers and index segments of every commit, newest first. Those of the chain that open loaded
        // (back to the newest checkpoint) were authenticated and parsed then; the older ones are read here.
        let reader = TailReader(
            file: file, headerLength: UInt64(header.length), bodySize: tail.end,
            vaultID: header.vaultID, keys: keys)
        var t = tail.trailer
        var inLoadedChain = true
        var probes = TailReader.Probes()
        var spent = (bytes: 0, ops: 0)
        var scanning = true
        while true {
            report.commits += 1
            if !inLoadedChain {
                do {
                    if try !reader.readSegment(t, spent: &spent) { report.segmentsAuthenticatedOnly += 1 }
                } catch let e as VaultError {
                    report.problems.append(e)
                } catch {
                    report.problems.append(VaultError(.io, "\(error)"))
                }
            }
            // A commit's records hold no valid trailer (SPEC.md §8): one there belongs to an earlier commit
            // that a later first commit (commit start 0) hides from this walk, bytes verify would not see.
            if scanning {
                do {
                    if let (hidden, p) = try reader.validTrailer(
                        from: t.commitStart, end: t.indexOffset, probes: &probes)
                    {
                        report.problems.append(
                            VaultError(
                                .damagedIndex,
                                "a valid trailer of generation \(hidden.generation) lies at body offset \(p), inside the records of "
                                    + "generation \(t.generation): an earlier commit that the chain of trailers does not reach"
                            ))
                    }
                } catch {
                    report.problems.append(error as? VaultError ?? VaultError(.io, "\(error)"))
                    scanning = false
                }
            }
            if t.checkpoint { inLoadedChain = false }
            if t.previous == Trailer.noPrevious { break }
            guard let prev = try? reader.trailer(at: t.previous), prev.generation == t.generation - 1,
                prev.chain == (t.checkpoint ? prev.chain : t.chain - 1)
            else {
                report.problems.append(
                    VaultError(
                        .damagedIndex,
                        "the trailer before generation \(t.generation) (body offset \(t.previous)) does not verify"))
                break
            }
            t = prev
        }
        // Every live record in full: small ones decoded several at a time on every core.
        func count(_ members: [Item]) {
            report.records += 1
            report.items += members.count
            // Sizes of values just read in full: their sum is bytes really inflated, far from 2^64.
            report.valueBytes += members.reduce(0) { $0 + $1.size }
        }
        func verifyOneByOne(_ batch: [[Item]]) {
            for members in batch {
                do {
                    try verifyRecord(members)
                    count(members)
                } catch {
                    report.problems.append(error as? VaultError ?? VaultError(.io, "\(error)"))
                }
            }
        }
        for batch in Vault.recordBatches(state.values) {
            if Vault.isStreamed(batch) {
                verifyOneByOne(batch)
                continue
            }
            let plains: [[UInt8]?]
            do {
                plains = try Vault.decodeRecords(
                    batch, raws: try readRecords(batch), keys: keys, vaultID: header.vaultID)
            } catch {
                verifyOneByOne(batch)  // find which records failed
                continue
            }
            for (members, whole) in zip(batch, plains) {
                // Over its weight (streamed), or failing: checked alone, so each record is counted once.
                guard let plain = whole, (try? checkedTable(plain, members)) != nil else {
                    verifyOneByOne([members])
                    continue
                }
                count(members)
            }
        }
        return report
    }

    private func verifyRecord(_ members: [Item]) throws { try records.verifyRecord(members) }
}

extension RecordSource {
    /// Reads a record in full, streaming, and checks its member table against `members`.
    func verifyRecord(_ members: [Item]) throws {
        let first = members[0]
        let names =
            members.count == 1
            ? first.displayName : "\(first.displayName) (and \(members.count - 1) more in its record)"
        let table = try verifiedTable(first.location) { VaultError(.damagedRecord, "\(names): \($0)") }
        try table.check(members)
    }

    /// Reads the record at `l` in full, streaming, and returns its member table once every chunk has
    /// authenticated and the record is exactly the table and its members' data.
    func verifiedTable(_ l: RecordLocation, fail: @escaping (String) -> VaultError) throws -> MemberTable {
        var reader = recordReader(l, fail: fail)
        let (table, rest) = try reader.memberTable()
        let declared = UInt64(table.length) + table.totalData
        var plaintext = UInt64(table.length + rest.count)
        // Stops at the first chunk past what the member table declares: a record cannot make verify
        // inflate more than that.
        while plaintext <= declared, let c = try reader.next() { plaintext += UInt64(c.count) }
        try table.checkLength(plaintext, fail: fail)
        return table
    }
}
