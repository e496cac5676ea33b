import Foundation
import KeyedArchive
import XCTest

/// SPEC.md Part 2 §A11: each rule of the Codable mapping, as ArchiveEncoder and ArchiveDecoder apply it.
final class CodableMappingTests: XCTestCase {
    struct Widths: Codable, Equatable {
        var i8: Int8 = -8, i16: Int16 = -16, i32: Int32 = -32, i64: Int64 = -64, i: Int = -1
        var u8: UInt8 = 8, u16: UInt16 = 16, u32: UInt32 = 32, u64: UInt64 = 64, u: UInt = 1
        var f: Float = 1.5, d: Double = 2.5, b: Bool = true, s: String = "s"
    }

    struct Special: Codable, Equatable {
        var date = Date(timeIntervalSinceReferenceDate: 12.5)
        var data = Data([1, 2])
        var url = URL(string: "https://example.com/a")!
        var uuid = UUID(uuid: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
        var value: ArchiveValue = .set([1, 2])
    }

    struct Optionals: Codable, Equatable {
        var absent: Int?
        var present: Int? = 3
        var list: [Int?] = [1, nil]
    }

    struct ExplicitNil: Encodable {
        enum CodingKeys: String, CodingKey { case x }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeNil(forKey: .x)
        }
    }

    struct Nothing: Codable, Equatable {
        init() {}
        init(from decoder: any Decoder) throws {}
        func encode(to encoder: any Encoder) throws {}
    }

    class Base: Codable {
        var a = 1
    }

