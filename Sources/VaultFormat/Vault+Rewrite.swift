extension Vault {
    /// Rewrites the vault without dead space (SPEC.md §9): records whose members are all live are copied
    /// byte for byte; records that also hold deleted or replaced values are rebuilt from their live members, so
    /// a deleted secret leaves the file (version 2: unless its retention keeps it as an earlier version).
    /// Atomic: a crash leaves the old or the new file. Needs `.write`.
    public func compact(random: RandomSource = SystemRandom.shared, options: WriteOptions = .init()) throws {
        try naming { try compact(retention: nil, droppingHistoryOf: [], random: random, options: options) }
    }

    /// Compacts a version 2 vault under a new retention rule (recorded in its index root, SPEC.md Part 4 V8, and
    /// applied at once; nil keeps the vault's) and without the kept versions of the items in `droppingHistoryOf`,
    /// so that their values leave the file. A version 1 vault keeps no history: it is compacted as it is, and a
    /// retention rule is refused.
    package func compact(
        retention: Retention?, droppingHistoryOf dropped: Set<ItemID>, rewindingClock: Bool = false,
        random: RandomSource = SystemRandom.shared, options: WriteOptions = .init()
    ) throws {
        try engine.compact(
            self, retention: retention, droppingHistoryOf: dropped, rewindingClock: rewindingClock, random: random,
            options: options)
    }

    /// The retention rule of a version 2 vault (nil for version 1).
    package var retention: Retention? { engine.retention }

    /// Makes a new random vault key, re-seals every record and the index under it, and wraps it for `slots`
    /// (which replace all the old ones: an old slot or header copy no longer opens anything written from
    /// now on). Item ids, record ids and values are kept. Needs `.write`.
    public func rekey(slots: [SlotSecret], random: RandomSource = SystemRandom.shared, options: WriteOptions = .init())
        throws
    {
        try naming { try engine.rekey(self, slots: slots, random: random, options: options) }
    }

    /// `header` under a new random vault key wrapped for `slots` (both format versions), encoded.
    static func rekeyedHeader(_ header: Header, slots: [SlotSecret], random: RandomSource) throws -> (
        Header, [UInt8], SecureBytes
    ) {
        guard !slots.isEmpty, slots.count <= Limits.slotsMax else {
            throw VaultError(.invalidArgument, "a vault needs 1 to \(Limits.slotsMax) key slots")
        }
        let vk = random.secureBytes(32)
        let keySlots = try slots.map {
            try KeySlot.make(for: $0, vaultKey: vk, vaultID: header.vaultID, random: random)
        }
        try Header.checkKDFBudget(keySlots, .invalidArgument)
        let newHeader = header.with(slots: keySlots)
        return (newHeader, newHeader.encode(macKey: Subkeys(vaultKey: vk).header), vk)
    }

    /// Changes the key slots: removes the slots of ``header`` (as this instance sees it now) at the indexes in
    /// `remove`, and adds slots for `add`. Slots another process added meanwhile are kept. The vault key and
    /// the body are unchanged: no item is re-encrypted. Atomic. Needs `.write`.
    public func changeSlots(remove: [Int], add: [SlotSecret], random: RandomSource = SystemRandom.shared) throws {
        guard remove.allSatisfy({ header.slots.indices.contains($0) }) else {
            throw VaultError(.invalidArgument, path: path, "\(path) has no such slot")
        }
        // Resolve the indexes now, against the header the caller saw, not the one caught up with under the lock.
        let removed = remove.map { header.slots[$0] }
        try naming { try engine.changeSlots(self, remove: remove, removing: removed, add: add, random: random) }
    }

    /// ``changeSlots(remove:add:random:)`` of a version 1 file, under its lock.
    func changeSlotsLocked(_ log: LogEngine, removing: [KeySlot], add: [SlotSecret], random: RandomSource) throws {
        let (newHeader, bytes, newFile) = try Vault.copyWithSlots(
            path: path, file: file, header: header, vaultKey: vaultKey, headerKey: keys.header,
            bodyEnd: log.tail.end, removing: removing, add: add, random: random
        ) {
            try ensureStillAtPath("a rewrite")
        }
        file = newFile
        header = newHeader
        headerBytes = bytes
        incompleteBytes = 0
    }

    /// Writes a copy of the file whose header has `header`'s slots less `removing`, plus slots for `add`, and
    /// the body up to `bodyEnd` byte for byte (either format version: the body does not depend on the header's
    /// bytes), renamed over `path` after `check`. Returns the new header, its bytes and the new file.
    static func copyWithSlots(
        path: String, file: File, header: Header, vaultKey: SecureBytes, headerKey: SecureBytes, bodyEnd: UInt64,
        removing: [KeySlot], add: [SlotSecret], random: RandomSource, check: () throws -> Void
    ) throws -> (Header, [UInt8], File) {
        let slots =
            header.slots.filter { !removing.contains($0) }
            + (try add.map {
                try KeySlot.make(for: $0, vaultKey: vaultKey, vaultID: header.vaultID, random: random)
            })
        guard !slots.isEmpty, slots.count <= Limits.slotsMax else {
            throw VaultError(.invalidArgument, "a vault needs 1 to \(Limits.slotsMax) key slots")
        }
        try Header.checkKDFBudget(slots, .invalidArgument)
        let newHeader = header.with(slots: slots)
        let bytes = newHeader.encode(macKey: headerKey)
        let tmp = try AtomicReplace(path: path, random: random)
        do {
            try tmp.file.write(bytes, at: 0)
            var copied: UInt64 = 0
            let step: UInt64 = 4 << 20
            while copied < bodyEnd {
                let n = min(step, bodyEnd - copied)
                try tmp.file.write(
                    try file.read(Int(n), at: UInt64(header.length) + copied), at: UInt64(bytes.count) + copied)
                copied += n
            }
            try tmp.commit(overwrite: true, replacing: file, check: check)
        } catch {
            tmp.abandon()
            throw error
        }
        return (newHeader, bytes, tmp.file)
    }

    /// Rewrites a version 1 file whole (compact, rekey) with `newHeader`, under a new vault key if `newKey`.
    func rewrite(
        _ log: LogEngine, header newHeader: Header, headerBytes bytes: [UInt8], newKey: SecureBytes?,
        random: RandomSource, options: WriteOptions
    ) throws {
        try options.check()
        try exclusively(log) {
            try rewriteLocked(
                log, header: newHeader, headerBytes: bytes, newKey: newKey, random: random, options: options)
        }
    }

    private func rewriteLocked(
        _ log: LogEngine, header newHeader: Header, headerBytes bytes: [UInt8], newKey: SecureBytes?,
        random: RandomSource, options: WriteOptions
    ) throws {
        let newKeys = newKey.map { Subkeys(vaultKey: $0) } ?? keys
        let generation = Vault.rewriteGeneration(after: log.tail.trailer.generation)
        let tmp = try AtomicReplace(path: path, random: random)
        let newTail: Tail
        let newState: [ItemID: Item]
        do {
            try tmp.file.write(bytes, at: 0)
            let writer = CommitWriter(
                file: tmp.file, headerLength: UInt64(bytes.count), vaultID: header.vaultID,
                keys: newKeys, random: random, level: options.level, solidMembers: options.solidMembers, at: 0)
            try copyLiveRecords(to: writer, newKeys: newKeys, reseal: newKey != nil, random: random)
            try writer.flush()
            newState = Dictionary(uniqueKeysWithValues: writer.written.map { ($0.item.id, $0.item) })
            let ops = newState.keys.sorted().map { IndexOperation.put(newState[$0]!) }
            newTail = try writer.finish(
                ops: ops, checkpoint: true, generation: generation, previous: nil,
                itemCount: newState.count)
            try tmp.commit(overwrite: true, replacing: file) { try ensureStillAtPath("a rewrite") }
        } catch {
            tmp.abandon()
            throw error
        }
        file = tmp.file
        header = newHeader
        headerBytes = bytes
        if let k = newKey {
            vaultKey = k
            keys = newKeys
        }
        state = newState
        log.tail = newTail
        incompleteBytes = 0
    }

    /// Copies the records of the live items to `writer` (SPEC.md §9): a record whose members are all live byte
    /// for byte (authenticated first, or re-sealed under `newKeys` when `reseal`), one that also holds deleted
    /// or replaced values rebuilt from its live members. `writer.written` then lists the items as copied.
    func copyLiveRecords(to writer: CommitWriter, newKeys: Subkeys, reseal: Bool, random: RandomSource) throws {
        let records = Dictionary(grouping: state.values, by: { $0.location.recordID })
            .values.sorted { $0[0].location.offset < $1[0].location.offset }
        for members in records {
            let l = members[0].location
            let fail = { (m: String) in
                VaultError(.damagedRecord, item: members[0].id, "\(members[0].displayName): \(m)")
            }
            let oldKey = StreamKey.record(keys, vaultID: header.vaultID, recordID: l.recordID)
            if try memberCount(members[0]) == members.count {
                let newStreamKey = StreamKey.record(newKeys, vaultID: header.vaultID, recordID: l.recordID)
                var reader = recordReader(l, fail: fail)
                try writer.appendSealed(members) { emit in
                    while let b = try reader.nextRaw() {
                        if !reseal {
                            // Authenticate before copying, so compaction never carries damage forward.
                            _ = try Blocks.open(
                                nonce: Array(b.frame[4..<28]), sealed: b.sealed, key: oldKey,
                                index: b.index, last: b.last, fail: fail)
                            try emit(b.frame + b.sealed)
                        } else {
                            try emit(
                                try Blocks.reseal(
                                    frame: b.frame, sealed: b.sealed, from: oldKey, to: newStreamKey,
                                    index: b.index, last: b.last,
                                    nonce: random.bytes(Sodium.aeadNonceBytes), fail: fail))
                        }
                    }
                }
            } else {
                // Decode the record once and re-add its live members, each streamed through the writer.
                try readValues(
                    of: members, begin: { item, _ in try writer.beginValue(item, size: item.size) },
                    bytes: { try writer.appendValue($0) }, end: { _ in try writer.endValue() })
            }
        }
    }

    /// The number of members in the record that holds `item` (reads its first block).
    func memberCount(_ item: Item) throws -> Int {
        var reader = recordReader(item.location) {
            VaultError(.damagedRecord, item: item.id, "\(item.displayName): \($0)")
        }
        return try reader.memberTable().0.members.count
    }
}
