import Foundation
import KcarKeychain
import TestSupport
import VaultFormat
import XCTest

@testable import SecretService

/// What SPEC.md §K10 adds to items: other writers' changes signalled, collections deleted, the `default`
/// alias set. The daemon of ``ItemsOverBusTests`` looks for changes every 0.1 s.
extension ItemsOverBusTests {
    final class Heard: @unchecked Sendable {
        var signals: [String] = []
        /// PropertiesChanged: "path interface invalidated-names".
        var properties: [String] = []
    }

    /// Hears the service's signals as "Member path".
    func listen() throws -> Heard {
        let heard = Heard()
        try client.watch("type='signal',sender='\(SecretServiceDaemon.busName)'") { signal in
            guard signal.member == "PropertiesChanged" else {
                heard.signals.append(signal.member + " " + (signal.arguments.first?.objectPath ?? ""))
                return
            }
            guard signal.arguments.count == 3, case .array(_, let names) = signal.arguments[2] else { return }
            heard.properties.append(
                ([signal.path, signal.arguments[0].string ?? ""] + names.compactMap(\.string)).joined(separator: " "))
        }
        return heard
    }

    /// Processes the client's messages until `heard` holds `count` signals or 5 s have passed.
    func wait(_ heard: Heard, for count: Int) throws {
        for _ in 0..<100 where heard.signals.count < count { try client.process(timeout: 0.05) }
    }

    func plainSession() throws -> String {
        try call(service, ServiceObjects.serviceInterface, "OpenSession", [.string("plain"), .variant(.string(""))])[1]
            .objectPath!
    }

    /// Another writer (kcar's API) adds, changes and deletes items of a collection a client listed, and makes
    /// a group: each change is signalled once, naming the item; the service's own changes are not signalled a
    /// second time by the watch.
    func testOtherWritersChangesAreSignalled() throws {
        let login = KeychainCollections.collectionPath("login")
        let plain = try plainSession()
        // The client lists the collection (what libsecret does first): the daemon watches it from then on.
        let before = try call(login, ServiceObjects.collectionInterface, "SearchItems", [.stringDict([])])
        guard case .array(_, let listed) = before[0] else { return XCTFail("\(before)") }
        XCTAssertEqual(listed.count, 1)
        let existing = try XCTUnwrap(listed.first?.objectPath)
        let heard = try listen()

        // Its own change: signalled once, when made.
        let own = try create(login, plain, [("user", "own")], "mine", replace: false)
        try wait(heard, for: 1)
        Thread.sleep(forTimeInterval: 0.3)  // three looks of the watch: none may signal it again
        try client.process(timeout: 0.05)
        XCTAssertEqual(heard.signals, ["ItemCreated " + own])
        (heard.signals, heard.properties) = ([], [])

        let s = try store()
        let added = try s.add(
            attributes: Attributes([
                AttributeName.service: .string("cli"), AttributeName.account: .string("other"), "@user": .string("x")
            ]), value: Array("from kcar".utf8), group: "login")
        let addedPath = KeychainCollections.itemPath(added)
        try wait(heard, for: 1)
        XCTAssertEqual(heard.signals, ["ItemCreated " + addedPath])
        try s.update(
            ItemQuery(attributes: Attributes([AttributeName.account: .string("me")]), group: "login"),
            value: Array("changed".utf8))
        try wait(heard, for: 2)
        XCTAssertEqual(heard.signals.last, "ItemChanged " + existing)
        _ = try s.delete(ItemQuery(attributes: Attributes([AttributeName.account: .string("other")]), group: "login"))
        try wait(heard, for: 3)
        XCTAssertEqual(heard.signals.last, "ItemDeleted " + addedPath)
        try KeychainStore(directory: KeychainDirectory(path: keychain), accessGroups: ["work"]).add(
            attributes: Attributes([AttributeName.account: .string("w")]), value: [1], group: "work")
        try wait(heard, for: 4)
        XCTAssertEqual(heard.signals.last, "CollectionCreated " + KeychainCollections.collectionPath("work"))
        Thread.sleep(forTimeInterval: 0.3)
        try client.process(timeout: 0.05)
        XCTAssertEqual(heard.signals.count, 4, "\(heard.signals)")
        // Each with the PropertiesChanged of what it changes, for clients that cache properties.
        let items = login + " " + ServiceObjects.collectionInterface + " Items"
        XCTAssertEqual(
            heard.properties,
            [
                items, existing + " " + ServiceObjects.itemInterface + " Attributes Label Modified", items,
                ServiceObjects.servicePath + " " + ServiceObjects.serviceInterface + " Collections"
            ])
        // What the signals named is what a client now reads.
        XCTAssertEqual(try search([("user", "x")]), [])
        XCTAssertEqual(try value(existing, plain), Array("changed".utf8))
    }

