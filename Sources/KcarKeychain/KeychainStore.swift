import Dispatch
import Synchronization
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// SecItem semantics over a keychain directory (SPEC.md Part 3): add, find, update and delete items across
/// the process's access groups. Safe to use from any thread (operations are serialised) and any process
/// (vault locks: readers see whole commits, writers exclude each other, waits time out).
///
/// Every call blocks its thread: for another process's vault lock up to ``lockTimeout`` seconds (then
/// ``KeychainStatus/interactionNotAllowed``), for this store's other threads while their calls run, and on
/// the disk (a commit's fsyncs, a group's first open). From a Swift task, use ``async`` (`store.async.find(q)`),
/// which waits off the cooperative pool.
public final class KeychainStore: @unchecked Sendable {
    /// The folder of vaults and keys this store reads and writes.
    public let directory: KeychainDirectory
    /// The explicit access-group list, or nil for every group whose key file is readable (SPEC.md §K2).
    public let explicitGroups: [String]?
    /// Seconds to wait for another process's lock before ``KeychainStatus/interactionNotAllowed``.
    public let lockTimeout: Double
    let random: RandomSource
    /// Values per solid record in a keychain's vaults: reading one item decrypts and inflates its whole
    /// record, so records stay small (32 values of 64 bytes: 2.6 KiB with the member table), where a packed
    /// vault would fill 256 KiB. 50,000 items of 64 bytes imported: a repeated get on the open vault 57 µs at
    /// 256 members, 33 at 64, 29 at 32, 28 at 16; the file 0.1 %, 1.2 % and 2.3 % larger than at 256.
    static let solidMembers = 32
    /// Where the async variants run this store's calls (``KeychainStore/async``), off the cooperative pool.
    let blockingQueue = DispatchQueue(label: "kcar.keychain.store")
    private let mutex = Mutex(())
    /// The thread inside `locked`, so a call from inside a transaction fails instead of deadlocking.
    private let owner = Mutex<UInt?>(nil)
    private var opened: [String: OpenGroup] = [:]
    /// The writer its version 2 commits name (SPEC.md Part 4, V5): this user's, kept in the directory's state
    /// folder (``WriterIdentity``), read once, when the store first writes.
    private lazy var writerID: UInt64 = WriterIdentity.current(statePath: directory.statePath)

    final class OpenGroup {
        let vault: Vault
        let key: SecureBytes
        let trust: KeychainTrust
        let writable: Bool
        var checkedGeneration: UInt64
        /// The vault's reopenings when its generation was last checked: a file put back in its place (an older
        /// copy, of the same generation this store checked) is checked again (SPEC.md §K6).
        var checkedReopens = 0
        /// The primary-key index the last transaction left, valid while `vault.stateVersion` is `keysVersion`.
        var keys: [PrimaryKey: ItemID]?
        var keysVersion: UInt64 = 0
        /// Transactions run on the group through this store.
        var transactions = 0
        init(vault: Vault, key: SecureBytes, trust: KeychainTrust, writable: Bool) {
            self.vault = vault
            self.key = key
            self.trust = trust
            self.writable = writable
            checkedGeneration = vault.generation
            checkedReopens = vault.reopened
        }
    }

    /// - Parameters:
    ///   - directory: the keychain; nil is the default folder (``KeychainDirectory/defaultPath(environment:)``,
    ///     which refuses to guess when HOME is unset).
    ///   - accessGroups: the explicit list; nil reads `KCAR_ACCESS_GROUPS`, and without it every readable group.
    ///   - lockTimeout: how long, in seconds, a call waits for another process's lock on a group's vault.
    ///   - random: where new keys, item ids and nonces come from (the system's generator).
    public convenience init(
        directory: KeychainDirectory? = nil,
        accessGroups: [String]? = nil, lockTimeout: Double = 10, random: RandomSource = SystemRandom.shared
    ) throws {
        try self.init(
            directory: directory, accessGroups: accessGroups, lockTimeout: lockTimeout, random: random,
            program: KeychainStore.programGroup)
    }

