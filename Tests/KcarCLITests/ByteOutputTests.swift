import Foundation
import Synchronization
import TestSupport
import XCTest

@testable import KcarCLI
@testable import VaultFormat

/// Issue 24: `list` and `list --json` write bytes into one buffer instead of a String per item and per value, and
/// the table's first pass reads sizes without building items. What they print must not change: a seeded sweep of
/// items (names with controls, `%`, quotes and non-ASCII text, dates before 1970, packed files, folders and links,
/// other classes) in a version 1 and a version 2 vault is listed by the built binary and compared with what the
/// String forms these replaced print for the same items, read in process.
final class ByteOutputTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-bytes-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// Pieces of names: plain, and what needs an escape in JSON, an %XX in a name or a `\x` on a terminal.
    static let pieces = [
        "a", "svc", "user", "é", "日本", "%", "/", ".", "..", "\"", "\\", "\u{1}", "\n", "\u{7F}", "\u{85}", "\u{9B}",
        "\u{202E}", "\u{2028}", " ", "x.y"
    ]

    func text(_ rng: inout SplitMix64) -> String {
        (0..<Int.random(in: 0...4, using: &rng)).map { _ in Self.pieces.randomElement(using: &rng)! }.joined()
    }

    func value(_ rng: inout SplitMix64) -> AttributeValue {
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: return .string(text(&rng))
        case 1: return .integer([Int64.min, -1, 0, 9, 10, 1 << 40, Int64.max].randomElement(using: &rng)!)
        case 2: return .bool(Bool.random(using: &rng))
        case 3: return .date(nanoseconds: Int64.random(in: Int64.min...Int64.max, using: &rng))
        default:
            return .data((0..<Int.random(in: 0...9, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
    }

    /// The items of the sweep: generic passwords by service and account, internet passwords, packed files,
    /// folders and links, items without a service or account.
    func fill(_ tx: Transaction, seed: UInt64, count: Int = 300) throws {
        var rng = SplitMix64(state: seed)
        for i in 0..<count {
            var a = Attributes()
            if Int.random(in: 0..<8, using: &rng) > 0 { a[AttributeName.service] = .string(text(&rng) + "\(i)") }
            if Int.random(in: 0..<8, using: &rng) > 0 { a[AttributeName.account] = .string(text(&rng)) }
            a["mdat"] =
                Bool.random(using: &rng)
                ? .date(
                    nanoseconds: Int64.random(in: -4_000_000_000_000_000_000...4_000_000_000_000_000_000, using: &rng))
                : nil
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: a[PackedKind.modeAttribute] = .integer(Int64.random(in: 0...0o7777, using: &rng))
            case 1: a[PackedKind.linkAttribute] = .string(text(&rng))
            case 2: a[PackedKind.folderAttribute] = .bool(true)
            default: break
            }
            for j in 0..<Int.random(in: 0...3, using: &rng) { a["x\(j)"] = value(&rng) }
            let size = [0, 1, 9, 10, 99, 1_000, 12_345].randomElement(using: &rng)!
            let cls: ItemClass = Int.random(in: 0..<5, using: &rng) == 0 ? .internetPassword : .genericPassword
            try tx.add(
                class: cls, attributes: a, value: .bytes([UInt8](repeating: 7, count: size)), ifKeyExists: .keepBoth)
        }
    }

    func testListPrintsWhatItsStringFormsPrinted() throws {
        let keyPath = dir + "/k.key"
        XCTAssertTrue(FileManager.default.createFile(atPath: keyPath, contents: Data(Recipes.keyFile)))
        // The third vault is large enough to be listed by leaves on every core (Vault.mapItemRuns), its deletions
        // folded into its tree by a compaction; the second, with its deletions in a delta commit, is not.
        for (n, (format, count)) in [(NewVaultFormat.version1, 300), (.current(), 300), (.current(), 5_000)]
            .enumerated()
        {
            let path = dir + "/v\(n).kcv"
            try Vault.create(
                path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: format
            ) { try fill($0, seed: 24 + UInt64(n), count: count) }
            // Deleted items (a version 2 vault keeps their tombstones) are neither listed nor measured.
            let writer = try Vault.open(
                path: path, secret: .keyFile(SecureBytes(copying: Recipes.keyFile)), mode: .write)
            let largest = writer.items.filter { $0.size == 12_345 }
            XCTAssertFalse(largest.isEmpty)
            try writer.commit { tx in for item in largest { try tx.delete(item.id) } }
            if count > 300 { try writer.compact() }
            let vault = try Vault.open(path: path, secret: .keyFile(SecureBytes(copying: Recipes.keyFile)))
            var items: [Item] = []
            try vault.forEachItem {
                items.append($0)
                return true
            }
            XCTAssertEqual(items.count, count - largest.count)
            XCTAssertEqual(try vault.mapItemRuns({ $0.count }, { _ in }), n == 2, "format \(n): listed by leaves")
            XCTAssertEqual(try vault.largestItemSize(), 1_000)
            XCTAssertEqual(try vault.largestItemSize(), items.map(\.size).max())

            let json = try runKcar(["list", path, "--json", "--key-file", keyPath], in: dir)
            XCTAssertEqual(json.code, 0, json.err)
            XCTAssertEqual(json.out, "[" + items.map(Self.json).joined(separator: ",\n ") + "]\n", "format \(n)")
            for long in [false, true] {
                let table = try runKcar(["list", path, "--key-file", keyPath] + (long ? ["--long"] : []), in: dir)
                XCTAssertEqual(table.code, 0, table.err)
                XCTAssertEqual(table.out, Self.table(items, long: long), "format \(n), long \(long)")
            }
        }
    }

    /// `git textconv` of a vault large enough to be printed by leaves on every core (Versioning.mapLiveStateRuns)
    /// prints, byte for byte, what its scan item by item prints.
    func testTextconvByLeavesPrintsWhatAScanPrints() throws {
        let keyPath = dir + "/k.key"
        XCTAssertTrue(FileManager.default.createFile(atPath: keyPath, contents: Data(Recipes.keyFile)))
        let path = dir + "/big.kcv"
        try Vault.create(path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))]) {
            try fill($0, seed: 2408, count: 5_000)
        }
        let vault = try Vault.open(path: path, secret: .keyFile(SecureBytes(copying: Recipes.keyFile)))
        let versioning = try XCTUnwrap(vault.versioning)
        XCTAssertTrue(try versioning.mapLiveStateRuns({ $0.count }, { _ in }), "printed by leaves")
        var expected = ByteSink()
        var text = VersionText()
        try versioning.forEachLiveState { s in
            if let item = s.item { try GitCommand.printLine(item, version: text(s.version), value: nil, to: &expected) }
            return true
        }
        let r = try runKcar(["git", "textconv", path, "--key-file", keyPath], in: dir)
        XCTAssertEqual(r.code, 0, r.err)
        let lines = r.out.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        XCTAssertTrue(lines[0].hasSuffix(": 5000 items"), String(lines[0]))
        XCTAssertEqual(lines.count, 2)
        XCTAssertEqual(String(lines[1]), String(decoding: expected.bytes, as: UTF8.self))
    }

    func testEmptyVaultsList() throws {
        let keyPath = dir + "/k.key"
        XCTAssertTrue(FileManager.default.createFile(atPath: keyPath, contents: Data(Recipes.keyFile)))
        try Vault.create(
            path: dir + "/e.kcv", group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))]
        ) { _ in }
        XCTAssertEqual(try runKcar(["list", "e.kcv", "--json", "--key-file", keyPath], in: dir).out, "[]\n")
        XCTAssertEqual(
            try runKcar(["list", "e.kcv", "--key-file", keyPath], in: dir).out, "SIZE  MODIFIED (UTC)        NAME\n")
    }

    /// A vault whose items tree is damaged after its first leaf (the second reference names the first page
    /// again): `list --json` prints the items it read before the damage, then exits 4, as before the byte
    /// writer (which first dropped them with its buffer); the table's first pass finds this damage first.
    func testAVaultDamagedPartWayListsWhatWasReadBeforeTheDamage() throws {
        try HostileV2.forged(dir, .pageTwice)
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/k.key", contents: Data(HostileV2.key)))
        for extra in [["--json"], [], ["--long"]] {
            let intact = try runKcar(["list", "o.kcv", "--key-file", "k.key"] + extra, in: dir)
            let damaged = try runKcar(["list", "v.kcv", "--key-file", "k.key"] + extra, in: dir)
            XCTAssertEqual(intact.code, 0, intact.err)
            XCTAssertEqual(damaged.code, 4, damaged.err)
            XCTAssertTrue(intact.out.hasPrefix(damaged.out), "\(extra): a prefix of the intact vault's listing")
            XCTAssertLessThan(damaged.out.count, intact.out.count)
            if extra == ["--json"] {
                XCTAssertTrue(damaged.out.hasPrefix("[{\"id\": "), "the items before the damage are printed")
            }
        }
    }

    func testBytePiecesMatchTheirStrings() {
        var rng = SplitMix64(state: 2412)
        for _ in 0..<20_000 {
            let v = UInt64.random(in: 0...UInt64.max, using: &rng) >> UInt64.random(in: 0...63, using: &rng)
            var b: [UInt8] = []
            appendDecimal(v, to: &b)
            XCTAssertEqual(String(decoding: b, as: UTF8.self), String(v))
            XCTAssertEqual(decimalDigits(v), String(v).count)
            let id = ItemID((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })
            var hex: [UInt8] = []
            id.appendHex(to: &hex)
            XCTAssertEqual(String(decoding: hex, as: UTF8.self), id.description)
            let secs = Int64.random(in: -62_167_219_200...253_402_300_799, using: &rng)  // years 0000-9999
            let frac =
                Int64.random(in: -999_999_999...999_999_999, using: &rng) / [1, 10, 1_000_000].randomElement(
                    using: &rng)!
            for digits in [nil, 0, 3, 9] {
                var d: [UInt8] = []
                XCTAssertTrue(appendISO8601(seconds: secs, nanoseconds: frac, fractionDigits: digits, to: &d))
                XCTAssertEqual(
                    String(decoding: d, as: UTF8.self), Self.iso8601(seconds: secs, nanoseconds: frac, digits: digits))
            }
        }
        var outside: [UInt8] = []
        XCTAssertFalse(appendISO8601(seconds: 253_402_300_800, nanoseconds: 0, to: &outside), "the year 10000")
        XCTAssertFalse(appendISO8601(seconds: -62_167_219_201, nanoseconds: 0, to: &outside), "the year -1")
        XCTAssertEqual(outside, [])
        XCTAssertEqual(KcarCLI.iso8601(seconds: 253_402_300_800, nanoseconds: 5), "10000-01-01T00:00:00.000000005Z")
    }

    // MARK: The String forms the byte writers replaced, kept here as the reference.

    static func iso8601(seconds: Int64, nanoseconds: Int64, digits: Int?) -> String {
        var (s, f) = (seconds, nanoseconds)
        if f < 0 { (s, f) = (s - 1, f + 1_000_000_000) }
        var (d, r) = s.quotientAndRemainder(dividingBy: 86_400)
        if r < 0 { (d, r) = (d - 1, r + 86_400) }
        let z = d + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func p(_ v: Int64, _ w: Int) -> String {
            let t = String(v)
            return String(repeating: "0", count: max(0, w - t.count)) + t
        }
        var out =
            "\(p(year, 4))-\(p(month, 2))-\(p(doy - (153 * mp + 2) / 5 + 1, 2))T\(p(r / 3600, 2)):\(p(r % 3600 / 60, 2)):\(p(r % 60, 2))"
        if let digits, digits > 0 {
            out += "." + p(f / Int64(pow(10.0, Double(9 - digits))), digits)
        } else if f > 0 {
            var frac = p(f, 9)
            while frac.hasSuffix("0") { frac.removeLast() }
            out += "." + frac
        }
        return out + "Z"
    }

    static func date(_ ns: Int64) -> String {
        let (secs, frac) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
        return iso8601(seconds: secs, nanoseconds: frac, digits: nil)
    }

    static func json(_ item: Item) -> String {
        let a = item.attributes
        var members = [
            ("id", JSON.string(item.id.description)), ("class", JSON.string(item.itemClass.rawValue)),
            ("service", a.string(AttributeName.service).map(JSON.string) ?? "null"),
            ("account", a.string(AttributeName.account).map(JSON.string) ?? "null"),
            ("name", JSON.string(ItemPath.name(item)))
        ]
        if a[PackedKind.modeAttribute] != nil || a[PackedKind.linkAttribute] != nil
            || a[PackedKind.folderAttribute] != nil
        {
            let kind = PackedKind.lenient(item)
            switch kind.kind {
            case .file: members.append(("type", JSON.string("file")))
            case .folder: members.append(("type", JSON.string("folder")))
            case .link(let target): members += [("type", JSON.string("link")), ("target", JSON.string(target))]
            }
            let octal = kind.mode.map { String($0, radix: 8) }
            members.append(
                ("mode", octal.map { JSON.string(String(repeating: "0", count: max(0, 4 - $0.count)) + $0) } ?? "null"))
        }
        members.append(("size", String(item.size)))
        if case .date(let ns)? = a["mdat"] {
            members.append(("modified", JSON.string(date(ns))))
        } else {
            members.append(("modified", "null"))
        }
        let attributes = a.map { name, value -> (String, String) in
            switch value {
            case .string(let s): return (name, JSON.string(s))
            case .integer(let i): return (name, String(i))
            case .bool(let b): return (name, b ? "true" : "false")
            case .date(let ns): return (name, "{\"$date\": " + JSON.string(date(ns)) + "}")
            case .data(let d): return (name, "{\"$data\": " + JSON.string(Base64.encode(d)) + "}")
            }
        }
        members.append(("attributes", JSON.object(attributes)))
        return JSON.object(members)
    }

    static func table(_ items: [Item], long: Bool) -> String {
        let columns: [Table.Column] =
            (long ? [.init(title: "MODE")] : []) + [
                .init(title: "SIZE", rightAligned: true), .init(title: "MODIFIED (UTC)"), .init(title: "NAME")
            ]
        let widths = (long ? [10] : []) + [max(4, String(items.map(\.size).max() ?? 0).count), 20, 0]
        var out = Table.line(columns.map(\.title), widths, columns) + "\n"
        for item in items {
            let kind = PackedKind.lenient(item)
            var name = terminalSafe(ItemPath.name(item))
            if case .link(let target) = kind.kind { name += " -> " + terminalSafe(target) }
            let cls = item.itemClass == .genericPassword ? "" : "  [\(terminalSafe(item.itemClass.rawValue))]"
            let modified = item.modified.map { ns -> String in
                let (secs, frac) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
                return iso8601(seconds: frac < 0 ? secs - 1 : secs, nanoseconds: 0, digits: nil)
            }
            out +=
                Table.line(
                    (long ? [kind.modeString] : []) + [String(item.size), modified ?? "-", name + cls], widths, columns)
                + "\n"
        }
        return out
    }
}

