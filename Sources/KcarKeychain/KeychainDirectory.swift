import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// A keychain directory: one vault, one key file and one generation record per access group (SPEC.md §K1).
public struct KeychainDirectory: Sendable, Hashable {
    /// The directory's path.
    public let path: String
    /// This user's own folder, outside the keychain, where it keeps a copy of each generation record it
    /// writes (SPEC.md §K6); nil keeps none.
    public let statePath: String?

    /// The keychain folder at `path`, with its rollback state (SPEC.md §K6) at `statePath` (nil: none kept).
    public init(path: String, statePath: String? = KeychainDirectory.defaultStatePath()) {
        self.path = path
        self.statePath = statePath
    }

    /// `KCAR_KEYCHAIN`, else `$XDG_DATA_HOME/kcar`, else `$HOME/.local/share/kcar`. With none of them set
    /// (or all empty) there is no keychain: ``KeychainStatus/notAvailable``, rather than key files made
    /// under whatever the current directory is.
    public static func defaultPath(environment: [String: String] = currentEnvironment()) throws -> String {
        if let k = environment["KCAR_KEYCHAIN"], !k.isEmpty { return k }
        if let x = environment["XDG_DATA_HOME"], !x.isEmpty { return x + "/kcar" }
        if let h = environment["HOME"], !h.isEmpty { return h + "/.local/share/kcar" }
        throw KeychainError(
            .notAvailable,
            "no keychain folder: HOME, XDG_DATA_HOME and KCAR_KEYCHAIN are unset or empty "
                + "(set one, or pass --keychain DIR)")
    }

    /// `$XDG_STATE_HOME/kcar`, else `$HOME/.local/state/kcar`; nil if neither is set.
    public static func defaultStatePath(environment: [String: String] = currentEnvironment()) -> String? {
        if let x = environment["XDG_STATE_HOME"], !x.isEmpty { return x + "/kcar" }
        if let h = environment["HOME"], !h.isEmpty { return h + "/.local/state/kcar" }
        return nil
    }

    /// The process environment, read with getenv (FoundationEssentials has no ProcessInfo).
    public static func currentEnvironment() -> [String: String] {
        var out: [String: String] = [:]
        for name in ["KCAR_KEYCHAIN", "XDG_DATA_HOME", "XDG_STATE_HOME", "HOME", "KCAR_ACCESS_GROUPS"] {
            if let v = getenv(name) { out[name] = String(cString: v) }
        }
        return out
    }

    /// Creates the directory (mode 0700) and any missing parents (0700). Returns whether it was created.
    /// With `sharedGroup`, the directory (new, or one this user owns) is shared on purpose with that Unix
    /// group (SPEC.md §K1.2): group set, mode 3770 (setgid and sticky), and `.kcar-shared` naming the group (0644).
    @discardableResult
    public func create(sharedGroup: String? = nil) throws -> Bool {
        try createTrusted(sharedGroup: sharedGroup).created
    }