    /// A store whose default group (§K2.1's last rule) is `program`'s, not this executable's: the daemon of
    /// `kcar secret-service` (`kcar-secret-service`) serves the keychain as the program `kcar`.
    package init(
        directory: KeychainDirectory?, accessGroups: [String]?, lockTimeout: Double,
        random: RandomSource = SystemRandom.shared, program: String?
    ) throws {
        self.program = program
        self.directory = try directory ?? KeychainDirectory(path: KeychainDirectory.defaultPath())
        if let accessGroups {
            explicitGroups = try KeychainStore.checked(accessGroups)
        } else if let env = KeychainDirectory.currentEnvironment()["KCAR_ACCESS_GROUPS"], !env.isEmpty {
            explicitGroups = try KeychainStore.parseGroupList(env)
        } else {
            explicitGroups = nil
        }
        self.lockTimeout = lockTimeout
        self.random = random
    }

    /// The group named after the running program (§K2.1).
    private let program: String?

    /// Splits a `,`-separated group list (`KCAR_ACCESS_GROUPS`, `--groups`).
    public static func parseGroupList(_ text: String) throws -> [String] {
        try checked(text.split(separator: ",", omittingEmptySubsequences: false).map(String.init))
    }

    private static func checked(_ groups: [String]) throws -> [String] {
        var seen = Set<[UInt8]>()
        let groups = groups.filter { seen.insert(Array($0.utf8)).inserted }  // a name given twice counts once
        for g in groups { try checkGroupName(g) }
        return groups
    }

    /// Throws ``KeychainStatus/param`` unless `group` is an access group name (1 to 255 bytes of UTF-8, no NUL).
    static func checkGroupName(_ group: String) throws {
        do { try Header.checkGroupName(group) } catch {
            throw KeychainError(.param, "access group names are 1 to 255 bytes of UTF-8 without NUL (got \"\(group)\")")
        }
    }

    private func locked<T>(_ body: () throws -> T) throws -> T {
        let me = UInt(pthread_self())
        if owner.withLock({ $0 }) == me {
            throw KeychainError(
                .param, "the keychain was called from inside one of its own transactions; use the transaction's methods"
            )
        }
        return try mutex.withLock { _ in
            owner.withLock { $0 = me }
            defer { owner.withLock { $0 = nil } }
            do { return try body() } catch { throw KeychainError.from(error) }
        }
    }

    // MARK: Access groups

    /// The process's access groups, in order (SPEC.md §K2).
    public func accessGroups() throws -> [String] {
        if let explicitGroups { return explicitGroups }
        let trust = try directory.trust()
        return try directory.groups().filter { directory.canRead($0, trust) }
    }

    /// Throws ``KeychainStatus/missingEntitlement`` unless the group is in the process's list.
    public func entitle(_ group: String) throws {
        if let explicitGroups {
            guard explicitGroups.contains(group) else {
                throw KeychainError(
                    .missingEntitlement,
                    "access group \(group) is not in this process's list (\(explicitGroups.joined(separator: ",")))")
            }
        }
    }

    /// The groups an operation reads: the one named, or every existing group of the list.
    func readScope(_ group: String?) throws -> [String] {
        if let group {
            try entitle(group)
            return directory.exists(group) ? [group] : []
        }
        return try accessGroups().filter(directory.exists)
    }

    /// The group an add writes to: the one named, or the default group.
    func writeTarget(_ group: String?) throws -> String {
        if let group {
            try entitle(group)
            return group
        }
        return try defaultGroup()
    }

