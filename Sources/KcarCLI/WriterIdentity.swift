#if canImport(Glibc)
import Glibc
#endif
import KcarKeychain
import VaultFormat

/// The writer id a version 2 commit records in its versions (SPEC.md Part 4, V5): 8 random bytes made once
/// per user and kept as 16 hex digits in `$XDG_STATE_HOME/kcar/writer-id` (default `~/.local/state`), mode
/// 0600; a user without a usable state folder gets one per process.
enum WriterIdentity {
    static func current() -> UInt64 {
        guard let dir = stateDirectory() else { return fresh() }
        let path = dir + "/writer-id"
        if let text = try? readSmallText(path), let id = parse(text.trimmingWhitespace) { return id }
        let id = fresh()
        guard mkdirs(dir) else { return id }
        let hex = Hex.encode((0..<8).map { UInt8(truncatingIfNeeded: id >> (56 - 8 * UInt64($0))) })
        // O_EXCL: two first runs at once keep the one written first (the other reads it next time).
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return (try? readSmallText(path)).flatMap { parse($0.trimmingWhitespace) } ?? id }
        defer { close(fd) }
        _ = (hex + "\n").withCString { write(fd, $0, strlen($0)) }
        return id
    }

    static func parse(_ text: String) -> UInt64? {
        guard text.utf8.count == 16, let b = Hex.decode(text), b.count == 8 else { return nil }
        return b.reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func fresh() -> UInt64 { SystemRandom.shared.bytes(8).reduce(0) { $0 << 8 | UInt64($1) } }

    /// The keychain's state folder (where it keeps its rollback records), if it is an absolute path.
    static func stateDirectory() -> String? {
        KeychainDirectory.defaultStatePath().flatMap { $0.hasPrefix("/") ? $0 : nil }
    }

    /// Makes `dir` and its missing parents (0700); whether it is a folder now.
    static func mkdirs(_ dir: String) -> Bool {
        var path = ""
        for part in dir.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0, errno != EEXIST { return false }
        }
        var st = stat()
        return stat(dir, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }
}
