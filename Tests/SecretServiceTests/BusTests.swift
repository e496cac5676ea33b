import Foundation
import KcarKeychain
import Synchronization
import TestSupport
import VaultFormat
import XCTest

@testable import SecretService

/// The daemon on its own thread (sd-bus connections are used by one thread at a time), stopped by `stop()`,
/// which returns what `inspect` read of its objects once the loop ended.
final class DaemonThread<T: Sendable>: @unchecked Sendable {
    private let stopping = Mutex(false)
    private let done = DispatchSemaphore(value: 0)
    private let ready = DispatchSemaphore(value: 0)
    private var result: Result<T, Error>?
    private var startError: Error?

    /// A daemon over `keychain` (with the access groups given: nil for the implicit list) that looks for
    /// other writers' changes every 0.1 s.
    init(
        address: String, keychain: String, accessGroups: [String]? = ["login", "work"],
        inspect: @escaping @Sendable (ServiceObjects) -> T
    ) throws {
        let thread = Thread { [self] in
            do {
                let store = try KeychainStore(directory: KeychainDirectory(path: keychain), accessGroups: accessGroups)
                let daemon = try SecretServiceDaemon(
                    address: address, objects: ServiceObjects(collections: KeychainCollections(store: store)))
                ready.signal()
                try daemon.run(tick: 0.05, watch: 0.1) { stopping.withLock { $0 } }
                result = .success(inspect(daemon.objects))
            } catch {
                startError = error
                result = .failure(error)
                ready.signal()
            }
            done.signal()
        }
        thread.start()
        ready.wait()
        if let startError { throw startError }
    }

    func stop() throws -> T {
        stopping.withLock { $0 = true }
        done.wait()
        return try result!.get()
    }
}

final class BusTests: XCTestCase {
    static let service = (name: SecretServiceDaemon.busName, path: ServiceObjects.servicePath)

    func openSession(_ c: BusConnection, _ algorithm: String, _ input: BusValue) throws(SecretServiceError) -> (
        BusValue, String
    ) {
        let reply = try c.call(
            destination: Self.service.name, path: Self.service.path, interface: ServiceObjects.serviceInterface,
            member: "OpenSession", [.string(algorithm), .variant(input)])
        guard reply.count == 2, case .variant(let output) = reply[0], case .objectPath(let path) = reply[1] else {
            throw .failed("OpenSession replied \(reply)")
        }
        return (output, path)
    }

    func close(_ c: BusConnection, _ path: String) throws(SecretServiceError) {
        _ = try c.call(
            destination: Self.service.name, path: path, interface: ServiceObjects.sessionInterface, member: "Close", [])
    }

