import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// Where a new value comes from.
public enum ValueSource {
    /// Bytes in memory.
    case bytes([UInt8])
    /// `size` bytes read from an open file descriptor's current position (streamed in bounded memory when
    /// larger than ``Limits/solidMemberMax``). The descriptor is not closed. If fewer than `size` bytes can
    /// be read the commit fails; a streamed value also fails if more bytes follow (the file grew).
    case fileDescriptor(Int32, size: UInt64)
}

/// Appends the records of one commit, then its index segment and trailer (SPEC.md §6-8).
///
/// Small values are gathered into solid records; large values get records of their own, streamed in
/// batches of chunks sealed on every core. Random bytes are drawn in a fixed order (item id when a value is
/// added; record id and chunk nonces when a record is closed; index nonces at the end), so output is a
/// pure function of the inputs and the random stream.
final class CommitWriter {
    let file: File
    let headerLength: UInt64
    let vaultID: [UInt8]
    let keys: Subkeys
    let random: RandomSource
    let level: Int32
    let solidMembers: Int
    let start: UInt64
    /// Body offset where the next byte goes.
    private(set) var position: UInt64

    private var solid: [(item: Item, value: [UInt8], sequence: Int)] = []
    private var solidBytes = 0
    private var solidTableBytes = 0
    /// Closed records waiting to be sealed together.
    private var pending: [(jobs: [ChunkJob], items: [(item: Item, sequence: Int)])] = []
    private var pendingBytes = 0
    /// Items whose records are written, each with the number of the `add` that gave its value: records are
    /// not written in the order values are added (small values wait for their solid record), so the latest
    /// value of an item is the one with the highest number, not the last written.
    private(set) var written: [(sequence: Int, item: Item)] = []
    /// The number of the last `add` (or item of `appendSealed`): `written` carries it.
    private(set) var sequence = 0
    static let batchBytes = 4 << 20

    init(
        file: File, headerLength: UInt64, vaultID: [UInt8], keys: Subkeys, random: RandomSource, level: Int32,
        solidMembers: Int = Limits.membersMax, at position: UInt64
    ) {
        self.solidMembers = solidMembers
        self.file = file
        self.headerLength = headerLength
        self.vaultID = vaultID
        self.keys = keys
        self.random = random
        self.level = level
        start = position
        self.position = position
    }

    /// Adds a value for `item` (whose location is filled in here).
    func add(_ item: Item, value: ValueSource) throws {
        switch value {
        case .bytes(let b):
            try add(item, bytes: b)
        case .fileDescriptor(let fd, let size):
            guard size <= Limits.valueMax else { throw VaultError(.invalidArgument, "a value is at most 2^48 bytes") }
            if size <= UInt64(Limits.solidMemberMax) {
                try add(item, bytes: try readExactly(fd, Int(size)))
            } else {
                try stream(item, fd: fd, size: size)
            }
        }
    }

    func add(_ item: Item, bytes: [UInt8]) throws {
        var item = item
        item.size = UInt64(bytes.count)
        sequence += 1
        guard bytes.count <= Limits.solidMemberMax else {
            try closeRecord([(item, bytes, sequence)])
            return
        }
        solid.append((item, bytes, sequence))
        solidBytes += bytes.count
        // The member table counts too (SPEC.md §6): an id and a size varint per member, so that thousands of
        // empty values cannot make a record of megabytes. Values and table each reach the target on their own
        // (so the records of the released fixtures, whose tables are small, are cut as they always were).
        solidTableBytes += 16 + MemberTable.varintLength(item.size)
        if solidBytes >= Limits.solidTarget || solidTableBytes >= Limits.solidTarget || solid.count >= solidMembers {
            try closeSolid()
        }
    }

    /// Hands over `written` and forgets it.
    func takeWritten() -> [(sequence: Int, item: Item)] {
        defer { written = [] }
        return written
    }

    /// Closes the solid record being filled, so that the next value starts a new one.
    func endSolidRecord() throws { try closeSolid() }

    private func closeSolid() throws {
        guard !solid.isEmpty else { return }
        let members = solid
        solid = []
        solidBytes = 0
        solidTableBytes = 0
        try closeRecord(members)
    }