    /// The group an add writes to when it names none (SPEC.md §K2.1), as iOS uses the first of an app's
    /// entitlements, else its app id: the first group of an explicit list; else the group the keychain's
    /// owner recorded with `kcar init --default-group G`; else the program's name (the file name of the
    /// running executable, `myapp` for `/usr/local/bin/myapp`).
    public func defaultGroup() throws -> String {
        if let first = explicitGroups?.first { return first }
        if let recorded = try directory.recordedDefaultGroup() { return recorded }
        guard let program else {
            throw KeychainError(
                .missingEntitlement,
                "no access group given and no default: name one, set KCAR_ACCESS_GROUPS, "
                    + "or record one with `kcar init --default-group G`")
        }
        return program
    }

    /// The running executable's file name, when it is an access group name (SPEC.md §K2.1).
    package static let programGroup: String? = {
        var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        var path =
            n > 0
            ? String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            : CommandLine.arguments.first ?? ""
        // An executable replaced while it runs reads "PATH (deleted)".
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        guard let name = path.split(separator: "/").last.map(String.init), (try? checkGroupName(name)) != nil else {
            return nil
        }
        return name
    }()

    /// The open vault of a group, caught up with other processes and checked against rollback.
    private func vault(_ group: String, write: Bool) throws -> Vault {
        if let g = opened[group], !write || g.writable {
            do {
                try g.vault.refresh()
            } catch {
                // Rekeyed, or replaced by another vault: open it afresh (once).
                opened[group] = nil
                return try vault(group, write: write)
            }
            if g.vault.generation != g.checkedGeneration || g.vault.reopened != g.checkedReopens {
                try directory.checkGeneration(g.vault, group: group, key: g.key, trust: g.trust)
                g.checkedGeneration = g.vault.generation
                g.checkedReopens = g.vault.reopened
            }
            return g.vault
        }
        // Every file is checked before it is used (SPEC.md §K1): the folder, then the key and the vault.
        let trust = try directory.requireTrust()
        let key = try directory.readKey(group, trust)
        try directory.checkVaultFile(group, trust)
        // A version 2 vault is opened with its items on demand: a search or an add reads a path of pages.
        let v = try Vault.open(
            path: directory.vaultPath(group), secret: .keyFile(key), mode: write ? .write : .read,
            lockTimeout: lockTimeout, itemsOnDemand: true, writerID: write ? writerID : nil)
        guard v.header.group == group else {
            throw KeychainError(.decode, "\(v.path) holds group \(v.header.group), not \(group)")
        }
        try directory.checkGeneration(v, group: group, key: key, trust: trust)
        opened[group] = OpenGroup(vault: v, key: key, trust: trust, writable: write)
        return v
    }

    /// The open vault of the group named, or of each group of the list; when none is named and the list is
    /// implicit, a group that cannot be used (unsafe, damaged, rolled back, not opened by its key) is skipped
    /// and reported instead (SPEC.md §K2).
    private func eachGroup(_ named: String?, _ skipped: inout [SkippedGroup], _ body: (String, Vault) throws -> Bool)
        throws
    {
        let mayskip = named == nil && explicitGroups == nil
        let scope = try readScope(named)
        for group in scope {
            let wasOpen = opened[group] != nil
            // Memory is bounded per group (each vault's index by CHAIN_INDEX_MAX), so a scan over several groups
            // keeps only the groups that were open before it: a keychain of many large groups (planted by a
            // member of a shared keychain) costs one group's index at a time, not their sum.
            defer { if scope.count > 1, !wasOpen { opened[group] = nil } }
            let v: Vault
            do {
                v = try vault(group, write: false)
            } catch {
                let e = KeychainError.from(error)
                guard mayskip, e.isGroupLocal else { throw e }
                opened[group] = nil
                skipped.append(SkippedGroup(group: group, error: e))
                continue
            }
            guard try body(group, v) else { return }
        }
    }

    /// Forgets open vaults (they are reopened on next use).
    public func close() {
        mutex.withLock { _ in opened = [:] }
    }

    // MARK: Reading

