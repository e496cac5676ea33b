import VaultFormat

/// The objects that `org.freedesktop.secrets` serves (SPEC.md §K10), as one handler of method calls. Being
/// built (issue 25): so far the service's sessions (`OpenSession`, a session's `Close`, sessions closed when
/// their connection leaves the bus). Every call is handled on the bus connection's thread.
package final class ServiceObjects {
    package static let servicePath = "/org/freedesktop/secrets"
    package static let sessionPrefix = servicePath + "/session/"
    package static let serviceInterface = "org.freedesktop.Secret.Service"
    package static let sessionInterface = "org.freedesktop.Secret.Session"
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
    private var sessions: [String: Session] = [:]
    private var sessionsByOwner: [String: Int] = [:]
    private var nextSession: UInt64 = 1

    package init(random: RandomSource = SystemRandom.shared) {
        self.random = random
    }

    /// Handles one method call.
    package func handle(_ call: BusCall) -> Result<[BusValue], SecretServiceError> {
        do throws(SecretServiceError) {
            switch (call.path, call.interface, call.member) {
            case (ServiceObjects.servicePath, ServiceObjects.serviceInterface, "OpenSession"):
                return .success(try openSession(call))
            case (let path, ServiceObjects.sessionInterface, "Close") where path.hasPrefix(ServiceObjects.sessionPrefix):
                try close(path, by: call.sender)
                return .success([])
            default:
                return .failure(
                    SecretServiceError(
                        "org.freedesktop.DBus.Error.UnknownMethod",
                        "no method \(call.interface).\(call.member) at \(call.path)"))
            }
        } catch {
            return .failure(error)
        }
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
    package init(address: String? = nil, replace: Bool = false, objects: ServiceObjects = ServiceObjects())
        throws(SecretServiceError)
    {
        connection = try BusConnection(address: address)
        self.objects = objects
        try connection.serve(prefix: ServiceObjects.servicePath) { [objects] in objects.handle($0) }
        try connection.watch(
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'"
        ) { [objects] signal in
            guard signal.arguments.count == 3, case .string(let name) = signal.arguments[0],
                case .string(let newOwner) = signal.arguments[2], newOwner.isEmpty
            else { return }
            objects.connectionLeft(name)
        }
        try connection.requestName(SecretServiceDaemon.busName, replace: replace)
    }

    /// Serves calls until `stop` returns true (checked at least every `tick` seconds).
    package func run(tick: Double = 0.2, until stop: () -> Bool) throws(SecretServiceError) {
        while !stop() { try connection.process(timeout: tick) }
    }
}
