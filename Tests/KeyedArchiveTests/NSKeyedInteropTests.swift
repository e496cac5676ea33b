import Foundation
import KeyedArchive
import TestSupport
import XCTest

/// Export and import against Foundation's own NSKeyedArchiver and NSKeyedUnarchiver on this platform, and
/// import(export(v)) == v for every standard kind.
final class NSKeyedInteropTests: XCTestCase {
    static let uuid = UUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!
    static let date = Date(timeIntervalSinceReferenceDate: 812_345_678.25)
    static let base = URL(string: "https://example.com/static/")!

    static var sample: ArchiveValue {
        [
            "name": "alice", "unicode": "ünïcødé 名前 🔑", "n": 42, "negative": -7, "big": .int(.max),
            "pi": 3.25, "yes": true, "no": false, "blob": .data(Data([0, 1, 2, 0xFF])), "when": .date(date),
            "list": [1, "two", 3.5, [true]], "nested": ["k": "v"], "nothing": nil, "id": .uuid(uuid),
            "link": .url(URL(string: "https://example.com/a?b=c")!),
            "relative": .url(URL(string: "img/logo.png", relativeTo: base)!),
            "tags": .set(["a", "b", 3]), "empty": [], "emptyDict": .dictionary([:])
        ]
    }

    static let foundationClasses: [AnyClass] = [
        NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self, NSDate.self, NSNull.self,
        NSUUID.self, NSURL.self, NSSet.self
    ]

    func testFoundationUnarchivesAnExport() throws {
        let bytes = try NSKeyedArchive.exportValue(Self.sample)
        let object = try NSKeyedUnarchiver.unarchivedObject(ofClasses: Self.foundationClasses, from: Data(bytes))
        guard let d = object as? NSDictionary else { return XCTFail("not a dictionary: \(String(describing: object))") }
        XCTAssertEqual(d.count, 19)
        XCTAssertEqual(d["name"] as? String, "alice")
        XCTAssertEqual(d["unicode"] as? String, "ünïcødé 名前 🔑")
        XCTAssertEqual((d["n"] as? NSNumber)?.int64Value, 42)
        XCTAssertEqual((d["negative"] as? NSNumber)?.int64Value, -7)
        XCTAssertEqual((d["big"] as? NSNumber)?.int64Value, .max)
        XCTAssertEqual((d["pi"] as? NSNumber)?.doubleValue, 3.25)
        XCTAssertEqual((d["yes"] as? NSNumber)?.boolValue, true)
        XCTAssertEqual((d["no"] as? NSNumber)?.boolValue, false)
        XCTAssertEqual(d["blob"] as? Data, Data([0, 1, 2, 0xFF]))
        XCTAssertEqual(d["when"] as? Date, Self.date)
        XCTAssertEqual(d["list"] as? NSArray, [1, "two", 3.5, [true]] as NSArray)
        XCTAssertEqual(d["nested"] as? NSDictionary, ["k": "v"] as NSDictionary)
        XCTAssert(d["nothing"] is NSNull)
        XCTAssertEqual((d["id"] as? NSUUID).map { $0 as UUID }, Self.uuid)
        XCTAssertEqual((d["link"] as? NSURL)?.absoluteString, "https://example.com/a?b=c")
        // Foundation on Linux hands back a relative NSURL resolved (its base is dropped on the way out).
        XCTAssertEqual((d["relative"] as? NSURL)?.absoluteString, "https://example.com/static/img/logo.png")
        XCTAssertEqual(d["tags"] as? NSSet, NSSet(array: ["a", "b", 3]))
        XCTAssertEqual(d["empty"] as? NSArray, [] as NSArray)
        XCTAssertEqual(d["emptyDict"] as? NSDictionary, [:] as NSDictionary)
    }

    func testFoundationUnarchivesUnsignedAndSpecialNumbers() throws {
        let bytes = try NSKeyedArchive.exportValue([
            .uint(.max), .uint(7), .double(-0.0), .double(.infinity), .int(.min)
        ])
        let object = try NSKeyedUnarchiver.unarchivedObject(ofClasses: Self.foundationClasses, from: Data(bytes))
        guard let a = object as? [NSNumber], a.count == 5 else { return XCTFail("\(String(describing: object))") }
        XCTAssertEqual(a[0].uint64Value, .max)
        XCTAssertEqual(a[1].uint64Value, 7)
        XCTAssertEqual(a[2].doubleValue.bitPattern, (-0.0).bitPattern)
        XCTAssertEqual(a[3].doubleValue, .infinity)
        XCTAssertEqual(a[4].int64Value, .min)
    }

