import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar list` and `kcar extract`.
enum Extract {
    static func list(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("list"))
        var positionals = args.positionals
        if let group = args.value("group") {
            // `list VAULT --group G` gives the vault twice: a first word that is a file or ends in .kcv is taken as a
            // VAULT, not an ITEM (names of items are service/account; a name ending in .kcv can be given as %id/).
            if let first = positionals.first, first.hasSuffix(".kcv") || access(first, F_OK) == 0 {
                throw CLIError.usage(
                    "--group \(group) names the vault (the group's vault in the keychain): give VAULT \(first) or --group, not both"
                )
            }
            positionals.insert(try ItemCommands.groupVaultPath(args, group), at: 0)
        }
        guard let path = try positionals.first.map(StandardStreams.vaultInput) else {
            throw CLIError.usage("expected VAULT [ITEM...]")
        }
        // Streamed: a version 2 vault's items are read from its trees one page at a time, in key
        // order, never all held (a version 1 vault's index is in memory anyway). ITEM arguments select as
        // extract's do (tar tf ARCHIVE NAME...): only the selected items are held.
        let vault = try openVault(path, args, itemsOnDemand: true)
        let selected = positionals.count > 1 ? try select(vault, Array(positionals.dropFirst())) : nil
        func forEachItem(inOrder: Bool = true, _ body: (Item) throws -> Bool) throws {
            guard let selected else { return try vault.forEachItem(inOrder: inOrder, body) }
            for item in selected where try !body(item) { return }
        }
        if args.flag("json") {
            try JSON.printArray { element in
                try forEachItem { item in
                    element(json(item))
                    return true
                }
            }
        } else {
            // One line per item (a vault may hold millions): the widths are fixed first, SIZE's from the largest
            // size (a first pass over the items), MODIFIED's that of a date. The name is the last column, never
            // cut: it is what extract takes. A name's %XX encoding covers C0 controls only: C1 and
            // bidirectional controls are escaped here.
            // `--long` adds a MODE column (`-rw-r--r--`, as tar -tv prints it). A folder is named with a trailing
            // `/`, a link `name -> target`, as tar lists them.
            let long = args.flag("long")
            let columns: [Table.Column] =
                (long ? [.init(title: "MODE")] : []) + [
                    .init(title: "SIZE", rightAligned: true),
                    .init(title: "MODIFIED (UTC)"), .init(title: "NAME")
                ]
            var largest: UInt64 = 0
            try forEachItem(inOrder: false) { item in
                largest = max(largest, item.size)
                return true
            }
            let widths = (long ? [10] : []) + [max(4, String(largest).count), 20, 0]
            Output.out.line(Table.line(columns.map(\.title), widths, columns))
            try forEachItem { item in
                let kind = PackedKind.lenient(item)
                let cls = item.itemClass == .genericPassword ? "" : "  [\(terminalSafe(item.itemClass.rawValue))]"
                var name = terminalSafe(ItemPath.name(item))
                if case .link(let target) = kind.kind { name += " -> " + terminalSafe(target) }
                Output.out.line(
                    Table.line(
                        (long ? [kind.modeString] : []) + [
                            String(item.size), item.modified.map { tableDate(nanoseconds: $0) } ?? "-",
                            name + cls
                        ], widths, columns))
                return true
            }
        }
        return .success
    }

    /// An item as `list --json` prints it; an item with a kind or mode stored by pack (SPEC.md §7.1) also has
    /// `type` (file, folder or link), `mode` (octal, `"0640"`, or null) and a link's `target`.
    static func json(_ item: Item) -> String {
        var extra = [("name", JSON.string(ItemPath.name(item)))]
        let a = item.attributes
        if a[PackedKind.modeAttribute] != nil || a[PackedKind.linkAttribute] != nil
            || a[PackedKind.folderAttribute] != nil
        {
            let kind = PackedKind.lenient(item)
            switch kind.kind {
            case .file: extra.append(("type", JSON.string("file")))
            case .folder: extra.append(("type", JSON.string("folder")))
            case .link(let target): extra += [("type", JSON.string("link")), ("target", JSON.string(target))]
            }
            extra.append(
                (
                    "mode",
                    kind.mode.map { m in
                        let octal = String(m, radix: 8)
                        return JSON.string(String(repeating: "0", count: max(0, 4 - octal.count)) + octal)
                    } ?? "null"
                ))
        }
        return ItemJSON.object(
            id: item.id, class: item.itemClass, attributes: item.attributes, size: item.size, extra: extra)
    }

    /// `--stdout`: the value, streamed to a pipe or file. A terminal gets it as `get` gives it
    /// (``StandardStreams/writeValue(_:name:force:)``): text of at most 1 MiB unless --force, and a newline.
    static func printValue(_ vault: Vault, _ item: Item, force: Bool) throws {
        guard !force, Output.out.isTerminal else {
            var last: UInt8?
            try vault.read(item) { bytes in
                try Output.out.writeBytes(bytes)
                if let b = bytes.last { last = b }
            }
            if Output.out.isTerminal, last != 10 { Output.out.write("\n") }
            return
        }
        guard item.size <= UInt64(StandardStreams.terminalValueMax) else {
            throw StandardStreams.refusal(ItemPath.name(item))
        }
        var value = try vault.read(item)
        defer { wipe(&value) }
        try StandardStreams.writeValue(value, name: ItemPath.name(item), force: force)
    }

    static func run(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("extract"))
        var positionals = args.positionals
        if let group = args.value("group") { positionals.insert(try ItemCommands.groupVaultPath(args, group), at: 0) }
        guard let path = try positionals.first.map(StandardStreams.vaultInput) else {
            throw CLIError.usage("expected VAULT [ITEM...]")
        }
        let wanted = Array(positionals.dropFirst())
        // A version 2 vault's items are not all read at open: those selected are, in one scan of its trees.
        let vault = try openVault(path, args, itemsOnDemand: true)
        var selected = try select(vault, wanted)
        let deviceOnly = selected.filter { Schema.isDeviceOnly($0.attributes) }.count
        if deviceOnly > 0, !args.flag("include-device-only") {
            selected.removeAll { Schema.isDeviceOnly($0.attributes) }
            warn("left out \(count(deviceOnly, "ThisDeviceOnly item")) (--include-device-only exports them)")
            if selected.isEmpty { return .skipped }
        }
        if let file = args.value("items") {
            // One pass over the records, in file order, each decoded once (issue 9, item 14: reading the items
            // one by one decoded a shared record once per member), written as it is read.
            guard selected.count <= ItemFile.itemsMax else {
                throw CLIError.usage(
                    "\(selected.count) items: an item file holds at most \(ItemFile.itemsMax) (SPEC.md §K7); select fewer with ITEM arguments"
                )
            }
            let staged: StagedFile?
            if file == "-" {
                staged = nil
            } else {
                if !args.flag("force"), Keys.exists(file) {
                    throw CLIError(.exists, "\(file) exists (--force replaces it)")
                }
                staged = try StagedFile(file, mode: 0o600)
            }
            let writer = try ItemFile.Writer(group: vault.header.group) { bytes in
                if let staged { try staged.append(bytes) } else { try Output.out.writeBytes(bytes) }
            }
            try vault.readValues(
                of: selected, begin: { item, _ in try writer.begin(item) },
                bytes: { chunk in
                    try writer.value(chunk)
                    DebugSeam.pause("extract-writing")
                }, end: { _ in try writer.end() })
            try writer.finish()
            try staged?.place(force: args.flag("force"))
            return deviceOnly > 0 && !args.flag("include-device-only") ? .skipped : .success
        }
        if args.flag("stdout") {
            guard selected.count == 1, wanted.count == 1 else {
                throw CLIError.usage("--stdout takes exactly one ITEM")
            }
            try printValue(vault, selected[0], force: args.flag("force"))
            return .success
        }
        let dir = args.value("directory") ?? "."
        let listing = verboseListing(args, dataOnStdout: false)
        let writer = try SafeWriter(root: dir, force: args.flag("force"))
        let preserve = args.flag("preserve-permissions")
        var plan: [(item: Item, parts: [String], kind: PackedKind)] = []
        var skipped = 0
        for item in selected {
            guard let parts = ItemPath.components(item) else {
                warn("skipped item \(item.id): it has no service and account to name a file")
                skipped += 1
                continue
            }
            let name = parts.joined(separator: "/")
            // NAME_MAX: such an item cannot be a file here, like an item without a name (each reported).
            guard parts.allSatisfy({ $0.utf8.count <= 255 }) else {
                warn(
                    "skipped \(name): a path component is over 255 bytes, too long for a file name (--stdout reads it)")
                skipped += 1
                continue
            }
            let kind: PackedKind
            switch PackedKind.of(item.attributes) {
            case .success(let k): kind = k
            case .failure(let m):
                warn("skipped \(name): \(m.reason) (SPEC.md §7.1)")
                skipped += 1
                continue
            }
            // A link made by extract never leads out of DIR unless asked (--unsafe-links): a vault's `x -> /etc`
            // or `x -> ../../.ssh` is what a later write through the link, by anyone, would follow.
            if case .link(let target) = kind.kind, !args.flag("unsafe-links"),
                !PackedKind.isContained(target, at: parts)
            {
                warn(
                    "skipped \(name) -> \(target): the link would lead out of \(dir) (an absolute target, or .. past it or after "
                        + "a name); --unsafe-links creates it")
                skipped += 1
                continue
            }
            if kind.kind == .folder { try SafeWriter.checkNames(parts) } else { try writer.check(parts) }
            plan.append((item, parts, kind))
        }
        if let collision = Extract.collision(plan.map { ($0.parts, $0.kind.kind == .folder) }) {
            throw CLIError(.exists, collision.message(root: dir) + "; extract them one at a time with --stdout")
        }
        // Folders first (made 0700 until the end), then the files, then the links: every file is written
        // before any link exists, so none is ever written through a link the vault made.
        for p in plan where p.kind.kind == .folder {
            try writer.makeFolder(p.parts)
            listing?.line(terminalSafe(ItemPath.name(p.item)))
        }
        let files = plan.filter { $0.kind.kind == .file }
        // Sizes come from the index (each up to 2^48, unproven until read): summed without overflow.
        let progress = Progress(
            label: "extract",
            total: files.reduce(UInt64(0)) { sum, p in
                let (r, over) = sum.addingReportingOverflow(p.item.size)
                return over ? .max : r
            })
        defer { progress.finish() }
        let byID = Dictionary(uniqueKeysWithValues: files.map { ($0.item.id, $0) })
        var current: SafeWriter.Pending?
        defer { current?.abandon() }
        try vault.readValues(
            of: files.map(\.item),
            begin: { item, whole in
                let p = byID[item.id]!
                current = try writer.begin(p.parts, authenticated: whole, mode: p.kind.permissions(preserve: false))
            },
            bytes: { chunk in
                try current!.append(chunk)
                DebugSeam.pause("extract-writing")
                progress.advance(UInt64(chunk.count))
            },
            end: { item in
                let p = byID[item.id]!
                try current!.commit(modified: item.modified, mode: preserve ? p.kind.permissions(preserve: true) : nil)
                current = nil
                listing?.line(terminalSafe(p.parts.joined(separator: "/")))
            })
        for p in plan {
            guard case .link(let target) = p.kind.kind else { continue }
            try writer.makeLink(p.parts, target: target, modified: p.item.modified)
            listing?.line(terminalSafe(p.parts.joined(separator: "/")))
        }
        // Folders' modes (-p) and times last, deepest first: a folder made read-only, or its time, is not
        // changed again by what is written into it.
        for p in plan.filter({ $0.kind.kind == .folder }).sorted(by: { $0.parts.count > $1.parts.count }) {
            try writer.finishFolder(
                p.parts, mode: preserve ? p.kind.permissions(preserve: true) : nil, modified: p.item.modified)
        }
        return skipped == 0 && (deviceOnly == 0 || args.flag("include-device-only")) ? .success : .skipped
    }

    /// Two items that would be written to the same path, or one whose path another needs as a folder.
    struct Collision {
        let path: String
        let twice: Bool

        func message(root: String) -> String {
            twice
                ? "two items would be written to \(root)/\(path)"
                : "an item would be written to \(root)/\(path), which another item needs as a folder"
        }
    }

    /// The paths of files and folders, checked as they are added: a file's path is taken once, and is no
    /// folder of another; a folder's path (a folder item, or a folder on the way to an item) is no file's.
    /// A tree of names, each node its parent's child by the name's bytes, as the file system compares names
    /// (Swift's `String ==` would take NFC and NFD spellings, different files, for the same one): a path costs
    /// its number of components, however deep (a set of every prefix would cost the square of its length).
    /// After a collision the set is not to be used again.
    struct PathSet {
        private struct Edge: Hashable {
            let parent: Int
            let name: [UInt8]
        }
        private var nodes: [Edge: Int] = [:]
        /// Per node (0 is the root): a file's path, and whether it is a folder (a folder item, or something below it).
        private var file = [false]
        private var folder = [true]

        /// Adds `parts` (a folder's when `isFolder`); the collision it makes, if any.
        mutating func insert(_ parts: [String], folder isFolder: Bool) -> Collision? {
            var node = 0
            for (i, p) in parts.enumerated() {
                let edge = Edge(parent: node, name: Array(p.utf8))
                if let next = nodes[edge] {
                    node = next
                } else {
                    node = file.count
                    nodes[edge] = node
                    file.append(false)
                    folder.append(false)
                }
                let shown = { parts.prefix(i + 1).joined(separator: "/") }
                if i < parts.count - 1 || isFolder {
                    if file[node] { return Collision(path: shown(), twice: false) }
                    folder[node] = true
                } else {
                    if file[node] || folder[node] { return Collision(path: shown(), twice: file[node]) }
                    file[node] = true
                }
            }
            return nil
        }
    }

    /// The first collision among `paths` (each a folder's when its flag is set), before anything is written.
    static func collision(_ paths: [([String], Bool)]) -> Collision? {
        var set = PathSet()
        for (parts, folder) in paths {
            if let c = set.insert(parts, folder: folder) { return c }
        }
        return nil
    }

    /// Items named by `wanted` (a name as `list` prints it, or a service name, with or without a trailing
    /// slash, for all its items; a name without `/` also selects the top-level item of that name; a folder's name, with or without its trailing slash, for it and every item
    /// below it, as tar takes a folder), all if none. Names are decoded and compared with the attributes, so
    /// no name is built for items that are not asked for.
    static func select(_ vault: Vault, _ wanted: [String]) throws -> [Item] {
        guard !wanted.isEmpty else { return try matching(vault) { _ in true } }
        var out: [Item] = []
        var seen = Set<ItemID>()
        for w in wanted {
            var matches: [Item] = []
            // `svc/a/` names the folder svc/a (a file's name never ends with `/`: an empty last component is `%`).
            let name = w.hasSuffix("/") && w.dropLast().contains("/") ? String(w.dropLast()) : w
            if name.hasPrefix("%id/") {
                if let id = ItemID(hex: String(name.dropFirst(4))), let item = try vault.findItem(id) {
                    matches = [item]
                }
            } else if let (service, account) = ItemPath.parse(name) {
                // Bytewise: a name selects the item with exactly those bytes, not its other normalisations.
                func same(_ a: String?, _ b: String) -> Bool { a.map { $0.utf8.elementsEqual(b.utf8) } ?? false }
                func below(_ a: String?, _ folder: String) -> Bool {
                    a.map { $0.utf8.starts(with: folder.utf8) && $0.utf8.dropFirst(folder.utf8.count).first == 0x2F }
                        ?? false
                }
                // A name without `/` is also the top-level item of that name (SPEC.md §7.1), as list prints it.
                let topLevel = !w.contains("/") && !service.isEmpty ? service : nil
                matches = try matching(vault) { item in
                    same(item.service, service)
                        && (account.map { same(item.account, $0) || below(item.account, $0) } ?? true)
                        || topLevel.map { same(item.service, "") && same(item.account, $0) } ?? false
                }
                matches.sort { ($0.account ?? "").utf8.lexicographicallyPrecedes(($1.account ?? "").utf8) }
            }
            guard !matches.isEmpty else { throw CLIError(.notFound, "no item named \(w) (see `kcar list`)") }
            for m in matches where seen.insert(m.id).inserted { out.append(m) }
        }
        return out
    }

    /// The items for which `isMatch` holds, in ``Vault/forEachItem(_:)`` order: only they are kept.
    static func matching(_ vault: Vault, _ isMatch: (Item) -> Bool) throws -> [Item] {
        var out: [Item] = []
        try vault.forEachItem { item in
            if isMatch(item) { out.append(item) }
            return true
        }
        return out
    }

    static func pad(_ s: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - s.count)) + s }
}

extension String {
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(1, width - count)) }
}

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

/// Standard base64 (RFC 4648) for JSON output.
enum Base64 {
    static let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ data: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((data.count + 2) / 3 * 4)
        var i = 0
        while i < data.count {
            let n = min(3, data.count - i)
            append(data[i], n > 1 ? data[i + 1] : 0, n > 2 ? data[i + 2] : 0, count: n, to: &out)
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes standard, padded, canonical base64 (RFC 4648 §4, §3.5: the bits a padded group leaves over are
    /// zero, so that one value has one spelling); nil for anything else (no whitespace, no missing padding). The
    /// only base64 decoder of the CLI: item files and `--attr NAME:data=...` read alike.
    static func decode(_ text: [UInt8]) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt32? {
            switch c {
            case 0x41...0x5A: return UInt32(c - 0x41)
            case 0x61...0x7A: return UInt32(c - 0x47)
            case 0x30...0x39: return UInt32(c + 4)
            case 0x2B: return 62
            case 0x2F: return 63
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        var i = 0
        while i < text.count {
            let last = i + 4 == text.count
            let pad = last ? (text[i + 3] == 61 ? (text[i + 2] == 61 ? 2 : 1) : 0) : 0
            guard let a = value(text[i]), let b = value(text[i + 1]) else { return nil }
            let c = pad >= 2 ? 0 : value(text[i + 2])
            let d = pad >= 1 ? 0 : value(text[i + 3])
            guard let c, let d else { return nil }
            // Canonical: the bits of the last character that no output byte holds are zero.
            guard pad != 2 || b & 0xF == 0, pad != 1 || c & 0x3 == 0 else { return nil }
            let v = a << 18 | b << 12 | c << 6 | d
            out.append(UInt8(v >> 16))
            if pad < 2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if pad < 1 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        return out
    }

    /// Appends the four characters of one group of `count` (1...3) bytes, padded with `=`.
    @inline(__always)
    static func append(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, count: Int, to out: inout [UInt8]) {
        out.append(table[Int(b0 >> 2)])
        out.append(table[Int((b0 & 3) << 4 | b1 >> 4)])
        out.append(count > 1 ? table[Int((b1 & 15) << 2 | b2 >> 6)] : 61)
        out.append(count > 2 ? table[Int(b2 & 63)] : 61)
    }
}