    /// Over a real bus: the daemon owns the name; `plain` and `dh-ietf1024-sha256-aes128-cbc-pkcs7` sessions
    /// open (the latter's output a public value that gives the client the service's key), a session is closed
    /// by its own connection only (another gets NoSession), an unknown algorithm is NotSupported, a public
    /// value outside the group InvalidArgs, and a connection's sessions close when it leaves the bus.
    func testSessionsOverAPrivateBus() throws {
        let bus = try PrivateBus()
        let daemon = try DaemonThread(address: bus.address, keychain: NSTemporaryDirectory() + "/kc-\(UUID())") {
            $0.sessionCount
        }
        let client = try BusConnection(address: bus.address)
        let (plainOutput, plainPath) = try openSession(client, "plain", .string(""))
        XCTAssertEqual(plainOutput, .string(""))
        XCTAssert(plainPath.hasPrefix(ServiceObjects.sessionPrefix), plainPath)

        // The client's side of the exchange: a DHSession's public value is 2^x, and one made with the other
        // side's public value and the same exponent derives the same key.
        let exponent = [UInt8](repeating: 0x93, count: 64)
        let clientPublic = try DHSession(clientPublic: [2], random: SessionCryptoTests.FixedRandom(exponent))
            .servicePublic
        let (dhOutput, dhPath) = try openSession(client, SessionAlgorithm.dhAES.rawValue, .bytes(clientPublic))
        guard case .bytes(let servicePublic) = dhOutput else { return XCTFail("output \(dhOutput)") }
        XCTAssertNotEqual(dhPath, plainPath)
        let clientKey = try DHSession(clientPublic: servicePublic, random: SessionCryptoTests.FixedRandom(exponent))
        XCTAssertEqual(clientKey.servicePublic, clientPublic)

        XCTAssertThrowsError(try openSession(client, "dh-ietf2048-sha256-aes256", .string(""))) {
            XCTAssertEqual(($0 as? SecretServiceError)?.name, "org.freedesktop.DBus.Error.NotSupported")
        }
        XCTAssertThrowsError(try openSession(client, SessionAlgorithm.dhAES.rawValue, .bytes([1]))) {
            XCTAssertEqual(($0 as? SecretServiceError)?.name, "org.freedesktop.DBus.Error.InvalidArgs")
        }
        XCTAssertThrowsError(try openSession(client, SessionAlgorithm.dhAES.rawValue, .string("not bytes"))) {
            XCTAssertEqual(($0 as? SecretServiceError)?.name, "org.freedesktop.DBus.Error.InvalidArgs")
        }

        var other: BusConnection? = try BusConnection(address: bus.address)
        XCTAssertThrowsError(try close(other!, plainPath)) {
            XCTAssertEqual(($0 as? SecretServiceError)?.name, "org.freedesktop.Secret.Error.NoSession")
        }
        try close(client, plainPath)
        XCTAssertThrowsError(try close(client, plainPath)) {
            XCTAssertEqual(($0 as? SecretServiceError)?.name, "org.freedesktop.Secret.Error.NoSession")
        }
        // `other` opens two sessions and leaves: they close; the client's dh session stays.
        _ = try openSession(other!, "plain", .string(""))
        _ = try openSession(other!, "plain", .string(""))
        other = nil
        XCTAssertEqual(try daemonSessions(after: client, daemon), 1, "the client's dh session, \(dhPath)")
    }

    /// Waits until the daemon has handled NameOwnerChanged for a connection that left (a round trip of the
    /// client's after it), then stops the daemon and returns its open sessions.
    func daemonSessions(after client: BusConnection, _ daemon: DaemonThread<Int>) throws -> Int {
        // A call answered after the signal was sent: the daemon read the signal first (one connection, in order).
        Thread.sleep(forTimeInterval: 0.2)
        _ = try? openSession(client, "no such algorithm", .string(""))
        return try daemon.stop()
    }

    /// Values of every kind go through a message and come back equal (the codec's two halves agree with
    /// sd-bus's own signature checks): a call of the daemon's that is not served echoes nothing, so the
    /// round trip is through a message built and read in one process.
    func testValuesRoundTripThroughMessages() throws {
        let bus = try PrivateBus()
        let a = try BusConnection(address: bus.address)
        let b = try BusConnection(address: bus.address)
        let echoed = Mutex<[BusValue]>([])
        try a.serve(prefix: "/echo") { call in
            echoed.withLock { $0 = call.arguments }
            return .success(call.arguments)
        }
        let values: [BusValue] = [
            .byte(7), .bool(true), .int32(-5), .uint32(5), .int64(-1 << 40), .uint64(1 << 50), .string("s é"),
            .objectPath("/a/b_1"), .signature("a{sv}"), .bytes([0, 1, 255]), .bytes([]),
            .array(element: "s", []), .array(element: "o", [.objectPath("/x"), .objectPath("/y")]),
            .stringDict([("xdg:schema", "org.example"), ("user", "bob")]),
            .properties([("Label", .string("l")), ("Attributes", .stringDict([]))]),
            .structure([.objectPath("/s"), .bytes([1]), .bytes([2, 3]), .string("text/plain")]),
            .variant(.variant(.uint32(1)))
        ]
        let name = a.uniqueName
        let server = Unchecked(a)
        let thread = Thread {
            for _ in 0..<100 { try? server.value.process(timeout: 0.02) }
        }
        thread.start()
        let back = try b.call(destination: name, path: "/echo/x", interface: "t.Echo", member: "Echo", values)
        XCTAssertEqual(back, values)
        XCTAssertEqual(echoed.withLock { $0 }, values)
    }
}

/// A value handed to one other thread, which alone uses it from then on.
struct Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
