import Foundation
import KcarKeychain
import TestSupport
import VaultFormat
import XCTest

@testable import SecretService

/// The Secret Service's collections and items (SPEC.md §K10) over a private bus, against a keychain that
/// kcar's own API reads alongside: what a client stores is a `genp` item with `@` attributes that the
/// keychain finds, and what the keychain holds the client sees.
final class ItemsOverBusTests: XCTestCase {
    var bus: PrivateBus!
    var keychain = ""
    var client: BusConnection!
    var daemon: DaemonThread<Int>!
    let service = ServiceObjects.servicePath

    override func setUpWithError() throws {
        bus = try PrivateBus()
        keychain = NSTemporaryDirectory() + "/kc-\(UUID())"
        // The group exists, with an item kcar's API added.
        try store().add(
            attributes: Attributes([AttributeName.service: .string("cli"), AttributeName.account: .string("me")]),
            value: Array("from kcar".utf8), group: "login")
        daemon = try DaemonThread(address: bus.address, keychain: keychain) { $0.sessionCount }
        client = try BusConnection(address: bus.address)
    }

    override func tearDownWithError() throws {
        client = nil
        _ = try daemon.stop()
        try? FileManager.default.removeItem(atPath: keychain)
        bus = nil  // XCTest keeps test instances to the end: the bus stops here
    }

    func store() throws -> KeychainStore {
        try KeychainStore(directory: KeychainDirectory(path: keychain), accessGroups: ["login"])
    }

    @discardableResult
    func call(_ path: String, _ interface: String, _ member: String, _ arguments: [BusValue] = []) throws
        -> [BusValue]
    {
        try client.call(
            destination: SecretServiceDaemon.busName, path: path, interface: interface, member: member, arguments)
    }

    func assertError(_ name: String, _ message: String, _ body: () throws -> Void, line: UInt = #line) {
        XCTAssertThrowsError(try body(), message, line: line) {
            XCTAssertEqual(($0 as? SecretServiceError)?.name, name, "\(message): \($0)", line: line)
        }
    }

    func secret(_ session: String, _ text: String) -> BusValue {
        .structure([.objectPath(session), .bytes([]), .bytes(Array(text.utf8)), .string("text/plain")])
    }

    func create(
        _ collection: String, _ session: String, _ attributes: [(String, String)], _ text: String, replace: Bool
    )
        throws -> String
    {
        let properties = BusValue.properties([
            ("org.freedesktop.Secret.Item.Label", .string("token for \(attributes.first?.1 ?? "")")),
            ("org.freedesktop.Secret.Item.Attributes", .stringDict(attributes))
        ])
        let reply = try call(
            collection, ServiceObjects.collectionInterface, "CreateItem",
            [properties, secret(session, text), .bool(replace)])
        XCTAssertEqual(reply.last, .objectPath("/"), "no prompt")
        return try XCTUnwrap(reply.first?.objectPath)
    }

    func search(_ attributes: [(String, String)]) throws -> [String] {
        let reply = try call(service, ServiceObjects.serviceInterface, "SearchItems", [.stringDict(attributes)])
        guard case .array(_, let unlocked) = reply[0] else { return [] }
        return unlocked.compactMap(\.objectPath)
    }

    func value(_ item: String, _ session: String) throws -> [UInt8] {
        let reply = try call(item, ServiceObjects.itemInterface, "GetSecret", [.objectPath(session)])
        guard case .structure(let f) = reply[0], case .bytes(let v) = f[2] else {
            throw SecretServiceError.failed("\(reply)")
        }
        return v
    }

