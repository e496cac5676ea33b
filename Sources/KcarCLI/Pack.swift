#if canImport(Glibc)
import Glibc
#endif
import KcarKeychain
import VaultFormat

/// `kcar pack VAULT DIR`.
enum Pack {
    /// A regular file found by the listing: its folder (an index into ``Tree/folders``), its name there, and
    /// the identity it had when listed.
    struct Entry {
        let service: String
        let account: String
        /// For messages only: files are opened by folder and name, never by this path.
        let path: String
        let folder: Int
        let name: String
        let dev: UInt64
        let ino: UInt64
        /// Its size when listed (for the progress bar; what is stored is what is read).
        let size: UInt64
    }

    /// The folders the listing went through, each by its parent, name and identity (issue 9, item 6): a file
    /// is later opened relative to its folder, and every folder on the way is reopened with O_NOFOLLOW and
    /// checked to be the one listed, so a folder swapped for a symlink (or another folder) after the listing
    /// is refused instead of followed.
    struct Folder {
        let parent: Int?
        let name: String
        let dev: UInt64
        let ino: UInt64
    }

    static func run(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("pack"))
        // `pack VAULT --group G` with no DIR packs the keychain's group G: the keychain is --keychain DIR, else
        // KCAR_KEYCHAIN or the default one, as for every other keychain command.
        let fromItems = args.value("items") != nil || args.value("keychain") != nil || (args.value("group") != nil && args.positionals.count == 1)
        let p = try args.positionals(fromItems ? ["VAULT"] : ["VAULT", "DIR"])
        let vaultPath = p[0]
        let level = Int32(try args.int("level", in: 0...12) ?? 6)
        if fromItems { return try packItems(vaultPath, args, level: level) }
        let dir = p[1]
        let group = args.value("group") ?? "default"
        let (entries, folders, problems) = try walk(dir, excludes: args.all("exclude"))
        for problem in problems { warn("skipped \(problem)") }
        DebugSeam.pause("pack-listed")
        let slots = try Secrets.newSlots(args)
        let options = WriteOptions(level: level)
        let total = Output.err.isTerminal ? entries.reduce(UInt64(0)) { $0 &+ $1.size } : 0
        let progress = Progress(label: "pack", total: total)
        let toStdout = vaultPath == "-"
        if toStdout { try StandardStreams.refuseTerminal("a vault", force: args.flag("force")) }
        let listing = verboseListing(args, dataOnStdout: toStdout)
        let target = toStdout ? temporaryPath() : vaultPath
        let opener = try Opener(root: dir, folders: folders)
        var changed = 0
        // The vault written for standard output is removed on a fatal signal too (issue 9, item 11).
        let registration = toStdout ? TemporaryFiles.register(target) : nil
        defer { TemporaryFiles.unregister(registration) }
        do {
            try Vault.create(path: target, group: group, slots: slots, options: options, overwrite: args.flag("force")) { tx in
                DebugSeam.pause("pack-writing")
                for e in entries {
                    if let problem = try add(e, to: tx, opener: opener, progress: progress) {
                        warn("skipped \(problem)")
                        changed += 1
                    } else {
                        listing?.line(terminalSafe(ItemPath.components(service: e.service, account: e.account).joined(separator: "/")))
                    }
                }
            }
            progress.finish()
            if toStdout { try copyToStdout(target) }
        } catch {
            progress.finish()
            if toStdout { unlink(target) }
            throw error
        }
        if !args.flag("quiet"), !toStdout {
            warn("packed \(count(entries.count - changed, "item")) into \(vaultPath)")
        }
        return problems.isEmpty && changed == 0 ? .success : .skipped
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
            guard let g = args.value("group") else { throw CLIError.usage("packing a keychain needs --group G: the group to pack") }
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
            warn("left out \(count(deviceOnly, "ThisDeviceOnly item")) (--include-device-only packs them)")
        }
        let slots = try Secrets.newSlots(args)
        try Vault.create(path: vaultPath, group: group, slots: slots, options: WriteOptions(level: level), overwrite: args.flag("force")) { tx in
            for e in entries { try tx.add(class: e.itemClass, attributes: e.attributes, value: .bytes(e.value)) }
        }
        if !args.flag("quiet") { warn("packed \(count(entries.count, "item")) into \(vaultPath)") }
        return deviceOnly > 0 && !args.flag("include-device-only") ? .skipped : .success
    }

    /// Adds one listed file, opened relative to its folder without following links and without blocking
    /// (O_NONBLOCK: a FIFO swapped in is not waited on), and only if it is still the regular file listed.
    /// Returns why it was skipped instead, if it was.
    static func add(_ e: Entry, to tx: Transaction, opener: Opener, progress: Progress) throws -> String? {
        guard let dir = opener.folder(e.folder) else { return "\(e.path): a folder on its path changed after the listing (a symlink or another folder)" }
        let fd = openat(dir, e.name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return "\(e.path): \(errno == ELOOP ? "now a symbolic link" : String(cString: strerror(errno)))" }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return "\(e.path): no longer a regular file" }
        guard UInt64(st.st_dev) == e.dev, UInt64(st.st_ino) == e.ino else { return "\(e.path): replaced by another file after the listing" }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
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
        return nil
    }

    /// Opens listed folders from the root, each with O_NOFOLLOW relative to its parent and checked against
    /// the identity it was listed with; the last folder opened is kept (entries come folder by folder), so
    /// at most two descriptors are open however wide or deep the tree.
    final class Opener {
        let root: Int32
        private(set) var folders: [Folder]
        private var open: (index: Int, fd: Int32)?

        /// Opens `root` (following it if it is a link, as any path given is followed); `expected`, the
        /// folders of an earlier listing of it, whose root must be this one.
        init(root: String, folders expected: [Folder]? = nil) throws {
            let fd = Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { throw CLIError(.io, "\(root) is not a folder") }
            var st = stat()
            guard fstat(fd, &st) == 0 else {
                close(fd)
                throw CLIError(.io, "cannot stat \(root)")
            }
            if let top = expected?.first, UInt64(st.st_dev) != top.dev || UInt64(st.st_ino) != top.ino {
                close(fd)
                throw CLIError(.io, "\(root) changed after it was listed")
            }
            self.root = fd
            folders = expected ?? [Folder(parent: nil, name: root, dev: UInt64(st.st_dev), ino: UInt64(st.st_ino))]
        }

        deinit {
            if let open { close(open.fd) }
            close(root)
        }

        func add(_ f: Folder) -> Int {
            folders.append(f)
            return folders.count - 1
        }

        /// The folder `index`, open, or nil if any folder on its path is no longer the one listed.
        func folder(_ index: Int) -> Int32? {
            if index == 0 { return root }
            if let open, open.index == index { return open.fd }
            if let open { close(open.fd) }
            open = nil
            var chain: [Int] = []
            var i: Int? = index
            while let j = i, j != 0 {
                chain.append(j)
                i = folders[j].parent
            }
            var dir = root
            for j in chain.reversed() {
                let f = folders[j]
                let next = openat(dir, f.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if dir != root { close(dir) }
                guard next >= 0 else { return nil }
                var st = stat()
                guard fstat(next, &st) == 0, UInt64(st.st_dev) == f.dev, UInt64(st.st_ino) == f.ino else {
                    close(next)
                    return nil
                }
                dir = next
            }
            open = (index, dir)
            return dir
        }
    }

    /// The items below `root`, sorted by service and account, the folders listed, and what was skipped and
    /// why. Every folder is opened relative to its parent with O_NOFOLLOW and read through that descriptor;
    /// the walk keeps an explicit stack (a deep tree is no recursion).
    static func walk(_ root: String, excludes: [String]) throws -> ([Entry], [Folder], [String]) {
        let opener = try Opener(root: root)
        var entries: [Entry] = []
        var problems: [String] = []
        func excluded(_ name: String, _ relative: String) -> Bool {
            excludes.contains { pattern in
                pattern.contains("/") ? fnmatch(pattern, relative, 0) == 0 : fnmatch(pattern, name, 0) == 0
            }
        }
        struct Pending {
            let index: Int
            let path: String
            let relative: String
            let service: String?
            let account: String
        }
        var stack = [Pending(index: 0, path: root, relative: "", service: nil, account: "")]
        while let here = stack.popLast() {
            guard let fd = opener.folder(here.index) else {
                problems.append("\(here.path): changed while it was listed")
                continue
            }
            var children: [Pending] = []
            for (name, rawName) in try listDirectory(fd, path: here.path) {
                let childPath = here.path + "/" + rawName
                guard let name else {
                    problems.append("\(childPath): the name is not UTF-8")
                    continue
                }
                let rel = here.relative.isEmpty ? name : here.relative + "/" + name
                if excluded(name, rel) { continue }
                var st = stat()
                guard fstatat(fd, rawName, &st, AT_SYMLINK_NOFOLLOW) == 0 else {
                    problems.append("\(childPath): \(String(cString: strerror(errno)))")
                    continue
                }
                switch st.st_mode & S_IFMT {
                case S_IFDIR:
                    let index = opener.add(Folder(parent: here.index, name: rawName, dev: UInt64(st.st_dev), ino: UInt64(st.st_ino)))
                    children.append(Pending(index: index, path: childPath, relative: rel, service: here.service ?? name,
                                            account: here.service == nil ? "" : here.account + name + "/"))
                case S_IFREG:
                    if let service = here.service {
                        entries.append(Entry(service: service, account: here.account + name, path: childPath, folder: here.index,
                                             name: rawName, dev: UInt64(st.st_dev), ino: UInt64(st.st_ino), size: UInt64(max(0, st.st_size))))
                    } else {
                        problems.append("\(childPath): a file directly in \(root) has no service folder")
                    }
                case S_IFLNK: problems.append("\(childPath): symbolic link")
                default: problems.append("\(childPath): not a regular file (device, FIFO or socket)")
                }
            }
            // Pushed in reverse, so that they are visited in name order (the order problems are reported in).
            stack.append(contentsOf: children.reversed())
        }
        entries.sort { a, b in
            a.service != b.service ? a.service.utf8.lexicographicallyPrecedes(b.service.utf8)
                : a.account.utf8.lexicographicallyPrecedes(b.account.utf8)
        }
        return (entries, opener.folders, problems)
    }

    /// Names in an open folder (UTF-8 decoded, or nil) with their raw form for paths. Reads a duplicate of
    /// `fd`, which stays open.
    static func listDirectory(_ fd: Int32, path: String) throws -> [(String?, String)] {
        let copy = dup(fd)
        guard copy >= 0, let d = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            throw CLIError(.io, "cannot read folder \(path): \(String(cString: strerror(errno)))")
        }
        defer { closedir(d) }
        var out: [(String?, String)] = []
        while let ent = readdir(d) {
            let raw: [UInt8] = withUnsafeBytes(of: ent.pointee.d_name) { b in Array(b.prefix { $0 != 0 }) }
            if raw == [46] || raw == [46, 46] { continue }
            let decoded = String(validating: raw, as: UTF8.self)
            out.append((decoded, decoded ?? String(decoding: raw, as: UTF8.self)))
        }
        return out.sorted { $0.1.utf8.lexicographicallyPrecedes($1.1.utf8) }
    }

    static func temporaryPath() -> String {
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        return "\(dir)/kcar-\(Hex.encode(randomBytes(8))).kcv"
    }

    /// Copies the temporary vault at `path` to standard output, removing its name first: nothing is left
    /// behind even if the copy is cut short.
    static func copyToStdout(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        unlink(path)
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

/// Where `-v` names each item as it is packed or extracted, as tar does: standard output, or standard
/// error when the vault or the values go to standard output; nil without `-v`.
func verboseListing(_ args: Arguments, dataOnStdout: Bool) -> Output? {
    guard args.flag("verbose") else { return nil }
    return dataOnStdout ? Output.err : Output.out
}

func randomBytes(_ n: Int) -> [UInt8] {
    var b = [UInt8](repeating: 0, count: n)
    b.withUnsafeMutableBytes { SystemRandom.shared.fill($0) }
    return b
}
