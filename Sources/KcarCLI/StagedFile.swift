import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// A file written in full under a temporary name next to its path (`.BASE.<12 hex>.tmp`, created
/// exclusively, never through a link, locked while written), synced, and only then given its name: readers
/// never see a partial file, and a failure leaves nothing (the temporary name is removed on failure, when the
/// value is dropped unplaced, and on a fatal signal; one a killed kcar left is removed by the next run that
/// stages a file of that name, as nobody locks it).
final class StagedFile {
    let path: String
    private let replace: AtomicReplace
    private var written: UInt64 = 0
    /// Whether the temporary file is still ours to remove (not yet given its name).
    private var pending = true

    init(_ path: String, mode: mode_t) throws {
        self.path = path
        replace = try StagedFile.cli(path) { try AtomicReplace(path: path, mode: mode) }
    }

    convenience init(_ path: String, mode: mode_t, bytes: [UInt8]) throws {
        try self.init(path, mode: mode)
        var data = bytes
        defer { wipe(&data) }
        try append(data)
    }

    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        try StagedFile.cli(path) { try replace.write(bytes, at: written) }
        written += UInt64(bytes.count)
    }

    /// Syncs and gives the file its name: with `force` by rename (replacing what is there), else by link
    /// (failing with exit 7 if the name exists, so a concurrent creator is never overwritten).
    func place(force: Bool) throws {
        pending = false
        try StagedFile.cli(path) { try replace.commit(overwrite: force) }
    }

    /// The library's errors in the CLI's words: an existing file says how to replace it.
    private static func cli<T>(_ path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as VaultError where e.code == .exists {
            throw CLIError(.exists, "\(path) exists (--force replaces it)")
        } catch let e as VaultError {
            throw CLIError(ExitCode.of(e.code), e.context)
        }
    }

    deinit { if pending { replace.abandon() } }
}
