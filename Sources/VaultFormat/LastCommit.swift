import CLinux

/// Finding the last commit of a vault file, either format version (SPEC.md §8, Part 4 V7): the backward search
/// for the last valid trailer, and what the bytes after it are, an interrupted write or a damaged last trailer.
extension TailReader {
    /// Counts the candidates whose MAC failed, up to ``Limits/trailerProbesMax``.
    struct Probes {
        var failed = 0
    }

    /// The last commit of a file of trailer layout `T`: its trailer and body offset. *truncated* when no
    /// trailer is valid; *damaged index* when one is but the bytes after it end in a complete trailer whose
    /// MAC fails (SPEC.md §8, "a damaged last trailer is not an interrupted write"): opening the commit before
    /// that one would silently undo it.
    func lastCommit<T: TrailerLayout>(_: T.Type) throws -> (T, UInt64) {
        let found = try lastValid(T.self)
        if let damaged = try damagedEnd(T.self, after: found) { throw damaged }
        return found
    }

    /// The last valid trailer, whatever follows it (the backward search alone); *truncated* when there is none.
    func lastValid<T: TrailerLayout>(_: T.Type) throws -> (T, UInt64) {
        var probes = Probes()
        guard let found = try validTrailer(T.self, from: 0, end: bodySize, probes: &probes) else {
            throw VaultError(.truncated, "no complete commit after the header")
        }
        return found
    }

    /// The error for the bytes after the valid trailer `last` when they end in a *complete trailer* (its magic in
    /// place, or, the magic aside, a candidate where it sits; not ending in zeros) whose MAC does not verify; nil
    /// when they are an incomplete commit (a trailer cut short or ending in zeros, zeros, an interrupted commit's
    /// records or index, an authentic trailer that breaks a rule) or when nothing follows. One read and at most
    /// one MAC.
    func damagedEnd<T: TrailerLayout>(_: T.Type, after last: (T, UInt64)) throws -> VaultError? {
        let size = UInt64(T.size)
        let end = last.1 + size
        guard bodySize >= end, bodySize - end >= size else { return nil }
        let q = bodySize - size
        let raw = try file.read(T.size, at: headerLength + q)
        guard T.isComplete(raw[...], at: q), !macVerifies(T.self, raw[...]) else { return nil }
        return VaultError(
            .damagedIndex,
            "the file ends in a whole commit trailer (body offset \(q)) whose MAC does not verify: damage "
                + "or a forgery, not an interrupted write; the last commit that verifies is generation \(last.0.generation), "
                + "\(bodySize - end) bytes before the end (`kcar recover --drop-damaged` goes back to it, dropping them)"
        )
    }

    /// Whether the MAC of the trailer bytes `raw` (layout `T`) verifies under this file's trailer key.
    func macVerifies<T: TrailerLayout>(_: T.Type, _ raw: ArraySlice<UInt8>) -> Bool {
        Sodium.constantTimeEqual(
            Sodium.mac(key: keys.trailer, T.macInput(vaultID: vaultID, raw.prefix(T.size - 32))), Array(raw.suffix(32)))
    }

    /// The valid trailer at the highest body offset p with `from` ≤ p and p + 96 ≤ `end`, examining offsets
    /// from the highest down; nil if there is none. Throws once `probes` reaches ``Limits/trailerProbesMax``.
    func validTrailer(from: UInt64, end: UInt64, probes: inout Probes) throws -> (Trailer, UInt64)? {
        try validTrailer(Trailer.self, from: from, end: end, probes: &probes)
    }

