import Foundation
import XCTest

/// Issue 13, item 5: `find` and `get` search every class unless `--class` is given.
extension KeychainCLITests {
    /// The group, class, service and account of each row of find's table.
    func findRows(_ out: String) -> [String] {
        out.split(separator: "\n").dropFirst().map { $0.split(separator: " ").prefix(4).joined(separator: " ") }
    }

    func testFindAndGetSpanEveryClassUnlessOneIsNamed() throws {
        try kcar(["init"])
        try kcar(
            [
                "add", "--group", "personal", "--class", "inet", "--server", "db.internal", "--protocol", "htps",
                "--account", "app"
            ], stdin: "pw")
        try kcar(["add", "--group", "personal", "--service", "github.com", "--account", "app"], stdin: "tok")
        try kcar(["add", "--group", "work", "--service", "w", "--account", "z"], stdin: "x")

        // The case: groups counts the internet password, and find --group now lists it.
        XCTAssertTrue(try kcar(["groups"]).out.contains("2  personal"))
        let find = try kcar(["find", "--group", "personal"]).out
        XCTAssertTrue(find.hasPrefix("GROUP     CLASS  SERVICE/SERVER  ACCOUNT  SIZE  MODIFIED (UTC)\n"), find)
        XCTAssertEqual(findRows(find), ["personal genp github.com app", "personal inet db.internal app"])
        XCTAssertEqual(
            findRows(try kcar(["find"]).out),
            ["personal genp github.com app", "personal inet db.internal app", "work genp w z"])
        XCTAssertEqual(findRows(try kcar(["find", "--limit", "2"]).out).count, 2)
        let json = try kcar(["find", "--group", "personal", "--json"]).out
        XCTAssertTrue(json.contains("\"class\": \"inet\"") || json.contains("\"class\":\"inet\""), json)

        // --class narrows to one class, as before.
        XCTAssertEqual(
            findRows(try kcar(["find", "--group", "personal", "--class", "inet"]).out),
            ["personal inet db.internal app"])
        XCTAssertEqual(
            findRows(try kcar(["find", "--class", "genp", "--account", "app"]).out), ["personal genp github.com app"])
        try kcar(["find", "--class", "cert"], expect: 6)

        // get finds the internet password without --class; an account both items share is ambiguous across classes.
        XCTAssertEqual(try kcar(["get", "--server", "db.internal", "--account", "app"]).out, "pw")
        XCTAssertEqual(try kcar(["get", "--service", "github.com"]).out, "tok")
        XCTAssertTrue(try kcar(["get", "--account", "app"], expect: 2).err.contains("more than one item matches"))
        XCTAssertEqual(try kcar(["get", "--account", "app", "--class", "inet"]).out, "pw")
        try kcar(["get", "--server", "nowhere"], expect: 6)

        // A selector that no class can take is still a usage error, not an empty result.
        XCTAssertTrue(try kcar(["find", "--port", "x"], expect: 2).err.contains("--port"))
        XCTAssertTrue(try kcar(["find", "--attr", "kSecAttrNoSuch=1"], expect: 2).err.contains("kSecAttrNoSuch"))

        // update and delete keep genp as their default class: nothing else changes without --class.
        try kcar(["delete", "--account", "app"])
        XCTAssertEqual(findRows(try kcar(["find", "--group", "personal"]).out), ["personal inet db.internal app"])
    }
}
