#if canImport(Glibc)
import Glibc
#endif
import VaultFormat

/// A keychain directory: one vault, one key file and one generation record per access group (SPEC.md §K1).
public struct KeychainDirectory: Sendable, Hashable {
    /// The directory's path.
    public let path: String

    public init(path: String) { self.path = path }

    /// `KCAR_KEYCHAIN`, else `$XDG_DATA_HOME/kcar`, else `$HOME/.local/share/kcar`.
    public static func defaultPath(environment: [String: String] = currentEnvironment()) -> String {
        if let k = environment["KCAR_KEYCHAIN"], !k.isEmpty { return k }
        if let x = environment["XDG_DATA_HOME"], !x.isEmpty { return x + "/kcar" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "."
        return home + "/.local/share/kcar"
    }

    /// The process environment, read with getenv (FoundationEssentials has no ProcessInfo).
    public static func currentEnvironment() -> [String: String] {
        var out: [String: String] = [:]
        for name in ["KCAR_KEYCHAIN", "XDG_DATA_HOME", "HOME", "KCAR_ACCESS_GROUPS"] {
            if let v = getenv(name) { out[name] = String(cString: v) }
        }
        return out
    }

    /// Creates the directory (mode 0700) and any missing parents (0700). Returns whether it was created.
    @discardableResult
    public func create() throws -> Bool {
        var st = stat()
        if stat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else { throw KeychainError(.io, "\(path) exists and is not a directory") }
            return false
        }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += part
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw KeychainError(.io, "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
            prefix += "/"
        }
        chmod(path, 0o700)
        return true
    }

    // MARK: File names

    /// The file stem of a group (SPEC.md §K1).
    public static func stem(_ group: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for (i, b) in group.utf8.enumerated() {
            let plain = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
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
                guard i + 2 < u.count, let b = Hex.decode(String(decoding: u[i + 1...i + 2], as: UTF8.self)) else { return nil }
                out += b
                i += 3
            } else {
                out.append(u[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    public func vaultPath(_ group: String) -> String { "\(path)/\(KeychainDirectory.stem(group)).kcv" }
    public func keyPath(_ group: String) -> String { "\(path)/\(KeychainDirectory.stem(group)).key" }
    func seenPath(_ group: String) -> String { "\(path)/\(KeychainDirectory.stem(group)).seen" }

    /// Every group that has a vault in the directory, in bytewise order of name.
    public func groups() throws -> [String] {
        guard let d = opendir(path) else {
            if errno == ENOENT { return [] }
            throw KeychainError(.io, "cannot read keychain \(path): \(String(cString: strerror(errno)))")
        }
        defer { closedir(d) }
        var out: [String] = []
        while let ent = readdir(d) {
            let name: String = withUnsafeBytes(of: ent.pointee.d_name) { b in
                String(decoding: b.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.hasPrefix("."), name.hasSuffix(".kcv") else { continue }
            let stem = String(name.dropLast(4))
            if let g = KeychainDirectory.group(fromStem: stem) {
                if KeychainDirectory.stem(g) == stem { out.append(g) }
            } else if let g = try? Vault.inspect(path: "\(path)/\(name)").header.group, KeychainDirectory.stem(g) == stem {
                out.append(g)
            }
        }
        return out.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Whether the group's vault file exists.
    public func exists(_ group: String) -> Bool { access(vaultPath(group), F_OK) == 0 }

    /// Whether this process can read the group's key file (its entitlement, SPEC.md §K2).
    public func canRead(_ group: String) -> Bool {
        let fd = open(keyPath(group), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 { return false }
        close(fd)
        return true
    }

    // MARK: Keys

    /// Reads the group's 32-byte key. A missing or unreadable key file is a missing entitlement.
    public func readKey(_ group: String) throws -> SecureBytes {
        let file = keyPath(group)
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT { throw KeychainError(.missingEntitlement, "group \(group) has no key file \(file)") }
            throw KeychainError(.missingEntitlement, "cannot read the key file of group \(group): \(String(cString: strerror(e)))")
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
            throw KeychainError(.decode, "the key file of group \(group) is not exactly 32 bytes")
        }
        return key
    }

    /// Creates the group if it does not exist (key file, then vault), safely against a concurrent creator,
    /// and returns its key (SPEC.md §K1).
    public func createGroup(_ group: String, random: RandomSource = SystemRandom.shared) throws -> SecureBytes {
        do {
            try Header.checkGroupName(group)
        } catch {
            throw KeychainError(.param, "access group names are 1 to 255 bytes of UTF-8 without NUL")
        }
        try create()
        let key: SecureBytes
        if access(keyPath(group), F_OK) == 0 {
            key = try readKey(group)
        } else {
            let fresh = random.secureBytes(32)
            if try writeNew(keyPath(group), fresh) { key = fresh } else { key = try readKey(group) }
        }
        if !exists(group) {
            do {
                try Vault.create(path: vaultPath(group), group: group, slots: [.keyFile(key)], random: random) { _ in }
            } catch let e as VaultError where e.code == .exists {
                // A concurrent creator won; its vault opens with the same key.
            } catch {
                throw KeychainError.from(error)
            }
        }
        return key
    }

    /// Writes `bytes` to a new file at `target` (0600): temporary file, fsync, link. False if `target` exists.
    func writeNew(_ target: String, _ bytes: SecureBytes) throws -> Bool {
        let base = target.split(separator: "/").last.map(String.init) ?? "key"
        let temp = "\(path)/.\(base).\(Hex.encode(SystemRandom.shared.bytes(6))).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw KeychainError(.io, "cannot create \(temp): \(String(cString: strerror(errno)))") }
        defer { unlink(temp) }
        let ok = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) == $0.count } && fsync(fd) == 0
        close(fd)
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
