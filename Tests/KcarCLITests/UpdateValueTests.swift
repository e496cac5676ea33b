import Foundation
import XCTest

/// Issue 13, item 4: `update` reads a piped value as `add` does, but only when it changes nothing else.
extension KeychainCLITests {
    func testUpdateReadsAPipedValueOnlyWhenItChangesNothingElse() throws {
        let sel = ["--group", "g", "--service", "api", "--account", "bob"]
        let devNull = ["/bin/sh", "-c", "exec \"$0\" \"$@\" < /dev/null"]
        try kcar(["init"])
        try kcar(["add"] + sel, stdin: "v1")

        // No other change: the pipe is the new value.
        XCTAssertTrue(try kcar(["update"] + sel, stdin: "v2").err.contains("updated 1 item"))
        XCTAssertEqual(try kcar(["get"] + sel).out, "v2")

        // An attribute change leaves the value alone, whatever standard input holds or is.
        try kcar(["update"] + sel + ["--set-label", "L1"], stdin: "not the value")
        try kcar(["update"] + sel + ["--set-label", "L2"], prefix: devNull)
        try kcar(["update"] + sel + ["--set-label", "L3"])
        XCTAssertEqual(try kcar(["get"] + sel).out, "v2")
        XCTAssertTrue(try kcar(["find"] + sel + ["--json"]).out.contains("L3"))

        // ... unless --value-file - asks for it.
        try kcar(["update"] + sel + ["--set-label", "L4", "--value-file", "-"], stdin: "v3")
        XCTAssertEqual(try kcar(["get"] + sel).out, "v3")

        // Nothing to read: an empty pipe and /dev/null change nothing and say so.
        XCTAssertTrue(try kcar(["update"] + sel, stdin: "", expect: 2).err.contains("standard input is empty"))
        XCTAssertTrue(try kcar(["update"] + sel, prefix: devNull, expect: 2).err.contains("nothing to change"))
        XCTAssertEqual(try kcar(["get"] + sel).out, "v3")

        // The rule is on the help page.
        XCTAssertTrue(
            try kcar(["update", "--help"]).out.split(whereSeparator: \.isWhitespace).joined(separator: " ")
                .contains("never waits for nor changes a value"))
    }
}
