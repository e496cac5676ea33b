import Dispatch
import Synchronization

/// What this process decoded, for tests that count work instead of timing it: the plaintext bytes
/// of every chunk opened (records, index segments, pages), on any thread. A command's decoding is linear in
/// its input when this grows by at most a constant times the bytes it reads.
package enum DecodeWork {
    package static let openedBytes = Atomic<UInt64>(0)
}

/// The key and associated-data prefix of one chunked stream (a record or an index segment, SPEC.md §6-7).
/// Each block's AD is `prefix || u32 chunk_index || u8 last`.
package struct StreamKey: Sendable {
    package let key: SecureBytes
    let adPrefix: [UInt8]

    init(key: SecureBytes, adPrefix: [UInt8]) {
        self.key = key
        self.adPrefix = adPrefix
    }

    /// The prefix every stream of kcar has: `label || vault_id || what names the stream`.
    init(key: SecureBytes, label: String, vaultID: [UInt8], naming name: [UInt8]) {
        var w = ByteWriter(capacity: label.utf8.count + vaultID.count + name.count)
        w.append(contentsOf: Array(label.utf8))
        w.append(contentsOf: vaultID)
        w.append(contentsOf: name)
        self.init(key: key, adPrefix: w.bytes)
    }

    package static func record(_ keys: Subkeys, vaultID: [UInt8], recordID: ID128) -> StreamKey {
        StreamKey(key: keys.record, label: "kcar-rec-v1", vaultID: vaultID, naming: recordID.bytes)
    }

    package static func index(_ keys: Subkeys, vaultID: [UInt8], generation: UInt64) -> StreamKey {
        StreamKey(
            key: keys.index, label: "kcar-idx-v1", vaultID: vaultID,
            naming: withUnsafeBytes(of: generation.littleEndian, Array.init))
    }

    package func ad(chunk: UInt32, last: Bool) -> [UInt8] {
        var w = ByteWriter(capacity: adPrefix.count + 5)
        w.append(contentsOf: adPrefix)
        w.appendLE(chunk)
        w.append(last ? 1 : 0)
        return w.bytes
    }
}

/// One chunk waiting to be compressed and sealed. Nonces are drawn before sealing, in stream order, so the
/// output does not depend on which thread seals which chunk.
package struct ChunkJob: @unchecked Sendable {
    let plaintext: ArraySlice<UInt8>
    let index: UInt32
    let last: Bool
    let nonce: [UInt8]
    let key: StreamKey

    package init(plaintext: ArraySlice<UInt8>, index: UInt32, last: Bool, nonce: [UInt8], key: StreamKey) {
        (self.plaintext, self.index, self.last, self.nonce, self.key) = (plaintext, index, last, nonce, key)
    }
}