    /// The last trailer that verifies, searching backward past an incomplete commit (SPEC.md §8): only
    /// *candidates* (magic and fields consistent with their position, checked without the key) get a MAC,
    /// and after ``Limits/trailerProbesMax`` candidates whose MAC fails the search gives up, so bytes
    /// appended to a vault cost a scan, not a MAC per position. As ``validTrailer(from:end:probes:)``, for
    /// the trailer layout `T` (version 1's or version 2's).
    func validTrailer<T: TrailerLayout>(_: T.Type, from: UInt64, end: UInt64, probes: inout Probes) throws -> (
        T, UInt64
    )? {
        let size = UInt64(T.size)
        guard end >= size, end - size >= from else { return nil }
        // The first window is small (a file whose last commit is whole ends with its trailer: opening reads a
        // few KiB, not a MiB, of a large vault); each next one doubles, up to 1 MiB.
        var window: UInt64 = 4096
        var hi = end - size + 1  // candidate positions are < hi
        let m0 = T.magic[0]
        while hi > from {
            let lo = hi - from > window ? hi - window : from
            window = min(window * 2, 1 << 20)
            let bytes = try file.read(Int(hi - 1 + size - lo), at: headerLength + lo)
            // Cheap first: the magic's first byte (found by memrchr, not byte by byte: `verify` scans every
            // commit's bytes), then the candidate's fields, and only then the MAC.
            var end = Int(hi - lo)  // candidates are at offsets below `end` in `bytes`
            while end > 0 {
                let found = bytes.withUnsafeBytes { b in
                    kcar_memrchr(b.baseAddress!, Int32(m0), end).map { b.baseAddress!.distance(to: $0) }
                }
                guard let p = found else { break }
                end = p
                let raw = bytes[p..<p + T.size]
                if let t = T.candidate(raw, at: lo + UInt64(p)) {
                    if macVerifies(T.self, raw) { return (t, lo + UInt64(p)) }
                    probes.failed += 1
                    guard probes.failed < Limits.trailerProbesMax else {
                        throw VaultError(
                            .damagedIndex,
                            "\(probes.failed) trailer candidates up to body offset \(lo + UInt64(p)) do not "
                                + "verify (TRAILER_PROBES_MAX): bytes were put there, not left by an interrupted write"
                        )
                    }
                }
            }
            hi = lo
        }
        return nil
    }
}

extension TrailerLayout {
    /// Zero bytes at the end of a trailer that make it the trace of a crash, not a complete trailer (SPEC.md §8).
    static var zeroEndMin: Int { 16 }

    /// Whether the trailer-sized bytes `b` at body offset `at` are a *complete trailer* (SPEC.md §8): their magic
    /// in place, or every candidate rule holding for them with the magic left aside (one damaged byte leaves one
    /// of the two intact), and not ending in ``zeroEndMin`` zero bytes (an append whose last block never reached
    /// the disk). A trailer cut short, zeros, and sealed records or index are not.
    static func isComplete(_ b: ArraySlice<UInt8>, at: UInt64) -> Bool {
        guard b.count == size, !b.suffix(zeroEndMin).allSatisfy({ $0 == 0 }) else { return false }
        if b.prefix(magic.count).elementsEqual(magic) { return true }
        return candidate(magic[...] + b.dropFirst(magic.count), at: at) != nil
    }
}

extension Vault {
    /// What `kcar recover --drop-damaged` does (SPEC.md §8): cuts the file at `path` back to the end of its last
    /// commit whose trailer verifies, whatever follows it (an incomplete commit, or a damaged last trailer that
    /// keeps the file from opening), once that commit loads as the last of a file that ends there. Under the
    /// exclusive lock, with the key. Returns the bytes dropped (0 when nothing followed) and the generation
    /// that is now the last. What the dropped commit changed is lost unless another copy holds it.
    package static func dropDamagedTail(path: String, secret: UnlockSecret, lockTimeout: Double = 10) throws -> (
        dropped: UInt64, generation: UInt64
    ) {
        let file = try lockedFile(path, mode: .write, exclusive: true, timeout: lockTimeout)
        defer { file.unlock() }
        let size = try file.size()
        let (header, headerBytes) = try readHeader(file, size: size)
        let keys = Subkeys(vaultKey: try unlock(header, headerBytes, path: path, secret: secret).vaultKey)
        let headerLength = UInt64(header.length)
        let body = size - headerLength
        let reader = TailReader(
            file: file, headerLength: headerLength, bodySize: body, vaultID: header.vaultID, keys: keys)
        let (generation, end): (UInt64, UInt64)
        if header.formatVersion == 2 {
            let (t, p) = try reader.lastValid(TrailerV2.self)
            (generation, end) = (t.generation, p + UInt64(TrailerV2.size))
            _ = try PagedVault.load(
                RecordSource(file: file, headerLength: headerLength, vaultID: header.vaultID, keys: keys), bodySize: end
            )
        } else {
            let (t, p) = try reader.lastValid(Trailer.self)
            (generation, end) = (t.generation, p + UInt64(Trailer.size))
            _ = try TailReader(
                file: file, headerLength: headerLength, bodySize: end, vaultID: header.vaultID, keys: keys
            ).load()
        }
        guard body > end else { return (0, generation) }
        try file.truncate(to: headerLength + end)
        try file.sync()
        return (body - end, generation)
    }
}
