#if canImport(Glibc)
import Glibc
#endif
import VaultFormat

/// Where secrets come from: never argv. A passphrase from `--passphrase-file`, `--passphrase-fd`,
/// `KCAR_PASSPHRASE` (taken out of the environment at start-up, so no child sees it) or a no-echo prompt on
/// the terminal; keys from `--key-file`.
enum Secrets {
    nonisolated(unsafe) private static var environmentPassphrase: SecureBytes?

    /// Called first thing in main: takes `KCAR_PASSPHRASE` out of the environment and turns core dumps off.
    static func prepareProcess() {
        if let p = getenv("KCAR_PASSPHRASE") {
            let n = strlen(p)
            environmentPassphrase = SecureBytes(copying: UnsafeRawBufferPointer(start: p, count: n))
            memset(p, 0, n)
            unsetenv("KCAR_PASSPHRASE")
        }
        // An interrupted pack or extract removes its temporary files (issue 9, item 11).
        TemporaryFiles.installHandlers()
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        setrlimit(Int32(RLIMIT_CORE.rawValue), &limit)
        // Chunk buffers (up to 1 MiB) come and go by the thousand: keep them in the heap instead of mapping
        // and unmapping fresh pages each time (page faults were a third of extract's time).
        _ = glibcMallopt(-3 /* M_MMAP_THRESHOLD */, 64 << 20)
        _ = glibcMallopt(-1 /* M_TRIM_THRESHOLD */, 128 << 20)
    }

    /// The secret that opens a vault: the one given, or else a passphrase asked on the terminal.
    static func unlock(_ args: Arguments) throws -> UnlockSecret {
        if let given = try givenSecret(args) { return given }
        return .passphrase(try prompt("Passphrase: ", confirm: false))
    }

    /// The secret given by option, variable or the group's key file; nil when none is (nothing is asked).
    static func givenSecret(_ args: Arguments) throws -> UnlockSecret? {
        if let group = args.value("group"), args.value("key-file") == nil, args.value("passphrase-file") == nil,
           args.value("passphrase-fd") == nil {
            return .keyFile(try ItemCommands.groupKey(args, group))
        }
        if let path = args.value("key-file") { return .keyFile(try readKeyFile(path)) }
        if let p = try givenPassphrase(args) { return .passphrase(p) }
        return nil
    }

    /// Slots for a new vault (pack): key file, recipients, and a passphrase when one is given or when
    /// nothing else is (then asked for twice on the terminal).
    static func newSlots(_ args: Arguments) throws -> [SlotSecret] {
        var slots: [SlotSecret] = []
        if let path = args.value("key-file") { slots.append(.keyFile(try readKeyFile(path))) }
        for r in args.all("recipient") { slots.append(.recipient(try parseRecipient(r))) }
        if let p = try givenPassphrase(args) {
            slots.append(.passphrase(p, try kdf(args)))
        } else if slots.isEmpty {
            slots.append(.passphrase(try prompt("New passphrase: ", confirm: true), try kdf(args)))
        }
        return slots
    }

    static func kdf(_ args: Arguments) throws -> KDFParameters {
        let mem = try args.int("kdf-memory", in: Int(Limits.kdfMemMinKiB / 1024)...Int(Limits.kdfMemMaxKiB / 1024))
        let ops = try args.int("kdf-passes", in: Int(Limits.kdfOpsMin)...Int(Limits.kdfOpsMax))
        return KDFParameters(ops: ops.map(UInt32.init) ?? KDFParameters.default.ops,
                             memKiB: mem.map { UInt32($0 * 1024) } ?? KDFParameters.default.memKiB)
    }

    static func givenPassphrase(_ args: Arguments) throws -> SecureBytes? {
        if let path = args.value("passphrase-file") {
            return try passphrase(from: try readFileSecret(path, what: "passphrase file", allowPipe: true), source: path)
        }
        if let fdText = args.value("passphrase-fd") {
            guard let fd = Int32(fdText), fd >= 0 else { throw CLIError.usage("--passphrase-fd takes a file descriptor number") }
            return try passphrase(from: try readDescriptor(fd, what: "passphrase fd \(fd)"), source: "fd \(fd)")
        }
        if let p = environmentPassphrase {
            guard p.count > 0 else { throw CLIError.usage("KCAR_PASSPHRASE is empty") }
            return p
        }
        return nil
    }