    /// The items that match, from the index only (no value is decrypted). With the implicit list, groups that
    /// cannot be used are skipped (``search(_:)`` names them); if one was skipped and nothing matched, its
    /// error is thrown, since "not found" could be wrong.
    public func find(_ query: ItemQuery) throws -> [KeychainItem] {
        let r = try search(query)
        if r.items.isEmpty, let first = r.skipped.first { throw first.error }
        return r.items
    }

    /// The items that match, and the groups of the implicit list skipped because they cannot be used
    /// (SPEC.md §K2): the result is complete only when none was.
    public func search(_ query: ItemQuery) throws -> SearchResult {
        try query.validate()
        return try locked { try searchLocked(query) }
    }

    private func searchLocked(_ query: ItemQuery) throws -> SearchResult {
        var out: [KeychainItem] = []
        var skipped: [SkippedGroup] = []
        try eachGroup(query.group, &skipped) { group, v in
            for item in try v.itemIndex.map({ try query.select(in: $0) }) ?? query.select(v.unorderedItems) {
                if let limit = query.limit, out.count >= limit { return false }
                out.append(KeychainItem(group: group, item))
            }
            return true
        }
        return SearchResult(items: out, skipped: skipped)
    }

    /// The value of an item found by ``find(_:)``.
    public func value(of item: KeychainItem) throws -> [UInt8] {
        try locked {
            try entitle(item.group)
            let v = try vault(item.group, write: false)
            guard let current = try v.current(item) else { throw KeychainError(.itemNotFound, "the item was deleted") }
            return try v.read(current)
        }
    }

    /// The values of items found by ``find(_:)``, in their order: one pass per group in which each record is
    /// decrypted and inflated once, however many of the items it holds (reading them one by one with
    /// ``value(of:)`` decrypts a shared record once per item). Throws ``KeychainStatus/itemNotFound`` if
    /// one was deleted since.
    public func values(of items: [KeychainItem]) throws -> [[UInt8]] {
        try locked { try valuesLocked(items) }
    }

    /// The items that match and their values, found and read under one lock, so no other thread of this
    /// process changes them in between (``find(_:)`` then ``values(of:)``).
    public func values(matching query: ItemQuery) throws -> [(item: KeychainItem, value: [UInt8])] {
        try query.validate()
        return try locked {
            let r = try searchLocked(query)
            if r.items.isEmpty, let first = r.skipped.first { throw first.error }
            return Array(zip(r.items, try valuesLocked(r.items)))
        }
    }

    private func valuesLocked(_ items: [KeychainItem]) throws -> [[UInt8]] {
        var positions: [String: [ItemID: [Int]]] = [:]
        var groups: [String] = []
        for (n, item) in items.enumerated() {
            if positions[item.group] == nil { groups.append(item.group) }
            positions[item.group, default: [:]][item.id, default: []].append(n)
        }
        var out = [[UInt8]](repeating: [], count: items.count)
        for group in groups {
            try entitle(group)
            let wasOpen = opened[group] != nil
            defer { if groups.count > 1, !wasOpen { opened[group] = nil } }  // one group's index at a time (§K2)
            let v = try vault(group, write: false)
            let wanted = positions[group] ?? [:]
            var asked: [ItemID: KeychainItem] = [:]
            for item in items where item.group == group { asked[item.id] = item }
            let current = try wanted.keys.sorted().map { id in
                guard let c = try v.current(asked[id]!) else {
                    throw KeychainError(.itemNotFound, "the item was deleted")
                }
                return c
            }
            var value: [UInt8] = []
            try v.readValues(
                of: current, begin: { _, _ in value = [] }, bytes: { value.append(contentsOf: $0) },
                end: { item in for n in wanted[item.id] ?? [] { out[n] = value } })
        }
        return out
    }

    /// Every group of the list that exists, with its item count. As ``find(_:)``, an unusable group of the
    /// implicit list is skipped, and its error thrown if no group could be counted.
    public func groupCounts() throws -> [(group: String, count: Int)] {
        let r = try groupSummary()
        if r.counts.isEmpty, let first = r.skipped.first { throw first.error }
        return r.counts
    }