    /// Turns members held in memory into a record's chunk jobs.
    private func closeRecord(_ members: [(item: Item, value: [UInt8], sequence: Int)]) throws {
        var plain = MemberTable.encode(members.map { ($0.item.id, $0.item.size) })
        for m in members { plain.append(contentsOf: m.value) }
        let recordID = ID128(random.bytes(16))
        let jobs = Blocks.jobs(
            for: plain, key: StreamKey.record(keys, vaultID: vaultID, recordID: recordID), random: random)
        var items: [(item: Item, sequence: Int)] = []
        var dataOffset: UInt64 = 0
        for (i, m) in members.enumerated() {
            var item = m.item
            item.location = RecordLocation(recordID: recordID, offset: 0, length: 0, member: i, dataOffset: dataOffset)
            dataOffset += item.size
            items.append((item, m.sequence))
        }
        pending.append((jobs, items))
        pendingBytes += plain.count
        if pendingBytes >= CommitWriter.batchBytes { try flushPending() }
    }

    /// Hands the pending records to the background sealer (after writing the batch sealed before them).
    private func flushPending() throws {
        guard !pending.isEmpty else { return }
        let records = pending
        pending = []
        pendingBytes = 0
        try submit(records.flatMap(\.jobs)) { [unowned self] start, sizes in
            var offset = start
            var k = 0
            for record in records {
                let length = UInt64(sizes[k..<k + record.jobs.count].reduce(0, +))
                k += record.jobs.count
                for (var item, n) in record.items {
                    item.location.offset = offset
                    item.location.length = length
                    self.written.append((n, item))
                }
                offset += length
            }
        }
    }

    /// Batches being sealed on other threads while this one reads the next: reading, compressing and
    /// encrypting overlap. `completion` learns where the batch was written and the size of each block.
    private final class Inflight: @unchecked Sendable {
        var sealed: [[UInt8]] = []
        let done = DispatchSemaphore(value: 0)
    }
    /// Oldest first: written in the order they were submitted.
    private var inflight: [(box: Inflight, completion: (UInt64, [Int]) -> Void)] = []
    /// Batches sealed at once (each at most about ``batchBytes`` of plaintext, as many sealed): the next one
    /// is queued while one seals, so the cores need not wait for this thread between batches. On 2 cores, a
    /// `pack` of a 58.7 MB tree took 655 ms with one, 569 ms with two (`--level 1`: 333 and 283 ms).
    static let batchesInFlight = 2

    private func submit(_ jobs: [ChunkJob], completion: @escaping (UInt64, [Int]) -> Void) throws {
        while inflight.count >= CommitWriter.batchesInFlight { try drainOldest() }
        let box = Inflight()
        let level = self.level
        if Blocks.sealsInline(jobs) {
            box.sealed = Blocks.sealAll(jobs, level: level)
            box.done.signal()
        } else {
            let work = UnsafeSendable(jobs)
            DispatchQueue.global().async {
                box.sealed = Blocks.sealAll(work.value, level: level)
                box.done.signal()
            }
        }
        inflight.append((box, completion))
    }

    /// Waits for every batch in flight and writes them, in order.
    private func drain() throws {
        while !inflight.isEmpty { try drainOldest() }
    }

    /// Waits for the oldest batch in flight and writes it.
    private func drainOldest() throws {
        let (box, completion) = inflight.removeFirst()
        box.done.wait()
        var out: [UInt8] = []
        out.reserveCapacity(box.sealed.reduce(0) { $0 + $1.count })
        for b in box.sealed { out.append(contentsOf: b) }
        let start = position
        try file.write(out, at: headerLength + position)
        position += UInt64(out.count)
        completion(start, box.sealed.map(\.count))
    }

    /// A large value: its own record, read and sealed a batch of chunks at a time.
    private func stream(_ item: Item, fd: Int32, size: UInt64) throws {
        try beginValue(item, size: size)
        var left = size
        while left > 0 {
            var buf = try readExactly(fd, Int(min(UInt64(CommitWriter.batchBytes), left)))
            left -= UInt64(buf.count)
            try buf.withUnsafeBytes { try appendValue($0) }
            wipe(&buf)
        }
        try endValue()
        var extra: UInt8 = 0
        if read(fd, &extra, 1) == 1 {
            throw VaultError(.io, "input grew while it was read")
        }
    }

