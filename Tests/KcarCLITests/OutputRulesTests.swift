import Foundation
import XCTest

/// Issue 13, item 7: one newline rule for values, binary kept off terminals, and tables people can read.
extension KeychainCLITests {
    func testOneNewlineRuleForValues() throws {
        // Standard input is a line: `echo tok | kcar add` stores tok, CRLF too; --keep-newline keeps it.
        try kcar(["add", "--group", "g", "--service", "echo"], stdin: "tok\n")
        XCTAssertEqual(try kcar(["get", "--service", "echo"]).out, "tok")
        try kcar(["add", "--group", "g", "--service", "crlf"], stdin: "tok\r\n")
        XCTAssertEqual(try kcar(["get", "--service", "crlf"]).out, "tok")
        try kcar(["add", "--group", "g", "--service", "two"], stdin: "tok\n\n")  // only one newline is the line's
        XCTAssertEqual(try kcar(["get", "--service", "two"]).out, "tok\n")
        try kcar(["add", "--group", "g", "--service", "kept", "--keep-newline"], stdin: "tok\n")
        XCTAssertEqual(try kcar(["get", "--service", "kept"]).out, "tok\n")
        try kcar(["update", "--service", "echo"], stdin: "new\n")
        XCTAssertEqual(try kcar(["get", "--service", "echo"]).out, "new")
        // A named file is stored byte for byte.
        try Data("file\n".utf8).write(to: URL(fileURLWithPath: dir + "/v"))
        try kcar(["add", "--group", "g", "--service", "file", "--value-file", dir + "/v"])
        XCTAssertEqual(try kcar(["get", "--service", "file"]).out, "file\n")

        // get: to a pipe nothing is added; on a terminal a newline follows a value without one, and binary is
        // refused unless --force.
        XCTAssertTrue(try onTerminal(["get", "--service", "echo"]).out.hasSuffix("new\r\n"))
        XCTAssertTrue(try onTerminal(["get", "--service", "file"]).out.hasSuffix("file\r\n"))
        XCTAssertFalse(try onTerminal(["get", "--service", "file"]).out.contains("file\r\n\r\n"))
        try Data([0x00, 0x1B, 0x5B, 0x32, 0x4A, 0xFF]).write(to: URL(fileURLWithPath: dir + "/bin"))
        try kcar(["add", "--group", "g", "--service", "bin", "--value-file", dir + "/bin"])
        let refused = try onTerminal(["get", "--service", "bin"])
        XCTAssertEqual(refused.code, 2)
        XCTAssertTrue(refused.out.contains("refusing to write genp, service bin to a terminal"), refused.out)
        XCTAssertEqual(try onTerminal(["get", "--service", "bin", "--force"]).code, 0)
        XCTAssertEqual(
            try kcar(["get", "--service", "bin"]).data, try Data(contentsOf: URL(fileURLWithPath: dir + "/bin")))

        // The rule is on the help pages.
        XCTAssertTrue(try kcar(["help", "add"]).out.contains("--keep-newline"))
        XCTAssertTrue(try kcar(["help", "get"]).out.contains("newline"))
    }

    func testTablesHaveHeadersReadableDatesAndSurviveLongNames() throws {
        let long = String(repeating: "s", count: 70) + "-end"
        try kcar(["add", "--group", "personal", "--service", long, "--account", "a"], stdin: "1")
        try kcar(["add", "--group", "personal", "--service", "short", "--account", "b"], stdin: "2")
        XCTAssertEqual(try kcar(["groups"]).out, "ITEMS  GROUP\n    2  personal\n")

        let lines = try kcar(["find"]).out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3)
        XCTAssertTrue(lines[0].hasPrefix("GROUP     CLASS  SERVICE"), lines[0])
        XCTAssertTrue(lines[0].hasSuffix("MODIFIED (UTC)"), lines[0])
        // The long service is cut at 40 characters with an ellipsis; every column stays in line.
        let cut = try XCTUnwrap(lines.first { $0.contains("…") })
        XCTAssertTrue(cut.contains(String(repeating: "s", count: 39) + "… "), cut)
        XCTAssertFalse(cut.contains("-end"))
        let column = lines[0].range(of: "ACCOUNT")!.lowerBound.utf16Offset(in: lines[0])  // the header is ASCII
        XCTAssertEqual(Set(lines.dropFirst().map { String(Array($0.unicodeScalars)[column]) }), ["a", "b"])
        // Dates: ISO 8601 in UTC to the second.
        let date = try XCTUnwrap(cut.split(separator: " ").last)
        XCTAssertNotNil(date.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/), String(date))
        // JSON keeps every character and the nanoseconds.
        XCTAssertTrue(try kcar(["find", "--json"]).out.contains(long))
        // list: the name, last, is never cut.
        let list = try kcar(["list", "--group", "personal"]).out
        XCTAssertTrue(list.hasPrefix("SIZE  MODIFIED (UTC)        NAME\n"), list)
        XCTAssertTrue(list.contains(long + "/a"), list)
    }
}