/// ``pipelined(batch:inFlight:produce:consume:)``: every value in order, whatever the batch; a producer's error
/// after what it emitted; a consumer's error stops the producer; nothing runs after it returns.
final class PipelinedTests: XCTestCase {
    struct Stop: Error, Equatable { let at: Int }

    func testValuesArriveInOrderInBoundedBatches() throws {
        for (count, batch) in [(0, 4), (1, 4), (4, 4), (5, 4), (10_000, 1024), (3, 1)] {
            var got: [Int] = []
            try pipelined(batch: batch, inFlight: 2, produce: { emit in for i in 0..<count where !emit(i) { break } }) {
                XCTAssertLessThanOrEqual($0.count, batch)
                XCTAssertFalse($0.isEmpty)
                got += $0
            }
            XCTAssertEqual(got, Array(0..<count), "\(count) values in batches of \(batch)")
        }
    }

    func testAProducersErrorComesAfterWhatItEmitted() {
        var got: [Int] = []
        XCTAssertThrowsError(
            try pipelined(
                batch: 8, inFlight: 2,
                produce: { emit in
                    for i in 0..<21 { _ = emit(i) }
                    throw Stop(at: 21)
                }
            ) { got += $0 }
        ) { XCTAssertEqual($0 as? Stop, Stop(at: 21)) }
        XCTAssertEqual(got, Array(0..<21), "every value emitted before the error is consumed")
    }