    /// Every group of the list that exists, with its item count, and the groups skipped (SPEC.md §K2).
    public func groupSummary() throws -> (counts: [(group: String, count: Int)], skipped: [SkippedGroup]) {
        try locked {
            var counts: [(group: String, count: Int)] = []
            var skipped: [SkippedGroup] = []
            try eachGroup(nil, &skipped) { group, v in
                counts.append((group, v.count))
                return true
            }
            return (counts, skipped)
        }
    }

    /// Deletes a group (SPEC.md §K10 `Delete`): under the vault's lock, on the file its path still names, its
    /// vault, generation record and key are unlinked, in that order. In a shared keychain only a user who owns
    /// the three files, or the folder's owner, may (*wrPerm*). A shared copy (§K9) is not touched.
    public func deleteGroup(_ group: String) throws {
        try locked {
            try entitle(group)
            let trust = try directory.requireTrust()
            guard directory.exists(group) else {
                throw KeychainError(.itemNotFound, "access group \(group) does not exist in \(directory.path)")
            }
            let me = geteuid()
            if trust.sharedGroup != nil, me != 0, me != trust.owner {
                for file in [directory.vaultPath(group), directory.seenPath(group), directory.keyPath(group)] {
                    var st = stat()
                    guard lstat(file, &st) != 0 || st.st_uid == me else {
                        throw KeychainError(
                            .wrPerm,
                            "only the owner of \(file) (uid \(st.st_uid)) or of the keychain can delete \(group)")
                    }
                }
            }
            // The vault is checked as any reader checks it (its key and file trusted) before it is unlinked.
            _ = try directory.readKey(group, trust)
            try directory.checkVaultFile(group, trust)
            // The key file held exclusive to the end: a creator holds it shared from reading it until its vault
            // exists, so no new vault is made under the key about to be removed (SPEC.md §K10).
            guard let held = directory.holdKey(group, LOCK_EX, milliseconds: Int(lockTimeout * 1000)) else {
                throw KeychainError(
                    .interactionNotAllowed,
                    "lock timeout: the key of \(group) is held by another process, or was replaced")
            }
            defer { Glibc.close(held) }
            opened[group] = nil
            let path = directory.vaultPath(group)
            do {
                let file = try File.openReadWrite(path)
                try file.lock(exclusive: true, timeout: lockTimeout)
                guard try file.isStill(path) else {
                    throw KeychainError(
                        .io, "\(path) was replaced while \(group) was being deleted; nothing was deleted")
                }
                // Unlinked while the lock is held: a writer waiting for it then finds the path gone.
                guard unlink(path) == 0 else {
                    throw KeychainError(.io, "cannot delete \(path): \(String(cString: strerror(errno)))")
                }
            } catch let e as VaultError {
                throw KeychainError.from(e)
            }
            for file in [directory.seenPath(group), directory.keyPath(group)] where unlink(file) != 0 && errno != ENOENT
            {
                throw KeychainError(.io, "cannot delete \(file): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Pages of the group's version 2 vault read from its file since the store opened it (nil when it is not
    /// open, or is version 1): what tests and benchmarks count lookups by.
    package func pagesOpened(group: String) -> Int? {
        try? locked { opened[group]?.vault.itemIndex?.pagesOpened }
    }

    /// The open vault of a group, for the vault commands (`kcar list --keychain D --group G`), with its items
    /// in memory unless `loadingItems` is false (a command that only needs the group's checks: its files
    /// trusted, its key opens it, it is not rolled back).
    package func withVault<T>(
        group: String, write: Bool = false, loadingItems: Bool = true, _ body: (Vault) throws -> T
    ) throws -> T {
        try locked {
            try entitle(group)
            guard directory.exists(group) else {
                throw KeychainError(.itemNotFound, "access group \(group) does not exist in \(directory.path)")
            }
            let v = try vault(group, write: write)
            if loadingItems { try v.loadItems() }
            return try body(v)
        }
    }

    /// After a vault command on a group (`kcar rekey --group G`, ...) changed its file: in a shared keychain
    /// the file gets the group's mode back, and the generation record advances (SPEC.md §K6).
    package func finishVaultCommand(group: String) throws {
        try locked {
            opened[group] = nil
            let trust = try directory.requireTrust()
            directory.shareVault(group, trust)
            _ = try vault(group, write: false)
            opened[group] = nil
        }
    }

    // MARK: Writing

    /// Runs `body` as one transaction on one group: every change it makes is committed at once, or none.
    /// The group is created if it does not exist.
    public func transaction<T>(group: String? = nil, _ body: (GroupTransaction) throws -> T) throws -> T {
        try locked {
            let target = try writeTarget(group)
            if !directory.exists(target) { _ = try directory.createGroup(target, random: random) }
            let v = try upgradedVault(target)
            let g = opened[target]
            var result: T?
            var startVersion: UInt64 = 0
            var keys: [PrimaryKey: ItemID]?
            var unchanged = false
            // In the sticky shared folder only the vault's owner (or the folder's) can rename a compacted copy
            // over it: for anyone else an automatic compaction would only fail, so it is left to them (§K1.2).
            let mayCompact = g.map { directory.mayReplaceVault(target, $0.trust) } ?? true
            do {
                try v.commit(
                    options: WriteOptions(
                        autoCompact: mayCompact, lockTimeout: lockTimeout, solidMembers: KeychainStore.solidMembers),
                    random: random
                ) { tx in
                    // The commit has caught up with other writers: the kept index serves if nothing changed since.
                    startVersion = v.stateVersion
                    if let g, g.keysVersion == startVersion { swap(&keys, &g.keys) }
                    g?.keys = nil
                    let gt = GroupTransaction(
                        group: target, tx, vault: v, keys: keys, mayScan: (g?.transactions ?? 0) == 0)
                    defer { gt.end() }
                    g?.transactions += 1
                    keys = nil
                    do {
                        result = try body(gt)
                    } catch {
                        // A transaction that changed nothing before it failed (a refused add) leaves the index as it was.
                        unchanged = !gt.changed
                        if unchanged { keys = gt.takeKeys() }
                        throw error
                    }
                    keys = gt.takeKeys()
                }
            } catch {
                if let g, unchanged, v.stateVersion == startVersion {
                    g.keys = keys
                    g.keysVersion = startVersion
                }
                throw error
            }
            if let g {
                // Kept when the items are those of this transaction: one commit of it, or none (nothing changed).
                if v.stateVersion == startVersion || v.stateVersion == startVersion &+ 1 {
                    g.keys = keys
                    g.keysVersion = v.stateVersion
                }
                // An automatic compaction made a new file, with the owner's mode only.
                directory.shareVault(target, g.trust)
                try directory.checkGeneration(v, group: target, key: g.key, trust: g.trust)
                g.checkedGeneration = v.generation
            }
            return result!
        }
    }

    /// Upgrades the group's vault to format version 2 if it is version 1 (SPEC.md Part 4, V1), as its first
    /// change would: a sync (§K9) merges, which needs per-item versions.
    package func upgradeGroup(_ group: String) throws {
        try locked {
            try entitle(group)
            _ = try upgradedVault(group)
            opened[group] = nil
        }
    }

    /// The group's vault, open for writing, in format version 2: a version 1 vault (a keychain made by an
    /// earlier kcar) is upgraded before its first change (SPEC.md Part 4, V1), keeping its items, ids, key
    /// and slots, so that every later lookup reads a path of pages.
    private func upgradedVault(_ group: String) throws -> Vault {
        let v = try vault(group, write: true)
        guard !v.header.isCurrentFormat else { return v }
        do {
            try v.upgrade(schema: Schema.group, writerID: writerID, random: random)
        } catch let e as VaultError
            where e.code == .io && (try? Vault.inspect(path: directory.vaultPath(group)).header.isCurrentFormat) == true
        {
            // Another process upgraded it first (its first write at the same moment): open what it wrote.
        }
        if let g = opened.removeValue(forKey: group) { directory.shareVault(group, g.trust) }
        return try vault(group, write: true)
    }

    /// Adds an item (SecItemAdd). Throws ``KeychainStatus/duplicateItem`` if its primary key is taken.
    @discardableResult
    public func add(
        class itemClass: ItemClass = .genericPassword, attributes: Attributes, value: [UInt8],
        group: String? = nil
    ) throws -> KeychainItem {
        try transaction(group: group) { try $0.add(class: itemClass, attributes: attributes, value: value) }
    }

    /// Changes every matching item (SecItemUpdate): attributes set (nil removes one) and, if given, the value.
    /// Throws ``KeychainStatus/itemNotFound`` if nothing matches. Each group is one transaction: without a
    /// group, a failure in a later group leaves the changes to earlier groups committed.
    @discardableResult
    public func update(_ query: ItemQuery, set changes: [String: AttributeValue?] = [:], value: [UInt8]? = nil) throws
        -> Int
    {
        try eachMatching(query) { tx, ids in try tx.update(ids, set: changes, value: value) }
    }

    /// Deletes every matching item (SecItemDelete). Throws ``KeychainStatus/itemNotFound`` if nothing matches.
    @discardableResult
    public func delete(_ query: ItemQuery) throws -> Int {
        try eachMatching(query) { tx, ids in for id in ids { try tx.delete(id) } }
    }

    /// Runs `change` on the items matching `query`, one transaction per group of its scope, and returns how
    /// many matched (``KeychainStatus/itemNotFound`` if none). Like a search over several groups, it keeps
    /// only the groups that were open before it (SPEC.md §K2).
    private func eachMatching(_ query: ItemQuery, _ change: (GroupTransaction, [ItemID]) throws -> Void) throws -> Int {
        try query.validate()
        var total = 0
        let scope = try locked({ try readScope(query.group) })
        for group in scope {
            let wasOpen = try locked { opened[group] != nil }
            defer { if scope.count > 1, !wasOpen { _ = try? locked { opened[group] = nil } } }
            total += try transaction(group: group) { tx in
                let ids = try tx.find(query.unlimited).map(\.id)
                try change(tx, ids)
                return ids.count
            }
        }
        guard total > 0 else { throw KeychainError(.itemNotFound, "no item matches") }
        return total
    }

    /// Accepts the group's vault as it is now, whatever its generation record says (after a deliberate
    /// restore): the record is written afresh (SPEC.md §K6).
    public func acceptRollback(group: String) throws {
        try locked {
            try entitle(group)
            opened[group] = nil
            try directory.acceptRollback(group)
        }
    }
}

/// A group of the implicit list that a search skipped, and why (SPEC.md §K2).
public struct SkippedGroup: Sendable, Hashable {
    /// The access group.
    public let group: String
    /// Why it could not be used: its files are unsafe, it is damaged or rolled back, its key does not open it.
    public let error: KeychainError
}

/// What a search found, and which groups it could not look in.
public struct SearchResult: Sendable {
    /// The matching items of the groups searched, as ``KeychainStore/find(_:)`` orders them.
    public let items: [KeychainItem]
    /// Empty when every group of the list was searched.
    public let skipped: [SkippedGroup]
}

extension KeychainError {
    /// Whether the error is about one group's own files (unsafe, damaged, rolled back, not opened by its
    /// key), so that a search of the implicit list goes on without that group.
    package var isGroupLocal: Bool {
        reason == .unsafeFile || [.decode, .authFailed, .rolledBack].contains(status)
    }
}
