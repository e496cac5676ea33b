/// Finds the last complete commit and builds the index state from its chain (SPEC.md §7, §8).
struct TailReader {
    let file: File
    let headerLength: UInt64
    let bodySize: UInt64
    let vaultID: [UInt8]
    let keys: Subkeys

    func trailer(at offset: UInt64) throws -> Trailer? {
        guard offset.adding(UInt64(Trailer.size)).map({ $0 <= bodySize }) == true else { return nil }
        let b = try file.read(Trailer.size, at: headerLength + offset)
        return Trailer.decode(b, at: offset, vaultID: vaultID, key: keys.trailer)
    }

    func load() throws -> (Tail, [ItemID: Item]) {
        let (last, lastOffset) = try lastCommit(Trailer.self)
        // Walk back to the checkpoint.
        var chain = [(last, lastOffset)]
        while !chain[chain.count - 1].0.checkpoint {
            let (t, _) = chain[chain.count - 1]
            guard let prev = try trailer(at: t.previous), prev.generation == t.generation - 1,
                prev.chain + 1 == t.chain
            else {
                throw VaultError(.damagedIndex, "the trailer before generation \(t.generation) does not verify")
            }
            chain.append((prev, t.previous))
        }
        var state: [ItemID: Item] = [:]
        var checkpointBytes: UInt64 = 0
        var deltaBytes: UInt64 = 0
        // The chain's budgets, for all its segments together: a chain of 64 segments each near INDEX_MAX
        // must not cost 64 times one.
        var plainBytes = 0
        var ops = 0
        for (t, _) in chain.reversed() {
            guard Int(t.itemCount) <= Limits.itemsMax else {
                throw VaultError(
                    .damagedIndex, "generation \(t.generation) claims \(t.itemCount) items (limit \(Limits.itemsMax))")
            }
            if t.checkpoint {
                checkpointBytes = t.indexLength
                state.reserveCapacity(Int(t.itemCount))
            } else {
                deltaBytes += t.indexLength
            }
            try forEachOperation(t, plainBytes: &plainBytes, ops: &ops) { try Self.apply($0, to: &state, trailer: t) }
            guard state.count <= Limits.itemsMax, state.count == Int(t.itemCount) else {
                throw VaultError(
                    .damagedIndex, "generation \(t.generation): \(state.count) items, trailer says \(t.itemCount)")
            }
        }
        try Self.validateLocations(state)
        return (
            Tail(
                trailer: last, offset: lastOffset, checkpointBytes: checkpointBytes, deltaBytes: deltaBytes,
                chainPlainBytes: plainBytes, chainOps: ops), state
        )
    }

    /// Streams the operations of the segment `t` points at to `body`, its chunks authenticated one by one and
    /// never held whole; `plainBytes` and `ops` are the chain's running totals, refused past
    /// ``Limits/chainIndexMax`` (as each chunk is opened) and ``Limits/chainOpsMax``.
    func forEachOperation(_ t: Trailer, plainBytes: inout Int, ops: inout Int, _ body: (IndexOperation) throws -> Void)
        throws
    {
        var reader = segmentReader(t)
        var segmentBytes = 0
        var total = plainBytes
        defer { plainBytes = total }
        try IndexCodec.forEach(
            chunks: {
                guard let c = try reader.next() else { return nil }
                guard c.count <= Limits.indexMax - segmentBytes else {
                    throw VaultError(
                        .damagedIndex,
                        "index segment of generation \(t.generation): more than \(Limits.indexMax) bytes (INDEX_MAX)")
                }
                guard c.count <= Limits.chainIndexMax - total else {
                    throw VaultError(
                        .damagedIndex,
                        "the index chain up to generation \(t.generation) holds more than "
                            + "\(Limits.chainIndexMax) bytes (CHAIN_INDEX_MAX)")
                }
                segmentBytes += c.count
                total += c.count
                return c
            }, storedBytes: t.indexLength, checkpoint: t.checkpoint, budget: &ops, body)
    }

    func segmentReader(_ t: Trailer) -> BlockReader {
        BlockReader(
            file: file, key: StreamKey.index(keys, vaultID: vaultID, generation: t.generation),
            start: headerLength + t.indexOffset,
            end: headerLength + t.indexOffset + t.indexLength
        ) {
            VaultError(.damagedIndex, "index segment of generation \(t.generation): \($0)")
        }
    }

