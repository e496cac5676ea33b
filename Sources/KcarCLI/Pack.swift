#if canImport(Glibc)
import Glibc
#endif
import Keychain
import VaultFormat

/// `kcar pack VAULT DIR`.
enum Pack {
    struct Entry {
        let service: String
        let account: String
        let path: String
    }

    static func run(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: Secrets.specs + Secrets.newSpecs + [
            .init(name: "group", kind: .value), .init(name: "level", kind: .value), .init(name: "exclude", kind: .repeated),
            .init(name: "force", kind: .flag), .init(name: "quiet", kind: .flag, short: "q"),
            .init(name: "items", kind: .value), .init(name: "include-device-only", kind: .flag),
        ])
        let fromItems = args.value("items") != nil || args.value("keychain") != nil
        let p = try args.positionals(fromItems ? ["VAULT"] : ["VAULT", "DIR"])
        let vaultPath = p[0]
        let level = Int32(try args.int("level", in: 0...12) ?? 6)
        if fromItems { return try packItems(vaultPath, args, level: level) }
        let dir = p[1]
        let group = args.value("group") ?? "default"
        let (entries, problems) = try walk(dir, excludes: args.all("exclude"))
        for problem in problems { warn("skipped \(problem)") }
        let slots = try Secrets.newSlots(args)
        let options = WriteOptions(level: level)
        // The total is needed only for a progress bar on a terminal; elsewhere it would cost a stat per file.
        let total = Output.err.isTerminal ? entries.reduce(UInt64(0)) { $0 + fileSize($1.path) } : 0
        let progress = Progress(label: "pack", total: total)
        let toStdout = vaultPath == "-"
        let target = toStdout ? temporaryPath() : vaultPath
        do {
            try Vault.create(path: target, group: group, slots: slots, options: options, overwrite: args.flag("force")) { tx in
                for e in entries { try add(e, to: tx, progress: progress) }
            }
            progress.finish()
            if toStdout {
                defer { unlink(target) }
                try copyToStdout(target)
            }
        } catch {
            progress.finish()
            if toStdout { unlink(target) }
            throw error
        }
        if !args.flag("quiet"), !toStdout {
            warn("packed \(entries.count) items into \(vaultPath)")
        }
        return problems.isEmpty ? .success : .skipped
    }

    /// `pack VAULT --items FILE.json` (an item file, SPEC.md §K7) or `pack VAULT --keychain DIR --group G`
    /// (a keychain's group): a standalone vault of those items, ThisDeviceOnly ones left out unless asked.
    static func packItems(_ vaultPath: String, _ args: Arguments, level: Int32) throws -> ExitCode {
        var entries: [ItemFile.Entry]
        var group = args.value("group") ?? "default"
        if let file = args.value("items") {
            guard args.value("keychain") == nil else { throw CLIError.usage("give --items FILE or --keychain DIR --group G, not both") }
            entries = try ItemFile.read(file)
        } else {
            guard let g = args.value("group") else { throw CLIError.usage("--keychain needs --group G: the group to pack") }
            group = g
            let s = try ItemCommands.store(args)
            let items = try s.find(ItemQuery(class: .genericPassword, group: g, synchronizableAny: true))
                + (try ["inet", "cert", "keys", "idnt"].flatMap { try s.find(ItemQuery(class: ItemClass(rawValue: $0), group: g, synchronizableAny: true)) })
            entries = try items.map { ItemFile.Entry(itemClass: $0.itemClass, attributes: $0.attributes, value: try s.value(of: $0)) }
        }
        // The rule guards what leaves a keychain; an item file holds what its export chose to include.
        let deviceOnly = args.value("items") == nil ? entries.filter { Schema.isDeviceOnly($0.attributes) }.count : 0
        if deviceOnly > 0, !args.flag("include-device-only") {
            entries.removeAll { Schema.isDeviceOnly($0.attributes) }
            warn("left out \(deviceOnly) ThisDeviceOnly item\(deviceOnly == 1 ? "" : "s") (--include-device-only packs them)")
        }
        let slots = try Secrets.newSlots(args)
        try Vault.create(path: vaultPath, group: group, slots: slots, options: WriteOptions(level: level), overwrite: args.flag("force")) { tx in
            for e in entries { try tx.add(class: e.itemClass, attributes: e.attributes, value: .bytes(e.value)) }
        }
        if !args.flag("quiet") { warn("packed \(entries.count) items into \(vaultPath)") }
        return deviceOnly > 0 && !args.flag("include-device-only") ? .skipped : .success
    }

    static func add(_ e: Entry, to tx: Transaction, progress: Progress) throws {
        let fd = open(e.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError(.io, "cannot open \(e.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw CLIError(.io, "\(e.path) is no longer a regular file")
        }
        let mtime = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        var attributes = Attributes()
        attributes[AttributeName.service] = .string(e.service)
        attributes[AttributeName.account] = .string(e.account)
        attributes[AttributeName.modificationDate] = .date(nanoseconds: mtime)
        do {
            try tx.add(class: .genericPassword, attributes: attributes, value: .fileDescriptor(fd, size: UInt64(st.st_size)))
        } catch let error as VaultError where error.code == .io {
            throw VaultError(.io, "\(e.path): \(error.context)")
        }
        progress.advance(UInt64(st.st_size))
    }

    /// The items below `root`, sorted by service and account, and what was skipped and why.
    static func walk(_ root: String, excludes: [String]) throws -> ([Entry], [String]) {
        var st = stat()
        guard stat(root, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw CLIError(.io, "\(root) is not a folder")
        }
        var entries: [Entry] = []
        var problems: [String] = []
        func excluded(_ name: String, _ relative: String) -> Bool {
            excludes.contains { pattern in
                pattern.contains("/") ? fnmatch(pattern, relative, 0) == 0 : fnmatch(pattern, name, 0) == 0
            }
        }
        func visit(_ path: String, relative: String, service: String?, account: String) throws {
            for (name, rawName, type) in try listDirectory(path) {
                let childPath = path + "/" + rawName
                guard let name else {
                    problems.append("\(childPath): the name is not UTF-8")
                    continue
                }
                let rel = relative.isEmpty ? name : relative + "/" + name
                if excluded(name, rel) { continue }
                var mode = type
                if mode == 0 {  // the file system does not report types in its listing: ask
                    var cst = stat()
                    guard lstat(childPath, &cst) == 0 else {
                        problems.append("\(childPath): \(String(cString: strerror(errno)))")
                        continue
                    }
                    mode = cst.st_mode & S_IFMT
                }
                switch mode {
                case S_IFDIR:
                    try visit(childPath, relative: rel, service: service ?? name, account: service == nil ? "" : account + name + "/")
                case S_IFREG:
                    if let service {
                        entries.append(Entry(service: service, account: account + name, path: childPath))
                    } else {
                        problems.append("\(childPath): a file directly in \(root) has no service folder")
                    }
                case S_IFLNK: problems.append("\(childPath): symbolic link")
                default: problems.append("\(childPath): not a regular file (device, FIFO or socket)")
                }
            }
        }
        try visit(root, relative: "", service: nil, account: "")
        entries.sort { a, b in
            a.service != b.service ? a.service.utf8.lexicographicallyPrecedes(b.service.utf8)
                : a.account.utf8.lexicographicallyPrecedes(b.account.utf8)
        }
        return (entries, problems)
    }

    /// Names in a folder (UTF-8 decoded, or nil) with their raw form for paths and their file type as
    /// `S_IFMT` bits (0 when the file system does not say; the add step checks regular files again on open).
    static func listDirectory(_ path: String) throws -> [(String?, String, mode_t)] {
        guard let d = opendir(path) else { throw CLIError(.io, "cannot read folder \(path): \(String(cString: strerror(errno)))") }
        defer { closedir(d) }
        var out: [(String?, String, mode_t)] = []
        while let ent = readdir(d) {
            let raw: [UInt8] = withUnsafeBytes(of: ent.pointee.d_name) { b in Array(b.prefix { $0 != 0 }) }
            if raw == [46] || raw == [46, 46] { continue }
            let decoded = String(validating: raw, as: UTF8.self)
            let type: mode_t
            switch Int32(ent.pointee.d_type) {
            case Int32(DT_REG): type = S_IFREG
            case Int32(DT_DIR): type = S_IFDIR
            case Int32(DT_LNK): type = S_IFLNK
            case Int32(DT_UNKNOWN): type = 0
            default: type = S_IFIFO  // devices, FIFOs, sockets: reported, not stored
            }
            out.append((decoded, decoded ?? String(decoding: raw, as: UTF8.self), type))
        }
        return out.sorted { $0.1.utf8.lexicographicallyPrecedes($1.1.utf8) }
    }

    static func fileSize(_ path: String) -> UInt64 {
        var st = stat()
        return lstat(path, &st) == 0 ? UInt64(st.st_size) : 0
    }

    static func temporaryPath() -> String {
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        return "\(dir)/kcar-\(Hex.encode(randomBytes(8))).kcv"
    }

    static func copyToStdout(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError(.io, "cannot reopen \(path)") }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = read(fd, &buf, buf.count)
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw CLIError(.io, "cannot read \(path)") }
            if n == 0 { break }
            try buf.withUnsafeBytes { try Output.out.writeBytes(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }
}

func randomBytes(_ n: Int) -> [UInt8] {
    var b = [UInt8](repeating: 0, count: n)
    b.withUnsafeMutableBytes { SystemRandom.shared.fill($0) }
    return b
}