    /// ``create(sharedGroup:)`` that also returns the trust it checked (one walk up the path, not two).
    func createTrusted(sharedGroup: String? = nil) throws -> (created: Bool, trust: KeychainTrust) {
        var created = false
        var st = stat()
        if stat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else {
                throw KeychainError(.io, "\(path) exists and is not a directory")
            }
        } else {
            var prefix = path.startsWithSlash ? "/" : ""
            for part in path.slashSeparated(omittingEmpty: true) {
                prefix += part
                if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                    throw KeychainError(.io, "cannot create \(prefix): \(String(cString: strerror(errno)))")
                }
                prefix += "/"
            }
            chmod(path, 0o700)
            created = true
        }
        if let sharedGroup { try share(with: sharedGroup) }
        return (created, try requireTrust())
    }

    private func share(with name: String) throws {
        guard let gid = UnixDatabase.group(named: name)?.gid else {
            throw KeychainError(.param, "\(name) is not a Unix group here")
        }
        let dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dfd >= 0 else { throw KeychainError(.io, "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(dfd) }
        var st = stat()
        guard fstat(dfd, &st) == 0, st.st_uid == geteuid() else {
            throw KeychainError(.param, "only the owner of \(path) can share it")
        }
        // Setgid, so new files get group T; restricted deletion (sticky), so a member can rename or remove
        // only its own files, not move another member's group aside and plant one in its place (SPEC.md §K1.2).
        guard fchown(dfd, uid_t.max, gid) == 0, fchmod(dfd, 0o3770) == 0 else {
            throw KeychainError(.io, "cannot give \(path) to group \(name): \(String(cString: strerror(errno)))")
        }
        try writeMarker(KeychainDirectory.sharedMarker, name)
    }

    /// Writes a marker file (SPEC.md §K1.2, §K2.1): `text` and a newline, mode 0644, atomically (temporary
    /// file, fsync, rename).
    private func writeMarker(_ name: String, _ text: String) throws {
        let marker = "\(path)/\(name)"
        let temp = "\(path)/.\(name).\(Hex.encode(SystemRandom.shared.bytes(6))).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw KeychainError(.io, "cannot create \(marker): \(String(cString: strerror(errno)))") }
        let bytes = Array((text + "\n").utf8)
        let ok = write(fd, bytes, bytes.count) == bytes.count && fchmod(fd, 0o644) == 0 && fsync(fd) == 0
        close(fd)
        guard ok, rename(temp, marker) == 0 else {
            unlink(temp)
            throw KeychainError(.io, "cannot write \(marker)")
        }
    }

    // MARK: The default group

    /// Records `group` as the directory's default group (SPEC.md §K2.1): the group an add goes to when the
    /// process names none and sets no list. Only the directory's owner may (the file is owner-checked).
    public func setDefaultGroup(_ group: String) throws {
        try KeychainStore.checkGroupName(group)
        // The file holds one line: a name with a line feed would be read back as no group name at all, and
        // every add that names no group would fail on it (unsafe file).
        guard !group.utf8.contains(0x0A) else {
            throw KeychainError(.param, "a default group's name is stored as one line: it cannot hold a line feed")
        }
        let trust = try requireTrust()
        guard trust.owner == geteuid() else {
            throw KeychainError(.param, "only the owner of \(path) (uid \(trust.owner)) can set its default group")
        }
        try writeMarker(KeychainDirectory.defaultGroupMarker, group)
    }

    /// Removes the recorded default group (SPEC.md §K2.1, §K10 `SetAlias("default", "/")`): only the
    /// directory's owner may.
    public func clearDefaultGroup() throws {
        guard let trust = try trust() else { return }
        guard trust.owner == geteuid() else {
            throw KeychainError(.wrPerm, "only the owner of \(path) (uid \(trust.owner)) can change its default group")
        }
        guard unlink("\(path)/\(KeychainDirectory.defaultGroupMarker)") == 0 || errno == ENOENT else {
            throw KeychainError(.io, "cannot remove \(path)/\(KeychainDirectory.defaultGroupMarker)")
        }
    }

    /// The default group the directory's owner recorded (`.kcar-default-group`), or nil: none, or no
    /// directory yet. Unsafe unless it passes the marker rules of SPEC.md §K2.1; a name that is not a group
    /// name is refused (*param*).
    public func recordedDefaultGroup() throws -> String? {
        guard let trust = try trust() else { return nil }
        let dfd = open(trust.realPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard dfd >= 0 else {
            throw KeychainError(.io, "cannot open keychain \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(dfd) }
        var st = stat()
        guard fstat(dfd, &st) == 0 else { throw KeychainError(.io, "cannot stat keychain \(path)") }
        guard
            let g = try readMarker(
                dfd, KeychainDirectory.defaultGroupMarker, directory: st, what: "one access group name")
        else {
            return nil
        }
        try KeychainStore.checkGroupName(g)
        return g
    }

    // MARK: File names

    /// The file stem of a group (SPEC.md §K1).
    public static func stem(_ group: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for (i, b) in group.utf8.enumerated() {
            let plain =
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
                || b == 0x5F || (b == 0x2E && i > 0)
            if plain { out.append(b) } else { out += [0x25, hex[Int(b >> 4)], hex[Int(b & 15)]] }
        }
        if out.count > 200 { return "%%" + Hex.encode(Digest.blake2b(Array(group.utf8), outputBytes: 16)) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The group a stem names, when it can be told without reading the vault (not for hashed stems).
    static func group(fromStem stem: String) -> String? {
        if stem.hasPrefix("%%") { return nil }
        var out = [UInt8]()
        let u = Array(stem.utf8)
        var i = 0
        while i < u.count {
            if u[i] == 0x25 {
                guard i + 2 < u.count, let b = Hex.decode(String(decoding: u[i + 1...i + 2], as: UTF8.self)) else {
                    return nil
                }
                out += b
                i += 3
            } else {
                out.append(u[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    /// The path of `group`'s vault: its name escaped as a file name (``stem(_:)``), `.kcv`.
    public func vaultPath(_ group: String) -> String { "\(path)/\(KeychainDirectory.stem(group)).kcv" }
    /// The path of `group`'s 32-byte key file: its escaped name, `.key`.
    public func keyPath(_ group: String) -> String { "\(path)/\(KeychainDirectory.stem(group)).key" }
    func seenPath(_ group: String) -> String { "\(path)/\(KeychainDirectory.stem(group)).seen" }

    /// Every group that has a vault in the directory, in bytewise order of name. Throws
    /// ``KeychainReason/unsafeFile`` if the directory is not trusted (SPEC.md §K1).
    public func groups() throws -> [String] {
        guard let trust = try trust() else { return [] }
        guard let names = fileNames() else {
            if errno == ENOENT { return [] }
            throw KeychainError(.io, "cannot read keychain \(path): \(String(cString: strerror(errno)))")
        }
        var out: [String] = []
        for name in names {
            guard !name.hasPrefix("."), name.hasSuffix(".kcv") else { continue }
            let stem = String(name.dropLast(4))
            if let g = KeychainDirectory.group(fromStem: stem) {
                if KeychainDirectory.stem(g) == stem { out.append(g) }
            } else if let g = hashedGroup("\(path)/\(name)", trust), KeychainDirectory.stem(g) == stem {
                out.append(g)
            }
        }
        return out.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The names in the directory (nil, with errno set, if it cannot be read).
    func fileNames() -> [String]? {
        guard let d = opendir(path) else { return nil }
        defer { closedir(d) }
        var out: [String] = []
        while let ent = readdir(d) {
            out.append(
                withUnsafeBytes(of: ent.pointee.d_name) { b in String(decoding: b.prefix { $0 != 0 }, as: UTF8.self) })
        }
        return out
    }

    /// The group of a vault whose stem is hashed, from its header; nil for a file not to be opened (a FIFO,
    /// a symbolic link, ...: it cannot be named, so it is not listed).
    private func hashedGroup(_ file: String, _ trust: KeychainTrust) -> String? {
        guard let fd = try? openTrusted(file, .vault, trust) else { return nil }
        close(fd)
        return try? Vault.inspect(path: file).header.group
    }

    /// Whether the group's vault file exists (whatever it is: what it is is checked when it is opened).
    public func exists(_ group: String) -> Bool {
        var st = stat()
        return lstat(vaultPath(group), &st) == 0
    }

    /// Whether this process may read the group's key file (its entitlement, SPEC.md §K2). A key file that
    /// exists but is unsafe counts as readable, so that using the group reports why it is refused.
    /// A group another member keeps private (SPEC.md §K1.2) is not this process's, even if it can read the
    /// key (root).
    public func canRead(_ group: String) -> Bool { canRead(group, try? trust()) }

    func canRead(_ group: String, _ trust: KeychainTrust?) -> Bool {
        let fd = open(keyPath(group), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 { return errno == ELOOP }
        close(fd)
        if let trust, let owner = privateOwner(group, trust), owner != geteuid() { return false }
        return true
    }

    // MARK: Keys

    /// Reads the group's 32-byte key. A missing or unreadable key file is a missing entitlement, an unsafe
    /// one (SPEC.md §K1) is refused (``KeychainReason/unsafeFile``), one not of 32 bytes is damaged.
    public func readKey(_ group: String) throws -> SecureBytes {
        try readKey(group, try requireTrust())
    }

    func readKey(_ group: String, _ trust: KeychainTrust) throws -> SecureBytes {
        let file = keyPath(group)
        guard let fd = try openTrusted(file, .key, trust) else {
            throw KeychainError(.missingEntitlement, "group \(group) has no key file \(file)")
        }
        defer { close(fd) }
        var got = 0
        var extra: UInt8 = 0
        let key = SecureBytes(count: 32) { buf in
            while got < 32 {
                let n = read(fd, buf.baseAddress! + got, 32 - got)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { break }
                got += n
            }
        }
        let more = read(fd, &extra, 1)
        guard got == 32, more == 0 else {
            throw KeychainError(.decode, "the key file \(file) of group \(group) is not exactly 32 bytes")
        }
        return key
    }

    /// Creates the group if it does not exist (key file, then vault), safely against a concurrent creator
    /// and a concurrent deletion, and returns its key (SPEC.md §K1).
    public func createGroup(_ group: String, random: RandomSource = SystemRandom.shared) throws -> SecureBytes {
        let trust = try prepareGroup(group)
        for _ in 0..<16 {
            var st = stat()
            if lstat(keyPath(group), &st) != 0 {
                let fresh = random.secureBytes(32)
                // A record left by an earlier group of this name cannot verify under the new key (§K6).
                if try writeNew(keyPath(group), fresh, .key, trust) { unlink(seenPath(group)) }
            }
            // The key file is held (shared) from its reading until the vault exists: a deletion takes it
            // exclusive (§K10), so it cannot remove the key a new vault is being made under. Gone meanwhile (a
            // deletion won): start again, with a new key.
            guard let held = holdKey(group) else {
                // A key file that is there but cannot be held (a link, a FIFO) is refused as any reader refuses it.
                if lstat(keyPath(group), &st) == 0 { _ = try readKey(group, trust) }
                continue
            }
            defer { close(held) }
            let key = try readKey(group, trust)
            if !exists(group) {
                // A record beside a missing vault cannot name the vault about to be made (a group deleted part
                // way, SPEC.md §K1, §K10): it would refuse it as another vault.
                unlink(seenPath(group))
                do {
                    // The current format (SPEC.md Part 4): a lookup reads a path of pages, whatever the number
                    // of items.
                    try Vault.create(
                        path: vaultPath(group), group: group, slots: [.keyFile(key)],
                        format: .current(schema: Schema.group), random: random
                    ) { _ in }
                    shareVault(group, trust)
                } catch let e as VaultError where e.code == .exists {
                    // A concurrent creator won; its vault opens with the same key.
                } catch {
                    throw KeychainError.from(error)
                }
            }
            return key
        }
        throw KeychainError(
            .io, "cannot create access group \(group): its key file was deleted as often as it was made")
    }

    /// The group's key file opened and locked (`operation`: shared to create, exclusive to delete), while it is
    /// still the file at its path; nil if there is none, or it was replaced or removed before the lock.
    func holdKey(_ group: String, _ operation: Int32 = LOCK_SH, milliseconds: Int = 100) -> Int32? {
        let fd = open(keyPath(group), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var held = stat()
        var named = stat()
        guard KeychainDirectory.briefLock(fd, operation, milliseconds: milliseconds), fstat(fd, &held) == 0,
            lstat(keyPath(group), &named) == 0, held.st_ino == named.st_ino, held.st_dev == named.st_dev
        else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Before a group's files are created: its name is checked, the keychain created if missing and trusted.
    func prepareGroup(_ group: String) throws -> KeychainTrust {
        do {
            try Header.checkGroupName(group)
        } catch {
            throw KeychainError(.param, "access group names are 1 to 255 bytes of UTF-8 without NUL")
        }
        try create()
        return try requireTrust()
    }

    /// Writes `bytes` to a new file at `target` (the mode of `kind`): temporary file, fsync, link. False if
    /// `target` exists.
    func writeNew(_ target: String, _ bytes: SecureBytes, _ kind: KeychainFile, _ trust: KeychainTrust) throws -> Bool {
        try writeNew(target, kind, trust) { fd in
            bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) == $0.count }
        }
    }

    /// Writes a new file at `target` whose content `fill` writes to the descriptor it is given (false: it could
    /// not); as ``writeNew(_:_:_:_:)``.
    func writeNew(_ target: String, _ kind: KeychainFile, _ trust: KeychainTrust, fill: (Int32) throws -> Bool) throws
        -> Bool
    {
        let base = target.split(separator: "/").last.map(String.init) ?? "key"
        removeStaleTemporaries(prefix: ".\(base).")
        // Locked while it exists (until after the link), so another writer's clean-up leaves it alone (SPEC.md §K1).
        guard let (fd, temp) = lockedTemporary(prefix: ".\(base).", mode: 0o600) else {
            throw KeychainError(
                .io, "cannot create a temporary file for \(target): \(String(cString: strerror(errno)))")
        }
        defer {
            unlink(temp)
            close(fd)
        }
        let ok = try fill(fd) && KeychainDirectory.setMode(fd, kind, trust) && fsync(fd) == 0
        guard ok else { throw KeychainError(.io, "cannot write \(target)") }
        if link(temp, target) != 0 {
            if errno == EEXIST { return false }
            throw KeychainError(.io, "cannot create \(target): \(String(cString: strerror(errno)))")
        }
        let dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
        return true
    }
}
