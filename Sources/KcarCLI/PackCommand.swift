import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar pack VAULT DIR`.
enum PackCommand {
    /// What the listing found to store: a regular file, a symbolic link or an empty folder, by its folder (an
    /// index into ``Tree/folders``), its name there, and the identity it had when listed.
    struct Entry {
        let service: String
        let account: String
        /// For messages only: files are opened by folder and name, never by this path.
        let path: String
        let folder: Int
        let name: String
        let source: Source

        enum Source {
            /// A regular file (reached through a link when `follow`), stored only if it is still this inode.
            case file(dev: UInt64, ino: UInt64, size: UInt64, follow: Bool)
            /// A symbolic link, stored as its target (SPEC.md §7.1), never followed.
            case link(target: String, mtime: Int64)
            /// A folder below a service that holds nothing stored (`index` into the folders listed).
            case folder(index: Int)
        }

        /// Its size when listed (for the progress bar; what is stored is what is read).
        var size: UInt64 {
            if case .file(_, _, let size, _) = source { return size }
            return 0
        }

        var isFolder: Bool {
            if case .folder = source { return true }
            return false
        }

        /// Its path below extract's folder (a service's own folder item is the service's folder).
        var parts: [String] {
            isFolder && account.isEmpty
                ? [ItemPath.component(service, slash: true)] : ItemPath.components(service: service, account: account)
        }

        /// Its name as `list` prints it (a folder's with a trailing `/`), for `-v`.
        var listedName: String { parts.joined(separator: "/") + (isFolder ? "/" : "") }
    }

    /// The folders the listing went through, each by its parent, name and identity: a file
    /// is later opened relative to its folder, and every folder on the way is reopened with O_NOFOLLOW and
    /// checked to be the one listed, so a folder swapped for a symlink (or another folder) after the listing
    /// is refused instead of followed.
    struct Folder {
        let parent: Int?
        let name: String
        let dev: UInt64
        let ino: UInt64
        /// Reached through a symbolic link (`--dereference`): opened following it, and still checked to be
        /// the folder listed.
        var follow = false
    }

    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("pack"))
        // `pack VAULT --group G` with no DIR packs the keychain's group G: the keychain is --keychain DIR, else
        // KCAR_KEYCHAIN or the default one, as for every other keychain command.
        let fromItems =
            args.value("items") != nil || args.value("keychain") != nil
            || (args.value("group") != nil && args.positionals.count == 1)
        let p = try args.positionals(fromItems ? ["VAULT"] : ["VAULT", "DIR"])
        let vaultPath = p[0]
        let level = Int32(try args.int("level", in: 0...12) ?? 6)
        if fromItems { return try packItems(vaultPath, args, level: level) }
        let group = args.value("group") ?? "default"
        let (dir, only) = try source(p[1])
        // A single file, given as any path is, is followed if it is a link (its folder is listed for it alone).
        let (entries, folders, problems) = try walk(
            dir, excludes: args.all("exclude"), dereference: args.flag("dereference") || only != nil,
            only: only)
        for problem in problems { warn("skipped \(problem)") }
        DebugSeam.pause("pack-listed")
        let slots = try SecretInput.newSlots(args)
        let options = WriteOptions(level: level)
        let progress = Progress(label: "pack", total: totalSize(entries))
        let toStdout = vaultPath == "-"
        if toStdout { try StandardStreams.refuseTerminal("a vault", force: args.flag("force")) }
        let listing = verboseListing(args, dataOnStdout: toStdout)
        let target = toStdout ? temporaryPath() : vaultPath
        let opener = try Opener(root: dir, folders: folders)
        var changed = 0
        // The vault written for standard output is removed on a fatal signal too.
        let registration = toStdout ? TemporaryFiles.register(target) : nil
        defer { TemporaryFiles.unregister(registration) }
        do {
            try createVault(target, group: group, slots: slots, options: options, args) { tx in
                DebugSeam.pause("pack-writing")
                // A folder's paths are distinct names, and an items file is packed as it is (as before the
                // library checked keys): no lookup per item.
                for e in entries {
                    if let problem = try store(
                        e, opener: opener, progress: progress,
                        put: { a, v in try tx.add(attributes: a, value: v, ifKeyExists: .keepBoth) })
                    {
                        warn("skipped \(problem)")
                        changed += 1
                    } else {
                        listing?.line(terminalSafe(e.listedName))
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

    /// What `pack VAULT PATH` lists: a folder as it is (nil: all of it), or a regular file as the one name to
    /// list in its folder, so that it is stored as a top-level item (SPEC.md §7.1). Both followed if links.
    static func source(_ path: String) throws -> (root: String, only: [[String]]?) {
        var st = stat()
        guard stat(path, &st) == 0 else { throw CLIError(.io, "\(path): \(String(cString: strerror(errno)))") }
        switch st.st_mode & S_IFMT {
        case S_IFDIR: return (path, nil)
        case S_IFREG:
            // A regular file's path names a file, never `.`, `..` or one ending in `/`.
            guard let slash = path.lastIndex(of: "/") else { return (".", [[path]]) }
            let parent = String(path[..<slash])
            return (parent.isEmpty ? "/" : parent, [[String(path[path.index(after: slash)...])]])
        default: throw CLIError(.io, "\(path) is neither a folder nor a regular file (a device, FIFO or socket)")
        }
    }

    /// The bytes the listed files add up to, for a progress bar on a terminal (0: none shown).
    static func totalSize(_ entries: [Entry]) -> UInt64 {
        Output.err.isTerminal ? entries.reduce(UInt64(0)) { $0 &+ $1.size } : 0
    }

    /// `pack VAULT --items FILE.json` (an item file, SPEC.md §K7) or `pack VAULT --keychain DIR --group G`
    /// (a keychain's group): a standalone vault of those items, ThisDeviceOnly ones left out unless asked.
    static func packItems(_ vaultPath: String, _ args: Arguments, level: Int32) throws -> ExitCode {
        if let file = args.value("items") {
            guard args.value("keychain") == nil else {
                throw CLIError.usage("give --items FILE or --keychain DIR --group G, not both")
            }
            // Streamed into the new vault as it is read; an error in the file abandons the vault.
            let slots = try SecretInput.newSlots(args)
            var packed = 0
            try createVault(
                vaultPath, group: args.value("group") ?? "default", slots: slots, options: WriteOptions(level: level),
                args
            ) { tx in
                packed = try ItemFile.read(file, itemsMax: ItemFile.packItemsMax) { e in
                    try tx.add(
                        class: e.itemClass, attributes: e.attributes, value: .bytes(e.value), ifKeyExists: .keepBoth)
                }
            }
            if !args.flag("quiet") { warn("packed \(count(packed, "item")) into \(vaultPath)") }
            return .success
        }
        guard let g = args.value("group") else {
            throw CLIError.usage("packing a keychain needs --group G: the group to pack")
        }
        let s = try ItemCommands.store(args)
        let items =
            try s.find(ItemQuery(class: .genericPassword, group: g, synchronizableAny: true))
            + (try ["inet", "cert", "keys", "idnt"].flatMap {
                try s.find(ItemQuery(class: ItemClass(rawValue: $0), group: g, synchronizableAny: true))
            })
        var entries = try items.map {
            ItemFile.Entry(itemClass: $0.itemClass, attributes: $0.attributes, value: try s.value(of: $0))
        }
        // The rule guards what leaves a keychain; an item file holds what its export chose to include.
        let deviceOnly = entries.filter { Schema.isDeviceOnly($0.attributes) }.count
        if deviceOnly > 0, !args.flag("include-device-only") {
            entries.removeAll { Schema.isDeviceOnly($0.attributes) }
            warn("left out \(count(deviceOnly, "ThisDeviceOnly item")) (--include-device-only packs them)")
        }
        let slots = try SecretInput.newSlots(args)
        try createVault(vaultPath, group: g, slots: slots, options: WriteOptions(level: level), args) { tx in
            for e in entries {
                try tx.add(class: e.itemClass, attributes: e.attributes, value: .bytes(e.value), ifKeyExists: .keepBoth)
            }
        }
        if !args.flag("quiet") { warn("packed \(count(entries.count, "item")) into \(vaultPath)") }
        return deviceOnly > 0 && !args.flag("include-device-only") ? .skipped : .success
    }

    /// Stores one listed entry through `put` (a new item, or one replacing another): a file opened relative
    /// to its folder without following links (unless it was listed through one, `--dereference`) and without
    /// blocking (O_NONBLOCK: a FIFO swapped in is not waited on), only if it is still the regular file listed;
    /// a link as its target; an empty folder as a folder item. Every item gets its modification time, files
    /// and folders their permission bits (SPEC.md §7.1). Returns why it was skipped instead, if it was.
    static func store(
        _ e: Entry, opener: Opener, progress: Progress,
        put: (Attributes, ValueSource) throws -> Void
    ) throws -> String? {
        var attributes = Attributes()
        attributes[AttributeName.service] = .string(e.service)
        attributes[AttributeName.account] = .string(e.account)
        switch e.source {
        case .link(let target, let mtime):
            attributes[AttributeName.modificationDate] = .date(nanoseconds: mtime)
            attributes[PackedKind.linkAttribute] = .string(target)
            try put(attributes, .bytes([]))
            return nil
        case .folder(let index):
            guard let fd = opener.folder(index) else {
                return "\(e.path): a folder on its path changed after the listing (a symlink or another folder)"
            }
            var st = stat()
            guard fstat(fd, &st) == 0 else { return "\(e.path): \(String(cString: strerror(errno)))" }
            attributes[AttributeName.modificationDate] = .date(nanoseconds: nanoseconds(st.st_mtim))
            attributes[PackedKind.folderAttribute] = .bool(true)
            attributes[PackedKind.modeAttribute] = .integer(Int64(st.st_mode & 0o777))
            try put(attributes, .bytes([]))
            return nil
        case .file(let dev, let ino, _, let follow):
            guard let dir = opener.folder(e.folder) else {
                return "\(e.path): a folder on its path changed after the listing (a symlink or another folder)"
            }
            let fd = openat(dir, e.name, O_RDONLY | (follow ? 0 : O_NOFOLLOW) | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                return "\(e.path): \(errno == ELOOP ? "now a symbolic link" : String(cString: strerror(errno)))"
            }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
                return "\(e.path): no longer a regular file"
            }
            guard UInt64(st.st_dev) == dev, UInt64(st.st_ino) == ino else {
                return "\(e.path): replaced by another file after the listing"
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            attributes[AttributeName.modificationDate] = .date(nanoseconds: nanoseconds(st.st_mtim))
            // Permission bits only: setuid, setgid and sticky are never stored (nor restored).
            attributes[PackedKind.modeAttribute] = .integer(Int64(st.st_mode & 0o777))
            do {
                try put(attributes, .fileDescriptor(fd, size: UInt64(st.st_size)))
            } catch let error as VaultError where error.code == .io {
                throw VaultError(.io, "\(e.path): \(error.context)")
            }
            progress.advance(UInt64(st.st_size))
            return nil
        }
    }

    static func nanoseconds(_ t: timespec) -> Int64 { Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec) }

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

        /// Whether the folder `index`, or one above it, is the folder with this identity.
        func isAncestor(dev: UInt64, ino: UInt64, of index: Int) -> Bool {
            var i: Int? = index
            while let j = i {
                if folders[j].dev == dev, folders[j].ino == ino { return true }
                i = folders[j].parent
            }
            return false
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
                let next = openat(dir, f.name, O_RDONLY | O_DIRECTORY | (f.follow ? 0 : O_NOFOLLOW) | O_CLOEXEC)
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
    /// why. Every folder is opened relative to its parent with O_NOFOLLOW (unless `dereference` and it was
    /// reached through a link) and read through that descriptor; the walk keeps an explicit stack (a deep tree
    /// is no recursion). Symbolic links are entries of their own, or with `dereference` what they point at (a
    /// dangling link, or one to a folder above it, a loop, is reported). A folder below a service in which
    /// nothing is stored (empty, or all of it excluded or skipped) is an entry itself, so extract makes it again.
    /// `only`, when given: the paths below `root` (as components; empty for all of it) to list, the folders on
    /// the way to them excepted; each must exist (else an I/O error before anything is stored).
    static func walk(
        _ root: String, excludes: [String], dereference: Bool = false,
        only: [[String]]? = nil
    ) throws -> ([Entry], [Folder], [String]) {
        let opener = try Opener(root: root)
        var entries: [Entry] = []
        var problems: [String] = []
        func excluded(_ name: String, _ relative: String) -> Bool {
            excludes.contains { pattern in
                pattern.contains("/") ? fnmatch(pattern, relative, 0) == 0 : fnmatch(pattern, name, 0) == 0
            }
        }
        let selected = only.map { Set($0.map { $0.joined(separator: "/") }) }
        var found = Set<String>()
        /// Whether `relative` is one of `only`'s paths or below one (everything, without `only`).
        func inside(_ relative: String) -> Bool {
            guard let selected else { return true }
            if selected.contains("") || selected.contains(relative) { return true }
            var r = Substring(relative)
            while let slash = r.lastIndex(of: "/") {
                r = r[..<slash]
                if selected.contains(String(r)) { return true }
            }
            return false
        }
        /// Whether `relative` is a folder on the way to one of `only`'s paths.
        func onTheWay(_ relative: String) -> Bool {
            selected?.contains { $0.hasPrefix(relative + "/") } ?? false
        }
        struct Pending {
            let index: Int
            let path: String
            let relative: String
            let service: String?
            let account: String
        }
        /// Folders below a service, by index: where their folder entry would go, if nothing below them is stored.
        var candidates: [Int: Pending] = [:]
        var unlisted = Set<Int>()
        /// With `dereference`: the folders listed so far, by device and inode.
        var reached = Set<[UInt64]>()
        var stack = [Pending(index: 0, path: root, relative: "", service: nil, account: "")]
        while let here = stack.popLast() {
            guard let fd = opener.folder(here.index) else {
                problems.append("\(here.path): changed while it was listed")
                unlisted.insert(here.index)
                continue
            }
            var children: [Pending] = []
            for (name, rawName) in try listDirectory(fd, path: here.path) {
                let childPath = here.path + "/" + rawName
                guard let name else {
                    if inside(here.relative) { problems.append("\(childPath): the name is not UTF-8") }
                    continue
                }
                let rel = here.relative.isEmpty ? name : here.relative + "/" + name
                let wanted = inside(rel)
                guard wanted || onTheWay(rel) else { continue }
                if excluded(name, rel) { continue }
                if selected?.contains(rel) == true { found.insert(rel) }
                var st = stat()
                guard fstatat(fd, rawName, &st, AT_SYMLINK_NOFOLLOW) == 0 else {
                    problems.append("\(childPath): \(String(cString: strerror(errno)))")
                    continue
                }
                var follow = false
                if dereference, st.st_mode & S_IFMT == S_IFLNK {
                    guard fstatat(fd, rawName, &st, 0) == 0 else {
                        problems.append(
                            "\(childPath): a symbolic link to nothing (\(String(cString: strerror(errno))))")
                        continue
                    }
                    follow = true
                }
                switch st.st_mode & S_IFMT {
                case S_IFDIR:
                    // Through links, a folder is listed at most once more than the tree has it: two links per
                    // folder, 30 folders deep, would otherwise be 2^30 folders to list (and a link above, a loop).
                    let identity = [UInt64(st.st_dev), UInt64(st.st_ino)]
                    if follow, opener.isAncestor(dev: identity[0], ino: identity[1], of: here.index) {
                        problems.append("\(childPath): a symbolic link to a folder above it (a loop)")
                        continue
                    }
                    if follow, reached.contains(identity) {
                        problems.append(
                            "\(childPath): a symbolic link to a folder already packed through another path (packed once)"
                        )
                        continue
                    }
                    if dereference { reached.insert(identity) }
                    let index = opener.add(
                        Folder(
                            parent: here.index, name: rawName, dev: UInt64(st.st_dev), ino: UInt64(st.st_ino),
                            follow: follow))
                    let child = Pending(
                        index: index, path: childPath, relative: rel, service: here.service ?? name,
                        account: here.service == nil ? "" : here.account + name + "/")
                    children.append(child)
                    if wanted { candidates[index] = child }
                // Directly in the root: a top-level item, of the empty service (SPEC.md §7.1).
                case S_IFREG where wanted:
                    entries.append(
                        Entry(
                            service: here.service ?? "", account: here.account + name, path: childPath,
                            folder: here.index, name: rawName,
                            source: .file(
                                dev: UInt64(st.st_dev), ino: UInt64(st.st_ino), size: UInt64(max(0, st.st_size)),
                                follow: follow)))
                case S_IFLNK where wanted:
                    switch readLink(fd, rawName) {
                    case .success(let target):
                        entries.append(
                            Entry(
                                service: here.service ?? "", account: here.account + name, path: childPath,
                                folder: here.index, name: rawName,
                                source: .link(target: target, mtime: nanoseconds(st.st_mtim))))
                    case .failure(let reason): problems.append("\(childPath): \(reason)")
                    }
                case S_IFREG, S_IFLNK: continue
                default: if wanted { problems.append("\(childPath): not a regular file (device, FIFO or socket)") }
                }
            }
            // Pushed in reverse, so that they are visited in name order (the order problems are reported in).
            stack.append(contentsOf: children.reversed())
        }
        if let only {
            for path in only where !path.isEmpty && !found.contains(path.joined(separator: "/")) {
                throw CLIError(.io, "\(root)/\(path.joined(separator: "/")): no such file or folder (or excluded)")
            }
        }
        // A folder holds something stored if an entry is below it: children come after their parents in the
        // folder list, so going backwards settles every child before its parent.
        var holds = Set<Int>()
        func markAncestors(_ index: Int) {
            var i: Int? = index
            while let j = i, holds.insert(j).inserted { i = opener.folders[j].parent }
        }
        for e in entries { markAncestors(e.folder) }
        for index in unlisted { markAncestors(index) }
        for index in stride(from: opener.folders.count - 1, through: 1, by: -1) where !holds.contains(index) {
            guard let f = candidates[index], let service = f.service else { continue }
            entries.append(
                Entry(
                    service: service, account: String(f.account.dropLast()), path: f.path,
                    folder: opener.folders[index].parent ?? 0,
                    name: opener.folders[index].name, source: .folder(index: index)))
            markAncestors(index)
        }
        entries.sort { a, b in
            a.service != b.service
                ? a.service.utf8.lexicographicallyPrecedes(b.service.utf8)
                : a.account.utf8.lexicographicallyPrecedes(b.account.utf8)
        }
        return (entries, opener.folders, problems)
    }

    /// The target of the symbolic link `name` in the open folder `dir`, or why it cannot be stored.
    static func readLink(_ dir: Int32, _ name: String) -> Result<String, LinkProblem> {
        var buf = [UInt8](repeating: 0, count: PackedKind.linkTargetMax + 1)
        let n = readlinkat(dir, name, &buf, buf.count)
        guard n >= 0 else { return .failure(LinkProblem(String(cString: strerror(errno)))) }
        guard n <= PackedKind.linkTargetMax else {
            return .failure(LinkProblem("a symbolic link whose target is over \(PackedKind.linkTargetMax) bytes"))
        }
        guard n > 0, let target = String(validating: buf[0..<n], as: UTF8.self) else {
            return .failure(LinkProblem("a symbolic link whose target is not UTF-8"))
        }
        return .success(target)
    }

    struct LinkProblem: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
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

extension PackCommand {
    /// Creates a vault in the format `--format` asks for: version 2 (SPEC.md Part 4, the default) keyed as a
    /// keychain group is, with no attribute index (``Schema/packed``); or version 1 (Part 1).
    static func createVault(
        _ path: String, group: String, slots: [SlotSecret], options: WriteOptions, _ args: Arguments,
        _ body: (Transaction) throws -> Void
    ) throws {
        let format: NewVaultFormat
        switch args.value("format") ?? "2" {
        case "2": format = .current(schema: Schema.packed, writerID: WriterIdentity.current())
        case "1": format = .version1
        case let other: throw CLIError.usage("--format \(other): 1 or 2")
        }
        try Vault.create(
            path: path, group: group, slots: slots, format: format, options: options, overwrite: args.flag("force"),
            body)
    }
}
