import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Whom a keychain directory is trusted to be written by (SPEC.md §K1): its owner and root, and, when the
/// owner shares it on purpose (`.kcar-shared`), the members of one Unix group.
public struct KeychainTrust: Sendable, Hashable {
    /// The directory's owner.
    public let owner: uid_t
    /// The Unix group the owner shares the keychain with, or nil for a private keychain.
    public let sharedGroup: gid_t?
    /// The directory's path with every symbolic link resolved.
    public let realPath: String
}

/// The kinds of file in a keychain directory, each with its own mode rule (SPEC.md §K1).
enum KeychainFile: Equatable {
    case key, vault, seen
}

extension KeychainDirectory {
    /// The file by which the owner of a keychain directory shares it with a Unix group (SPEC.md §K1).
    public static let sharedMarker = ".kcar-shared"
    /// The file by which the owner of a keychain directory names the group adds go to when a process names
    /// none and sets no list (SPEC.md §K2.1; `kcar init --default-group G`).
    public static let defaultGroupMarker = ".kcar-default-group"
    /// The largest marker file read (`SHARED_MARKER_MAX`): a name and a newline.
    static let markerMax = 256

    /// Checks the directory and every folder above it (SPEC.md §K1) and says whom it is trusted to be
    /// written by. Nil if the directory does not exist. Throws ``KeychainReason/unsafeFile`` for a directory
    /// that someone outside its trust could change.
    public func trust() throws -> KeychainTrust? {
        guard let realBytes = realpath(path, nil) else {
            if errno == ENOENT { return nil }
            throw KeychainError(.io, "cannot resolve keychain \(path): \(String(cString: strerror(errno)))")
        }
        let real = String(cString: realBytes)
        free(realBytes)
        let dfd = open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard dfd >= 0 else {
            if errno == ENOTDIR || errno == ELOOP { throw KeychainError.unsafe(path, "not a directory") }
            throw KeychainError(.io, "cannot open keychain \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(dfd) }
        var st = stat()
        guard fstat(dfd, &st) == 0 else { throw KeychainError(.io, "cannot stat keychain \(path)") }
        let shared = try sharedGroup(dfd, directory: st)
        let me = geteuid()
        if st.st_uid != me, st.st_uid != 0 {
            guard let shared, KeychainDirectory.isMember(of: shared) else {
                throw KeychainError.unsafe(path, "owned by uid \(st.st_uid), not by this user (uid \(me)) or root")
            }
        }
        if st.st_mode & S_IWOTH != 0 {
            throw KeychainError.unsafe(
                path, "writable by every user (mode \(octal(st.st_mode))): `chmod o-w \(path)` fixes it")
        }
        if st.st_mode & S_IWGRP != 0, shared == nil, !KeychainDirectory.isPrivateGroup(st.st_gid, of: st.st_uid) {
            throw KeychainError.unsafe(
                path,
                "writable by its group (gid \(st.st_gid), mode \(octal(st.st_mode))) but not shared "
                    + "with it on purpose: `chmod g-w \(path)` fixes it (or share it: `kcar init --shared-group NAME`)")
        }
        // Without the restricted-deletion bit every member could rename another member's files away and put
        // its own in their place (SPEC.md §K1.2): a keychain shared before kcar required it is refused until
        // its owner sets it.
        if st.st_mode & S_IWGRP != 0, shared != nil, st.st_mode & S_ISVTX == 0 {
            throw KeychainError.unsafe(
                path,
                "shared with its group (mode \(octal(st.st_mode))) without the restricted-deletion "
                    + "(sticky) bit, so each member could rename or remove the others' files: its owner (uid \(st.st_uid)) runs "
                    + "`chmod +t \(real)` (or `kcar init --shared-group` again)")
        }
        // The folders above: owned by root, this user or the keychain's owner; writable by others only when
        // sticky (others can then not rename what they do not own).
        var parent = real
        while parent != "/" {
            parent = parent.lastIndex(of: "/").map { $0 == parent.startIndex ? "/" : String(parent[..<$0]) } ?? "/"
            var p = stat()
            guard lstat(parent, &p) == 0 else {
                throw KeychainError(.io, "cannot stat \(parent): \(String(cString: strerror(errno)))")
            }
            if p.st_uid != 0, p.st_uid != me, p.st_uid != st.st_uid {
                throw KeychainError.unsafe(parent, "a folder above the keychain is owned by uid \(p.st_uid)")
            }
            let othersWrite =
                p.st_mode & S_IWOTH != 0
                || (p.st_mode & S_IWGRP != 0 && !KeychainDirectory.isPrivateGroup(p.st_gid, of: p.st_uid))
            if othersWrite, p.st_mode & S_ISVTX == 0 {
                let who = p.st_mode & S_IWOTH != 0 ? "every user" : "its group (gid \(p.st_gid))"
                throw KeychainError.unsafe(
                    parent,
                    "a folder above the keychain is writable by others, \(who), mode \(octal(p.st_mode)): "
                        + "another user could put a keychain of their own in its place; `chmod go-w \(parent)` fixes it (or keep the "
                        + "keychain elsewhere: --keychain DIR, KCAR_KEYCHAIN)")
            }
        }
        return KeychainTrust(owner: st.st_uid, sharedGroup: shared, realPath: real)
    }

    /// ``trust()`` of a directory that must exist.
    func requireTrust() throws -> KeychainTrust {
        guard let t = try trust() else { throw KeychainError(.itemNotFound, "no keychain at \(path)") }
        return t
    }

    /// The group named by `.kcar-shared`, if the owner wrote one: a regular file owned by the directory's
    /// owner, writable by no one else, naming the directory's own group.
    private func sharedGroup(_ dfd: Int32, directory st: stat) throws -> gid_t? {
        let marker = "\(path)/\(KeychainDirectory.sharedMarker)"
        guard let text = try readMarker(dfd, KeychainDirectory.sharedMarker, directory: st, what: "one Unix group name")
        else {
            return nil
        }
        guard let gid = UnixDatabase.group(named: text)?.gid else {
            throw KeychainError.unsafe(marker, "names \(text), which is not a Unix group here")
        }
        guard gid == st.st_gid else {
            throw KeychainError.unsafe(
                marker, "names group \(text) (gid \(gid)), but the keychain's group is gid \(st.st_gid)")
        }
        return gid
    }

    /// The one line of a marker file the directory's owner wrote (`.kcar-shared`, `.kcar-default-group`):
    /// nil if there is none; unsafe unless it is a regular file owned by the directory's owner, writable by
    /// no one else, of at most ``markerMax`` bytes holding one non-empty UTF-8 line without NUL.
    func readMarker(_ dfd: Int32, _ name: String, directory st: stat, what: String) throws -> String? {
        let marker = "\(path)/\(name)"
        let fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw KeychainError.unsafe(marker, "a symbolic link") }
            throw KeychainError(.io, "cannot read \(marker): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var m = stat()
        guard fstat(fd, &m) == 0 else { throw KeychainError(.io, "cannot stat \(marker)") }
        guard m.st_mode & S_IFMT == S_IFREG else { throw KeychainError.unsafe(marker, "not a regular file") }
        guard m.st_uid == st.st_uid else {
            throw KeychainError.unsafe(
                marker, "owned by uid \(m.st_uid), not by the keychain's owner (uid \(st.st_uid))")
        }
        guard m.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw KeychainError.unsafe(marker, "writable by others (mode \(octal(m.st_mode)))")
        }
        guard let bytes = readAll(fd, max: KeychainDirectory.markerMax) else {
            throw KeychainError.unsafe(marker, "longer than \(KeychainDirectory.markerMax) bytes")
        }
        var line = bytes
        if line.last == 0x0A { line.removeLast() }
        guard !line.isEmpty, !line.contains(0), !line.contains(0x0A), let text = String(validating: line, as: UTF8.self)
        else {
            throw KeychainError.unsafe(marker, "does not hold \(what)")
        }
        return text
    }

    /// Whether `gid` is the *user private group* of `uid` (SPEC.md §K1.1): its primary group, with no other
    /// member listed, as `useradd` makes with USERGROUPS_ENAB (umask 002 then leaves folders mode 0775 that
    /// only their owner can write). Root's groups are never counted as private.
    static func isPrivateGroup(_ gid: gid_t, of uid: uid_t) -> Bool {
        guard uid != 0, let user = UnixDatabase.user(uid), user.gid == gid, let group = UnixDatabase.group(gid: gid)
        else { return false }
        return group.members.allSatisfy { $0 == user.name }
    }

    /// Whether this process is in Unix group `gid`.
    static func isMember(of gid: gid_t) -> Bool {
        if getegid() == gid { return true }
        let n = getgroups(0, nil)
        guard n > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(n))
        let got = getgroups(n, &groups)
        return got > 0 && groups.prefix(Int(got)).contains(gid)
    }