    func testImportOfFoundationArchives() throws {
        let root: NSDictionary = [
            "string": "hello", "int": 42, "double": 2.5, "bool": true, "data": Data([9, 8, 7]),
            "date": Self.date, "array": ["x", 7, ["y"]], "uuid": NSUUID(uuidString: Self.uuid.uuidString)!,
            "url": NSURL(string: "https://example.com/x")!, "relative": NSURL(string: "a/b", relativeTo: Self.base)!,
            "null": NSNull(), "set": NSSet(array: [7, 8]), "nested": ["inner": ["deep": "value"]]
        ]
        let data = try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: false)
        let value = try NSKeyedArchive.importValue(from: data)
        XCTAssertEqual(value["string"], "hello")
        XCTAssertEqual(value["int"], 42)
        XCTAssertEqual(value["double"], 2.5)
        XCTAssertEqual(value["data"], .data(Data([9, 8, 7])))
        XCTAssertEqual(value["date"], .date(Self.date))
        XCTAssertEqual(value["array"], ["x", 7, ["y"]])
        XCTAssertEqual(value["uuid"], .uuid(Self.uuid))
        XCTAssertEqual(value["url"]?.urlValue?.absoluteString, "https://example.com/x")
        // Foundation on Linux archives a relative NSURL as its absolute string, without NS.base.
        XCTAssertEqual(value["relative"]?.urlValue?.absoluteString, "https://example.com/static/a/b")
        XCTAssertEqual(value["null"], .null)
        XCTAssertEqual(value["set"], .set([7, 8]))
        XCTAssertEqual(value["nested"], ["inner": ["deep": "value"]])
        XCTAssertEqual(value["bool"], true)