    /// The value being given piece by piece: held whole up to ``Limits/solidMemberMax`` bytes (it then joins a
    /// solid record as ``add(_:bytes:)`` does), else cut into the chunks of its own record as its bytes come,
    /// a batch sealed while the next is given.
    private enum OpenValue {
        case held(item: Item, size: UInt64, bytes: [UInt8])
        case streamed(ValueStream)
    }

    private final class RecordStart { var offset: UInt64? }

    private struct ValueStream {
        var item: Item
        let sequence: Int
        let recordID: ID128
        let key: StreamKey
        /// Where the record starts, learnt when its first batch is written (earlier batches may still be
        /// sealing when it begins).
        let start: RecordStart
        /// The record's plaintext: its member table and the value.
        let total: UInt64
        /// Value bytes given so far.
        var given: UInt64 = 0
        /// Record plaintext cut into chunks so far.
        var produced: UInt64 = 0
        var chunkIndex: UInt32 = 0
        /// Plaintext not cut yet (less than a batch).
        var pending: [UInt8]
    }

    private var openValue: OpenValue?

    /// Starts a value of `size` bytes for `item`, given by ``appendValue(_:)`` and closed by ``endValue()``: a
    /// value copied out of a record streams through in bounded memory, whatever its size.
    func beginValue(_ item: Item, size: UInt64) throws {
        precondition(openValue == nil, "endValue() before the next value")
        guard size <= Limits.valueMax else { throw VaultError(.invalidArgument, "a value is at most 2^48 bytes") }
        if size <= UInt64(Limits.solidMemberMax) {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(Int(size))
            openValue = .held(item: item, size: size, bytes: bytes)
            return
        }
        // Queued after the records before it, not waited for: the cores go on sealing them while this value
        // is read (waiting here left a core idle for each large file of a `pack`).
        try flushPending()
        var item = item
        item.size = size
        sequence += 1
        let recordID = ID128(random.bytes(16))
        let table = MemberTable.encode([(item.id, size)])
        openValue = .streamed(
            ValueStream(
                item: item, sequence: sequence, recordID: recordID,
                key: StreamKey.record(keys, vaultID: vaultID, recordID: recordID), start: RecordStart(),
                total: UInt64(table.count) + size, pending: table))
    }

    /// The next bytes of the open value.
    func appendValue(_ bytes: UnsafeRawBufferPointer) throws {
        switch openValue {
        case .held(let item, let size, var held)?:
            openValue = nil  // the bytes are moved, not copied
            guard UInt64(held.count + bytes.count) <= size else {
                throw VaultError(.io, item: item.id, "\(item.displayName): more bytes than the value's size")
            }
            held.append(contentsOf: bytes)
            openValue = .held(item: item, size: size, bytes: held)
        case .streamed(var s)?:
            openValue = nil
            guard s.given + UInt64(bytes.count) <= s.item.size else {
                throw VaultError(.io, item: s.item.id, "\(s.item.displayName): more bytes than the value's size")
            }
            s.given += UInt64(bytes.count)
            s.pending.append(contentsOf: bytes)
            // More than a batch: the batch with the record's last chunk is submitted by endValue().
            while s.pending.count > CommitWriter.batchBytes {
                let batch = Array(s.pending[..<CommitWriter.batchBytes])
                s.pending.removeSubrange(..<CommitWriter.batchBytes)
                try submitChunks(batch, of: &s)
            }
            openValue = .streamed(s)
        case nil:
            preconditionFailure("beginValue() first")
        }
    }

    /// Closes the open value; its bytes must have been its size.
    func endValue() throws {
        let value = openValue
        openValue = nil
        switch value {
        case .held(let item, let size, var bytes)?:
            defer { wipe(&bytes) }
            guard UInt64(bytes.count) == size else {
                throw VaultError(.io, item: item.id, "\(item.displayName): input changed size while it was read")
            }
            try add(item, bytes: bytes)
        case .streamed(var s)?:
            guard s.given == s.item.size else {
                throw VaultError(.io, item: s.item.id, "\(s.item.displayName): input changed size while it was read")
            }
            // The last batch (never empty: appendValue keeps it) places the item once it is written.
            let rest = s.pending
            s.pending = []
            try submitChunks(rest, of: &s, placing: true)
        case nil:
            preconditionFailure("beginValue() first")
        }
    }

