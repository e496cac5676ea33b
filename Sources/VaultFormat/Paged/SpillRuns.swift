import CSodium

/// The tree changes a bulk commit (``PagedTransaction/spillAfter``) moves out of memory, as sorted runs: each
/// run a list of changes per tree in ascending key order, cut into chunks of at most ``chunkEntries`` (and
/// about ``chunkBytes``) that are encoded (``encode(_:)``) and sealed (XChaCha20-Poly1305 under a key drawn for
/// this commit alone, the chunk's offset as its nonce: each offset is written once) into a temporary file beside
/// the vault that has no name: it is gone when the process ends, whatever ends it. The commit reads each run back
/// one chunk at a time (``Cursor``), so that what it holds is a chunk per run, not the commit. One thread at a
/// time uses it: the one spilling, then (once the spill is waited for) the commit.
final class SpillRuns: @unchecked Sendable {
    /// Changes per chunk, at most.
    static let chunkEntries = 4096
    /// Bytes of changes per chunk, about (``LeafEntry/weight``): what a cursor holds of a run at a time, however
    /// large its entries (one may be ``PagedLimits/entryMax``).
    static let chunkBytes = 1 << 20

    private let file: File
    private let key: SecureBytes
    private var end: UInt64 = 0
    /// Per run, per tree: its chunks in order.
    private var runs: [[TreeID: [(offset: UInt64, length: Int)]]] = []
    /// Changes spilled per tree, over every run.
    private(set) var counts: [TreeID: Int] = [:]

    /// Opens an unnamed temporary file in `directory` (``File/unnamed(in:)``) and draws its key.
    init(directory: String) throws {
        file = try File.unnamed(in: directory)
        Sodium.ensureInitialized()
        key = SecureBytes(count: 32) { randombytes_buf($0.baseAddress!, 32) }
    }

    /// Writes one run: `perTree`'s changes, each list in strictly ascending key order.
    func append(_ perTree: [(tree: TreeID, changes: [TreeWriter.Change])]) throws {
        var run: [TreeID: [(offset: UInt64, length: Int)]] = [:]
        for (tree, changes) in perTree where !changes.isEmpty {
            var chunks: [(offset: UInt64, length: Int)] = []
            var start = 0
            while start < changes.count {
                var stop = start
                var bytes = 0
                while stop < changes.count, stop - start < SpillRuns.chunkEntries, bytes < SpillRuns.chunkBytes {
                    bytes += changes[stop].weight
                    stop += 1
                }
                var plain = SpillRuns.encode(changes[start..<stop])
                defer { wipe(&plain) }
                let sealedBytes = plain.withUnsafeBytes { p in
                    Sodium.seal(key: key, nonce: nonce(end), plaintext: p, ad: [])
                }
                try file.write(sealedBytes, at: end)
                chunks.append((end, sealedBytes.count))
                end += UInt64(sealedBytes.count)
                start = stop
            }
            run[tree] = chunks
            counts[tree, default: 0] += changes.count
        }
        runs.append(run)
    }

    /// A reader of every run's changes to `tree`, one cursor per run.
    func cursors(_ tree: TreeID) -> [Cursor] {
        runs.compactMap { run in run[tree].map { Cursor(runs: self, tree: tree, chunks: $0) } }
    }

    /// A chunk's nonce: its offset, which no other chunk of the file has, under a key used for this file alone.
    private func nonce(_ offset: UInt64) -> [UInt8] {
        var n = [UInt8](repeating: 0, count: Sodium.aeadNonceBytes)
        for i in 0..<8 { n[i] = UInt8(truncatingIfNeeded: offset >> (8 * UInt64(i))) }
        return n
    }

    fileprivate func read(_ tree: TreeID, _ chunk: (offset: UInt64, length: Int)) throws -> [TreeWriter.Change] {
        let bytes = try file.read(chunk.length, at: chunk.offset)
        guard var plain = Sodium.open(key: key, nonce: nonce(chunk.offset), ciphertext: bytes, ad: []) else {
            throw VaultError(.io, "the temporary file of a large commit changed under it")
        }
        defer { wipe(&plain) }
        return try SpillRuns.decode(plain)
    }