    func testAConsumersErrorStopsTheProducer() {
        let produced = Mutex(0)
        var calls = 0
        XCTAssertThrowsError(
            try pipelined(
                batch: 16, inFlight: 2,
                produce: { emit in
                    for i in 0..<1_000_000 {
                        guard emit(i) else { return }
                        produced.withLock { $0 += 1 }
                    }
                }
            ) { _ in
                calls += 1
                throw Stop(at: calls)
            }
        ) { XCTAssertEqual($0 as? Stop, Stop(at: 1)) }
        XCTAssertEqual(calls, 1, "no batch is consumed after the consumer failed")
        // The producer stopped within the batches in flight when the consumer failed, not at the end.
        XCTAssertLessThan(produced.withLock { $0 }, 16 * 5)
    }

    /// Values are freed by the producer's thread, which made them: a consumed batch goes back and is emptied
    /// there. Only the batches never taken again (at most one being filled, `inFlight` queued, one being
    /// consumed, and those given back after the producer's last) are freed here, at the end.
    func testValuesAreFreedOnTheProducersThread() throws {
        final class Tally: Sendable { let n = Mutex(0) }
        final class Value: Sendable {
            let consumer: pthread_t
            let freedHere: Tally
            init(_ consumer: pthread_t, _ freedHere: Tally) {
                self.consumer = consumer
                self.freedHere = freedHere
            }
            deinit { if pthread_equal(pthread_self(), consumer) != 0 { freedHere.n.withLock { $0 += 1 } } }
        }
        let freedHere = Tally()
        let me = pthread_self()
        let (count, batch, inFlight) = (10_000, 16, 2)
        var consumed = 0
        try pipelined(
            batch: batch, inFlight: inFlight,
            produce: { emit in for _ in 0..<count where !emit(Value(me, freedHere)) { break } }
        ) { consumed += $0.count }
        XCTAssertEqual(consumed, count)
        XCTAssertLessThanOrEqual(freedHere.n.withLock { $0 }, (inFlight + 3) * batch)
    }
}