    /// Opens a group file for reading without following a symbolic link or blocking on a FIFO, and checks
    /// what it is through the opened descriptor (SPEC.md §K1). Nil if it does not exist; a file this process
    /// may not read is a missing entitlement.
    func openTrusted(_ file: String, _ kind: KeychainFile, _ trust: KeychainTrust, privateTo owner: uid_t? = nil) throws
        -> Int32?
    {
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT { return nil }
            if e == ELOOP { throw KeychainError.unsafe(file, "a symbolic link") }
            if e == EACCES {
                throw KeychainError(.missingEntitlement, "cannot read \(file): \(String(cString: strerror(e)))")
            }
            throw KeychainError(.io, "cannot open \(file): \(String(cString: strerror(e)))")
        }
        do {
            try check(fd, file, kind, trust, privateTo: owner)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// The rules of SPEC.md §K1 for one opened file; `owner`, for a vault or record of a private group
    /// (§K1.2), the user whose key it is.
    private func check(
        _ fd: Int32, _ file: String, _ kind: KeychainFile, _ trust: KeychainTrust, privateTo owner: uid_t?
    ) throws {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw KeychainError(.io, "cannot stat \(file)") }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw KeychainError.unsafe(file, "not a regular file (\(typeName(st.st_mode)))")
        }
        if let owner {
            // Its key's owner alone may have written it: another member's file under the name, or one the
            // others could write, would let them replace or roll back what the owner keeps to itself.
            guard st.st_uid == owner else {
                throw KeychainError.unsafe(
                    file,
                    "owned by uid \(st.st_uid), but its group is private to uid \(owner) (its key is "
                        + "readable by no one else)")
            }
            guard st.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
                // Both files at once: a group made private by its key alone has both still shared.
                let stem =
                    file.hasSuffix(".kcv")
                    ? String(file.dropLast(4)) : file.hasSuffix(".seen") ? String(file.dropLast(5)) : file
                throw KeychainError.unsafe(
                    file,
                    "writable by others (mode \(octal(st.st_mode))), but its group is private to uid "
                        + "\(owner) (its key is readable by no one else): `chmod 600 \(stem).kcv \(stem).seen`")
            }
            return
        }
        let sharedHere = trust.sharedGroup.map { $0 == st.st_gid } ?? false
        if st.st_uid != geteuid(), st.st_uid != 0, st.st_uid != trust.owner, !sharedHere {
            throw KeychainError.unsafe(
                file, "owned by uid \(st.st_uid), not by this user (uid \(geteuid())) or the keychain's owner")
        }
        if st.st_mode & S_IWOTH != 0 {
            throw KeychainError.unsafe(file, "writable by every user (mode \(octal(st.st_mode)))")
        }
        if st.st_mode & S_IWGRP != 0, !sharedHere {
            throw KeychainError.unsafe(
                file,
                "writable by its group (gid \(st.st_gid), mode \(octal(st.st_mode))), which the keychain is not shared with"
            )
        }
        if kind == .key {
            if st.st_mode & S_IROTH != 0 {
                throw KeychainError.unsafe(file, "a key readable by every user (mode \(octal(st.st_mode)))")
            }
            if st.st_mode & S_IRGRP != 0, !sharedHere {
                throw KeychainError.unsafe(
                    file,
                    "a key readable by its group (gid \(st.st_gid), mode \(octal(st.st_mode))), which the keychain is not shared with"
                )
            }
            // A member's private group is that member's, also for a process (root's) that can read the key.
            if trust.sharedGroup != nil, st.st_mode & S_IRGRP == 0, st.st_uid != geteuid() {
                throw KeychainError(
                    .missingEntitlement,
                    "the group of \(file) is private to uid \(st.st_uid) (its key is readable by no one else)")
            }
        }
    }

    /// The owner of a group kept private in a shared keychain (SPEC.md §K1.2): the owner of its key when
    /// the key is readable by no one else. Nil for a group of a keychain that is not shared, a shared group,
    /// or one without a key. Read by name: in the sticky shared folder only the key's owner (or the folder's
    /// owner, or root) can replace it, and the key itself is checked when it is opened.
    func privateOwner(_ group: String, _ trust: KeychainTrust) -> uid_t? {
        guard trust.sharedGroup != nil else { return nil }
        var st = stat()
        guard lstat(keyPath(group), &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_mode & (S_IRGRP | S_IROTH) == 0
        else { return nil }
        return st.st_uid
    }

    /// The first `prefix` bytes (or fewer) of a trusted group file; nil if it does not exist.
    func readTrusted(
        _ file: String, _ kind: KeychainFile, _ trust: KeychainTrust, privateTo owner: uid_t? = nil,
        prefix: Int
    ) throws -> [UInt8]? {
        guard let fd = try openTrusted(file, kind, trust, privateTo: owner) else { return nil }
        defer { close(fd) }
        // A record another member rewrites in place (SPEC.md §K6) is read whole: under a shared lock, if it
        // comes within a moment (a lock held longer is not waited for: the read then proceeds without it).
        if kind == .seen { _ = KeychainDirectory.briefLock(fd, LOCK_SH) }
        return readPrefix(fd, prefix)
    }

    /// Takes `flock(operation)` on `fd` if it can within about `milliseconds` (100).
    static func briefLock(_ fd: Int32, _ operation: Int32, milliseconds: Int = 100) -> Bool {
        for _ in 0..<max(1, milliseconds) {
            if flock(fd, operation | LOCK_NB) == 0 { return true }
            guard errno == EWOULDBLOCK || errno == EINTR else { return false }
            usleep(1000)
        }
        return false
    }

    /// Checks the group's vault file before it is opened by path (the directory's trust makes the name stable).
    func checkVaultFile(_ group: String, _ trust: KeychainTrust) throws {
        guard let fd = try openTrusted(vaultPath(group), .vault, trust, privateTo: privateOwner(group, trust)) else {
            throw KeychainError(.itemNotFound, "access group \(group) has no vault in \(path)")
        }
        close(fd)
    }

    /// Checks the group's vault file (SPEC.md §K1), for a command that opens it with another secret.
    package func checkVault(_ group: String) throws { try checkVaultFile(group, try requireTrust()) }

    /// The mode a new group file gets: the owner's alone, or shared with the keychain's group unless the
    /// group is kept private (SPEC.md §K1.2).
    static func mode(_ kind: KeychainFile, _ trust: KeychainTrust, isPrivate: Bool = false) -> mode_t {
        guard trust.sharedGroup != nil, !isPrivate else { return 0o600 }
        return kind == .key ? 0o640 : 0o660
    }

    /// Gives a new file the mode of `kind` and, in a shared keychain, the shared group (whatever the
    /// folder's setgid bit did).
    static func setMode(_ fd: Int32, _ kind: KeychainFile, _ trust: KeychainTrust, isPrivate: Bool = false) -> Bool {
        if let gid = trust.sharedGroup, fchown(fd, uid_t.max, gid) != 0 { return false }
        return fchmod(fd, mode(kind, trust, isPrivate: isPrivate)) == 0
    }

    /// In a shared keychain, gives the group's vault when kcar wrote it (new, or rewritten) the group's mode,
    /// so the other members can still use it, or keeps it 0600 if the group is private. Best effort: a file
    /// another member owns keeps its mode.
    func shareVault(_ group: String, _ trust: KeychainTrust) {
        guard let gid = trust.sharedGroup else { return }
        let isPrivate = privateOwner(group, trust) != nil
        let fd = open(vaultPath(group), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_uid == geteuid(),
            st.st_gid != gid
                || st.st_mode & 0o777 != KeychainDirectory.mode(.vault, trust, isPrivate: isPrivate)
        else { return }
        _ = KeychainDirectory.setMode(fd, .vault, trust, isPrivate: isPrivate)
    }

    /// Whether this process can replace the group's vault by a rewrite (a compaction, a rekey): in a shared
    /// keychain, whose folder is sticky, only the file's owner, the folder's owner and root can rename over
    /// it (SPEC.md §K1.2).
    func mayReplaceVault(_ group: String, _ trust: KeychainTrust) -> Bool {
        let me = geteuid()
        guard trust.sharedGroup != nil, me != 0, me != trust.owner else { return true }
        var st = stat()
        return lstat(vaultPath(group), &st) != 0 || st.st_uid == me
    }
}

/// Reads what is left of `fd`, at most `max` bytes; nil if there is more.
func readAll(_ fd: Int32, max: Int) -> [UInt8]? {
    let out = readPrefix(fd, max + 1)
    return out.count <= max ? out : nil
}

/// Reads at most `count` bytes from `fd` (fewer at its end).
func readPrefix(_ fd: Int32, _ count: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    var got = 0
    while got < count {
        let n = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, count - got) }
        if n < 0, errno == EINTR { continue }
        if n <= 0 { break }
        got += n
    }
    return Array(out[0..<got])
}

