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
    let temp: String
    private var fd: Int32
    /// Whether the temporary name is still ours to remove (not yet renamed into place).
    private var tempExists = true
    private let registration: Int?

    init(_ path: String, mode: mode_t) throws {
        self.path = path
        let dir = directoryOf(path)
        let base = path.split(separator: "/").last.map(String.init) ?? path
        let dirFD = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirFD >= 0 else { throw CLIError(.io, "cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(dirFD) }
        let form = LockedTemporary.staged(base)
        form.removeStale(in: dirFD)
        let (fd, name, registration) = try form.create(in: dirFD, mode: mode, display: path) {
            TemporaryFiles.register(dir + "/" + $0)
        }
        self.fd = fd
        temp = dir + "/" + name
        self.registration = registration
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
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw CLIError(.io, "cannot write \(path): \(String(cString: strerror(errno)))") }
            done += n
        }
    }

    /// Syncs and gives the file its name: with `force` by rename (replacing what is there), else by link
    /// (failing with exit 7 if the name exists, so a concurrent creator is never overwritten).
    func place(force: Bool) throws {
        guard fsync(fd) == 0 else { throw CLIError(.io, "cannot write \(path): \(String(cString: strerror(errno)))") }
        let ok = force ? rename(temp, path) == 0 : link(temp, path) == 0
        let err = errno
        if ok, force { tempExists = false }
        discard()
        guard ok else {
            if err == EEXIST { throw CLIError(.exists, "\(path) exists (--force replaces it)") }
            throw CLIError(.io, "cannot create \(path): \(String(cString: strerror(err)))")
        }
    }

    private func discard() {
        if fd >= 0 {
            close(fd)
            fd = -1
        }
        if tempExists { unlink(temp) }
        tempExists = false
        TemporaryFiles.unregister(registration)
    }

    deinit { discard() }
}
