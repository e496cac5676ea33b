import KcarKeychain
import VaultFormat

/// The objects that `org.freedesktop.secrets` serves (SPEC.md §K10), as one handler of method calls: the
/// service (sessions, search, secrets, collection creation, the `default` alias, lock and unlock), its
/// collections (the keychain's groups: search, create item, properties) and their items (secret, attributes,
/// label, delete), the collections' deletion and the `default` alias's setting, and the signals of changes,
/// its own and (found by ``poll()``) other writers'. No call needs a prompt (SPEC.md §K10). Every call is
/// handled on the bus connection's thread.
package final class ServiceObjects {
    package static let servicePath = "/org/freedesktop/secrets"
    package static let sessionPrefix = servicePath + "/session/"
    package static let aliasPrefix = servicePath + "/aliases/"
    package static let serviceInterface = "org.freedesktop.Secret.Service"
    package static let sessionInterface = "org.freedesktop.Secret.Session"
    package static let collectionInterface = "org.freedesktop.Secret.Collection"
    package static let itemInterface = "org.freedesktop.Secret.Item"
    package static let propertiesInterface = "org.freedesktop.DBus.Properties"
    /// `SS_SESSIONS_MAX`: open sessions of one connection.
    package static let sessionsMax = 64

    /// An open session: the connection that opened it, and how it carries secrets.
    package struct Session {
        package let owner: String
        package let algorithm: SessionAlgorithm
        /// The encrypted session's keys (nil for `plain`).
        package let dh: DHSession?
    }

    private let random: RandomSource
    package let collections: KeychainCollections
    private var sessions: [String: Session] = [:]
    private var sessionsByOwner: [String: Int] = [:]
    private var nextSession: UInt64 = 1

    /// Sends a signal (path, interface, member, values): set by the daemon to its connection. A collection's
    /// ItemCreated, ItemChanged and ItemDeleted, the service's CollectionCreated and CollectionDeleted.
    package var emit: (String, String, String, [BusValue]) -> Void = { _, _, _, _ in }

    /// Signals a change this service made, and tells the watch (§K10 Signals) not to signal it again.
    private func itemSignal(_ member: String, _ item: KeychainItem) {
        collections.noteOwnChange(item.group, item.id)
        signal(
            member, collection: KeychainCollections.collectionPath(item.group), item: KeychainCollections.itemPath(item)
        )
    }

    /// Emits a change's signal (an item's on its collection, a collection's on the service), and the
    /// `PropertiesChanged` of the object whose properties it changes (a collection's Items, an item's
    /// Attributes, Label and Modified, the service's Collections), invalidated for clients that cache them.
    private func signal(_ member: String, collection: String, item: String?) {
        let s = ServiceObjects.self
        if let item {
            emit(collection, s.collectionInterface, member, [.objectPath(item)])
            if member == "ItemChanged" {
                invalidated(item, s.itemInterface, ["Attributes", "Label", "Modified"])
            } else {
                invalidated(collection, s.collectionInterface, ["Items"])
            }
        } else {
            emit(s.servicePath, s.serviceInterface, member, [.objectPath(collection)])
            invalidated(s.servicePath, s.serviceInterface, ["Collections"])
        }
    }

    private func invalidated(_ path: String, _ interface: String, _ names: [String]) {
        emit(
            path, ServiceObjects.propertiesInterface, "PropertiesChanged",
            [.string(interface), .properties([]), .array(element: "s", names.map { .string($0) })])
    }

    package init(collections: KeychainCollections, random: RandomSource = SystemRandom.shared) {
        self.collections = collections
        self.random = random
        collections.changed = { [unowned self] member, collection, item in
            signal(member, collection: collection, item: item)
        }
    }

    /// `SS_WATCH_INTERVAL`: seconds between two looks for other writers' changes.
    package static let watchInterval = 1.0

    /// Looks for other writers' changes and signals them (§K10 Signals); the daemon calls it every
    /// ``watchInterval``.
    package func poll() { collections.poll() }

    /// Handles one method call.
    package func handle(_ call: BusCall) -> Result<[BusValue], SecretServiceError> {
        do throws(SecretServiceError) {
            let call = try resolvingAlias(call)
            if call.interface == ServiceObjects.propertiesInterface { return .success(try properties(call)) }
            if call.path == ServiceObjects.servicePath, call.interface == ServiceObjects.serviceInterface {
                return .success(try service(call))
            }
            if call.path.hasPrefix(ServiceObjects.sessionPrefix), call.interface == ServiceObjects.sessionInterface,
                call.member == "Close", call.arguments.isEmpty
            {
                try close(call.path, by: call.sender)
                return .success([])
            }
            if let (group, id) = KeychainCollections.parse(call.path) {
                if id == nil, call.interface == ServiceObjects.collectionInterface {
                    return .success(try collection(group, call))
                }
                if id != nil, call.interface == ServiceObjects.itemInterface { return .success(try item(call)) }
            }
            throw unknownMethod(call)
        } catch {
            return .failure(error)
        }
    }

    /// A call to `/org/freedesktop/secrets/aliases/default` (and below) goes to the default group's collection,
    /// which an item created there creates (libsecret stores to the alias path).
    private func resolvingAlias(_ call: BusCall) throws(SecretServiceError) -> BusCall {
        guard call.path.hasPrefix(ServiceObjects.aliasPrefix) else { return call }
        let rest = call.path.dropFirst(ServiceObjects.aliasPrefix.count)
        let alias = rest.prefix { $0 != "/" }
        guard alias == "default" else { throw collections.noSuchObject(call.path) }
        let group = try defaultGroup()
        if call.member == "CreateItem", !collections.isServed(group) {
            try collections.createGroup(group)
            collections.noteOwnGroup(group)
            signal("CollectionCreated", collection: KeychainCollections.collectionPath(group), item: nil)
        }
        return BusCall(
            sender: call.sender, path: KeychainCollections.collectionPath(group) + rest.dropFirst(alias.count),
            interface: call.interface, member: call.member, arguments: call.arguments)
    }

    private func unknownMethod(_ call: BusCall) -> SecretServiceError {
        SecretServiceError(
            "org.freedesktop.DBus.Error.UnknownMethod",
            "no method \(call.interface.prefix(255)).\(call.member.prefix(255)) at \(call.path.prefix(300))")
    }

    private func arguments(_ call: BusCall, _ signature: String) throws(SecretServiceError) -> [BusValue] {
        guard call.arguments.map(\.signature).joined() == signature else {
            throw .invalidArgs("\(call.member) takes (\(signature))")
        }
        return call.arguments
    }

    // MARK: Service

    private func service(_ call: BusCall) throws(SecretServiceError) -> [BusValue] {
        switch call.member {
        case "OpenSession":
            return try openSession(call)
        case "SearchItems":
            let a = try arguments(call, "a{ss}")
            let found = try collections.search(try stringPairs(a[0]), group: nil)
            // Locked collections list no items (§K10 Locking): nothing is found locked.
            return [
                .array(element: "o", found.map { .objectPath(KeychainCollections.itemPath($0)) }),
                .array(element: "o", [])
            ]
        case "GetSecrets":
            let a = try arguments(call, "aoo")
            guard case .array(_, let paths) = a[0], let session = a[1].objectPath else { throw .invalidArgs("(aoo)") }
            let s = try self.session(session, of: call.sender)
            var entries: [BusValue.DictEntry] = []
            for case .objectPath(let path) in paths {
                // An item that is gone or locked is left out, as gnome-keyring does.
                guard let item = try? collections.item(at: path) else { continue }
                entries.append(.init(.objectPath(path), try secret(item, session: session, s)))
            }
            return [.dict(key: "o", value: "(oayays)", entries)]
        case "CreateCollection":
            let a = try arguments(call, "a{sv}s")
            guard case .dict(_, _, let properties) = a[0], let alias = a[1].string else {
                throw .invalidArgs("(a{sv}s)")
            }
            let label = properties.first { $0.key.string == "org.freedesktop.Secret.Collection.Label" }?.value
            // The `default` alias names the default group (K2.1), whatever the label says.
            let group: String
            if alias == "default" {
                group = try defaultGroup()
            } else if !alias.isEmpty {
                throw SecretServiceError("org.freedesktop.DBus.Error.NotSupported", "aliases other than default")
            } else if case .variant(.string(let l))? = label {
                group = l
            } else {
                throw .invalidArgs("CreateCollection needs a Label (the group's name) or the default alias")
            }
            let existed = collections.isServed(group)
            try collections.createGroup(group)
            let path = KeychainCollections.collectionPath(group)
            if !existed {
                collections.noteOwnGroup(group)
                signal("CollectionCreated", collection: path, item: nil)
            }
            return [.objectPath(path), .objectPath("/")]
        case "SetAlias":
            let a = try arguments(call, "so")
            guard a[0].string == "default" else {
                throw SecretServiceError(
                    "org.freedesktop.DBus.Error.NotSupported", "only the default alias can be set (SPEC.md K10)")
            }
            let path = a[1].objectPath!
            if path == "/" {
                try collections.setDefault(nil)
            } else {
                guard let (group, id) = KeychainCollections.parse(path), id == nil,
                    collections.isServed(group)
                else { throw collections.noSuchObject(path) }
                try collections.setDefault(group)
            }
            return []
        case "ReadAlias":
            let a = try arguments(call, "s")
            guard a[0].string == "default", let group = try? defaultGroup() else { return [.objectPath("/")] }
            return [
                .objectPath(collections.isServed(group) ? KeychainCollections.collectionPath(group) : "/")
            ]
        case "Unlock", "Lock":
            let a = try arguments(call, "ao")
            guard case .array(_, let paths) = a[0] else { throw .invalidArgs("(ao)") }
            let served = Set(try collections.groups())
            var groups: [String] = []
            var done: [BusValue] = []
            for case .objectPath(let path) in paths {
                guard let (group, _) = KeychainCollections.parse(path), served.contains(group) else { continue }
                groups.append(group)
                done.append(.objectPath(path))
            }
            if call.member == "Lock" { collections.lock(groups) } else { collections.unlock(groups) }
            // No prompt is ever needed (§K10 Locking).
            return [.array(element: "o", done), .objectPath("/")]
        default:
            throw unknownMethod(call)
        }
    }

    private func defaultGroup() throws(SecretServiceError) -> String {
        do { return try collections.store.defaultGroup() } catch {
            throw .failed("no default group: \(error)")
        }
    }

    // MARK: Collections and items

    private func collection(_ group: String, _ call: BusCall) throws(SecretServiceError) -> [BusValue] {
        guard collections.isServed(group) else { throw collections.noSuchObject(call.path) }
        switch call.member {
        case "SearchItems":
            let a = try arguments(call, "a{ss}")
            let found = try collections.search(try stringPairs(a[0]), group: group)
            return [.array(element: "o", found.map { .objectPath(KeychainCollections.itemPath($0)) })]
        case "CreateItem":
            let a = try arguments(call, "a{sv}(oayays)b")
            guard case .dict(_, _, let properties) = a[0], case .structure(let secretFields) = a[1],
                case .bool(let replace) = a[2]
            else { throw .invalidArgs("(a{sv}(oayays)b)") }
            var label = ""
            var attributes: [(String, String)] = []
            for p in properties {
                switch (p.key.string, p.value) {
                case ("org.freedesktop.Secret.Item.Label", .variant(.string(let l))): label = l
                case ("org.freedesktop.Secret.Item.Attributes", .variant(let d)): attributes = try stringPairs(d)
                default: break  // other properties are not kept (§K10)
                }
            }
            let (value, contentType) = try openSecret(secretFields, sender: call.sender)
            var v = value
            defer { wipe(&v) }
            let (item, replaced) = try collections.create(
                group: group, attributes: attributes, label: label, contentType: contentType, value: v,
                replace: replace)
            itemSignal(replaced ? "ItemChanged" : "ItemCreated", item)
            return [.objectPath(KeychainCollections.itemPath(item)), .objectPath("/")]
        case "Delete":
            _ = try arguments(call, "")
            try collections.deleteGroup(group)
            signal("CollectionDeleted", collection: KeychainCollections.collectionPath(group), item: nil)
            return [.objectPath("/")]
        default:
            throw unknownMethod(call)
        }
    }

    private func item(_ call: BusCall) throws(SecretServiceError) -> [BusValue] {
        let item = try collections.item(at: call.path)
        switch call.member {
        case "GetSecret":
            let a = try arguments(call, "o")
            let session = a[0].objectPath!
            return [try secret(item, session: session, try self.session(session, of: call.sender))]
        case "SetSecret":
            let a = try arguments(call, "(oayays)")
            guard case .structure(let fields) = a[0] else { throw .invalidArgs("((oayays))") }
            var (value, contentType) = try openSecret(fields, sender: call.sender)
            defer { wipe(&value) }
            try collections.change(item, value: value, contentType: contentType)
            itemSignal("ItemChanged", item)
            return []
        case "Delete":
            _ = try arguments(call, "")
            try collections.delete(item)
            itemSignal("ItemDeleted", item)
            return [.objectPath("/")]
        default:
            throw unknownMethod(call)
        }
    }

    /// An item's secret for a session: `(session, parameters, value, content type)`.
    private func secret(_ item: KeychainItem, session path: String, _ s: Session) throws(SecretServiceError)
        -> BusValue
    {
        var value = try collections.value(of: item)
        defer { wipe(&value) }
        let contentType = KeychainCollections.contentType(item, value: value)
        guard let dh = s.dh else {
            return .structure([.objectPath(path), .bytes([]), .bytes(value), .string(contentType)])
        }
        let sealed = value.withUnsafeBytes { dh.encrypt($0, random: random) }
        return .structure([.objectPath(path), .bytes(sealed.iv), .bytes(sealed.value), .string(contentType)])
    }

    /// A secret a client sent, `(session, parameters, value, content type)`, opened with its session.
    private func openSecret(_ fields: [BusValue], sender: String) throws(SecretServiceError) -> ([UInt8], String) {
        guard fields.count == 4, let path = fields[0].objectPath, case .bytes(let parameters) = fields[1],
            case .bytes(let value) = fields[2], let contentType = fields[3].string
        else { throw .invalidArgs("a secret is (oayays)") }
        guard value.count <= KeychainCollections.secretMax + 16 else {
            throw .invalidArgs("a secret of \(value.count) bytes (SS_SECRET_MAX is \(KeychainCollections.secretMax))")
        }
        let s = try session(path, of: sender)
        guard let dh = s.dh else {
            guard parameters.isEmpty else { throw .invalidArgs("a plain session's secret has no parameters") }
            return (value, contentType)
        }
        let plain = try dh.decrypt(iv: parameters, value: value)
        return (plain.withUnsafeBytes { Array($0) }, contentType)
    }

    private func stringPairs(_ value: BusValue) throws(SecretServiceError) -> [(String, String)] {
        guard case .dict("s", "s", let entries) = value else { throw .invalidArgs("attributes are a{ss}") }
        guard entries.count <= Limits.attrsMax else {
            throw .invalidArgs("\(entries.count) attributes (ATTRS_MAX is \(Limits.attrsMax))")
        }
        return entries.map { ($0.key.string ?? "", $0.value.string ?? "") }
    }

    // MARK: Properties

    private func properties(_ call: BusCall) throws(SecretServiceError) -> [BusValue] {
        switch call.member {
        case "Get":
            let a = try arguments(call, "ss")
            let all = try propertyValues(call.path, interface: a[0].string!)
            guard let v = all.first(where: { $0.0 == a[1].string! }) else {
                throw SecretServiceError(
                    "org.freedesktop.DBus.Error.UnknownProperty", "no property \(a[1].string!.prefix(255))")
            }
            return [.variant(v.1)]
        case "GetAll":
            let a = try arguments(call, "s")
            return [.properties(try propertyValues(call.path, interface: a[0].string!))]
        case "Set":
            let a = try arguments(call, "ssv")
            guard case .variant(let v) = a[2] else { throw .invalidArgs("(ssv)") }
            switch (a[0].string!, a[1].string!) {
            case (ServiceObjects.itemInterface, "Label"):
                guard let label = v.string else { throw .invalidArgs("Label is a string") }
                let item = try collections.item(at: call.path)
                try collections.change(item, label: label)
                itemSignal("ItemChanged", item)
            case (ServiceObjects.itemInterface, "Attributes"):
                let item = try collections.item(at: call.path)
                try collections.change(item, attributes: try stringPairs(v))
                itemSignal("ItemChanged", item)
            case (ServiceObjects.collectionInterface, "Label"):
                throw SecretServiceError(
                    "org.freedesktop.DBus.Error.NotSupported",
                    "a collection's label is its group's name (SPEC.md K10)")
            default:
                throw SecretServiceError("org.freedesktop.DBus.Error.PropertyReadOnly", "not a writable property")
            }
            return []
        default:
            throw unknownMethod(call)
        }
    }

    /// The properties of the object at `path` for `interface`.
    private func propertyValues(_ path: String, interface: String) throws(SecretServiceError) -> [(String, BusValue)] {
        if path == ServiceObjects.servicePath, interface == ServiceObjects.serviceInterface {
            let paths = try collections.groups().map { BusValue.objectPath(KeychainCollections.collectionPath($0)) }
            return [("Collections", .array(element: "o", paths))]
        }
        guard let (group, id) = KeychainCollections.parse(path), collections.isServed(group) else {
            throw collections.noSuchObject(path)
        }
        if id == nil, interface == ServiceObjects.collectionInterface {
            let items =
                collections.isLocked(group)
                ? []
                : try collections.search([], group: group).map { BusValue.objectPath(KeychainCollections.itemPath($0)) }
            let dir = collections.store.directory.path + "/" + KeychainDirectory.stem(group)
            return [
                ("Items", .array(element: "o", items)), ("Label", .string(group)),
                ("Locked", .bool(collections.isLocked(group))),
                ("Created", .uint64(UInt64(max(FileVersion(dir + ".key").mtime, 0)))),
                ("Modified", .uint64(UInt64(max(FileVersion(dir + ".kcv").mtime, 0))))
            ]
        }
        if id != nil, interface == ServiceObjects.itemInterface {
            let item = try collections.item(at: path)
            return [
                ("Locked", .bool(false)),
                ("Attributes", .stringDict(KeychainCollections.secretAttributes(item))),
                ("Label", .string(KeychainCollections.label(item))),
                ("Created", .uint64(KeychainCollections.seconds(item, AttributeName.creationDate))),
                ("Modified", .uint64(KeychainCollections.seconds(item, AttributeName.modificationDate)))
            ]
        }
        throw SecretServiceError("org.freedesktop.DBus.Error.UnknownInterface", "no interface \(interface.prefix(255))")
    }

    /// The session at `path` if the connection `sender` opened it; else *NoSession*.
    package func session(_ path: String, of sender: String) throws(SecretServiceError) -> Session {
        guard let s = sessions[path], s.owner == sender else {
            throw SecretServiceError("org.freedesktop.Secret.Error.NoSession", "no session \(path) of this connection")
        }
        return s
    }

    /// Closes the sessions of a connection that left the bus.
    package func connectionLeft(_ name: String) {
        guard sessionsByOwner[name] != nil else { return }
        sessions = sessions.filter { $0.value.owner != name }
        sessionsByOwner[name] = nil
    }

    /// Open sessions, of every connection.
    package var sessionCount: Int { sessions.count }

    private func openSession(_ call: BusCall) throws(SecretServiceError) -> [BusValue] {
        guard call.arguments.count == 2, case .string(let name) = call.arguments[0],
            case .variant(let input) = call.arguments[1]
        else { throw .invalidArgs("OpenSession takes (sv)") }
        guard let algorithm = SessionAlgorithm(rawValue: name) else {
            throw SecretServiceError(
                "org.freedesktop.DBus.Error.NotSupported",
                "the algorithm \(name.prefix(64)) (plain and \(SessionAlgorithm.dhAES.rawValue) are)")
        }
        guard sessionsByOwner[call.sender, default: 0] < ServiceObjects.sessionsMax else {
            throw .failed("this connection has \(ServiceObjects.sessionsMax) sessions open (SS_SESSIONS_MAX)")
        }
        let output: BusValue
        let dh: DHSession?
        switch algorithm {
        case .plain:
            (output, dh) = (.string(""), nil)
        case .dhAES:
            guard case .bytes(let clientPublic) = input else {
                throw .invalidArgs("the input of \(algorithm.rawValue) is the client's public value, ay")
            }
            let session = try DHSession(clientPublic: clientPublic, random: random)
            (output, dh) = (.bytes(session.servicePublic), session)
        }
        let path = ServiceObjects.sessionPrefix + "s\(nextSession)"
        nextSession += 1
        sessions[path] = Session(owner: call.sender, algorithm: algorithm, dh: dh)
        sessionsByOwner[call.sender, default: 0] += 1
        return [.variant(output), .objectPath(path)]
    }

    private func close(_ path: String, by sender: String) throws(SecretServiceError) {
        _ = try session(path, of: sender)
        sessions[path] = nil
        sessionsByOwner[sender, default: 1] -= 1
        if sessionsByOwner[sender] == 0 { sessionsByOwner[sender] = nil }
    }
}

