import CLinux

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A POSIX file descriptor with the few operations a vault needs. Errors are ``VaultError/Code/io`` naming
/// the path and the system's message; a short read is ``VaultError/Code/truncated``.
package final class File {
    let fd: Int32
    let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    static func errnoError(_ what: String, _ path: String, _ err: Int32 = errno) -> VaultError {
        VaultError(path: path, errno: err, "\(what) \(path): \(String(cString: strerror(err)))")
    }

    /// Opens an existing vault for reading.
    static func openRead(_ path: String) throws -> File { try openExisting(path, flags: O_RDONLY) }

    /// Opens an existing vault for reading and writing.
    package static func openReadWrite(_ path: String) throws -> File { try openExisting(path, flags: O_RDWR) }

    /// Opens an existing file that must be a regular file: a FIFO, device, socket or folder
    /// at a vault's path is refused with ``VaultError/Code/unsafeFile`` before it is opened, so nothing
    /// blocks (a FIFO's open waits for a writer, its read for data, and no lock timeout applies) and no
    /// device is touched; the open itself is non-blocking and checked again with `fstat`, for a file
    /// swapped in between. A symbolic link given as the path is followed, as `tar` and `cp` follow the
    /// paths they are given: what it points at must be a regular file.
    static func openExisting(_ path: String, flags: Int32) throws -> File {
        var st = stat()
        if stat(path, &st) == 0 { try requireRegular(st, path) }
        let fd = open(path, flags | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw VaultError(path: path, errno: ENOENT, "\(path): no such file") }
            throw errnoError("cannot open", path)
        }
        let file = File(fd: fd, path: path)
        guard fstat(fd, &st) == 0 else { throw errnoError("cannot stat", path) }
        try requireRegular(st, path)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return file
    }

    /// Throws ``VaultError/Code/unsafeFile`` unless `st` describes a regular file.
    static func requireRegular(_ st: stat, _ path: String) throws {
        let type = st.st_mode & S_IFMT
        guard type != S_IFREG else { return }
        let what: String
        switch type {
        case S_IFIFO: what = "a FIFO"
        case S_IFDIR: what = "a folder"
        case S_IFCHR, S_IFBLK: what = "a device"
        case S_IFSOCK: what = "a socket"
        default: what = "not a regular file"
        }
        throw VaultError(
            .unsafeFile, path: path, "\(path) is \(what), not a regular file; refusing to use it as a vault")
    }

    /// Creates a new file with mode 0600; fails if it exists.
    static func createExclusive(_ path: String) throws -> File {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw VaultError(.exists, path) }
            throw errnoError("cannot create", path)
        }
        return File(fd: fd, path: path)
    }

    static func adopt(fd: Int32, path: String) -> File { File(fd: fd, path: path) }

    /// Creates a file with no name in `directory`, mode 0600, gone when it is closed or the process ends
    /// (O_TMPFILE; where the file system has none, a file created under a random name and unlinked at once).
    /// Its `path` is the folder's, for errors.
    static func unnamed(in directory: String) throws -> File {
        // O_TMPFILE (__O_TMPFILE | O_DIRECTORY), which Glibc's module does not export.
        let tmpfile: Int32 = 0o20_200_000
        var fd = open(directory, tmpfile | O_RDWR | O_CLOEXEC, 0o600)
        if fd < 0 {
            var name = Array("\(directory)/.kcar-spill-XXXXXX".utf8CString)
            fd = name.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = name.withUnsafeBufferPointer { unlink($0.baseAddress!) }
            }
        }
        guard fd >= 0 else { throw errnoError("cannot make a temporary file in", directory) }
        return File(fd: fd, path: directory)
    }

    package func size() throws -> UInt64 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw File.errnoError("cannot stat", path) }
        return UInt64(st.st_size)
    }

    func identity() throws -> (dev: UInt64, ino: UInt64) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw File.errnoError("cannot stat", path) }
        return (UInt64(st.st_dev), UInt64(st.st_ino))
    }

    /// Whether `path` still names this open file (a rewrite renames a new file over it).
    package func isStill(_ path: String) throws -> Bool {
        var st = stat()
        guard stat(path, &st) == 0 else {
            if errno == ENOENT { return false }
            throw File.errnoError("cannot stat", path)
        }
        let id = try identity()
        return id.dev == UInt64(st.st_dev) && id.ino == UInt64(st.st_ino)
    }

    /// Reads exactly `count` bytes at `offset`.
    package func read(_ count: Int, at offset: UInt64) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { try readFully(into: $0, at: offset) }
        return out
    }

    func readFully(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws {
        // An offset from an index (a version 2 record's may be up to 2^64) past off_t: no file is that long.
        guard offset <= UInt64(Int64.max) - UInt64(buffer.count) else {
            throw VaultError(.truncated, path: path, "\(path) ends before byte \(offset)")
        }
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw File.errnoError("cannot read", path)
            }
            if n == 0 { throw VaultError(.truncated, path: path, "\(path) ends at byte \(offset + UInt64(done))") }
            done += n
        }
    }

    /// Reads up to `buffer.count` bytes from the current position (for streams such as standard input).
    func readSome(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress!, buffer.count)
            if n >= 0 { return n }
            if errno != EINTR { throw File.errnoError("cannot read", path) }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        var done = 0
        while done < bytes.count {
            let n = File.injected(path, .write(offset: offset + UInt64(done), count: bytes.count - done)) { count in
                pwrite(fd, bytes.baseAddress! + done, count, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw File.errnoError("cannot write", path)
            }
            done += n
        }
    }

    package func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }

    /// Writes at the current position (pipes, standard output).
    func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw File.errnoError("cannot write", path)
            }
            done += n
        }
    }

    func truncate(to size: UInt64) throws {
        guard File.injected(path, .truncate, { _ in Int(ftruncate(fd, off_t(size))) }) == 0 else {
            throw File.errnoError("cannot truncate", path)
        }
    }

    func sync() throws {
        guard File.injected(path, .sync, { _ in Int(fdatasync(fd)) }) == 0 else {
            throw File.errnoError("cannot sync", path)
        }
    }

    func fullSync() throws {
        guard File.injected(path, .sync, { _ in Int(fsync(fd)) }) == 0 else {
            throw File.errnoError("cannot sync", path)
        }
    }

    /// A write, truncate or sync about to be made, as the fault seam sees it.
    enum Operation: Equatable {
        case write(offset: UInt64, count: Int)
        case truncate
        case sync
    }

    /// What the fault seam makes of an operation: a write of at most `n` bytes, or a failure with `errno`.
    enum Fault {
        case short(Int)
        case error(Int32)
    }

    #if DEBUG
        /// Test-only seam (debug builds, not public): asked before every write, truncate and sync of a vault or
        /// temporary file; a fault it returns replaces what the system call would do. Tests set and reset it
        /// (one test at a time: it is global).
        nonisolated(unsafe) static var faults: ((_ path: String, _ operation: Operation) -> Fault?)?
    #endif

    /// Runs `call` (given the byte count to pass on) unless the seam injects a fault for this operation.
    @inline(__always)
    static func injected(_ path: String, _ operation: Operation, _ call: (Int) -> Int) -> Int {
        var count = 0
        if case .write(_, let c) = operation { count = c }
        #if DEBUG
            if let hook = faults, let fault = hook(path, operation) {
                switch fault {
                case .short(let n): return call(max(1, min(n, count)))
                case .error(let e):
                    errno = e
                    return -1
                }
            }
        #endif
        return call(count)
    }

    /// Takes a shared or exclusive `flock`, waiting at most `timeout` seconds.
    package func lock(exclusive: Bool, timeout: Double) throws {
        let op = (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB
        var waited = 0.0
        while flock(fd, op) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw File.errnoError("cannot lock", path) }
            guard waited < timeout else {
                throw VaultError(.lockTimeout, path: path, "\(path) is locked by another process (waited \(timeout) s)")
            }
            usleep(10_000)
            waited += 0.01
        }
    }

    func unlock() { flock(fd, LOCK_UN) }
}