    final class Derived: Base {
        var b = 2
        enum CodingKeys: String, CodingKey { case b }
        override init() { super.init() }
        required init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            b = try c.decode(Int.self, forKey: .b)
            try super.init(from: c.superDecoder())
        }
        override func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(b, forKey: .b)
            try super.encode(to: c.superEncoder())
        }
    }

    enum Choice: Codable, Equatable {
        case one(Int)
        case two(x: String)
    }

    let encoder = ArchiveEncoder()
    let decoder = ArchiveDecoder()

    func value<T: Encodable>(_ v: T) throws -> ArchiveValue { try encoder.encodeToValue(v) }

    func testScalarsAndWidths() throws {
        let v = try value(Widths())
        XCTAssertEqual(
            v,
            .dictionary([
                "i8": -8, "i16": -16, "i32": -32, "i64": -64, "i": -1,
                "u8": .uint(8), "u16": .uint(16), "u32": .uint(32), "u64": .uint(64), "u": .uint(1),
                "f": 1.5, "d": 2.5, "b": true, "s": "s"
            ]))
        XCTAssertEqual(try decoder.decode(Widths.self, fromValue: v), Widths())
        // Float widens exactly: its bits come back.
        XCTAssertEqual(try value(Float(0.1)), .double(Double(Float(0.1))))
        XCTAssertEqual(try decoder.decode(Float.self, fromValue: .double(Double(Float(0.1)))), Float(0.1))
    }

    func testIntegersConvertBetweenIntAndUIntOnlyWhenExact() throws {
        XCTAssertEqual(try decoder.decode(UInt8.self, fromValue: .int(255)), 255)
        XCTAssertEqual(try decoder.decode(Int64.self, fromValue: .uint(7)), 7)
        XCTAssertEqual(try decoder.decode(Int.self, fromValue: .uint(UInt64(Int.max))), .max)
        for (type, v) in [
            (Int8.self as any Decodable.Type, ArchiveValue.int(128)), (UInt.self, .int(-1)),
            (Int64.self, .uint(.max)), (Int.self, .double(1)), (Int.self, .bool(true)),
            (Int.self, .string("1"))
        ] {
            XCTAssertThrowsError(try decoder.decode(type, fromValue: v), "\(type) from \(v)") {
                guard case DecodingError.typeMismatch = $0 else { return XCTFail("\($0)") }
            }
        }
    }

    func testNothingElseConverts() throws {
        for (type, v) in [
            (Double.self as any Decodable.Type, ArchiveValue.int(1)), (Bool.self, .int(1)),
            (String.self, .data(Data())), (Date.self, .double(0)), (Data.self, .string("")),
            (URL.self, .string("https://x/")), (UUID.self, .string("0AD863BA-7584-40CF-8896-BD87B3280C34")),
            (Float.self, .int(1))
        ] {
            XCTAssertThrowsError(try decoder.decode(type, fromValue: v), "\(type) from \(v)") {
                guard case DecodingError.typeMismatch = $0 else { return XCTFail("\($0)") }
            }
        }
    }

    func testFloatRoundsButMustNotOverflow() throws {
        XCTAssertEqual(try decoder.decode(Float.self, fromValue: 0.1), Float(0.1))
        XCTAssertEqual(try decoder.decode(Float.self, fromValue: .double(.infinity)), .infinity)
        XCTAssert(try decoder.decode(Float.self, fromValue: .double(.nan)).isNaN)
        XCTAssertThrowsError(try decoder.decode(Float.self, fromValue: 1e300)) {
            guard case DecodingError.typeMismatch = $0 else { return XCTFail("\($0)") }
        }
    }

    func testFoundationTypesAreTheirKinds() throws {
        let v = try value(Special())
        XCTAssertEqual(v["date"], .date(Special().date))
        XCTAssertEqual(v["data"], .data(Data([1, 2])))
        XCTAssertEqual(v["url"], .url(Special().url))
        XCTAssertEqual(v["uuid"], .uuid(Special().uuid))
        XCTAssertEqual(v["value"], .set([1, 2]))
        XCTAssertEqual(try decoder.decode(Special.self, fromValue: v), Special())
        // A URL outside §A5.6 encodes to a value, but the value cannot be written.
        let zone = URL(string: "http://[fe80::1%25en0]/")!
        XCTAssertEqual(try value([zone]), [.url(zone)])
        XCTAssertThrowsError(try encoder.encode([zone])) { XCTAssertEqual(($0 as? ArchiveError)?.code, .invalidValue) }
    }

    func testOptionals() throws {
        let v = try value(Optionals())
        XCTAssertEqual(v, ["present": 3, "list": [1, nil]])
        XCTAssertEqual(try value(ExplicitNil()), ["x": nil])
        XCTAssertEqual(
            try decoder.decode(Optionals.self, fromValue: ["present": nil, "list": []]),
            Optionals(absent: nil, present: nil, list: []))
        XCTAssertEqual(try value(Int?.none), nil)
        XCTAssertEqual(try value(Int?.some(4)), 4)
    }

    func testContainers() throws {
        XCTAssertEqual(try value(Nothing()), .dictionary([:]))
        XCTAssertEqual(try decoder.decode(Nothing.self, fromValue: 5), Nothing())
        XCTAssertEqual(try value(Set([3])), [3])
        XCTAssertEqual(try value([2: "b"]), ["2": "b"])
        let id = UUID(uuid: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
        XCTAssertEqual(try value([id: 1]), [.uuid(id), 1])
        XCTAssertEqual(try value(Choice.two(x: "s")), ["two": ["x": "s"]])
        XCTAssertEqual(try value(Choice.one(1)), ["one": ["_0": 1]])
        XCTAssertEqual(try decoder.decode([String: Int].self, fromValue: ["a": 1, "b": 2]), ["a": 1, "b": 2])
        // A keyed container needs a dictionary, an unkeyed one an array; extra keys are ignored.
        XCTAssertThrowsError(try decoder.decode([Int].self, fromValue: ["a": 1])) {
            guard case DecodingError.typeMismatch = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try decoder.decode(Optionals.self, fromValue: [1])) {
            guard case DecodingError.typeMismatch = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(
            try decoder.decode(Optionals.self, fromValue: ["list": [], "extra": 1]),
            Optionals(absent: nil, present: nil, list: []))
        XCTAssertThrowsError(try decoder.decode(Widths.self, fromValue: [:])) {
            guard case DecodingError.keyNotFound = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try decoder.decode([Int].self, fromValue: [.shared(ArchiveShared([1, "x"]))])) {
            guard case DecodingError.typeMismatch = $0 else { return XCTFail("\($0)") }
        }
    }

    func testSuperEncoderIsTheSuperKey() throws {
        let v = try value(Derived())
        XCTAssertEqual(v, .shared(ArchiveShared(["b": 2, "super": ["a": 1]])))
        let back = try decoder.decode(Derived.self, fromValue: v)
        XCTAssertEqual([back.a, back.b], [1, 2])
        // A missing "super" decodes as null: here, a keyed container fails on it.
        XCTAssertThrowsError(try decoder.decode(Derived.self, fromValue: ["b": 2])) {
            guard case DecodingError.typeMismatch = $0 else { return XCTFail("\($0)") }
        }
    }

    func testClassInstancesAreSharedBoxesEvenWhenUsedOnce() throws {
        let base = Base()
        guard case .shared(let box) = try value(base) else { return XCTFail("not shared") }
        XCTAssertEqual(box.value, ["a": 1])
        // Shared boxes are looked through, for structs too.
        XCTAssertEqual(
            try decoder.decode(Optionals.self, fromValue: .shared(ArchiveShared(["list": []]))),
            Optionals(absent: nil, present: nil, list: []))
    }

    struct Listed: Codable {
        init() {}
        init(from decoder: any Decoder) throws {}
        func encode(to encoder: any Encoder) throws {
            var c = encoder.unkeyedContainer()
            try c.encode(1)
        }
    }

    func testWhatIsRefused() throws {
        // 128-bit integers: the standard library's default, no support.
        XCTAssertThrowsError(try value(Int128(5))) {
            guard case EncodingError.invalidValue = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try decoder.decode(UInt128.self, fromValue: .uint(5))) {
            guard case DecodingError.typeMismatch = $0 else { return XCTFail("\($0)") }
        }
        // A registered type is an object: it must encode a keyed container.
        let registered = ArchiveEncoder(registry: ArchiveTypeRegistry().registering(Listed.self, as: "Listed"))
        XCTAssertThrowsError(try registered.encodeToValue(Listed())) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .invalidValue)
        }
        XCTAssertEqual(try value(Listed()), [1])
    }

    func testDepthLimit() throws {
        var e = ArchiveEncoder()
        e.limits = ArchiveLimits(maxDepth: 3)
        XCTAssertNoThrow(try e.encodeToValue([[1]]))
        XCTAssertThrowsError(try e.encodeToValue([[[1]]])) { XCTAssertEqual(($0 as? ArchiveError)?.code, .depthLimit) }
    }
}