    func testItemsStoredFoundChangedAndDeletedAsTheKeychainSeesThem() throws {
        let collection = KeychainCollections.collectionPath("login")
        XCTAssertEqual(
            try call(
                service, ServiceObjects.propertiesInterface, "Get",
                [.string(ServiceObjects.serviceInterface), .string("Collections")]),
            [.variant(.array(element: "o", [.objectPath(collection)]))])
        XCTAssertEqual(
            try call(service, ServiceObjects.serviceInterface, "ReadAlias", [.string("default")]),
            [.objectPath(collection)])
        XCTAssertEqual(
            try call(service, ServiceObjects.serviceInterface, "ReadAlias", [.string("session")]), [.objectPath("/")])
        let plain = try call(
            service, ServiceObjects.serviceInterface, "OpenSession", [.string("plain"), .variant(.string(""))])[1]
            .objectPath!

        let attributes = [("xdg:schema", "org.example.Password"), ("user", "bob"), ("server", "github.com")]
        let item = try create(collection, plain, attributes, "hunter2", replace: false)
        XCTAssertEqual(try search([("user", "bob")]), [item])
        XCTAssertEqual(try search([("user", "bob"), ("server", "gitlab.com")]), [])
        XCTAssertEqual(try value(item, plain), Array("hunter2".utf8))

        // The keychain sees a generic password: svce the schema, the attributes under @.
        let seen = try store().find(ItemQuery(attributes: Attributes(["@user": .string("bob")]), group: "login"))
        XCTAssertEqual(seen.count, 1)
        XCTAssertEqual(seen.first?.attributes[AttributeName.service], .string("org.example.Password"))
        XCTAssertEqual(seen.first?.attributes[AttributeName.label], .string("token for org.example.Password"))
        XCTAssertEqual(try store().value(of: seen[0]), Array("hunter2".utf8))

        // An encrypted session gets the same secret, sealed.
        let exponent = [UInt8](repeating: 0x5A, count: 64)
        let mine = try DHSession(clientPublic: [2], random: SessionCryptoTests.FixedRandom(exponent))
        let opened = try call(
            service, ServiceObjects.serviceInterface, "OpenSession",
            [.string(SessionAlgorithm.dhAES.rawValue), .variant(.bytes(mine.servicePublic))])
        guard case .variant(.bytes(let theirs)) = opened[0], let dh = opened[1].objectPath else {
            return XCTFail("\(opened)")
        }
        let key = try DHSession(clientPublic: theirs, random: SessionCryptoTests.FixedRandom(exponent))
        let sealed = try call(item, ServiceObjects.itemInterface, "GetSecret", [.objectPath(dh)])
        guard case .structure(let f) = sealed[0], case .bytes(let iv) = f[1], case .bytes(let ciphertext) = f[2] else {
            return XCTFail("\(sealed)")
        }
        XCTAssertNotEqual(ciphertext, Array("hunter2".utf8))
        XCTAssertEqual(try key.decrypt(iv: iv, value: ciphertext).withUnsafeBytes { Array($0) }, Array("hunter2".utf8))

        // Replace: the item with exactly these attributes changes; without replace, a second one is added.
        XCTAssertEqual(try create(collection, plain, attributes, "hunter3", replace: true), item)
        XCTAssertEqual(try value(item, plain), Array("hunter3".utf8))
        let second = try create(collection, plain, attributes, "another", replace: false)
        XCTAssertNotEqual(second, item)
        XCTAssertEqual(Set(try search([("user", "bob")])), [item, second])

        // Properties: read, and the label and attributes set.
        let all = try call(item, ServiceObjects.propertiesInterface, "GetAll", [.string(ServiceObjects.itemInterface)])
        guard case .dict(_, _, let entries) = all[0] else { return XCTFail("\(all)") }
        let props = Dictionary(uniqueKeysWithValues: entries.map { ($0.key.string!, $0.value) })
        XCTAssertEqual(props["Attributes"], .variant(.stringDict(attributes.sorted { $0.0 < $1.0 })))
        XCTAssertEqual(props["Locked"], .variant(.bool(false)))
        guard case .variant(.uint64(let created)) = props["Created"] else { return XCTFail("\(props)") }
        XCTAssertGreaterThan(created, 1_700_000_000)
        try call(
            item, ServiceObjects.propertiesInterface, "Set",
            [.string(ServiceObjects.itemInterface), .string("Label"), .variant(.string("renamed"))])
        try call(
            item, ServiceObjects.propertiesInterface, "Set",
            [.string(ServiceObjects.itemInterface), .string("Attributes"), .variant(.stringDict([("user", "alice")]))])
        XCTAssertEqual(try search([("user", "alice")]), [item])
        XCTAssertEqual(try search([("user", "bob")]), [second])
        XCTAssertEqual(
            try store().find(ItemQuery(attributes: Attributes(["@user": .string("alice")]), group: "login")).first?
                .attributes[AttributeName.label], .string("renamed"))

        // kcar's own item is there too, with no attributes.
        XCTAssertEqual(try search([]).count, 3)

        // Lock: nothing is listed or read; Unlock brings it back.
        let locked = try call(
            service, ServiceObjects.serviceInterface, "Lock", [.array(element: "o", [.objectPath(collection)])])
        XCTAssertEqual(locked, [.array(element: "o", [.objectPath(collection)]), .objectPath("/")])
        XCTAssertEqual(try search([("user", "alice")]), [])
        assertError("org.freedesktop.Secret.Error.IsLocked", "a locked item") { _ = try self.value(item, plain) }
        try call(service, ServiceObjects.serviceInterface, "Unlock", [.array(element: "o", [.objectPath(collection)])])
        XCTAssertEqual(try value(item, plain), Array("hunter3".utf8))

        // Delete.
        XCTAssertEqual(try call(item, ServiceObjects.itemInterface, "Delete"), [.objectPath("/")])
        XCTAssertEqual(try search([("user", "alice")]), [])
        assertError("org.freedesktop.Secret.Error.NoSuchObject", "a deleted item") { _ = try self.value(item, plain) }
    }