package enum Blocks {
    static let frameBytes = 4 + 24
    static let sealedMin = 1 + 4 + 1 + 16  // codec, length, at least one payload byte, tag
    static let sealedMax = Limits.chunkSize + 5 + 16

    /// Cuts `plaintext` into chunk jobs, drawing one nonce per chunk from `random`.
    package static func jobs(for plaintext: [UInt8], key: StreamKey, random: RandomSource) -> [ChunkJob] {
        precondition(!plaintext.isEmpty)
        var jobs: [ChunkJob] = []
        var start = 0
        var index: UInt32 = 0
        while start < plaintext.count {
            let end = min(start + Limits.chunkSize, plaintext.count)
            jobs.append(
                ChunkJob(
                    plaintext: plaintext[start..<end], index: index, last: end == plaintext.count,
                    nonce: random.bytes(Sodium.aeadNonceBytes), key: key))
            start = end
            index += 1
        }
        return jobs
    }

    /// Compresses and seals one chunk into its on-disk block, in one buffer: the chunk is deflated (or copied)
    /// straight behind the frame and encrypted in place.
    package static func seal(_ job: ChunkJob, level: Int32) -> [UInt8] {
        let n = job.plaintext.count
        let p0 = frameBytes  // where the block plaintext P starts
        var block = [UInt8](repeating: 0, count: p0 + 5 + n + Sodium.aeadTagBytes)
        let sealedLength: Int = block.withUnsafeMutableBytes { b in
            let payloadLength: Int = job.plaintext.withUnsafeBytes { chunk in
                let room = UnsafeMutableRawBufferPointer(rebasing: b[(p0 + 5)..<(p0 + 5 + max(n - 1, 0))])
                if let c = Deflate.compress(chunk, into: room, level: level) {
                    b[p0] = 1
                    return c
                }
                b[p0] = 0
                UnsafeMutableRawBufferPointer(rebasing: b[(p0 + 5)..<(p0 + 5 + n)]).copyMemory(from: chunk)
                return n
            }
            for i in 0..<4 { b[p0 + 1 + i] = UInt8(truncatingIfNeeded: UInt32(n) >> (8 * i)) }
            let sealed = Sodium.sealInPlace(
                key: job.key.key, nonce: job.nonce,
                buffer: UnsafeMutableRawBufferPointer(rebasing: b[p0...]),
                plaintextLength: 5 + payloadLength, ad: job.key.ad(chunk: job.index, last: job.last))
            for i in 0..<4 { b[i] = UInt8(truncatingIfNeeded: UInt32(sealed) >> (8 * i)) }
            for i in 0..<Sodium.aeadNonceBytes { b[4 + i] = job.nonce[i] }
            return sealed
        }
        block.removeSubrange((p0 + sealedLength)...)
        return block
    }

    /// Plaintext bytes below which a batch is sealed on the calling thread: compressing and sealing them takes
    /// well under a millisecond, less than a short-lived process pays to start Dispatch's worker threads (a
    /// `kcar add` of one item sealed its record on them).
    static let inlineBytesMax = 64 << 10

    /// Whether `jobs` are few enough bytes to seal on the calling thread (``inlineBytesMax``).
    static func sealsInline(_ jobs: [ChunkJob]) -> Bool {
        var total = 0
        for job in jobs {
            total += job.plaintext.count
            if total > inlineBytesMax { return false }
        }
        return true
    }

    /// Seals many chunks on every core (a small batch on this thread); the result is in job order.
    static func sealAll(_ jobs: [ChunkJob], level: Int32) -> [[UInt8]] {
        if jobs.count == 1 || sealsInline(jobs) { return jobs.map { seal($0, level: level) } }
        var results = [[UInt8]](repeating: [], count: jobs.count)
        results.withUnsafeMutableBufferPointer { out in
            let o = UnsafeSendable(out)
            DispatchQueue.concurrentPerform(iterations: jobs.count) { i in
                o.value[i] = seal(jobs[i], level: level)
            }
        }
        return results
    }

    /// Opens one block's sealed bytes into its chunk plaintext, enforcing SPEC.md §6.
    static func open(
        nonce: [UInt8], sealed: [UInt8], key: StreamKey, index: UInt32, last: Bool,
        fail: (String) -> VaultError
    ) throws -> [UInt8] {
        // Room for any chunk: never nil.
        try open(nonce: nonce, sealed: sealed, key: key, index: index, last: last, room: Limits.chunkSize, fail: fail)
            ?? []
    }

    /// As ``open(nonce:sealed:key:index:last:fail:)``, but nil, before inflating, if the chunk declares more
    /// than `room` bytes: the caller's budget decides, not the chunk.
    static func open(
        nonce: [UInt8], sealed: [UInt8], key: StreamKey, index: UInt32, last: Bool, room: Int,
        fail: (String) -> VaultError
    ) throws -> [UInt8]? {
        guard var p = Sodium.open(key: key.key, nonce: nonce, ciphertext: sealed, ad: key.ad(chunk: index, last: last))
        else {
            throw fail("chunk \(index) does not authenticate")
        }
        defer { wipe(&p) }
        guard p.count >= 5 else { throw fail("chunk \(index) is too short") }
        let codec = p[0]
        let length = Int(p.readLE(UInt32.self, at: 1))
        guard length >= 1, length <= Limits.chunkSize, last || length == Limits.chunkSize else {
            throw fail("chunk \(index) declares \(length) bytes")
        }
        guard length <= room else { return nil }
        DecodeWork.openedBytes.wrappingAdd(UInt64(length), ordering: .relaxed)
        let payload = p.count - 5
        switch codec {
        case 0:
            guard payload == length else { throw fail("chunk \(index) holds \(payload) bytes, declares \(length)") }
            return Array(p[5...])
        case 1:
            guard payload < length else { throw fail("chunk \(index) is compressed but not smaller") }
            let out = p.withUnsafeBytes {
                Deflate.inflate(UnsafeRawBufferPointer(rebasing: $0[5...]), expected: length)
            }
            guard let out else { throw fail("chunk \(index) does not inflate to \(length) bytes") }
            return out
        default:
            throw fail("chunk \(index) has unknown codec \(codec)")
        }
    }
}

/// Reads the blocks of one stream (record or index segment) in order and yields their chunks, each released
/// only after it authenticated.
struct BlockReader {
    let file: File
    let key: StreamKey
    let start: UInt64
    let end: UInt64
    let fail: (String) -> VaultError
    fileprivate(set) var position: UInt64
    fileprivate(set) var index: UInt32 = 0
    private var buffer: [UInt8]? = nil
    static let prefetchMax: UInt64 = 4 << 20

