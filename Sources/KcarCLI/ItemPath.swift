import VaultFormat

/// How an item is named in `list`, on the command line and on disk: `service/account`, each path component
/// percent-encoded where it would be unsafe (SPEC-independent, README "Item names").
enum ItemPath {
    /// `%` alone stands for an empty component; `.` and `..` become `%2E` and `%2E%2E`; `%`, control
    /// characters and (in the service) `/` become `%XX`.
    static func component(_ s: String, slash: Bool) -> String {
        if s.isEmpty { return "%" }
        if s == "." { return "%2E" }
        if s == ".." { return "%2E%2E" }
        return rebuild(s, slash: slash)
    }

    private static func rebuild(_ s: String, slash: Bool) -> String {
        var bytes: [UInt8] = []
        for b in s.utf8 {
            if b == 0x25 || b < 0x20 || b == 0x7F || (slash && b == 0x2F) {
                let digits = Array("0123456789ABCDEF".utf8)
                bytes += [0x25, digits[Int(b >> 4)], digits[Int(b & 15)]]
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The path components of an item, or nil for items that have no service and account strings.
    static func components(_ item: Item) -> [String]? {
        guard let s = item.service, let a = item.account else { return nil }
        return [component(s, slash: true)] + a.split(separator: "/", omittingEmptySubsequences: false).map {
            component(String($0), slash: false)
        }
    }

    /// The name `list` prints: the components joined with `/`, or `%id/<hex>` for items without
    /// service and account.
    static func name(_ item: Item) -> String {
        components(item)?.joined(separator: "/") ?? "%id/\(item.id)"
    }
}
