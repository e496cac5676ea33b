import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar extract`, and what `list` and `get` share with it: an item as JSON, a value printed, items selected by name.
enum ExtractCommand {
    /// An item as `list --json` prints it; an item with a kind or mode stored by pack (SPEC.md §7.1) also has
    /// `type` (file, folder or link), `mode` (octal, `"0640"`, or null) and a link's `target`.
    static func json(_ item: Item) -> String {
        var json = JSONBytes(capacity: 512)
        write(item, into: &json)
        return json.text
    }

    /// ``json(_:)`` appended to `json`.
    static func write(_ item: Item, into json: inout JSONBytes) {
        let a = item.attributes
        ItemJSON.write(id: item.id, class: item.itemClass, attributes: a, size: item.size, into: &json) {
            json, first in
            json.member("name", first: &first)
            ItemPath.writeName(item, into: &json)
            guard
                a[PackedKind.modeAttribute] != nil || a[PackedKind.linkAttribute] != nil
                    || a[PackedKind.folderAttribute] != nil
            else { return }
            let kind = PackedKind.lenient(item)
            json.member("type", first: &first)
            switch kind.kind {
            case .file: json.string("file")
            case .folder: json.string("folder")
            case .link(let target):
                json.string("link")
                json.member("target", first: &first)
                json.string(target)
            }
            json.member("mode", first: &first)
            if let m = kind.mode {
                let octal = String(m, radix: 8)
                json.string(String(repeating: "0", count: max(0, 4 - octal.count)) + octal)
            } else {
                json.raw("null")
            }
        }
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

    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("extract"))
        var positionals = args.positionals
        if let group = args.value("group") { positionals.insert(try ItemCommands.groupVaultPath(args, group), at: 0) }
        guard let path = try positionals.first.map(StandardStreams.vaultInput) else {
            throw CLIError.usage("expected VAULT [ITEM...]")
        }
        let wanted = Array(positionals.dropFirst())
        // A version 2 vault's items are not all read at open: those selected are, in one scan of its trees.
        let vault = try openVault(path, args, itemsOnDemand: true)
        // The items are read from the vault as this instance holds it: not looked up again to be read.
        let stamp = vault.indexStamp
        var selected = try select(vault, wanted)
        let deviceOnly = selected.filter { Schema.isDeviceOnly($0.attributes) }.count
        if deviceOnly > 0, !args.flag("include-device-only") {
            selected.removeAll { Schema.isDeviceOnly($0.attributes) }
            warn("left out \(count(deviceOnly, "ThisDeviceOnly item")) (--include-device-only exports them)")
            if selected.isEmpty { return .skipped }
        }
        if let file = args.value("items") {
            // One pass over the records, in file order, each decoded once (reading the items
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
                of: selected, givenAt: stamp, begin: { item, _ in try writer.begin(item) },
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
        if let collision = ExtractCommand.collision(plan.map { ($0.parts, $0.kind.kind == .folder) }) {
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
            of: files.map(\.item), givenAt: stamp,
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
    /// `throughIndex` false reads every item instead of the index's ranges (for the tests that hold the two to
    /// the same answer).
    static func select(_ vault: Vault, _ wanted: [String], throughIndex: Bool = true) throws -> [Item] {
        guard !wanted.isEmpty else { return try matching(vault) { _ in true } }
        var out: [Item] = []
        var seen = Set<ItemID>()
        for w in wanted {
            var matches: [Item] = []
            // `svc/a/` names the folder svc/a (a file's name never ends with `/`: an empty last component is `%`).
            let name = w.endsWithSlash && w.utf8.dropLast().contains(0x2F) ? String(w.utf8.dropLast())! : w
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
                let topLevel = !w.containsSlash && !service.isEmpty ? service : nil
                func isMatch(_ item: Item) -> Bool {
                    same(item.service, service)
                        && (account.map { same(item.account, $0) || below(item.account, $0) } ?? true)
                        || topLevel.map { same(item.service, "") && same(item.account, $0) } ?? false
                }
                if throughIndex, let index = vault.itemIndex {
                    // Every match has one of these services: the items tree's ranges of them, not every item
                    // (a name out of a million items read a few pages instead of the whole index).
                    matches = try index.items(
                        stringAttribute: AttributeName.service, among: topLevel == nil ? [service] : [service, ""]
                    ).filter(isMatch)
                } else {
                    matches = try matching(vault, isMatch)
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