/// Serves ``ServiceObjects`` on a bus: owns `org.freedesktop.secrets`, hands it every call to its paths, and
/// closes a connection's sessions when its name leaves the bus.
package final class SecretServiceDaemon {
    package static let busName = "org.freedesktop.secrets"
    package let connection: BusConnection
    package let objects: ServiceObjects

    /// Connects to the bus at `address` (nil: the session bus) and takes the name (`replace`: from a current
    /// owner, as `--replace` asks).
    package init(address: String? = nil, replace: Bool = false, objects: ServiceObjects) throws(SecretServiceError) {
        connection = try BusConnection(address: address)
        self.objects = objects
        objects.emit = { [weak connection] path, interface, member, values in
            try? connection?.emit(path: path, interface: interface, member: member, values)
        }
        try connection.serve(prefix: ServiceObjects.servicePath) { [objects] in objects.handle($0) }
        try connection.watch(
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'"
        ) { [objects] signal in
            guard signal.arguments.count == 3, case .string(let name) = signal.arguments[0],
                case .string(let newOwner) = signal.arguments[2], newOwner.isEmpty
            else { return }
            objects.connectionLeft(name)
        }
        let lost = nameLost
        try connection.watch(
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameLost',"
                + "arg0='\(SecretServiceDaemon.busName)'"
        ) { _ in lost.value = true }
        try connection.requestName(SecretServiceDaemon.busName, replace: replace)
    }

    /// Set when another program took the name (`--replace`): the daemon then stops serving.
    private let nameLost = Flag()

    private final class Flag {
        var value = false
    }

    /// Whether another program took the bus name.
    package var replaced: Bool { nameLost.value }

    /// Serves calls until `stop` returns true (checked at least every `tick` seconds) or the name is taken
    /// by another program, and looks for other writers' changes every `watch` seconds.
    package func run(tick: Double = 0.2, watch: Double = ServiceObjects.watchInterval, until stop: () -> Bool)
        throws(SecretServiceError)
    {
        var lastPoll = ContinuousClock.now
        objects.poll()
        while !stop() && !nameLost.value {
            try connection.process(timeout: min(tick, watch))
            if ContinuousClock.now - lastPoll >= .seconds(watch) {
                objects.poll()
                lastPoll = ContinuousClock.now
            }
        }
    }
}
