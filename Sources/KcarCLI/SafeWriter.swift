import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Writes files below a root folder without ever leaving it: every folder below the root is opened with
/// O_NOFOLLOW relative to its parent (and kept open for the next file in it); a file whose content is still
/// to be authenticated is written under a temporary name and moved into place only when complete.
final class SafeWriter {
    let root: Int32
    let rootPath: String
    let force: Bool
    /// The folders of the last path opened below the root, outermost first, each open and named by its bytes
    /// (like file names; not as Swift strings, which would take NFC and NFD spellings for the same folder).
    /// Items come sorted by name, so the next path mostly shares them: only what differs is opened.
    private var chain: [(name: [UInt8], fd: Int32)] = []
    /// The folder returned beyond ``chainMax`` levels, closed by the next call.
    private var beyond: Int32?
    static let chainMax = 256

    /// The root folder was made by this writer, so nothing below it can exist yet.
    let freshRoot: Bool

    init(root: String, force: Bool) throws {
        freshRoot = mkdir(root, 0o700) == 0
        if !freshRoot, errno != EEXIST {
            throw CLIError(.io, "cannot create \(root): \(String(cString: strerror(errno)))")
        }
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError(.io, "cannot open folder \(root): \(String(cString: strerror(errno)))") }
        self.root = fd
        rootPath = root
        self.force = force
    }

    deinit {
        for e in chain { close(e.fd) }
        if let beyond { close(beyond) }
        close(root)
    }

    static func checkNames(_ parts: [String]) throws {
        for p in parts where p.isEmpty || p == "." || p == ".." || p.utf8.count > 255 || p.utf8.contains(0) {
            throw CLIError(
                .io, "refusing to write \(parts.joined(separator: "/")): a path component is unsafe or over 255 bytes")
        }
    }

    /// The last folder (below the root) a look without `create` found missing: nothing below it is looked
    /// for again until something is created (`check` visits a vault's names in order: one system call per
    /// missing folder, not one per file below it).
    private var missing: [[UInt8]]?

    /// The folder holding `parts.last`, opened (and created, when `create`) component by component without
    /// following links; nil if it does not exist and `create` is false.
    private func folder(_ parts: [String], create: Bool) throws -> Int32? {
        try openFolder(Array(parts.dropLast()), create: create, display: parts)
    }

    /// The folder `dirs` below the root, opened (kept open for what comes next) and created as ``folder(_:create:)``.
    private func openFolder(_ dirs: [String], create: Bool, display parts: [String]) throws -> Int32? {
        if let b = beyond {
            close(b)
            beyond = nil
        }
        if dirs.isEmpty { return root }
        let names = dirs.map { Array($0.utf8) }
        if create {
            missing = nil
        } else if let m = missing, names.starts(with: m) {
            return nil
        }
        var common = 0
        while common < min(chain.count, names.count), chain[common].name == names[common] { common += 1 }
        if common == names.count, common <= SafeWriter.chainMax { return chain[common - 1].fd }
        for e in chain[common...] { close(e.fd) }
        chain.removeLast(chain.count - common)
        var dir = common == 0 ? root : chain[common - 1].fd
        var owned = false
        for i in common..<dirs.count {
            let p = dirs[i]
            var next = openat(dir, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0, errno == ENOENT {
                guard create else {
                    if owned { close(dir) }
                    missing = Array(names[...i])
                    return nil
                }
                if mkdirat(dir, p, 0o700) != 0, errno != EEXIST {
                    let reason = String(cString: strerror(errno))
                    if owned { close(dir) }
                    throw CLIError(.io, "cannot create folder \(p) below \(rootPath): \(reason)")
                }
                next = openat(dir, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            if owned { close(dir) }
            guard next >= 0 else {
                throw CLIError(
                    .io,
                    "refusing to write \(rootPath)/\(parts.joined(separator: "/")): \(p) is a symbolic link or not a folder"
                )
            }
            dir = next
            // Kept in the chain up to chainMax levels (descriptors are few); deeper ones are opened on the way.
            if i < SafeWriter.chainMax {
                chain.append((names[i], next))
                owned = false
            } else {
                owned = true
            }
        }
        if owned { beyond = dir }
        return dir
    }

    /// Makes the folder `parts` (and those on its way), mode 0700; one that exists is kept as it is.
    func makeFolder(_ parts: [String]) throws {
        _ = try openFolder(parts, create: true, display: parts)
    }

    /// Gives the folder `parts` its permissions (`mode`, with -p) and modification time, through a descriptor
    /// opened without following links.
    func finishFolder(_ parts: [String], mode: UInt32?, modified: Int64?) throws {
        guard let fd = try openFolder(parts, create: false, display: parts) else { return }
        if let mode, fchmod(fd, mode_t(mode)) != 0 {
            throw CLIError(
                .io,
                "cannot set the mode of \(rootPath)/\(parts.joined(separator: "/")): \(String(cString: strerror(errno)))"
            )
        }
        if let modified {
            var times = SafeWriter.times(modified)
            futimens(fd, &times)
        }
    }

    /// Makes the symbolic link `parts` to `target` in its folder (opened without following links; the link
    /// itself is never followed). An existing name is refused (exit 7) unless --force, which replaces a file or
    /// link (not a folder) with it.
    func makeLink(_ parts: [String], target: String, modified: Int64?) throws {
        let display = "\(rootPath)/\(parts.joined(separator: "/"))"
        let dir = try folder(parts, create: true)!
        let name = parts.last!
        if symlinkat(target, dir, name) != 0 {
            guard errno == EEXIST else {
                throw CLIError(.io, "cannot create the link \(display): \(String(cString: strerror(errno)))")
            }
            guard force else { throw CLIError(.exists, "\(display) exists (--force replaces it)") }
            var st = stat()
            if fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0, st.st_mode & S_IFMT == S_IFDIR {
                throw CLIError(.io, "cannot create the link \(display): a folder is there")
            }
            guard unlinkat(dir, name, 0) == 0 || errno == ENOENT, symlinkat(target, dir, name) == 0 else {
                throw CLIError(.io, "cannot create the link \(display): \(String(cString: strerror(errno)))")
            }
        }
        if let modified {
            var times = SafeWriter.times(modified)
            utimensat(dir, name, &times, AT_SYMLINK_NOFOLLOW)
        }
    }

    /// A modification time in nanoseconds as the two timespecs futimens and utimensat take.
    static func times(_ ns: Int64) -> [timespec] {
        let (s, f) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
        let t = timespec(tv_sec: Int(f < 0 ? s - 1 : s), tv_nsec: Int(f < 0 ? f + 1_000_000_000 : f))
        return [t, t]
    }

    /// Refuses names that cannot be written safely, and existing files unless `force`.
    func check(_ parts: [String]) throws {
        try SafeWriter.checkNames(parts)
        guard !force, !freshRoot, let dir = try folder(parts, create: false) else { return }
        var st = stat()
        if fstatat(dir, parts.last!, &st, AT_SYMLINK_NOFOLLOW) == 0 {
            throw CLIError(.exists, "\(rootPath)/\(parts.joined(separator: "/")) exists (--force replaces it)")
        }
    }

    /// A file being written.
    final class Pending {
        let dir: Int32
        let fd: Int32
        /// The temporary name, or nil when writing the final name directly.
        let temp: String?
        let name: String
        let display: String
        let force: Bool
        private var finished = false
        /// Removal of the file being written on SIGINT, SIGTERM and the like.
        private let registration: Int?

        /// `registration`: the file's, made as it was created (``TemporaryFiles/creating(_:)``).
        init(dir: Int32, fd: Int32, temp: String?, name: String, display: String, force: Bool, registration: Int?) {
            (self.dir, self.fd, self.temp, self.name, self.display, self.force) = (dir, fd, temp, name, display, force)
            self.registration = registration
        }

        func append(_ chunk: UnsafeRawBufferPointer) throws {
            var off = 0
            while off < chunk.count {
                let n = Glibc.write(fd, chunk.baseAddress! + off, chunk.count - off)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw CLIError(.io, "cannot write \(display): \(String(cString: strerror(errno)))") }
                off += n
            }
        }

        /// Sets the permissions (`mode`: exactly these bits, whatever the umask, as tar -p) and the modification
        /// time and, for a temporary file, moves it into place.
        func commit(modified: Int64?, mode: UInt32? = nil) throws {
            if let mode, fchmod(fd, mode_t(mode)) != 0 {
                throw CLIError(.io, "cannot set the mode of \(display): \(String(cString: strerror(errno)))")
            }
            if let ns = modified {
                var times = SafeWriter.times(ns)
                futimens(fd, &times)
            }
            if let temp {
                if force {
                    guard renameat(dir, temp, dir, name) == 0 else {
                        throw CLIError(.io, "cannot write \(display): \(String(cString: strerror(errno)))")
                    }
                } else {
                    guard linkat(dir, temp, dir, name, 0) == 0 else {
                        if errno == EEXIST { throw CLIError(.exists, "\(display) exists (--force replaces it)") }
                        throw CLIError(.io, "cannot write \(display): \(String(cString: strerror(errno)))")
                    }
                    unlinkat(dir, temp, 0)
                }
            }
            finished = true
            TemporaryFiles.unregister(registration)
            closeFile()
        }

        /// Removes what was written: no partial or unauthenticated file is left behind.
        func abandon() {
            if !finished { unlinkat(dir, temp ?? name, 0) }
            finished = true
            TemporaryFiles.unregister(registration)
            closeFile()
        }

        private var closed = false
        private func closeFile() {
            guard !closed else { return }
            closed = true
            Glibc.close(fd)
        }

        deinit { abandon() }
    }

    /// Starts a file. Content already authenticated whole (`authenticated`) is written to its final name
    /// (created exclusively); content that is still to be authenticated, or that replaces a file, goes to a
    /// temporary name first.
    func begin(_ parts: [String], authenticated: Bool, mode: UInt32 = 0o600) throws -> Pending {
        let display = "\(rootPath)/\(parts.joined(separator: "/"))"
        let dir = try folder(parts, create: true)!
        removeStale(in: dir, key: Array(parts.dropLast().joined(separator: "/").utf8))
        let name = parts.last!
        if authenticated, !force {
            // Registered as it is created, with the signals held in between: a signal never leaves it unknown.
            let (fd, registration) = TemporaryFiles.creating { () -> (Int32, Int?) in
                let fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(mode))
                return (fd, fd >= 0 ? TemporaryFiles.register(name, in: dir) : nil)
            }
            guard fd >= 0 else {
                if errno == EEXIST { throw CLIError(.exists, "\(display) exists (--force replaces it)") }
                throw CLIError(.io, "cannot create \(display): \(String(cString: strerror(errno)))")
            }
            return Pending(
                dir: dir, fd: fd, temp: nil, name: name, display: display, force: false, registration: registration)
        }
        let (fd, temp, registration) = try LockedTemporary.extracted.create(
            in: dir, mode: mode_t(mode), display: display
        ) {
            TemporaryFiles.register($0, in: dir)
        }
        return Pending(
            dir: dir, fd: fd, temp: temp, name: name, display: display, force: force, registration: registration)
    }

    /// Folders already cleaned of stale temporaries in this run.
    private var cleaned = Set<[UInt8]>()

    /// Removes the temporary files a killed extract left in `dir`, once per folder and run
    /// (a fresh root has none).
    private func removeStale(in dir: Int32, key: [UInt8]) {
        guard !freshRoot, cleaned.insert(key).inserted else { return }
        LockedTemporary.extracted.removeStale(in: dir)
    }
}