private func octal(_ mode: mode_t) -> String { "0" + String(mode & 0o7777, radix: 8) }

private func typeName(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFIFO: return "a FIFO"
    case S_IFDIR: return "a directory"
    case S_IFCHR, S_IFBLK: return "a device"
    case S_IFSOCK: return "a socket"
    default: return "type \(String(mode & S_IFMT, radix: 8))"
    }
}

/// Users and groups, through the reentrant lookups (`getpwuid_r`, `getgrgid_r`, `getgrnam_r`): stores on
/// several threads may check files at once.
enum UnixDatabase {
    /// The largest buffer a lookup may take (entries of groups with very many members need more than 16 KiB).
    static let bufferMax = 1 << 20

    static func user(_ uid: uid_t) -> (name: String, gid: gid_t)? {
        lookup { buf, n in
            var pw = passwd()
            var out: UnsafeMutablePointer<passwd>?
            let rc = getpwuid_r(uid, &pw, buf, n, &out)
            return (rc, out == nil ? nil : (String(cString: pw.pw_name), pw.pw_gid))
        }
    }

    static func group(gid: gid_t) -> (gid: gid_t, members: [String])? {
        lookup { buf, n in
            var gr = Glibc.group()
            var out: UnsafeMutablePointer<Glibc.group>?
            let rc = getgrgid_r(gid, &gr, buf, n, &out)
            return (rc, out == nil ? nil : (gr.gr_gid, members(gr)))
        }
    }

    static func group(named name: String) -> (gid: gid_t, members: [String])? {
        lookup { buf, n in
            var gr = Glibc.group()
            var out: UnsafeMutablePointer<Glibc.group>?
            let rc = getgrnam_r(name, &gr, buf, n, &out)
            return (rc, out == nil ? nil : (gr.gr_gid, members(gr)))
        }
    }

    private static func members(_ gr: Glibc.group) -> [String] {
        var out: [String] = []
        var p = gr.gr_mem
        while let m = p?.pointee {
            out.append(String(cString: m))
            p = p?.advanced(by: 1)
        }
        return out
    }

    /// Runs a lookup with a growing buffer until it fits (ERANGE) or `bufferMax` is reached.
    private static func lookup<T>(_ body: (UnsafeMutablePointer<CChar>, Int) -> (Int32, T?)) -> T? {
        var size = 16 << 10
        while size <= bufferMax {
            var buf = [CChar](repeating: 0, count: size)
            let (rc, value) = buf.withUnsafeMutableBufferPointer { body($0.baseAddress!, size) }
            if rc == ERANGE {
                size *= 2
                continue
            }
            return rc == 0 ? value : nil
        }
        return nil
    }
}