    /// The changes a client makes are signalled on the collection: ItemCreated, ItemChanged (a replace, a new
    /// secret, a label), ItemDeleted, each naming the item; CollectionCreated for a new group.
    func testChangesAreSignalled() throws {
        final class Heard { var signals: [String] = [] }
        let heard = Heard()
        try client.watch("type='signal',sender='\(SecretServiceDaemon.busName)'") { signal in
            // (PropertiesChanged: WatchAndCollectionsTests)
            guard signal.member != "PropertiesChanged" else { return }
            heard.signals.append(signal.member + " " + (signal.arguments.first?.objectPath ?? ""))
        }
        let collection = KeychainCollections.collectionPath("login")
        let plain = try call(
            service, ServiceObjects.serviceInterface, "OpenSession", [.string("plain"), .variant(.string(""))])[1]
            .objectPath!
        let item = try create(collection, plain, [("user", "sig")], "one", replace: false)
        _ = try create(collection, plain, [("user", "sig")], "two", replace: true)
        try call(item, ServiceObjects.itemInterface, "SetSecret", [secret(plain, "three")])
        try call(
            item, ServiceObjects.propertiesInterface, "Set",
            [.string(ServiceObjects.itemInterface), .string("Label"), .variant(.string("l"))])
        try call(item, ServiceObjects.itemInterface, "Delete")
        let made = try call(
            service, ServiceObjects.serviceInterface, "CreateCollection",
            [.properties([("org.freedesktop.Secret.Collection.Label", .string("work"))]), .string("")])
        for _ in 0..<40 where heard.signals.count < 6 { try client.process(timeout: 0.05) }
        XCTAssertEqual(
            heard.signals,
            [
                "ItemCreated " + item, "ItemChanged " + item, "ItemChanged " + item, "ItemChanged " + item,
                "ItemDeleted " + item, "CollectionCreated " + made[0].objectPath!
            ])
    }

    /// What a client sends that the service must refuse, and nothing changes: another connection's session,
    /// an empty or too long attribute name, a secret over SS_SECRET_MAX, a path that names nothing, a
    /// collection's label set.
    func testRefusedCallsChangeNothing() throws {
        let collection = KeychainCollections.collectionPath("login")
        let other = try BusConnection(address: bus.address)
        let theirs = try other.call(
            destination: SecretServiceDaemon.busName, path: service, interface: ServiceObjects.serviceInterface,
            member: "OpenSession", [.string("plain"), .variant(.string(""))])[1].objectPath!
        assertError("org.freedesktop.Secret.Error.NoSession", "another connection's session") {
            _ = try self.create(collection, theirs, [("user", "x")], "s", replace: false)
        }
        let mine = try call(
            service, ServiceObjects.serviceInterface, "OpenSession", [.string("plain"), .variant(.string(""))])[1]
            .objectPath!
        assertError("org.freedesktop.DBus.Error.InvalidArgs", "an empty attribute name") {
            _ = try self.create(collection, mine, [("", "x")], "s", replace: false)
        }
        assertError("org.freedesktop.DBus.Error.InvalidArgs", "a 255-byte attribute name") {
            _ = try self.create(collection, mine, [(String(repeating: "a", count: 255), "x")], "s", replace: false)
        }
        assertError("org.freedesktop.DBus.Error.InvalidArgs", "a secret over 1 MiB") {
            _ = try self.create(
                collection, mine, [("user", "x")], String(repeating: "x", count: (1 << 20) + 1), replace: false)
        }
        assertError("org.freedesktop.Secret.Error.NoSuchObject", "an item that is not there") {
            _ = try self.value(collection + "/" + String(repeating: "0", count: 32), mine)
        }
        assertError("org.freedesktop.Secret.Error.NoSuchObject", "a collection that is not there") {
            _ = try self.create(KeychainCollections.collectionPath("nope"), mine, [("user", "x")], "s", replace: false)
        }
        assertError("org.freedesktop.DBus.Error.NotSupported", "a collection's label") {
            try self.call(
                collection, ServiceObjects.propertiesInterface, "Set",
                [.string(ServiceObjects.collectionInterface), .string("Label"), .variant(.string("x"))])
        }
        // A message past SS_CALL_VALUES_MAX or SS_CALL_BYTES_MAX is refused as it is read.
        assertError("org.freedesktop.DBus.Error.InvalidArgs", "70,000 values") {
            try self.call(
                self.service, ServiceObjects.serviceInterface, "SearchItems",
                [.stringDict((0..<35_000).map { ("a\($0)", "") })])
        }
        assertError("org.freedesktop.DBus.Error.InvalidArgs", "21 MiB of bytes") {
            try self.call(
                self.service, ServiceObjects.serviceInterface, "OpenSession",
                [.string("plain"), .variant(.bytes([UInt8](repeating: 1, count: 21 << 20)))])
        }
        XCTAssertEqual(try search([]).count, 1, "only kcar's own item")
    }

    /// Path elements are one to one with group names (§K10).
    func testPathElementsRoundTrip() {
        for g in ["login", "a b", "x_y", "é", "Work.Team-1", "%", "_2f"] {
            let e = KeychainCollections.pathElement(g)
            XCTAssert(
                e.utf8.allSatisfy {
                    $0 == UInt8(ascii: "_") || ($0 < 128 && Character(UnicodeScalar($0)).isLetter)
                        || ($0 >= 48 && $0 <= 57)
                }, e)
            XCTAssertEqual(KeychainCollections.group(element: Substring(e)), g, e)
        }
        XCTAssertEqual(KeychainCollections.pathElement("a b"), "a_20b")
        for bad in ["_2", "_zz", "_2F", "a_"] {
            XCTAssertNil(KeychainCollections.group(element: Substring(bad)), bad)
        }
    }
}