/// Writes a whole file next to `path` and renames it over `path` only once it is complete and synced:
/// readers and crashes see either the old file or the new one. The temporary file is removed on failure.
/// The one helper for writing a file whole: vault rewrites and creations, and the CLI's key files, item files
/// and outputs (its `StagedFile`).
package struct AtomicReplace {
    package let path: String
    package let tempPath: String
    let file: File
    /// Its registration for removal on a fatal signal.
    let registration: Int?

    /// A new temporary file next to `path`, `.BASE.<12 hex>.tmp`, created with `mode` (less the umask),
    /// exclusively (never through a link), locked until it is renamed or removed, registered for removal on a
    /// fatal signal; one a killed writer left (nobody locks it) is removed first.
    package init(path: String, mode: mode_t = 0o600, random: RandomSource = SystemRandom.shared) throws {
        self.path = path
        let dir = directoryOf(path)
        let base = path.split(separator: "/").last.map(String.init) ?? path
        tempPath = "\(dir)/.\(base).\(hexEncode(random.bytes(6))).tmp"
        AtomicReplace.removeStale(dir: dir, base: base)
        // Locked until renamed or removed: a temporary file nobody holds a lock on was left by a killed writer.
        // It is created and locked under a name removeStale passes over, then given its name: created under
        // that name, another writer's removeStale could take it for stale between open and flock.
        let staging = tempPath + ".new"
        // Created and registered with the signals held (a signal in between would leave it behind).
        let (fd, stagingRegistration) = TemporaryFiles.creating { () -> (Int32, Int?) in
            let fd = open(staging, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            guard fd >= 0 else { return (fd, nil) }
            DebugSeam.pause("temporary-created")
            return (fd, TemporaryFiles.register(staging))
        }
        guard fd >= 0 else {
            if errno == EEXIST { throw VaultError(.exists, tempPath) }
            throw File.errnoError("cannot create", tempPath)
        }
        defer { TemporaryFiles.unregister(stagingRegistration) }
        let f = File.adopt(fd: fd, path: tempPath)
        registration = TemporaryFiles.register(tempPath)
        do {
            try f.lock(exclusive: true, timeout: 0)
            guard rename(staging, tempPath) == 0 else { throw File.errnoError("cannot create", tempPath) }
        } catch {
            unlink(staging)
            TemporaryFiles.unregister(registration)
            throw error
        }
        file = f
    }

    /// A staging name (`.BASE.<12 hex>.tmp.new`) is unlocked from its creation to its writer's `flock`, a moment
    /// later: one older than this was left by a writer killed in between (SIGKILL; a signal it handles is held
    /// until the name is registered, ``TemporaryFiles/creating(_:)``).
    static let stagingStaleSeconds = 60

    /// Removes temporary files of `base` left by writers that were killed (their lock died with them), and
    /// staging files older than ``stagingStaleSeconds`` that nobody locks.
    static func removeStale(dir: String, base: String) {
        guard let d = opendir(dir) else { return }
        defer { closedir(d) }
        let prefix = ".\(base)."
        let suffix = ".tmp"
        let staging = ".tmp.new"
        while let ent = readdir(d) {
            let name = withUnsafeBytes(of: ent.pointee.d_name) { b in
                String(decoding: b.prefix { $0 != 0 }, as: UTF8.self)
            }
            // Exactly .BASE.<12 hex>.tmp (or .tmp.new): another file's temporaries (".BASE.other.<hex>.tmp") are not ours.
            let end = name.hasSuffix(staging) ? staging : suffix
            guard name.hasPrefix(prefix), name.hasSuffix(end),
                name.utf8.count == prefix.utf8.count + 12 + end.utf8.count,
                hexDecode(String(name.dropFirst(prefix.count).dropLast(end.count))) != nil
            else { continue }
            // Without blocking: a FIFO planted under such a name (in a folder others can write) would wait
            // for a writer forever; only a regular file nobody locks is a killed writer's.
            let fd = open("\(dir)/\(name)", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { continue }
            var st = stat()
            if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG,
                end == suffix || Int(time(nil)) - Int(st.st_mtim.tv_sec) > stagingStaleSeconds,
                flock(fd, LOCK_EX | LOCK_NB) == 0
            {
                unlink("\(dir)/\(name)")
            }
            close(fd)
        }
    }

    /// Syncs, renames over the target (refusing to replace an existing one unless `overwrite`), syncs the folder.
    /// `check` runs just before the rename (after the slow sync): a rewrite throws there if the file it copied
    /// is no longer at `path`. The temporary file is removed if anything fails.
    ///
    /// A rewrite passes the file it copied as `replacing`: the new file then takes the name by an atomic exchange
    /// (`renameat2(RENAME_EXCHANGE)`), and the file it displaced is removed only if it is that one. Another file
    /// renamed over `path` after `check` (someone who can write the folder, SPEC.md §K1.2) is put back and the
    /// commit refused, where a plain rename would have unlinked a file this writer never opened. Where the file
    /// system cannot exchange, a plain rename after `check`, as before.
    package func commit(overwrite: Bool, replacing original: File? = nil, check: () throws -> Void = {}) throws {
        do {
            try file.fullSync()
            try check()
        } catch {
            abandon()
            throw error
        }
        DebugSeam.pause("before-replace")
        if overwrite {
            if let original, try exchange(replacing: original) {
                // Done: the new file is at `path`, the one it replaced is removed.
            } else if rename(tempPath, path) != 0 {
                throw refused(errno)
            }
        } else {
            // link() fails if the target exists, so a concurrent creator is never overwritten.
            guard link(tempPath, path) == 0 else {
                let e = errno
                abandon()
                if e == EEXIST { throw VaultError(.exists, path) }
                throw File.errnoError("cannot create", path, e)
            }
            unlink(tempPath)
        }
        TemporaryFiles.unregister(registration)
        syncDirectory(directoryOf(path))
    }

    /// Exchanges the temporary file with `path`, and removes what was at `path` if it is `original`; if it is
    /// another file, exchanges them back and throws. False, with nothing changed, where the file system or the
    /// kernel cannot exchange (the caller renames).
    private func exchange(replacing original: File) throws -> Bool {
        // Unregistered first: from the exchange on, the temporary name may hold another file, which a fatal
        // signal's clean-up must not remove (a writer killed before it leaves its locked file to `removeStale`).
        TemporaryFiles.unregister(registration)
        guard kcar_rename_exchange(tempPath, path) == 0 else {
            let e = errno
            if e == EINVAL || e == ENOSYS || e == EOPNOTSUPP { return false }
            throw refused(e)
        }
        let displacedOriginal = (try? original.isStill(tempPath)) ?? false
        if displacedOriginal {
            unlink(tempPath)
            return true
        }
        // Another file was at `path`: it goes back, and the new file (back at the temporary name) is removed.
        guard kcar_rename_exchange(tempPath, path) == 0 else {
            let e = errno
            TemporaryFiles.unregister(registration)
            throw VaultError(
                .io, path: path,
                "\(path) was replaced by another file while it was rewritten, and that file could not be put back "
                    + "(\(String(cString: strerror(e)))): the rewrite is at \(path), the other file at \(tempPath)")
        }
        abandon()
        throw VaultError(
            .io, path: path,
            "\(path) was replaced by another file while it was rewritten; nothing was changed, open it again")
    }

    /// The temporary file is removed, and the error for a rename or exchange over `path` that failed with `e`.
    private func refused(_ e: Int32) -> VaultError {
        abandon()
        if e == EPERM, AtomicReplace.inStickyFolder(path) {
            return VaultError(
                .io, path: path,
                "cannot replace \(path): it is another user's file in a folder with the restricted-deletion "
                    + "(sticky) bit, where only the file's owner, the folder's owner or root can replace it (a shared keychain, "
                    + "SPEC.md §K1.2)")
        }
        return File.errnoError("cannot rename to", path, e)
    }

    /// Writes `bytes` at `offset` of the temporary file.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws { try file.write(bytes, at: offset) }

    /// Whether `path`'s folder has the restricted-deletion (sticky) bit.
    static func inStickyFolder(_ path: String) -> Bool {
        var st = stat()
        return stat(directoryOf(path), &st) == 0 && st.st_mode & S_ISVTX != 0
    }

    /// Removes the temporary file, if the name is still this writer's (never a file someone put there).
    package func abandon() {
        if (try? file.isStill(tempPath)) == true { unlink(tempPath) }
        TemporaryFiles.unregister(registration)
    }
}

/// The folder of `path` (`.` for a bare name).
package func directoryOf(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    let d = String(path[..<slash])
    return d.isEmpty ? "/" : d
}

func syncDirectory(_ dir: String) {
    let fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    fsync(fd)
    close(fd)
}

/// What tells whether a vault file changed since it was last looked at, without reading it: a rewrite makes a
/// new inode, a commit grows it (and moves its modification time). A file that is not there reads as size -1.
package struct FileVersion: Equatable, Sendable {
    package var device: UInt64 = 0, inode: UInt64 = 0, size: Int64 = -1, mtime: Int = 0, mtimeNanoseconds: Int = 0

    package init(_ path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return }
        (device, inode, size, mtime, mtimeNanoseconds) = (
            UInt64(st.st_dev), UInt64(st.st_ino), Int64(st.st_size), st.st_mtim.tv_sec, st.st_mtim.tv_nsec
        )
    }

    /// Whether the file was there.
    package var exists: Bool { size >= 0 }
}