    /// Strips one trailing newline; refuses an empty passphrase.
    static func passphrase(from raw: SecureBytes, source: String) throws -> SecureBytes {
        let p = raw.withUnsafeBytes { b -> SecureBytes in
            var n = b.count
            if n > 0, b[n - 1] == 10 { n -= 1 }
            if n > 0, b[n - 1] == 13 { n -= 1 }
            return SecureBytes(copying: UnsafeRawBufferPointer(rebasing: b[0..<n]))
        }
        guard p.count > 0 else { throw CLIError.usage("the passphrase from \(source) is empty") }
        return p
    }

    static func readKeyFile(_ path: String) throws -> SecureBytes {
        let k = try readFileSecret(path, what: "key file", allowPipe: false)
        guard k.count == 32 else {
            throw CLIError(.usage, "key file \(path) must hold exactly 32 bytes (make one with `kcar keygen`)")
        }
        return k
    }

    static func readFileSecret(_ path: String, what: String, allowPipe: Bool) throws -> SecureBytes {
        let fd = try openInput(path, what: what, allowPipe: allowPipe)
        defer { close(fd) }
        return try readDescriptor(fd, what: "\(what) \(path)")
    }

    /// Whether the open FIFO `fd` is an anonymous pipe (`|`, and `<(...)`'s /dev/fd/N), which the kernel
    /// names `pipe:[inode]`, rather than a FIFO in a file system.
    static func isAnonymousPipe(_ fd: Int32) -> Bool {
        var buf = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/self/fd/\(fd)", &buf, buf.count - 1)
        guard n > 0 else { return false }
        return String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self).hasPrefix("pipe:[")
    }

    /// Opens a file kcar reads a secret or an input from without ever blocking (issue 9, item 7): a regular
    /// file, or with `allowPipe` an anonymous pipe (`--passphrase-file <(pass show x)`: it was made with its
    /// writer, so it ends when the writer does) or the null device. Anything else is refused with exit 15 before it is read: a
    /// named FIFO (its open and reads wait for a writer anyone who can create it may withhold; read one on
    /// purpose with `--passphrase-fd 3 3<FIFO`, where the shell does the waiting), a device, socket or
    /// folder. A symbolic link given as the path is followed; what it names is checked.
    static func openInput(_ path: String, what: String, allowPipe: Bool) throws -> Int32 {
        func check(_ st: stat, _ fd: Int32?) throws {
            let type = st.st_mode & S_IFMT
            if type == S_IFREG { return }
            if type == S_IFIFO, allowPipe, let fd {
                if isAnonymousPipe(fd) { return }
            }
            if type == S_IFIFO, fd == nil, allowPipe { return }  // decided once it is open (named or not)
            // The null device reads empty at once: `--value-file /dev/null` is the usual way to give an empty value.
            var null = stat()
            if type == S_IFCHR, allowPipe, stat("/dev/null", &null) == 0, null.st_mode & S_IFMT == S_IFCHR, st.st_rdev == null.st_rdev {
                return
            }
            let kind = type == S_IFIFO ? (allowPipe ? "a named FIFO" : "a FIFO or pipe") : type == S_IFDIR ? "a folder"
                : type == S_IFCHR || type == S_IFBLK ? "a device" : type == S_IFSOCK ? "a socket" : "not a regular file"
            throw CLIError(.unsafeFile, "\(what) \(path) is \(kind), not a regular file\(allowPipe ? " or a pipe" : ""); refusing to read it")
        }
        var st = stat()
        if stat(path, &st) == 0 { try check(st, nil) }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError(.io, "cannot open \(what) \(path): \(String(cString: strerror(errno)))") }
        do {
            guard fstat(fd, &st) == 0 else { throw CLIError(.io, "cannot stat \(what) \(path): \(String(cString: strerror(errno)))") }
            try check(st, fd)
        } catch {
            close(fd)
            throw error
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// Reads at most 64 KiB into locked memory.
    static func readDescriptor(_ fd: Int32, what: String) throws -> SecureBytes {
        let cap = 65_536
        var count = 0
        var failed: Int32 = 0
        let buf = SecureBytesBuilder(capacity: cap)
        while count < cap {
            let n = read(fd, buf.pointer + count, cap - count)
            if n < 0 {
                if errno == EINTR { continue }
                failed = errno
                break
            }
            if n == 0 { break }
            count += n
        }
        if failed != 0 { throw CLIError(.io, "cannot read \(what): \(String(cString: strerror(failed)))") }
        guard count < cap else { throw CLIError(.usage, "\(what) is larger than 64 KiB") }
        return buf.finish(count: count)
    }

    /// Asks on /dev/tty with echo off; twice when `confirm`.
    static func prompt(_ text: String, confirm: Bool) throws -> SecureBytes {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard tty >= 0 else {
            throw CLIError(.noSecret, "no secret given and no terminal to ask on: use --key-file, --passphrase-file, --passphrase-fd or KCAR_PASSPHRASE")
        }
        defer { close(tty) }
        let first = try readHidden(tty, text)
        if confirm {
            let second = try readHidden(tty, "Repeat: ")
            guard first.constantTimeEquals(second) else { throw CLIError(.usage, "the passphrases do not match") }
        }
        guard first.count > 0 else { throw CLIError(.usage, "empty passphrase") }
        return first
    }

    private static func readHidden(_ tty: Int32, _ text: String) throws -> SecureBytes {
        _ = text.withCString { write(tty, $0, strlen($0)) }
        var old = termios()
        let isTerminal = tcgetattr(tty, &old) == 0
        if isTerminal {
            var quiet = old
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(tty, TCSAFLUSH, &quiet)
        }
        defer {
            if isTerminal { tcsetattr(tty, TCSAFLUSH, &old) }
            _ = write(tty, "\n", 1)
        }
        let cap = 4096
        let buf = SecureBytesBuilder(capacity: cap)
        var count = 0
        var byte: UInt8 = 0
        while count < cap {
            let n = read(tty, &byte, 1)
            if n < 0, errno == EINTR { continue }
            if n <= 0 || byte == 10 { break }
            buf.pointer[count] = byte
            count += 1
        }
        byte = 0
        return buf.finish(count: count)
    }

    /// A recipient: 64 hex digits, or a file holding them (as `kcar keygen --x25519` writes FILE.pub).
    static func parseRecipient(_ text: String) throws -> [UInt8] {
        var candidate = text
        var st = stat()
        if text.count != 64, stat(text, &st) == 0 {
            // A file is read only if it is a regular file (a FIFO there is refused, exit 15, never waited on).
            candidate = try readSmallText(text).trimmingWhitespace
        }
        guard let pk = Hex.decode(candidate), pk.count == 32 else {
            throw CLIError.usage("--recipient takes an X25519 public key (64 hex digits) or a file holding one")
        }
        return pk
    }
}