        // Foundation's own strings, mutable ones and a mutable data too.
        let mutable = try NSKeyedArchiver.archivedData(
            withRootObject: NSMutableArray(array: [NSMutableString(string: "m"), NSMutableData(data: Data([1, 2]))]),
            requiringSecureCoding: false)
        XCTAssertEqual(try NSKeyedArchive.importValue(from: mutable), ["m", .data(Data([1, 2]))])
    }

    func testImportOfExportGivesTheValueBack() throws {
        let shared = ArchiveValue.dictionary(["host": "db", "port": 5432]).makeShared()
        let values: [ArchiveValue] = [
            Self.sample, nil, true, 0, .int(.min), .uint(0), .uint(.max), .double(.nan), .double(-0.0),
            .double(.leastNonzeroMagnitude), "", "e\u{301}", .data(Data()), .date(.distantPast), .uuid(Self.uuid),
            [shared, shared, ["host": "db", "port": 5432]],
            .anyKeyDictionary([1: "one", "1": "string one", [1, 2]: "pair", .uint(1): "u"]),
            .set([1, "1", .double(1), [1]]),
            .object("UserData", ["userName": "张三", "image": .data(Data([0x89])), "tags": ["a"], "none": nil]),
            .array((0..<40).map { .int(Int64($0)) }),  // counts of 15 and more use the long count form
            .dictionary(Dictionary(uniqueKeysWithValues: (0..<300).map { ("key\($0)", .int(Int64($0) * 1000)) }))
        ]
        for v in values {
            let bytes = try NSKeyedArchive.exportValue(v)
            XCTAssertEqual(try NSKeyedArchive.importValue(from: bytes), v, "\(v)")
            XCTAssertEqual(try NSKeyedArchive.exportValue(v), bytes, "export is deterministic")
        }
        // Identity survives: the two uses of the shared dictionary are one box again.
        let back = try NSKeyedArchive.importValue(from: try NSKeyedArchive.exportValue([shared, shared]))
        guard case .shared(let a)? = back[0], case .shared(let b)? = back[1] else { return XCTFail("\(back)") }
        XCTAssert(a === b)
    }

    /// SPEC.md Part 2 §A10: what export then import does not give back, each loss as listed there.
    func testKnownLossesOfExportThenImport() throws {
        func roundTrip(_ v: ArchiveValue) throws -> ArchiveValue {
            try NSKeyedArchive.importValue(from: NSKeyedArchive.exportValue(v))
        }
        let dict: ArchiveValue = ["k": 1]
        // A box used once is one object referenced once: it comes back unshared.
        XCTAssertEqual(try roundTrip([dict.makeShared(), 2]), [dict, 2])
        // A box around a scalar comes back as the scalar, however often it is used.
        let s = ArchiveValue.string("s").makeShared()
        XCTAssertEqual(try roundTrip([s, s]), ["s", "s"])
        // A box in a box is one object: one box comes back.
        let inner = dict.makeShared()
        let outer = inner.makeShared()
        guard case .shared(let box)? = try roundTrip([outer, outer])[0] else { return XCTFail("not shared") }
        XCTAssertEqual(box.value, dict)
        // An any-key dictionary whose keys are all strings (or that is empty) comes back as a dictionary.
        XCTAssertEqual(try roundTrip(.anyKeyDictionary(["a": 1, "b": 2])), ["a": 1, "b": 2])
        XCTAssertEqual(try roundTrip(.anyKeyDictionary([:])), .dictionary([:]))
        // Two boxes with equal contents, each used twice, stay two boxes.
        let a = dict.makeShared()
        let b = dict.makeShared()
        let back = try roundTrip([a, b, a, b])
        guard case .shared(let x)? = back[0], case .shared(let y)? = back[1], case .shared(let z)? = back[2] else {
            return XCTFail("\(back)")
        }
        XCTAssert(x === z && x !== y)
    }

    func testExportRefusesWhatWouldNotComeBack() {
        assertArchiveError(.notExportable, "reserved class") { try NSKeyedArchive.exportValue(.object("NSArray", [:])) }
        assertArchiveError(.notExportable, "$ field") { try NSKeyedArchive.exportValue(.object("C", ["$class": 1])) }
        var deep: ArchiveValue = nil
        for _ in 0..<600 { deep = [deep] }
        assertArchiveError(.depthLimit, "deep") { try NSKeyedArchive.exportValue(deep) }
        assertArchiveError(.valueLimit, "many") {
            try NSKeyedArchive.exportValue(
                .array((0..<20).map { .int(Int64($0)) }), limits: ArchiveLimits(maxValues: 10))
        }
    }

    /// What export writes, import reads under the same limits (SPEC.md §A10): a value whose plist would hold
    /// more than `VALUES_MAX` objects is refused by export, not written for import to refuse. Seeded shapes
    /// around the limit: empty arrays (three plist objects each), ints, shared strings, nested dictionaries,
    /// objects, sets.
    func testExportWritesOnlyWhatImportReads() throws {
        var random = SplitMix64(state: 2026_1203)
        let limits = ArchiveLimits(maxValues: 300)
        var exported = 0
        var refused = 0
        for round in 0..<400 {
            let n = Int.random(in: 1...160, using: &random)
            let value: ArchiveValue =
                switch round % 6 {
                case 0: .array(Array(repeating: [], count: n))
                case 1: .array((0..<n).map { .int(Int64($0 % 7)) })
                case 2: .array((0..<n).map { .string("s\($0 % 5)") })
                case 3: .dictionary(Dictionary(uniqueKeysWithValues: (0..<n).map { ("k\($0)", ["v": .int(1)]) }))
                case 4: .array((0..<n).map { .object("Thing", ["id": .int(Int64($0)), "tag": "t"]) })
                default: .set(Set((0..<n).map { ArchiveValue.array([.int(Int64($0))]) }))
                }
            do {
                let bytes = try NSKeyedArchive.exportValue(value, limits: limits)
                XCTAssertEqual(try NSKeyedArchive.importValue(from: bytes, limits: limits), value, "round \(round)")
                exported += 1
            } catch let error as ArchiveError {
                XCTAssertEqual(error.code, .valueLimit, "round \(round): \(error)")
                refused += 1
            }
        }
        XCTAssert(exported > 50 && refused > 50, "both sides of the limit: \(exported) exported, \(refused) refused")
    }
}