    /// `start` and `end` are file offsets of the stream's extent.
    init(file: File, key: StreamKey, start: UInt64, end: UInt64, fail: @escaping (String) -> VaultError) {
        self.file = file
        self.key = key
        self.start = start
        self.end = end
        self.fail = fail
        position = start
    }

    var isAtEnd: Bool { position == end && index > 0 }

    private mutating func bytes(_ count: Int, at offset: UInt64) throws -> [UInt8] {
        if buffer == nil, end - start <= BlockReader.prefetchMax {
            buffer = try file.read(Int(end - start), at: start)
        }
        if let b = buffer {
            let o = Int(offset - start)
            return Array(b[o..<o + count])
        }
        return try file.read(count, at: offset)
    }

    /// The next chunk, or nil after the last one.
    mutating func next() throws -> [UInt8]? { try next(room: Limits.chunkSize) }

    /// The next chunk, or nil after the last one; fails, before inflating it, a chunk that declares more than
    /// `room` bytes (the caller's budget for what is left of the stream).
    mutating func next(room: Int) throws -> [UInt8]? {
        if position == end {
            guard index > 0 else { throw fail("empty extent") }
            return nil
        }
        guard end - position >= UInt64(Blocks.frameBytes) else { throw fail("block \(index) is cut short") }
        let frame = try bytes(Blocks.frameBytes, at: position)
        let sealedLength = Int(frame.readLE(UInt32.self, at: 0))
        guard sealedLength >= Blocks.sealedMin, sealedLength <= Blocks.sealedMax else {
            throw fail("block \(index) declares \(sealedLength) sealed bytes")
        }
        let blockEnd = position + UInt64(Blocks.frameBytes + sealedLength)
        guard blockEnd <= end else { throw fail("block \(index) runs past its extent") }
        let sealed = try bytes(sealedLength, at: position + UInt64(Blocks.frameBytes))
        guard
            let chunk = try Blocks.open(
                nonce: Array(frame[4..<28]), sealed: sealed, key: key, index: index,
                last: blockEnd == end, room: room, fail: fail)
        else {
            throw fail("chunk \(index) passes the bound on its plaintext")
        }
        position = blockEnd
        index += 1
        return chunk
    }
}

/// Carries a value into a concurrent closure where the caller guarantees disjoint access.
struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

extension Blocks {
    /// Re-seals one block under another key with a fresh nonce, without touching its plaintext (rekey).
    static func reseal(
        frame: [UInt8], sealed: [UInt8], from old: StreamKey, to new: StreamKey, index: UInt32, last: Bool,
        nonce: [UInt8], fail: (String) -> VaultError
    ) throws -> [UInt8] {
        let ad = old.ad(chunk: index, last: last)
        guard var p = Sodium.open(key: old.key, nonce: Array(frame[4..<28]), ciphertext: sealed, ad: ad) else {
            throw fail("chunk \(index) does not authenticate")
        }
        defer { wipe(&p) }
        let resealed = p.withUnsafeBytes {
            Sodium.seal(key: new.key, nonce: nonce, plaintext: $0, ad: new.ad(chunk: index, last: last))
        }
        var out = ByteWriter(capacity: frameBytes + resealed.count)
        out.appendLE(UInt32(resealed.count))
        out.append(contentsOf: nonce)
        out.append(contentsOf: resealed)
        return out.bytes
    }
}

extension BlockReader {
    /// The next block's raw frame and sealed bytes, unopened (for copying and re-sealing); nil at the end.
    mutating func nextRaw() throws -> (frame: [UInt8], sealed: [UInt8], index: UInt32, last: Bool)? {
        if position == end { return nil }
        guard end - position >= UInt64(Blocks.frameBytes) else { throw fail("block \(index) is cut short") }
        let frame = try file.read(Blocks.frameBytes, at: position)
        let n = Int(frame.readLE(UInt32.self, at: 0))
        guard n >= Blocks.sealedMin, n <= Blocks.sealedMax else {
            throw fail("block \(index) declares \(n) sealed bytes")
        }
        let blockEnd = position + UInt64(Blocks.frameBytes + n)
        guard blockEnd <= end else { throw fail("block \(index) runs past its extent") }
        let sealed = try file.read(n, at: position + UInt64(Blocks.frameBytes))
        defer {
            position = blockEnd
            index += 1
        }
        return (frame, sealed, index, blockEnd == end)
    }
}
