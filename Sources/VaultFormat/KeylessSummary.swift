import CSodium

/// What a vault file says of itself to someone without its key (SPEC.md §T, T1), for `kcar git textconv`: its
/// size, a digest of all of it (so two different files never read alike), and what its last trailer claims.
package struct KeylessSummary: Sendable, Equatable {
    /// The file's size in bytes.
    package var fileSize: UInt64
    /// BLAKE2b with 16 bytes of output over the whole file, as `b2sum -l 128` prints it.
    package var digest: [UInt8]
    /// The generation of the trailer the file ends with, as its bytes say (no key: not authenticated); nil when
    /// the file does not end with a trailer candidate (an incomplete commit, damage, or not a vault).
    package var lastGeneration: UInt64?
    /// That trailer's item count, as its bytes say.
    package var lastItemCount: UInt64?

    /// Reads the file at `path` once, in pieces of 1 MiB; `header` (when it parsed) says where its trailers are.
    package init(path: String, header: Header?) throws {
        let file = try File.openRead(path)
        fileSize = try file.size()
        digest = try Self.blake2b128(file, size: fileSize)
        guard let header else { return }
        let size = header.formatVersion == 1 ? Trailer.size : TrailerV2.size
        let headerLength = UInt64(header.length)
        guard fileSize >= headerLength + UInt64(size) else { return }
        let raw = try file.read(size, at: fileSize - UInt64(size))
        let at = fileSize - UInt64(size) - headerLength
        if header.formatVersion == 1, let t = Trailer.candidate(raw[...], at: at) {
            (lastGeneration, lastItemCount) = (t.generation, UInt64(t.itemCount))
        } else if header.formatVersion == 2, let t = TrailerV2.candidate(raw[...], at: at) {
            (lastGeneration, lastItemCount) = (t.generation, t.itemCount)
        }
    }

    static func blake2b128(_ file: File, size: UInt64) throws -> [UInt8] {
        Sodium.ensureInitialized()
        // The state is declared 64-byte aligned in C (and so imported as an opaque pointer): allocated here with
        // that alignment.
        let state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer { state.deallocate() }
        let s = OpaquePointer(state)
        crypto_generichash_init(s, nil, 0, 16)
        var offset: UInt64 = 0
        while offset < size {
            let chunk = try file.read(Int(min(size - offset, 1 << 20)), at: offset)
            crypto_generichash_update(s, chunk, UInt64(chunk.count))
            offset += UInt64(chunk.count)
        }
        var out = [UInt8](repeating: 0, count: 16)
        crypto_generichash_final(s, &out, 16)
        return out
    }
}

extension Vault {
    /// What can be checked of the file at `path` without its key (`kcar verify` with none): its header parses
    /// and its checksum holds (else the header's error is thrown), a commit's worth of bytes follows the
    /// header, and the file ends with the magic of its format's trailer. Returns the header, the file's size
    /// and the one problem found, if any (*truncated*, or *incomplete commit* for a file that does not end with
    /// a trailer); nothing is authenticated.
    package static func checkWithoutKey(path: String) throws -> (header: Header, size: UInt64, problem: VaultError?) {
        let file = try File.openRead(path)
        let size = try file.size()
        let prefix = try file.read(Int(min(size, 4096)), at: 0)
        let header = try Header.parse(prefix: prefix, fileSize: size, versions: 1...2) { try file.read($0, at: 0) }.0
        let (trailerSize, magic) =
            header.formatVersion == 1 ? (Trailer.size, Trailer.magic) : (TrailerV2.size, TrailerV2.magic)
        guard size >= UInt64(header.length + trailerSize) else {
            return (header, size, VaultError(.truncated, "no commit follows the header"))
        }
        guard try file.read(magic.count, at: size - UInt64(trailerSize)) == magic else {
            return (
                header, size,
                VaultError(.incompleteCommit, "the file does not end with a trailer (an interrupted write, or damage)")
            )
        }
        return (header, size, nil)
    }
}
