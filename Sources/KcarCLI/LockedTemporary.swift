import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The temporary files kcar's commands write before giving a file its name (extracted files, item files, key
/// files), named `PREFIX<12 hex digits>SUFFIX` and locked (`flock`) from creation until they are renamed or
/// removed. The lock dies with the process, so a temporary of that form that nobody locks was left by a killed
/// kcar (SIGKILL, a crash: no signal handler ran) and is removed by the next run that writes to its folder
///.
struct LockedTemporary {
    let prefix: String
    let suffix: String

    /// extract's temporaries in an output folder: `.kcar-<hex>.tmp`.
    static let extracted = LockedTemporary(prefix: ".kcar-", suffix: ".tmp")

    func isOurs(_ name: [UInt8]) -> Bool {
        let p = Array(prefix.utf8)
        let s = Array(suffix.utf8)
        guard name.count == p.count + 12 + s.count, name.starts(with: p), name.suffix(s.count).elementsEqual(s) else {
            return false
        }
        return name[p.count..<p.count + 12].allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Creates a new temporary in the open folder `dir` (exclusively, never through a link) and locks it;
    /// returns its descriptor, its name and its registration for removal on a signal, which `register` makes
    /// (given the name) as the file is created, with the signals held in between (``TemporaryFiles/creating(_:)``):
    /// no signal can leave it behind.
    func create(in dir: Int32, mode: mode_t, display: String, register: (String) -> Int?) throws -> (
        fd: Int32, name: String, registration: Int?
    ) {
        while true {
            let name = prefix + Hex.encode(randomBytes(6)) + suffix
            let (fd, registration) = TemporaryFiles.creating { () -> (Int32, Int?) in
                let fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
                return (fd, fd >= 0 ? register(name) : nil)
            }
            guard fd >= 0 else {
                throw CLIError(
                    .io, "cannot create a file in the folder of \(display): \(String(cString: strerror(errno)))")
            }
            // Another run's cleaner may have locked and removed it between open and flock: then the name no
            // longer names this file, and a new name is taken.
            if flock(fd, LOCK_EX | LOCK_NB) == 0, LockedTemporary.isStill(fd, name, in: dir) {
                return (fd, name, registration)
            }
            TemporaryFiles.unregister(registration)
            close(fd)
        }
    }

    /// Removes this form's temporaries in `dir` that nobody locks: only regular files, only names of this
    /// form, opened without following links or blocking.
    func removeStale(in dir: Int32) {
        let fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let d = fdopendir(fd) else {
            if fd >= 0 { close(fd) }
            return
        }
        defer { closedir(d) }
        while let ent = readdir(d) {
            let raw: [UInt8] = withUnsafeBytes(of: ent.pointee.d_name) { b in Array(b.prefix { $0 != 0 }) }
            guard isOurs(raw) else { continue }
            let name = String(decoding: raw, as: UTF8.self)
            let t = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard t >= 0 else { continue }
            var st = stat()
            if fstat(t, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, flock(t, LOCK_EX | LOCK_NB) == 0,
                LockedTemporary.isStill(t, name, in: dir)
            {
                unlinkat(dir, name, 0)
            }
            close(t)
        }
    }

    /// Whether `name` in `dir` is the open file `fd` (same device and inode).
    static func isStill(_ fd: Int32, _ name: String, in dir: Int32) -> Bool {
        var a = stat()
        var b = stat()
        return fstat(fd, &a) == 0 && fstatat(dir, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev
            && a.st_ino == b.st_ino
    }
}