    /// A group that cannot be read (here a planted vault of random bytes beside a key) does not stop a search
    /// of every collection: the others' items are found. A search that names an attribute twice is refused.
    func testAServiceSearchSkipsAGroupItCannotRead() throws {
        let plain = try plainSession()
        let item = try create(KeychainCollections.collectionPath("login"), plain, [("app", "x")], "v", replace: false)
        let directory = KeychainDirectory(path: keychain)
        XCTAssert(
            FileManager.default.createFile(
                atPath: directory.keyPath("work"), contents: Data(repeating: 7, count: 32),
                attributes: [.posixPermissions: 0o600]))
        XCTAssert(
            FileManager.default.createFile(
                atPath: directory.vaultPath("work"), contents: Data(repeating: 0x5A, count: 500),
                attributes: [.posixPermissions: 0o600]))
        XCTAssertEqual(try search([("app", "x")]), [item])
        XCTAssertEqual(try search([]).count, 2, "the listing path skips it too")
        // The collection itself reports why.
        assertError("org.freedesktop.DBus.Error.Failed", "a search of the damaged collection") {
            try self.call(
                KeychainCollections.collectionPath("work"), ServiceObjects.collectionInterface, "SearchItems",
                [.stringDict([("app", "x")])])
        }
        assertError("org.freedesktop.DBus.Error.InvalidArgs", "an attribute twice") {
            _ = try self.search([("app", "x"), ("app", "y")])
        }
    }