    /// A chunk's changes, each as written here (not a delta segment, whose tree and operation bytes count against
    /// a key's and an entry's limits: an entry at `KEY_MAX` fits a page but not a delta): an operation byte (1 a
    /// put, 2 a remove), the key (varint length), and for a put a flags byte (1: a record, 2: a writer), the
    /// record (id, varint offset, varint length), the writer (8 bytes) and the rest (varint length).
    static func encode(_ changes: ArraySlice<TreeWriter.Change>) -> [UInt8] {
        var w = ByteWriter(capacity: changes.reduce(0) { $0 + $1.weight + 48 })
        for c in changes {
            switch c {
            case .remove(let k):
                w.append(2)
                w.appendVarint(k.count)
                w.append(contentsOf: k)
            case .put(let e):
                w.append(1)
                w.appendVarint(e.key.count)
                w.append(contentsOf: e.key)
                w.append((e.record == nil ? 0 : 1) | (e.writer == nil ? 0 : 2))
                if let r = e.record {
                    w.append(contentsOf: r.id.bytes)
                    w.appendVarint(r.offset)
                    w.appendVarint(r.length)
                }
                if let x = e.writer { w.appendLE(x) }
                w.appendVarint(e.rest.count)
                w.append(contentsOf: e.rest)
            }
        }
        return w.bytes
    }

    /// The changes of a chunk ``encode(_:)`` wrote (authenticated before: a failure here is a bug, not an attack).
    static func decode(_ bytes: [UInt8]) throws -> [TreeWriter.Change] {
        var r = ByteReader(bytes, failure: .io, what: "temporary file of a large commit")
        var out: [TreeWriter.Change] = []
        while !r.isAtEnd {
            let op = try r.readU8()
            let key = try r.readBytes(try r.readCount(max: bytes.count, "key length"))
            guard op == 1 else {
                guard op == 2 else { throw r.fail("operation \(op)") }
                out.append(.remove(key))
                continue
            }
            let flags = try r.readU8()
            var e = LeafEntry(key: key)
            if flags & 1 != 0 {
                e.record = RecordRef(id: try r.readID(), offset: try r.readVarint(), length: try r.readVarint())
            }
            if flags & 2 != 0 { e.writer = try r.readLE(UInt64.self) }
            e.rest = try r.readBytes(try r.readCount(max: bytes.count, "rest length"))
            out.append(.put(e))
        }
        return out
    }

    /// One run's changes to one tree, read a chunk at a time (or changes held in memory).
    struct Cursor {
        let runs: SpillRuns?
        let tree: TreeID
        let chunks: [(offset: UInt64, length: Int)]
        private var next = 0
        private var buffer: [TreeWriter.Change] = []
        private var at = 0

        init(runs: SpillRuns, tree: TreeID, chunks: [(offset: UInt64, length: Int)]) {
            self.runs = runs
            self.tree = tree
            self.chunks = chunks
        }

        /// A cursor over `changes`, in ascending key order, held in memory.
        init(memory changes: [TreeWriter.Change]) {
            runs = nil
            tree = .items
            chunks = []
            buffer = changes
        }

        /// The change at the cursor, nil at the end.
        mutating func peek() throws -> TreeWriter.Change? {
            while at == buffer.count {
                guard let runs, next < chunks.count else { return nil }
                buffer = try runs.read(tree, chunks[next])
                next += 1
                at = 0
            }
            return buffer[at]
        }

        mutating func advance() { at += 1 }
    }
}

/// Several cursors' changes, each cursor in ascending key order, handed over as one list in ascending key
/// order: a binary heap of the cursors by the key of their next change (log k comparisons per change).
struct MergedCursors {
    private var cursors: [SpillRuns.Cursor]
    /// Each cursor's next key (empty once it is done).
    private var heads: [[UInt8]]
    private var heap: [Int] = []

    init(_ cursors: [SpillRuns.Cursor]) throws {
        self.cursors = cursors
        heads = Array(repeating: [], count: cursors.count)
        for i in cursors.indices {
            if let c = try self.cursors[i].peek() {
                heads[i] = c.key
                heap.append(i)
            }
        }
        for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    /// The least change not yet handed over; nil once every cursor is done.
    mutating func next() throws -> TreeWriter.Change? {
        guard let i = heap.first, let c = try cursors[i].peek() else { return nil }
        cursors[i].advance()
        if let n = try cursors[i].peek() {
            heads[i] = n.key
        } else {
            heads[i] = []
            heap[0] = heap[heap.count - 1]
            heap.removeLast()
        }
        if !heap.isEmpty { siftDown(0) }
        return c
    }

    private mutating func siftDown(_ start: Int) {
        var p = start
        while true {
            let l = 2 * p + 1
            let r = l + 1
            var m = p
            if l < heap.count, heads[heap[l]].lexicographicallyPrecedes(heads[heap[m]]) { m = l }
            if r < heap.count, heads[heap[r]].lexicographicallyPrecedes(heads[heap[m]]) { m = r }
            if m == p { return }
            heap.swapAt(p, m)
            p = m
        }
    }
}