/// glibc's `mallopt` (malloc.h is not part of the Glibc module).
@_silgen_name("mallopt") func glibcMallopt(_ param: Int32, _ value: Int32) -> Int32

/// Builds a SecureBytes in locked scratch memory, wiped when done.
final class SecureBytesBuilder {
    let pointer: UnsafeMutablePointer<UInt8>
    let capacity: Int
    init(capacity: Int) {
        self.capacity = capacity
        pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        pointer.initialize(repeating: 0, count: capacity)
        mlock(pointer, capacity)
    }
    func finish(count: Int) -> SecureBytes { SecureBytes(copying: UnsafeBufferPointer(start: pointer, count: count)) }
    deinit {
        memset_s_portable(pointer, capacity)
        munlock(pointer, capacity)
        pointer.deallocate()
    }
}

@inline(never) func memset_s_portable(_ p: UnsafeMutablePointer<UInt8>, _ n: Int) {
    // explicit_bzero is not optimised away.
    explicit_bzero(p, n)
}

func readSmallText(_ path: String) throws -> String {
    let fd = try Secrets.openInput(path, what: "file", allowPipe: false)
    defer { close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while out.count < 1 << 20 {
        let n = read(fd, &buf, buf.count)
        if n <= 0 { break }
        out.append(contentsOf: buf[0..<n])
    }
    return String(decoding: out, as: UTF8.self)
}

extension String {
    var trimmingWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
