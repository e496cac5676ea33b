import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The Secret Service's collections and items over a keychain, as SPEC.md §K10 maps them: a collection is a
/// group, an item a `genp` item of it whose string user attributes are the API's attributes. No D-Bus here:
/// object paths in, values and errors out.
package final class KeychainCollections {
    package static let collectionPrefix = ServiceObjects.servicePath + "/collection/"
    /// libsecret's attribute naming an item's schema, and the one an item stored without it gets.
    package static let schemaAttribute = "xdg:schema"
    package static let genericSchema = "org.freedesktop.Secret.Generic"
    /// `SS_SECRET_MAX`: bytes of a secret a client may store.
    package static let secretMax = 1 << 20

    package let store: KeychainStore
    /// Groups that `Lock` locked (their keys dropped); `Unlock` takes them out.
    private var lockedGroups = Set<String>()

    package init(store: KeychainStore) {
        self.store = store
    }

    // MARK: Paths

    /// A group's path element (§K10): ASCII letters and digits kept, every other byte `_` and two lowercase
    /// hex digits.
    package static func pathElement(_ group: String) -> String {
        var out = ""
        for b in group.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.unicodeScalars.append(UnicodeScalar(b))
            default:
                out += "_" + String(b >> 4, radix: 16) + String(b & 0xF, radix: 16)
            }
        }
        return out
    }

    /// The group a path element names, or nil if it is not one that ``pathElement(_:)`` makes.
    package static func group(element: Substring) -> String? {
        var bytes: [UInt8] = []
        var i = element.utf8.startIndex
        let u = element.utf8
        while i < u.endIndex {
            let b = u[i]
            if b == UInt8(ascii: "_") {
                let h = u.index(after: i)
                guard h < u.endIndex, u.index(after: h) < u.endIndex,
                    let v = UInt8(String(element[h..<u.index(h, offsetBy: 2)]), radix: 16),
                    element[h..<u.index(h, offsetBy: 2)].allSatisfy({ $0.isHexDigit && !$0.isUppercase })
                else { return nil }
                bytes.append(v)
                i = u.index(h, offsetBy: 2)
            } else {
                bytes.append(b)
                i = u.index(after: i)
            }
        }
        guard let g = String(validating: bytes, as: UTF8.self), pathElement(g) == element else { return nil }
        return g
    }

    package static func collectionPath(_ group: String) -> String { collectionPrefix + pathElement(group) }

    package static func itemPath(_ item: KeychainItem) -> String {
        collectionPath(item.group) + "/" + Hex.encode(item.id.bytes)
    }

    /// What a path under the collections names: a group, and an item id if it names an item.
    package static func parse(_ path: String) -> (group: String, item: ItemID?)? {
        guard path.hasPrefix(collectionPrefix) else { return nil }
        let parts = path.dropFirst(collectionPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let group = group(element: parts[0]) else { return nil }
        guard parts.count == 2 else { return (group, nil) }
        guard parts[1].utf8.count == 32, let bytes = Hex.decode(String(parts[1])), Hex.encode(bytes) == parts[1]
        else { return nil }
        return (group, ItemID(bytes))
    }

    // MARK: Collections

    /// The groups served, in list order: the process's access groups that exist (§K2), found from the
    /// folder's names and the key files' modes without opening a vault, so that listing them never waits for
    /// a group's lock. A group that cannot be used (damaged, refused) is listed, and a call on it fails with
    /// the reason.
    package func groups() throws(SecretServiceError) -> [String] {
        try keychain { try store.accessGroups().filter(store.directory.exists) }
    }

    /// Whether `group` is one of ``groups()``, without listing the folder: its vault exists and it is in the
    /// explicit list, or (the implicit list) its key is readable. What every call on one collection or item
    /// asks (GetSecrets of many items asks it per item).
    package func isServed(_ group: String) -> Bool {
        guard store.directory.exists(group) else { return false }
        if let list = store.explicitGroups { return list.contains(group) }
        return store.directory.canRead(group)
    }

    package func isLocked(_ group: String) -> Bool { lockedGroups.contains(group) }

    /// `Delete` of a collection: the group's files (SPEC.md §K10), if this user may.
    package func deleteGroup(_ group: String) throws(SecretServiceError) {
        guard !isLocked(group) else { throw isLockedError(KeychainCollections.collectionPath(group)) }
        try keychain { try store.deleteGroup(group) }
        if kept?.group == group { kept = nil }
        if found?.group == group { found = nil }
        watched[group] = nil
        seenGroups?.removeAll { $0 == group }
    }

    /// `SetAlias("default", group)`: the keychain's recorded default group (nil: none), for its owner only.
    package func setDefault(_ group: String?) throws(SecretServiceError) {
        guard store.explicitGroups == nil else {
            throw SecretServiceError(
                "org.freedesktop.DBus.Error.NotSupported",
                "the default collection is the first group of KCAR_ACCESS_GROUPS (SPEC.md K2.1)")
        }
        let owner = try keychain { try store.directory.trust()?.owner }
        guard owner == nil || owner == geteuid() else {
            throw SecretServiceError(
                "org.freedesktop.DBus.Error.AccessDenied", "only the keychain folder's owner sets its default group")
        }
        try keychain {
            if let group { try store.directory.setDefaultGroup(group) } else { try store.directory.clearDefaultGroup() }
        }
    }

    // MARK: Other writers' changes

    /// What the daemon last saw of a group whose items it listed (§K10 Signals): its vault file, each `genp`
    /// item's hash (attributes and value size), and the ids of its own changes since, which it signalled.
    private struct Watched {
        var version: FileVersion
        var items: [ItemID: Int]
        var own: Set<ItemID> = []
    }

    private var watched: [String: Watched] = [:]
    private var seenGroups: [String]?
    private var ownGroups = Set<String>()

    /// Signals a change this service did not make: a member (`ItemCreated`, `ItemChanged`, `ItemDeleted`,
    /// `CollectionCreated`, `CollectionDeleted`), the collection, and the item path for an item's.
    package var changed: (_ member: String, _ collection: String, _ item: String?) -> Void = { _, _, _ in }

    /// The service changed (and signalled) this item itself.
    package func noteOwnChange(_ group: String, _ id: ItemID) { watched[group]?.own.insert(id) }

    /// The service created (and signalled) this group itself.
    package func noteOwnGroup(_ group: String) { ownGroups.insert(group) }

    /// Looks for other writers' changes (every `SS_WATCH_INTERVAL`): groups that appeared or went, and the
    /// watched groups whose vault file changed, listed again and compared.
    package func poll() {
        if let now = try? groups() {
            if let before = seenGroups {
                let was = Set(before)
                let isNow = Set(now)
                for g in now where !was.contains(g) && !ownGroups.contains(g) {
                    changed("CollectionCreated", KeychainCollections.collectionPath(g), nil)
                }
                for g in before where !isNow.contains(g) {
                    watched[g] = nil
                    changed("CollectionDeleted", KeychainCollections.collectionPath(g), nil)
                }
            }
            seenGroups = now
            ownGroups = []
        }
        for (group, w) in watched {
            let version = FileVersion(store.directory.vaultPath(group))
            guard version != w.version else { continue }
            if isLocked(group) {
                watched[group] = nil
            } else if !KeychainCollections.isUnlocked(store.directory.vaultPath(group)) {
                // A writer holds the vault (committing, or holding it on purpose): looked at again at the next
                // look instead of waiting here, where every other call would wait too.
                continue
            } else if (try? listing(group)) == nil {
                // Not listed (its lock held past the timeout, or damaged): this change goes unsignalled, and
                // the next look waits only if the file changes again.
                watched[group]?.version = version
            }
        }
    }

    /// Whether no writer holds the vault file's lock now (a shared `flock` is free).
    static func isUnlocked(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return true }
        defer { close(fd) }
        return flock(fd, LOCK_SH | LOCK_NB) == 0
    }

    /// Compares a fresh listing of a watched group with what was seen, signals the differences, and watches
    /// the group from now on.
    private func compare(_ group: String, _ version: FileVersion, _ items: [ItemID: KeychainItem]) {
        let hashes = items.mapValues(\.hashValue)
        if let w = watched[group] {
            let collection = KeychainCollections.collectionPath(group)
            func path(_ id: ItemID) -> String { collection + "/" + Hex.encode(id.bytes) }
            for (id, h) in hashes.sorted(by: { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) })
            where !w.own.contains(id) {
                if let old = w.items[id] {
                    if old != h { changed("ItemChanged", collection, path(id)) }
                } else {
                    changed("ItemCreated", collection, path(id))
                }
            }
            for id in w.items.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) })
            where hashes[id] == nil && !w.own.contains(id) {
                changed("ItemDeleted", collection, path(id))
            }
        }
        watched[group] = Watched(version: version, items: hashes)
    }

    /// `CreateCollection`: the group, made as a first add makes it (K1) if it does not exist.
    package func createGroup(_ group: String) throws(SecretServiceError) {
        do {
            try Header.checkGroupName(group)
        } catch {
            throw .invalidArgs("a collection's label is its group's name: 1 to 255 bytes of UTF-8 without NUL")
        }
        try keychain { try store.transaction(group: group) { _ in } }
    }

    /// Locks the groups given: their keys are dropped (every open vault of the store is closed).
    package func lock(_ groups: [String]) {
        lockedGroups.formUnion(groups)
        for g in groups { watched[g] = nil }
        kept = nil
        found = nil
        store.close()
    }

    package func unlock(_ groups: [String]) {
        lockedGroups.subtract(groups)
    }

    // MARK: Items

    /// The `genp` items of `group` (nil: every unlocked group) that hold each attribute as a string user
    /// attribute of exactly that value.
    package func search(_ attributes: [(String, String)], group: String?) throws(SecretServiceError)
        -> [KeychainItem]
    {
        var names = Set<String>()
        for (name, value) in attributes {
            try KeychainCollections.checkAttribute(name, value)
            // A dictionary may repeat a key on the bus: which value would count is not defined.
            guard names.insert(name).inserted else { throw .invalidArgs("the attribute \(name.prefix(64)) twice") }
        }
        guard let group else {
            // Every collection: one that cannot be read (damaged, refused, rolled back) is skipped, as a search
            // of the implicit list skips it (SPEC.md K2), and said through ``warn``.
            var out: [KeychainItem] = []
            for g in try groups() {
                do { out += try search(attributes, group: g) } catch let e where e.groupLocal {
                    skipped(g, e)
                }
            }
            return out
        }
        guard !isLocked(group) else { return [] }
        let version = FileVersion(store.directory.vaultPath(group))
        if attributes.isEmpty || (kept?.group == group && kept?.version == version) {
            return KeychainCollections.select(attributes, from: try listing(group))
        }
        // Through the group's index (SPEC.md K5 on Part 4: user attributes are indexed): a lookup among many
        // items reads a path of pages instead of listing the group. What it finds is kept for the calls on
        // those items that follow (GetSecrets), while the vault file stays the same.
        var query = Attributes()
        for (name, value) in attributes { query[Schema.userPrefix + name] = .string(value) }
        let items = try keychain {
            try store.search(ItemQuery(class: .genericPassword, attributes: query, group: group))
        }
        .items
        if found?.group != group || found?.version != version
            || (found?.items.count ?? 0) > KeychainCollections.foundMax
        {
            found = (group, version, [:])
        }
        for item in items { found?.items[item.id] = item }
        return items
    }

    /// Says once, per group and message, that a search of every collection skipped a group.
    private func skipped(_ group: String, _ error: SecretServiceError) {
        guard warned.count < 1024, warned.insert(group + "\u{0}" + error.message).inserted else { return }
        warn("skipped group \(group.debugDescription): \(error.message)")
    }

    private var warned = Set<String>()

    /// Where the daemon says what it skipped (its standard error).
    package var warn: (String) -> Void = { _ in }

    /// `SS_FOUND_MAX`: items found by searches that are kept for the calls that follow, at most.
    static let foundMax = 65_536

    /// Items that searches through the index found, of one group and vault file.
    private var found: (group: String, version: FileVersion, items: [ItemID: KeychainItem])?

    /// The items of a listing that hold each attribute as a string user attribute of exactly that value (its
    /// bytes), as a query of SPEC.md K5 selects them (an absent user attribute matches nothing, a
    /// synchronizable item only if asked for), in K5's order (service, account, id).
    static func select(_ attributes: [(String, String)], from listing: [ItemID: KeychainItem]) -> [KeychainItem] {
        let wanted = attributes.map { (name: Schema.userPrefix + $0.0, bytes: Array($0.1.utf8)) }
        func matches(_ item: KeychainItem) -> Bool {
            guard item.attributes["sync"] != .bool(true) else { return false }
            return wanted.allSatisfy { w in
                if case .string(let v) = item.attributes[w.name] { return v.utf8.elementsEqual(w.bytes) }
                return false
            }
        }
        func key(_ item: KeychainItem) -> ([UInt8], [UInt8], [UInt8]) {
            func text(_ name: String) -> [UInt8] {
                if case .string(let s) = item.attributes[name] { return Array(s.utf8) }
                return []
            }
            return (text(AttributeName.service), text(AttributeName.account), item.id.bytes)
        }
        return listing.values.filter(matches).map { (key($0), $0) }.sorted { a, b in
            a.0.0 != b.0.0
                ? a.0.0.lexicographicallyPrecedes(b.0.0)
                : a.0.1 != b.0.1 ? a.0.1.lexicographicallyPrecedes(b.0.1) : a.0.2.lexicographicallyPrecedes(b.0.2)
        }.map(\.1)
    }

    /// The item a path names; *NoSuchObject* if there is none, *IsLocked* if its collection is locked.
    package func item(at path: String) throws(SecretServiceError) -> KeychainItem {
        guard let (group, id) = KeychainCollections.parse(path), let id else { throw noSuchObject(path) }
        guard isServed(group) else { throw noSuchObject(path) }
        guard !isLocked(group) else { throw isLockedError(path) }
        if let found, found.group == group, let item = found.items[id],
            found.version == FileVersion(store.directory.vaultPath(group))
        {
            return item
        }
        guard let item = try listing(group)[id] else { throw noSuchObject(path) }
        return item
    }

    /// The `genp` items of one group by id, listed again only when its vault file changed (another inode, size
    /// or modification time: every commit appends, every rewrite is a new file), so that a call per item of a
    /// large group (GetSecrets of many paths, properties) does not list the group each time. One group's
    /// listing is kept at a time, as a search keeps one group's index (SPEC.md §K2).
    private var kept: (group: String, version: FileVersion, items: [ItemID: KeychainItem])?

    private func listing(_ group: String) throws(SecretServiceError) -> [ItemID: KeychainItem] {
        let version = FileVersion(store.directory.vaultPath(group))
        if let kept, kept.group == group, kept.version == version, version.exists { return kept.items }
        kept = nil
        let all = try keychain { try store.search(ItemQuery(class: .genericPassword, group: group)).items }
        let items = Dictionary(all.map { ($0.id, $0) }) { first, _ in first }
        kept = (group, version, items)
        compare(group, version, items)
        return items
    }

    /// Attribute pairs in the order of their names' UTF-8 bytes (the order kcar stores attributes in).
    static func byNameBytes(_ a: (String, String), _ b: (String, String)) -> Bool {
        a.0.utf8.lexicographicallyPrecedes(b.0.utf8)
    }

    /// An item's attributes as the API shows them: its string user attributes, by name.
    package static func secretAttributes(_ item: KeychainItem) -> [(String, String)] {
        item.userAttributes.compactMap { name, value in
            if case .string(let s) = value { return (name, s) }
            return nil
        }.sorted(by: byNameBytes)
    }

    package static func label(_ item: KeychainItem) -> String {
        if case .string(let s) = item.attributes[AttributeName.label] { return s }
        return ""
    }

    /// `cdat` or `mdat` in whole seconds (0 if absent).
    package static func seconds(_ item: KeychainItem, _ name: String) -> UInt64 {
        if case .date(let ns) = item.attributes[name], ns > 0 { return UInt64(ns / 1_000_000_000) }
        return 0
    }

    /// The content type of an item's value: `desc` if set, else `text/plain` for UTF-8, else
    /// `application/octet-stream`.
    package static func contentType(_ item: KeychainItem, value: [UInt8]) -> String {
        if case .string(let s) = item.attributes[AttributeName.description], !s.isEmpty { return s }
        return String(validating: value, as: UTF8.self) != nil ? "text/plain" : "application/octet-stream"
    }

    package func value(of item: KeychainItem) throws(SecretServiceError) -> [UInt8] {
        try keychain { try store.value(of: item) }
    }

    /// `CreateItem`: a new `genp` item (`svce` the `xdg:schema` attribute, `acct` its id), or with `replace`
    /// the first item whose string user attributes are exactly `attributes`, changed.
    package func create(
        group: String, attributes: [(String, String)], label: String, contentType: String, value: [UInt8],
        replace: Bool
    ) throws(SecretServiceError) -> (item: KeychainItem, replaced: Bool) {
        guard !isLocked(group) else { throw isLockedError(KeychainCollections.collectionPath(group)) }
        guard value.count <= KeychainCollections.secretMax else {
            throw .invalidArgs("a secret of \(value.count) bytes (SS_SECRET_MAX is \(KeychainCollections.secretMax))")
        }
        guard label.utf8.count <= Limits.attrValueMax, contentType.utf8.count <= Limits.attrValueMax else {
            throw .invalidArgs("a label or content type over \(Limits.attrValueMax) bytes")
        }
        var seen = Set<String>()
        for (name, value) in attributes {
            try KeychainCollections.checkAttribute(name, value)
            guard seen.insert(name).inserted else { throw .invalidArgs("the attribute \(name) twice") }
        }
        guard attributes.count <= Limits.attrsMax - 8 else {
            throw .invalidArgs("\(attributes.count) attributes (at most \(Limits.attrsMax - 8))")
        }
        // An item stored without a schema gets the generic one, as gnome-keyring gives it.
        let schemaGiven = seen.contains(KeychainCollections.schemaAttribute)
        let complete =
            schemaGiven
            ? attributes : attributes + [(KeychainCollections.schemaAttribute, KeychainCollections.genericSchema)]
        let wanted = complete.sorted(by: KeychainCollections.byNameBytes)
        return try keychain {
            try store.transaction(group: group) { tx in
                var changes: [String: AttributeValue?] = [
                    AttributeName.label: label.isEmpty ? nil : .string(label),
                    AttributeName.description: contentType.isEmpty ? nil : .string(contentType)
                ]
                if replace {
                    var a = Attributes()
                    for (n, v) in wanted { a[Schema.userPrefix + n] = .string(v) }
                    let candidates = try tx.find(ItemQuery(class: .genericPassword, attributes: a, group: group))
                    if let same = candidates.first(where: {
                        KeychainCollections.secretAttributes($0).elementsEqual(wanted) { $0 == $1 }
                    }) {
                        try tx.update([same.id], set: changes, value: value)
                        let now = try tx.find(ItemQuery(class: .genericPassword, attributes: a, group: group))
                        return (now.first { $0.id == same.id } ?? same, true)
                    }
                }
                for (n, v) in wanted { changes[Schema.userPrefix + n] = .string(v) }
                var a = Attributes()
                for case (let n, let v?) in changes { a[n] = v }
                let schema = wanted.first { $0.0 == KeychainCollections.schemaAttribute }?.1 ?? ""
                a[AttributeName.service] = .string(schema)
                // The primary key unique by construction: the account is a fresh random id (the item id is
                // the vault's to choose), so two items with the same attributes can be stored, as the API
                // allows.
                a[AttributeName.account] = .string(Hex.encode(SystemRandom.shared.bytes(16)))
                return (try tx.add(class: .genericPassword, attributes: a, value: value), false)
            }
        }
    }

    /// Changes an item: its value (and content type), its attributes (string user attributes replaced), its
    /// label; `mdat` moves.
    package func change(
        _ item: KeychainItem, value: [UInt8]? = nil, contentType: String? = nil, attributes: [(String, String)]? = nil,
        label: String? = nil
    ) throws(SecretServiceError) {
        guard !isLocked(item.group) else { throw isLockedError(KeychainCollections.itemPath(item)) }
        if let value, value.count > KeychainCollections.secretMax {
            throw .invalidArgs("a secret of \(value.count) bytes (SS_SECRET_MAX is \(KeychainCollections.secretMax))")
        }
        var changes: [String: AttributeValue?] = [:]
        if let contentType { changes[AttributeName.description] = contentType.isEmpty ? nil : .string(contentType) }
        if let label { changes[AttributeName.label] = label.isEmpty ? nil : .string(label) }
        if let attributes {
            for (name, v) in item.userAttributes where v.isString { changes[Schema.userPrefix + name] = .some(nil) }
            for (name, value) in attributes {
                try KeychainCollections.checkAttribute(name, value)
                changes[Schema.userPrefix + name] = .string(value)
            }
        }
        let changesMade = changes
        try keychain {
            try store.transaction(group: item.group) { tx in try tx.update([item.id], set: changesMade, value: value) }
        }
    }

    package func delete(_ item: KeychainItem) throws(SecretServiceError) {
        guard !isLocked(item.group) else { throw isLockedError(KeychainCollections.itemPath(item)) }
        try keychain { try store.transaction(group: item.group) { tx in try tx.delete(item.id) } }
    }

    // MARK: Errors

    /// An attribute a client may give (§K10 Bounds): a name of 1 to 254 bytes, a value of at most
    /// `ATTR_VALUE_MAX`.
    static func checkAttribute(_ name: String, _ value: String) throws(SecretServiceError) {
        guard (1...254).contains(name.utf8.count), !name.utf8.contains(0) else {
            throw .invalidArgs("an attribute name of \(name.utf8.count) bytes (1 to 254, no NUL)")
        }
        guard value.utf8.count <= Limits.attrValueMax else {
            throw .invalidArgs("the value of \(name.prefix(64)) is over \(Limits.attrValueMax) bytes")
        }
    }

    func noSuchObject(_ path: String) -> SecretServiceError {
        SecretServiceError("org.freedesktop.Secret.Error.NoSuchObject", "no object \(path.prefix(300))")
    }

    func isLockedError(_ path: String) -> SecretServiceError {
        SecretServiceError("org.freedesktop.Secret.Error.IsLocked", "\(path.prefix(300)) is locked")
    }

    /// Runs a keychain call, its errors as the API's: a duplicate or bad parameter *InvalidArgs*, anything
    /// else *Failed*, with kcar's message.
    private func keychain<T>(_ body: () throws -> T) throws(SecretServiceError) -> T {
        do { return try body() } catch let e as SecretServiceError {
            throw e
        } catch let e as KeychainError {
            if e.isGroupLocal {
                var failure = SecretServiceError.failed(e.message)
                failure.groupLocal = true
                throw failure
            }
            switch e.status {
            case .param, .duplicateItem: throw .invalidArgs(e.message)
            case .wrPerm: throw SecretServiceError("org.freedesktop.DBus.Error.AccessDenied", e.message)
            case .itemNotFound: throw SecretServiceError("org.freedesktop.Secret.Error.NoSuchObject", e.message)
            default: throw .failed(e.message)
            }
        } catch {
            throw .failed("\(error)")
        }
    }
}

extension AttributeValue {
    var isString: Bool {
        if case .string = self { return true }
        return false
    }
}