    /// Cuts `plain`, the next bytes of a streamed record, into chunks and hands them to the sealer.
    private func submitChunks(_ plain: [UInt8], of s: inout ValueStream, placing: Bool = false) throws {
        var jobs: [ChunkJob] = []
        var start = 0
        while start < plain.count {
            let end = min(start + Limits.chunkSize, plain.count)
            s.produced += UInt64(end - start)
            jobs.append(
                ChunkJob(
                    plaintext: plain[start..<end], index: s.chunkIndex, last: s.produced == s.total,
                    nonce: random.bytes(Sodium.aeadNonceBytes), key: s.key))
            s.chunkIndex += 1
            start = end
        }
        let (item, sequence, recordID, record) = (s.item, s.sequence, s.recordID, s.start)
        try submit(jobs) { [unowned self] start, sizes in
            if record.offset == nil { record.offset = start }
            guard placing, let offset = record.offset else { return }
            var item = item
            let end = start + UInt64(sizes.reduce(0, +))
            item.location = RecordLocation(
                recordID: recordID, offset: offset, length: end - offset, member: 0, dataOffset: 0)
            self.written.append((sequence, item))
        }
    }

    /// Flushes everything added, then writes the index segment for `ops` and the trailer, syncing the data
    /// before the trailer. Returns the new tail.
    func finish(ops: [IndexOperation], checkpoint: Bool, generation: UInt64, previous: Tail?, itemCount: Int) throws
        -> Tail
    {
        precondition(solid.isEmpty && pending.isEmpty && inflight.isEmpty, "flush() before finish()")
        let plain = IndexCodec.encode(ops)
        guard plain.count <= Limits.indexMax else {
            throw VaultError(.invalidArgument, "index larger than \(Limits.indexMax) bytes")
        }
        let jobs = Blocks.jobs(
            for: plain, key: StreamKey.index(keys, vaultID: vaultID, generation: generation), random: random)
        let sealed = Blocks.sealAll(jobs, level: level)
        var out: [UInt8] = []
        for b in sealed { out.append(contentsOf: b) }
        let indexOffset = position
        try file.write(out, at: headerLength + position)
        position += UInt64(out.count)
        try file.sync()
        let trailer = Trailer(
            generation: generation, commitStart: start, indexOffset: indexOffset,
            indexLength: UInt64(out.count), previous: previous?.offset ?? Trailer.noPrevious,
            itemCount: UInt32(itemCount), checkpoint: checkpoint,
            chain: checkpoint ? 0 : (previous?.trailer.chain ?? 0) + 1)
        let trailerOffset = position
        try file.write(trailer.encode(vaultID: vaultID, key: keys.trailer), at: headerLength + position)
        position += UInt64(Trailer.size)
        try file.sync()
        return Tail(
            trailer: trailer, offset: trailerOffset,
            checkpointBytes: checkpoint ? UInt64(out.count) : previous?.checkpointBytes ?? 0,
            deltaBytes: checkpoint ? 0 : (previous?.deltaBytes ?? 0) + UInt64(out.count),
            chainPlainBytes: plain.count + (checkpoint ? 0 : previous?.chainPlainBytes ?? 0),
            chainOps: ops.count + (checkpoint ? 0 : previous?.chainOps ?? 0))
    }

    /// Appends an already sealed record (compaction, rekey) for `items`, whose member indexes and data
    /// offsets stay as they are. `produce` writes the record's blocks through the callback it is given.
    func appendSealed(_ items: [Item], produce: ((_ bytes: [UInt8]) throws -> Void) throws -> Void) throws {
        try flushPending()
        try drain()
        let offset = position
        try produce { bytes in
            try file.write(bytes, at: headerLength + position)
            position += UInt64(bytes.count)
        }
        for var item in items {
            item.location.offset = offset
            item.location.length = position - offset
            sequence += 1
            written.append((sequence, item))
        }
    }

    /// Closes the open solid record and writes every pending record.
    func flush() throws {
        try closeSolid()
        try flushPending()
        try drain()
    }
}

/// Reads exactly `count` bytes from the current position of `fd` (which stays open).
func readExactly(_ fd: Int32, _ count: Int) throws -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    var done = 0
    try out.withUnsafeMutableBytes { b in
        while done < count {
            let n = read(fd, b.baseAddress! + done, count - done)
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw File.errnoError("cannot read", "input") }
            if n == 0 { throw VaultError(.io, "input ended after \(done) of \(count) bytes (changed while read?)") }
            done += n
        }
    }
    return out
}
