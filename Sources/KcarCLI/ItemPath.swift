import VaultFormat

/// How an item is named in `list`, on the command line and on disk: `service/account`, each path component
/// percent-encoded where it would be unsafe (SPEC-independent, README "Item names"); a top-level item (SPEC.md
/// §7.1: the empty service, a one-component account) by its account alone.
enum ItemPath {
    /// `%` alone stands for an empty component; `.` and `..` become `%2E` and `%2E%2E`; `%`, control
    /// characters and (in the service) `/` become `%XX`.
    static func component(_ s: String, slash: Bool) -> String {
        if s.isEmpty { return "%" }
        if s == "." { return "%2E" }
        if s == ".." { return "%2E%2E" }
        func unsafe(_ b: UInt8) -> Bool { b == 0x25 || b < 0x20 || b == 0x7F || (slash && b == 0x2F) }
        guard s.utf8.contains(where: unsafe) else { return s }
        let digits = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for b in s.utf8 {
            if unsafe(b) { bytes += [0x25, digits[Int(b >> 4)], digits[Int(b & 15)]] } else { bytes.append(b) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The inverse of ``component(_:slash:)``; nil for a malformed encoding.
    static func decode(_ c: String) -> String? {
        if c == "%" { return "" }
        var out: [UInt8] = []
        var it = Array(c.utf8)[...]
        while let b = it.popFirst() {
            guard b == 0x25 else {
                out.append(b)
                continue
            }
            guard it.count >= 2, let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16) else {
                return nil
            }
            out.append(v)
            it = it.dropFirst(2)
        }
        return String(validating: out, as: UTF8.self)
    }

    /// A name as `list` prints it, split into service and account (nil when it names a service only).
    static func parse(_ name: String) -> (service: String, account: String?)? {
        let parts = name.slashSeparated(maxSplits: 1)
        guard let service = decode(parts[0]) else { return nil }
        guard parts.count == 2, !parts[1].isEmpty else { return (service, nil) }
        var account: [String] = []
        for c in parts[1].slashSeparated() {
            guard let d = decode(c) else { return nil }
            account.append(d)
        }
        return (service, account.joined(separator: "/"))
    }

    /// The path components of an item, or nil for items that have no service and account strings. A folder
    /// item (SPEC.md §7.1) whose account is empty is its service's folder.
    static func components(_ item: Item) -> [String]? {
        guard let s = item.service, let a = item.account else { return nil }
        if a.isEmpty, isFolder(item) { return [component(s, slash: true)] }
        return components(service: s, account: a)
    }

    /// Whether an item of this service and account is a top-level item (SPEC.md §7.1): the empty service (pack's
    /// default service, for files directly in DIR) with an account of one non-empty component. It is named by its
    /// account alone and written directly in extract's folder.
    static func isTopLevel(service s: String, account a: String) -> Bool {
        s.isEmpty && !a.isEmpty && !a.utf8.contains(0x2F)
    }

    static func components(service s: String, account a: String) -> [String] {
        if isTopLevel(service: s, account: a) { return [component(a, slash: false)] }
        return [component(s, slash: true)]
            + a.slashSeparated().map { component($0, slash: false) }
    }

    /// Whether ``component(_:slash:)`` leaves every `/`-separated part of `s` as it is (with `slash`, `s` is one
    /// part): none empty, `.` or `..`, and no `%`, control character or (with `slash`) `/`.
    static func plain(_ s: String, slash: Bool) -> Bool {
        var length = 0
        var dots = 0  // of the current part
        func ordinary() -> Bool { length > 0 && !(length == dots && dots <= 2) }
        for b in s.utf8 {
            if b < 0x20 || b == 0x7F || b == 0x25 { return false }
            if b == 0x2F {
                guard !slash, ordinary() else { return false }
                (length, dots) = (0, 0)
                continue
            }
            length += 1
            if b == 0x2E { dots += 1 }
        }
        return ordinary()
    }

    static func isFolder(_ item: Item) -> Bool { item.attributes[PackedKind.folderAttribute] == .bool(true) }

    /// ``name(_:)`` appended to `json` as a JSON string, without making the name when it needs no encoding.
    static func writeName(_ item: Item, into json: inout JSONBytes) {
        if let s = item.service, let a = item.account, plain(s, slash: true), plain(a, slash: false), !isFolder(item) {
            return json.string(s, 0x2F, a)
        }
        json.string(name(item))
    }

    /// The name `list` prints: the components joined with `/` (and a `/` after a folder's), or `%id/<hex>`
    /// for items without service and account.
    static func name(_ item: Item) -> String {
        // Most names need no encoding (checked byte by byte: textconv names every item of a vault).
        if let s = item.service, let a = item.account, plain(s, slash: true), plain(a, slash: false), !isFolder(item) {
            return s + "/" + a
        }
        guard let parts = components(item) else { return "%id/\(item.id)" }
        return parts.joined(separator: "/") + (isFolder(item) ? "/" : "")
    }
}