    /// A collection deleted by a client: its group's vault, record and key are gone, its items and path name
    /// nothing, CollectionDeleted is heard, and a collection of the same name can be made again and used.
    func testACollectionIsDeletedWithItsGroupsFiles() throws {
        let plain = try plainSession()
        let made = try call(
            service, ServiceObjects.serviceInterface, "CreateCollection",
            [.properties([("org.freedesktop.Secret.Collection.Label", .string("work"))]), .string("")])
        let work = try XCTUnwrap(made[0].objectPath)
        let item = try create(work, plain, [("user", "w")], "doomed", replace: false)
        _ = try create(work, plain, [("user", "w2")], "second", replace: false)
        let heard = try listen()
        XCTAssertEqual(try call(work, ServiceObjects.collectionInterface, "Delete"), [.objectPath("/")])
        try wait(heard, for: 1)
        XCTAssertEqual(heard.signals.first, "CollectionDeleted " + work)
        let directory = KeychainDirectory(path: keychain)
        for file in [directory.vaultPath("work"), directory.keyPath("work"), directory.vaultPath("work") + ".seen"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: file), file)
        }
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: keychain + "/" + KeychainDirectory.stem("work") + ".seen"))
        assertError("org.freedesktop.Secret.Error.NoSuchObject", "an item of a deleted collection") {
            _ = try self.value(item, plain)
        }
        assertError("org.freedesktop.Secret.Error.NoSuchObject", "a deleted collection") {
            try self.call(work, ServiceObjects.collectionInterface, "Delete")
        }
        let collections = try call(
            service, ServiceObjects.propertiesInterface, "Get",
            [.string(ServiceObjects.serviceInterface), .string("Collections")])
        XCTAssertEqual(
            collections, [.variant(.array(element: "o", [.objectPath(KeychainCollections.collectionPath("login"))]))])
        Thread.sleep(forTimeInterval: 0.3)
        try client.process(timeout: 0.05)
        XCTAssertEqual(heard.signals, ["CollectionDeleted " + work], "the watch does not signal it again")
        // The same name again: a new group, with a new key.
        _ = try call(
            service, ServiceObjects.serviceInterface, "CreateCollection",
            [.properties([("org.freedesktop.Secret.Collection.Label", .string("work"))]), .string("")])
        let again = try create(work, plain, [("user", "w")], "reborn", replace: false)
        XCTAssertEqual(try value(again, plain), Array("reborn".utf8))
    }

    /// A group deleted part way (its vault unlinked, its key and generation record left, as a crash between
    /// the unlinks leaves it) is made again by the next add, which the old record would have refused.
    func testAGroupDeletedPartWayIsMadeAgain() throws {
        let s = try store()
        for i in 0..<3 { try s.add(attributes: Attributes([AttributeName.account: .string("a\(i)")]), value: [1]) }
        let directory = KeychainDirectory(path: keychain)
        let record = keychain + "/" + KeychainDirectory.stem("login") + ".seen"
        XCTAssert(FileManager.default.fileExists(atPath: record))
        XCTAssertEqual(unlink(directory.vaultPath("login")), 0)
        let fresh = try store()
        try fresh.add(attributes: Attributes([AttributeName.account: .string("new")]), value: [2])
        try fresh.add(attributes: Attributes([AttributeName.account: .string("newer")]), value: [3])
        XCTAssertEqual(try store().find(ItemQuery(group: "login")).count, 2)
    }

    /// `SetAlias("default", c)` records c's group as the keychain's default (what kcar's own adds then use),
    /// `SetAlias("default", "/")` removes it; other aliases cannot be set; with an explicit group list the
    /// default is that list's first group and cannot be set.
    func testTheDefaultAliasIsSetAndRemoved() throws {
        _ = try daemon.stop()
        daemon = try DaemonThread(address: bus.address, keychain: keychain, accessGroups: nil) { $0.sessionCount }
        let made = try call(
            service, ServiceObjects.serviceInterface, "CreateCollection",
            [.properties([("org.freedesktop.Secret.Collection.Label", .string("work"))]), .string("")])
        let work = try XCTUnwrap(made[0].objectPath)
        XCTAssertEqual(
            try call(service, ServiceObjects.serviceInterface, "SetAlias", [.string("default"), .objectPath(work)]), [])
        XCTAssertEqual(
            try call(service, ServiceObjects.serviceInterface, "ReadAlias", [.string("default")]), [.objectPath(work)])
        let directory = KeychainDirectory(path: keychain)
        XCTAssertEqual(try directory.recordedDefaultGroup(), "work")
        // libsecret's default path now leads to it.
        let plain = try plainSession()
        let item = try create(ServiceObjects.aliasPrefix + "default", plain, [("via", "alias")], "x", replace: false)
        XCTAssert(item.hasPrefix(work + "/"), item)

        XCTAssertEqual(
            try call(service, ServiceObjects.serviceInterface, "SetAlias", [.string("default"), .objectPath("/")]), [])
        XCTAssertNil(try directory.recordedDefaultGroup())
        assertError("org.freedesktop.DBus.Error.NotSupported", "another alias") {
            try self.call(
                self.service, ServiceObjects.serviceInterface, "SetAlias", [.string("session"), .objectPath(work)])
        }
        // A group whose name holds a line feed is a collection, but cannot be the recorded default: the file
        // holds one line, and such a file would stop every add that names no group.
        let twoLines = try XCTUnwrap(
            try call(
                service, ServiceObjects.serviceInterface, "CreateCollection",
                [.properties([("org.freedesktop.Secret.Collection.Label", .string("two\nlines"))]), .string("")])[0]
                .objectPath)
        assertError("org.freedesktop.DBus.Error.InvalidArgs", "a name with a line feed") {
            try self.call(
                self.service, ServiceObjects.serviceInterface, "SetAlias", [.string("default"), .objectPath(twoLines)])
        }
        XCTAssertNil(try directory.recordedDefaultGroup())
        assertError("org.freedesktop.Secret.Error.NoSuchObject", "a collection that does not exist") {
            try self.call(
                service, ServiceObjects.serviceInterface, "SetAlias",
                [.string("default"), .objectPath(KeychainCollections.collectionPath("nothing"))])
        }
        XCTAssertNil(try directory.recordedDefaultGroup())

        _ = try daemon.stop()
        daemon = try DaemonThread(address: bus.address, keychain: keychain) { $0.sessionCount }
        assertError("org.freedesktop.DBus.Error.NotSupported", "an explicit group list") {
            try self.call(
                self.service, ServiceObjects.serviceInterface, "SetAlias", [.string("default"), .objectPath(work)])
        }
        XCTAssertNil(try directory.recordedDefaultGroup())
    }
}
