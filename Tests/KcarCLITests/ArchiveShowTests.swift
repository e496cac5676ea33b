import Foundation
import XCTest

/// `kcar archive show` (SPEC.md Part 2 §A12), issue 9: a valid `$date` for every date, dictionaries that
/// cannot pass for a typed value, output budgeted and streamed, and conversion in canonical order.
final class ArchiveShowTests: XCTestCase {
    let header: [UInt8] = [0x89, 0x4B, 0x43, 0x41, 0x01, 0x00]
    var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-show-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { [dir] in try? FileManager.default.removeItem(atPath: dir) }
    }

    func show(_ bytes: [UInt8], expect: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> String
    {
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/a.kca"))
        let r = try runKcar(["archive", "show", "a.kca", "--json"], in: dir)
        XCTAssertEqual(r.code, expect, r.err, file: file, line: line)
        return r.out
    }

    func date(_ bits: UInt64) -> [UInt8] {
        header + [0x09] + (0..<8).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) }
    }
    func date(_ t: Double) -> [UInt8] { date(t.bitPattern) }

    func testEveryDatePrintsAValidDate() throws {
        let cases: [([UInt8], String)] = [
            (date(0.0), #"{"$date":"2001-01-01T00:00:00Z"}"#),
            (date(0.5), #"{"$date":"2001-01-01T00:00:00.5Z"}"#),
            (date(0.999_999_999_9), #"{"$date":"2001-01-01T00:00:01Z"}"#),  // rounds up into the next second
            (date(-63_145_526_400.0), #"{"$date":"0000-01-01T00:00:00Z"}"#),
            (date(252_423_993_599.0), #"{"$date":"9999-12-31T23:59:59Z"}"#),
            // Years -999 to -1 printed as `00-5-01-01T...` before issue 9.
            (date(-63_145_526_401.0), #"{"$date":{"$seconds":-63145526401.0}}"#),
            (date(-94_701_484_800.0), #"{"$date":{"$seconds":-94701484800.0}}"#),
            (date(252_423_993_600.0), #"{"$date":{"$seconds":252423993600.0}}"#),
            // Past 1e15 s: a bare number before issue 9.
            (date(1e16), #"{"$date":{"$seconds":1e+16}}"#),
            (date(-Double.infinity), #"{"$date":{"$seconds":{"$double":"-Infinity"}}}"#),
            // NaN: `nan(0x1)` before issue 9.
            (date(UInt64(0x7FF8_0000_0000_0001)), #"{"$date":{"$seconds":{"$double":"NaN"}}}"#)
        ]
        for (bytes, json) in cases { XCTAssertEqual(try show(bytes), json + "\n") }
        // Indented, the nested form keeps its structure.
        try Data(date(1e16)).write(to: URL(fileURLWithPath: dir + "/a.kca"))
        let r = try runKcar(["archive", "show", "a.kca"], in: dir)
        XCTAssertEqual(r.out, "{\n  \"$date\": {\n    \"$seconds\": 1e+16\n  }\n}\n")
    }

    func testADictionaryWithADollarKeyIsWrapped() throws {
        // {"$data": "x"} is a dictionary, not data.
        let dollar = header + [0x0E, 0x01, 0x00, 0x05] + Array("$data".utf8) + [0x06, 0x01, 0x78]
        XCTAssertEqual(try show(dollar), #"{"$dictionary":{"$data":"x"}}"# + "\n")
        let plain = header + [0x0E, 0x01, 0x00, 0x01, 0x61, 0x00]
        XCTAssertEqual(try show(plain), #"{"a":null}"# + "\n")
    }

    /// 100 KB of shared data used 700 times: 93 MB of JSON from a 100 KB archive. Refused before anything is
    /// printed (before issue 9, all of it was built in memory first).
    func testOutputIsBudgetedBeforeItIsPrinted() throws {
        var bytes = header + [0x0D, 0xBC, 0x05, 0x12, 0x08, 0xA0, 0x8D, 0x06] + [UInt8](repeating: 0x41, count: 100_000)
        for _ in 1..<700 { bytes += [0x13, 0x00] }
        XCTAssertEqual(try show(bytes, expect: 4), "")
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/a.kca"))
        XCTAssertTrue(try runKcar(["archive", "show", "a.kca"], in: dir).err.contains("bytes of JSON; not printed"))
    }

    /// Sets nested 22 deep in set elements (the archive fuzz finding, `Fixtures/fuzz/archive`): printed in
    /// canonical order, the same JSON as the sorted archive converted from it, with each set ordered once (it
    /// took 9.8 s of CPU when every set was ordered again inside each sort key around it); sets nested so
    /// deep that their sort keys pass `SORT_KEYS_MAX` are refused, by show and convert alike.
    func testNestedSetsPrintInCanonicalOrder() throws {
        let fixture = CLITests.repo.appendingPathComponent(
            "Fixtures/fuzz/archive/timeout-nested-sets-ordered-at-every-level.kca")
        let shown = try show(try [UInt8](Data(contentsOf: fixture)))
        XCTAssertTrue(shown.hasPrefix(#"{"$set":[{"$set":[true]},{"$set":[true,{"$set":[true,"#), shown)
        XCTAssertEqual(try runKcar(["archive", "convert", "a.kca", "b.kca", "--to", "kcar"], in: dir).code, 0)
        XCTAssertEqual(
            try runKcar(["archive", "show", "b.kca", "--json"], in: dir).out, shown)
        // {true, {true, ... {true}}}, 24 levels: 134 MB of sort keys, counted as SPEC §A3 counts them.
        var deep: [UInt8] = header
        for _ in 0..<24 { deep += [0x10, 0x02, 0x02] }
        deep += [0x10, 0x01, 0x02]
        XCTAssertEqual(try show(deep, expect: 4), "")
        let r = try runKcar(["archive", "convert", "a.kca", "c.kca", "--to", "kcar"], in: dir)
        XCTAssertEqual(r.code, 4)
        XCTAssertTrue(r.err.contains("sort key limit exceeded"), r.err)
    }

    /// `convert --to kcar` writes canonical order by default: the same bytes in every process.
    func testConvertIsDeterministic() throws {
        var set = header + [0x10, 0x20]
        for i in 0..<32 { set += [0x03, UInt8(2 * i)] }
        try Data(set).write(to: URL(fileURLWithPath: dir + "/a.kca"))
        var outputs: Set<Data> = []
        for n in 0..<4 {
            XCTAssertEqual(try runKcar(["archive", "convert", "a.kca", "b\(n).kca", "--to", "kcar"], in: dir).code, 0)
            outputs.insert(try Data(contentsOf: URL(fileURLWithPath: dir + "/b\(n).kca")))
        }
        XCTAssertEqual(outputs.count, 1)
        XCTAssertEqual(outputs.first?[5], 0x01, "the sorted flag")
    }
}
