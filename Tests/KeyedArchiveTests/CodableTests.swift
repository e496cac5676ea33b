import Foundation
import KeyedArchive
import XCTest

/// The Codable layer: the seed's `[UserData]` in one call, registered types, sharing and cycles of classes.
final class CodableTests: XCTestCase {
    /// The seed's model (/work/shared/seeds/000): optional fields, the image kept as data, plus a nested type.
    struct UserData: Codable, Equatable {
        var userName: String?
        var password: String?
        var phone: String?
        var email: String?
        var image: Data?
        var categoryName: String?
        var address: Address?
        var tags: [String] = []
        var created = Date(timeIntervalSinceReferenceDate: 0)
    }

    struct Address: Codable, Equatable {
        var city: String
        var zip: UInt32
        var location: [Double]
    }

    struct Impostor: Codable, Equatable {
        var userName: String?
    }

    final class Node: Codable {
        var name: String
        var next: Node?
        init(_ name: String, next: Node? = nil) {
            self.name = name
            self.next = next
        }
    }

    struct Pair: Codable {
        var left: Node
        var right: Node
    }

    static var registry: ArchiveTypeRegistry {
        ArchiveTypeRegistry()
            .registering(UserData.self, as: "UserData", aliases: ["MyApp.UserData"])
            .registering(Address.self, as: "Address")
            .registering(Impostor.self, as: "Impostor")
    }

    let users = [
        UserData(userName: "张三", password: "123456", categoryName: "普通用户"),
        UserData(
            userName: "李四", password: "abc123", email: "li@example.com", image: Data([0x89, 0x50]),
            categoryName: "管理员", address: Address(city: "Paris", zip: 75001, location: [48.85, 2.35]),
            tags: ["admin", "ops"], created: Date(timeIntervalSince1970: 1_798_761_600))
    ]

    func testUserDataArrayArchivesInOneCall() throws {
        let data = try ArchiveEncoder(registry: Self.registry).encode(users)
        let back = try ArchiveDecoder(registry: Self.registry).decode([UserData].self, from: data)
        XCTAssertEqual(back, users)
        XCTAssertEqual(back.filter { $0.categoryName == "管理员" }.count, 1)
        // Absent optionals are absent fields, not nulls; registered types are objects.
        let tree = try ArchiveSerialization.value(from: data)
        XCTAssertEqual(tree[0]?.objectValue?.className, "UserData")
        XCTAssertNil(tree[0]?["email"])
        XCTAssertEqual(tree[1]?["address"]?.objectValue?.className, "Address")
        XCTAssertEqual(tree[1]?["address"]?["zip"], .uint(75001))
        // Deterministic by default.
        XCTAssertEqual(try ArchiveEncoder(registry: Self.registry).encode(users), data)
    }

    func testUnregisteredTypesAreDictionariesAndObjectsAreRefused() throws {
        let plain = try ArchiveEncoder().encode(users)
        XCTAssertEqual(try ArchiveSerialization.value(from: plain)[0]?.kind, .dictionary)
        XCTAssertEqual(try ArchiveDecoder().decode([UserData].self, from: plain), users)

        let registered = try ArchiveEncoder(registry: Self.registry).encode(users)
        XCTAssertThrowsError(try ArchiveDecoder().decode([UserData].self, from: registered)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .classNotAllowed, "an object needs its type allowed")
        }
    }

    func testAllowingATypeNeverAdmitsAnother() throws {
        let data = try ArchiveEncoder(registry: Self.registry).encode([Impostor(userName: "mallory")])
        XCTAssertThrowsError(try ArchiveDecoder(registry: Self.registry).decode([UserData].self, from: data)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .classNotAllowed)
        }
    }

    func testLegacyNamesDecodeThroughAliases() throws {
        // Synthesized Decodable ignores default values: non-optional fields must be present.
        let legacy: ArchiveValue = [
            .object(
                "MyApp.UserData",
                [
                    "userName": "old", "tags": [],
                    "created": .date(Date(timeIntervalSinceReferenceDate: 0))
                ])
        ]
        let back = try ArchiveDecoder(registry: Self.registry).decode([UserData].self, fromValue: legacy)
        XCTAssertEqual(back.first?.userName, "old")
    }

    func testSharedInstancesStaySharedAndCyclesAreRefused() throws {
        let shared = Node("shared")
        let data = try ArchiveEncoder().encode(Pair(left: shared, right: shared))
        let back = try ArchiveDecoder().decode(Pair.self, from: data)
        XCTAssert(back.left === back.right, "one instance in, one instance out")
        let distinct = try ArchiveDecoder().decode(
            Pair.self, from: ArchiveEncoder().encode(Pair(left: Node("a"), right: Node("a"))))
        XCTAssertFalse(distinct.left === distinct.right)

        let a = Node("a")
        let b = Node("b", next: a)
        a.next = b
        XCTAssertThrowsError(try ArchiveEncoder().encode(a)) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .cycle)
        }
        a.next = nil  // break the cycle so the test does not leak
    }

    func testTypeMismatchesAreDecodingErrors() throws {
        let data = try ArchiveSerialization.data(from: ["userName": 5])
        XCTAssertThrowsError(try ArchiveDecoder().decode(UserData.self, from: data)) {
            guard case DecodingError.typeMismatch = $0 else { return XCTFail("\($0)") }
        }
        let big = try ArchiveSerialization.data(from: [.uint(.max)])
        XCTAssertThrowsError(try ArchiveDecoder().decode([Int64].self, from: big))
        XCTAssertEqual(try ArchiveDecoder().decode([UInt64].self, from: big), [.max])
    }

    func testArchiveValuePassesThroughTheCoders() throws {
        let value: ArchiveValue = ["a": .set([1, 2]), "b": ArchiveValue.string("x").makeShared()]
        let data = try ArchiveEncoder().encode(value)
        XCTAssertEqual(try ArchiveDecoder().decode(ArchiveValue.self, from: data), value)
    }
}