    /// The authenticated plaintext of the index segment `t` points at, at most ``Limits/indexMax`` bytes
    /// (the fuzz targets' seeds).
    func segmentPlaintext(_ t: Trailer) throws -> [UInt8] {
        var reader = segmentReader(t)
        var out: [UInt8] = []
        while let c = try reader.next() {
            guard c.count <= Limits.indexMax - out.count else {
                throw VaultError(
                    .damagedIndex,
                    "index segment of generation \(t.generation): more than \(Limits.indexMax) bytes (INDEX_MAX)")
            }
            out.append(contentsOf: c)
        }
        return out
    }

    /// Authenticates and parses the superseded segment `t` points at (verify), on the budget `spent` shared by
    /// all the superseded segments of the file: within ``Limits/supersededIndexMax`` bytes and
    /// ``Limits/chainOpsMax`` operations a segment is inflated and parsed; past it, only authenticated (an
    /// AEAD over its stored bytes, which the file's size bounds). Returns whether it was parsed.
    func readSegment(_ t: Trailer, spent: inout (bytes: Int, ops: Int)) throws -> Bool {
        // Each segment is also within the limits of a chain on its own (its budgets start empty).
        var bytes = 0
        var ops = 0
        let room = (bytes: Limits.supersededIndexMax - spent.bytes, ops: Limits.chainOpsMax - spent.ops)
        if room.bytes > 0, room.ops > 0 {
            struct OverBudget: Error {}
            var reader = segmentReader(t)
            var decoded = 0
            do {
                try IndexCodec.forEach(
                    chunks: {
                        guard let c = try reader.next() else { return nil }
                        guard c.count <= Limits.indexMax - bytes else {
                            throw VaultError(
                                .damagedIndex,
                                "index segment of generation \(t.generation): more than \(Limits.indexMax) bytes (INDEX_MAX)"
                            )
                        }
                        bytes += c.count
                        guard bytes <= room.bytes else { throw OverBudget() }
                        return c
                    }, storedBytes: t.indexLength, checkpoint: t.checkpoint, budget: &ops
                ) { _ in
                    decoded += 1
                    guard decoded <= room.ops else { throw OverBudget() }
                }
                spent.bytes += bytes
                spent.ops += decoded
                return true
            } catch is OverBudget {
                spent = (Limits.supersededIndexMax, Limits.chainOpsMax)
            }
        }
        var reader = segmentReader(t)
        while let b = try reader.nextRaw() {
            guard
                Sodium.open(
                    key: reader.key.key, nonce: Array(b.frame[4..<28]), ciphertext: b.sealed,
                    ad: reader.key.ad(chunk: b.index, last: b.last)) != nil
            else {
                throw reader.fail("chunk \(b.index) does not authenticate")
            }
        }
        return false
    }

    static func apply(_ op: IndexOperation, to state: inout [ItemID: Item], trailer t: Trailer) throws {
        switch op {
        case .put(let item):
            guard let end = item.location.offset.adding(item.location.length), end <= t.indexOffset,
                item.location.length > 0
            else {
                throw VaultError(.damagedIndex, "item \(item.id): record extent outside the body before its index")
            }
            state[item.id] = item
        case .delete(let id):
            guard state.removeValue(forKey: id) != nil else {
                throw VaultError(
                    .damagedIndex, item: id, "generation \(t.generation) deletes item \(id), which does not exist")
            }
        }
    }

    /// Records never overlap and one record id names one extent (SPEC.md §7). Members are checked against
    /// the record's own member table when it is read.
    static func validateLocations(_ state: [ItemID: Item]) throws {
        var records: [ID128: (offset: UInt64, length: UInt64)] = [:]
        for item in state.values {
            let l = item.location
            if let r = records[l.recordID] {
                guard r.offset == l.offset, r.length == l.length else {
                    throw VaultError(.damagedIndex, "item \(item.id): its record id names two extents")
                }
            } else {
                records[l.recordID] = (l.offset, l.length)
            }
        }
        let extents = records.values.sorted { $0.offset < $1.offset }
        for i in extents.indices.dropFirst() where extents[i - 1].offset + extents[i - 1].length > extents[i].offset {
            throw VaultError(.damagedIndex, "two records overlap at body offset \(extents[i].offset)")
        }
    }
}
