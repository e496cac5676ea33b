extension PagedVault {
    /// Checks the whole vault (SPEC.md Part 4): every trailer back to the first commit (V7), the delta chain's
    /// removes (V6), every page of the three trees with their counts and the attribute entries their items
    /// make (V3.3), and every record a live item or a kept version names, read in full. Does not stop at the
    /// first problem.
    package func verify() -> VerifyReport {
        streaming(verifyAll)
    }

    private func verifyAll() -> VerifyReport {
        var report = VerifyReport()
        // A damaged page may fail more than one step (the trees, then the scan for records): named once.
        func note(_ error: Error) {
            let e = error as? VaultError ?? VaultError(.io, "\(error)")
            if !report.problems.contains(e) { report.problems.append(e) }
        }
        report.incompleteBytes = incompleteBytes
        if report.incompleteBytes > 0 {
            report.problems.append(VaultError(.incompleteCommit,
                "\(report.incompleteBytes) bytes after the last complete commit (generation \(generation)); the next commit cuts them off"))
        }
        let end = tail.offset + UInt64(TrailerV2.size)
        var live = UInt64(TrailerV2.size) + tail.trailer.rootLength
        // Trailers, newest first; the delta commits back to the last fold are kept for the chain check.
        let tails = TailReader(file: file, headerLength: UInt64(header.length), bodySize: end, vaultID: header.vaultID, keys: keys)
        var (t, at) = tail
        var chain: [TrailerV2] = []
        var inChain = true
        var probes = TailReader.Probes()
        var scanning = true
        while true {
            report.commits += 1
            if inChain {
                if t.wroteRoot { inChain = false } else {
                    chain.append(t)
                    live += t.deltaLength + UInt64(TrailerV2.size)
                }
            }
            // A commit's own bytes hold no valid trailer (V7, §8): one there is an earlier commit that the
            // chain of trailers does not reach.
            if scanning {
                do {
                    if let (hidden, p) = try tails.validTrailer(TrailerV2.self, from: t.commitStart, end: at, probes: &probes) {
                        report.problems.append(VaultError(.damagedIndex,
                            "a valid trailer of generation \(hidden.generation) lies at body offset \(p), inside the commit of generation \(t.generation)"))
                    }
                } catch {
                    note(error)
                    scanning = false
                }
            }
            if t.previous == TrailerV2.none {
                if t.commitStart != 0 || !t.wroteRoot {
                    report.problems.append(VaultError(.damagedIndex, "the first commit (generation \(t.generation)) does not start the body with a fold"))
                }
                break
            }
            let b = try? file.read(TrailerV2.size, at: UInt64(header.length) + t.previous)
            guard let b, let p = TrailerV2.decode(b, at: t.previous, vaultID: header.vaultID, key: keys.trailer), p.generation == t.generation - 1,
                  t.wroteRoot || (p.chain + 1 == t.chain && p.rootOffset == t.rootOffset && p.rootID == t.rootID) else {
                report.problems.append(VaultError(.damagedIndex, "the trailer before generation \(t.generation) (body offset \(t.previous)) does not verify"))
                break
            }
            (t, at) = (p, t.previous)
        }
        // The delta chain, oldest first: a remove names a key the trees or an earlier segment hold (V6).
        do {
            var put: [TreeID: Set<[UInt8]>] = [:]
            for d in chain.reversed() {
                let fail = { (m: String) in VaultError(.damagedIndex, "delta segment of generation \(d.generation): \(m)") }
                let plain = try PagedSealing.open(source, key: .delta(keys, vaultID: header.vaultID, generation: d.generation),
                                                  offset: d.deltaOffset, length: d.deltaLength, max: PagedLimits.deltaMax, fail: fail)
                for (tree, change) in try DeltaCodec.decode(plain) {
                    switch change {
                    case .put(let e): put[tree, default: []].insert(e.key)
                    case .remove(let k):
                        let held = try put[tree]?.contains(k) == true || reader(tree).lookup(k) != nil
                        guard held else {
                            throw fail("removes a key of the \(tree) tree that neither the tree nor an earlier segment holds")
                        }
                    }
                }
            }
        } catch { note(error) }
        // The trees.
        do {
            _ = try verifyIndex { live += $0.length }
        } catch { note(error) }
        // Every record that a live item or a kept version names, in full, in file order (RecordClaims).
        var claims = RecordClaims()
        var liveItems = 0
        do {
            try forEachItem { item in
                claims.add(item)
                liveItems += 1
                return true
            }
            try scan(.history) { e in
                claims.add(try ItemEntries.decodeHistory(e).item)
                return true
            }
        } catch { note(error) }
        var failed: [ID128] = []
        claims.check(source) { recordID, outcome in
            switch outcome {
            case .intact(let valueBytes, let length):
                report.records += 1
                report.valueBytes += valueBytes
                live += length
            case .failed: failed.append(recordID)
            }
        }
        // A record that failed is read again with its items, found by one more scan, so that the problem
        // names them as it always did (the claims keep no names).
        if !failed.isEmpty {
            var members: [ID128: [Item]] = Dictionary(uniqueKeysWithValues: failed.map { ($0, []) })
            do {
                try forEachItem { item in
                    members[item.location.recordID]?.append(item)
                    return true
                }
                try scan(.history) { e in
                    let item = try ItemEntries.decodeHistory(e).item
                    members[item.location.recordID]?.append(item)
                    return true
                }
            } catch { note(error) }
            for id in failed {
                guard let m = members[id], !m.isEmpty else { continue }
                do {
                    try source.verifyRecord(m)
                    note(VaultError(.damagedRecord, "\(m[0].displayName): the record's member table does not name its items"))
                } catch { note(error) }
            }
        }
        report.items = liveItems
        report.deadBytes = end > live ? end - live : 0
        report.countedGarbage = root.garbage
        return report
    }
}
