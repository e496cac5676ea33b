import Foundation
import KeyedArchive
import XCTest

/// Decoding a class hierarchy through its base class: registered subclasses only (SPEC.md Part 2 §A11).
final class ClassHierarchyTests: XCTestCase {
    class Shape: Codable {
        var name: String
        init(name: String) { self.name = name }
        func area() -> Double { 0 }
    }

    final class Circle: Shape {
        var radius: Double
        init(name: String, radius: Double) {
            self.radius = radius
            super.init(name: name)
        }
        private enum Key: String, CodingKey { case radius }
        required init(from decoder: any Decoder) throws {
            radius = try decoder.container(keyedBy: Key.self).decode(Double.self, forKey: .radius)
            try super.init(from: decoder)
        }
        override func encode(to encoder: any Encoder) throws {
            try super.encode(to: encoder)
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(radius, forKey: .radius)
        }
        override func area() -> Double { 3 * radius * radius }
    }

    class Polygon: Shape {
        var sides: Int
        init(name: String, sides: Int) {
            self.sides = sides
            super.init(name: name)
        }
        private enum Key: String, CodingKey { case sides }
        required init(from decoder: any Decoder) throws {
            sides = try decoder.container(keyedBy: Key.self).decode(Int.self, forKey: .sides)
            try super.init(from: decoder)
        }
        override func encode(to encoder: any Encoder) throws {
            try super.encode(to: encoder)
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(sides, forKey: .sides)
        }
    }

    /// Registered below Polygon only: Shape admits it too, through Polygon.
    final class Square: Polygon {
        var side: Double
        init(side: Double) {
            self.side = side
            super.init(name: "square", sides: 4)
        }
        private enum Key: String, CodingKey { case side }
        required init(from decoder: any Decoder) throws {
            side = try decoder.container(keyedBy: Key.self).decode(Double.self, forKey: .side)
            try super.init(from: decoder)
        }
        override func encode(to encoder: any Encoder) throws {
            try super.encode(to: encoder)
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(side, forKey: .side)
        }
        override func area() -> Double { side * side }
    }

    /// A subclass nobody registered.
    final class Triangle: Shape {}

    struct Drawing: Codable {
        var shapes: [Shape]
        var main: Shape
    }

    static let registry = ArchiveTypeRegistry()
        .registering(Shape.self, as: "Shape")
        .registering(Circle.self, as: "Circle", aliases: ["MyApp.Circle"], subclassOf: Shape.self)
        .registering(Polygon.self, as: "Polygon", subclassOf: Shape.self)
        .registering(Square.self, as: "Square", subclassOf: Polygon.self)

    func testSubclassesDecodeThroughTheirBaseClass() throws {
        let circle = Circle(name: "c", radius: 2)
        let drawing = Drawing(
            shapes: [circle, Square(side: 3), Shape(name: "plain"), Polygon(name: "p", sides: 5)], main: circle)
        let data = try ArchiveEncoder(registry: Self.registry).encode(drawing)
        let back = try ArchiveDecoder(registry: Self.registry).decode(Drawing.self, from: data)
        XCTAssertEqual(back.shapes.map { "\(type(of: $0))" }, ["Circle", "Square", "Shape", "Polygon"])
        XCTAssertEqual(back.shapes.map { $0.area() }, [12, 9, 0, 0])
        XCTAssertEqual((back.shapes[1] as? Square)?.sides, 4)
        XCTAssertEqual(back.shapes.map(\.name), ["c", "square", "plain", "p"])
        // One instance written once and shared stays one instance, of its subclass.
        XCTAssertTrue(back.main === back.shapes[0])
        // Each object carries its own class's name.
        let value = try ArchiveEncoder(registry: Self.registry).encodeToValue(drawing)
        let names = value.dictionaryValue?["shapes"]?.arrayValue?.compactMap { v -> String? in
            if case .object(let o) = v.unshared { return o.className }
            return nil
        }
        XCTAssertEqual(names, ["Circle", "Square", "Shape", "Polygon"])
    }

    func testAliasesOfASubclassDecodeThroughTheBase() throws {
        let legacy = ArchiveValue.object("MyApp.Circle", ["name": .string("old"), "radius": .double(1)])
        let shape = try ArchiveDecoder(registry: Self.registry).decode(Shape.self, fromValue: legacy)
        XCTAssertEqual((shape as? Circle)?.radius, 1)
    }

    func testTheAllowListHolds() throws {
        let decoder = ArchiveDecoder(registry: Self.registry)
        func refused<T: Decodable>(
            _ type: T.Type, _ className: String, file: StaticString = #filePath, line: UInt = #line
        ) {
            let v = ArchiveValue.object(
                className, ["name": .string("x"), "radius": .double(1), "sides": .int(3), "side": .double(1)])
            XCTAssertThrowsError(try decoder.decode(type, fromValue: v), file: file, line: line) {
                XCTAssertEqual(($0 as? ArchiveError)?.code, .classNotAllowed, "\($0)", file: file, line: line)
            }
        }
        refused(Shape.self, "Triangle")  // a real subclass, never registered
        refused(Shape.self, "NSObject")
        refused(Circle.self, "Shape")  // a base is not a subclass
        refused(Circle.self, "Square")  // a sibling
        refused(Polygon.self, "Circle")  // registered below Shape, not below Polygon
        refused(Square.self, "Polygon")
        XCTAssertNoThrow(
            try decoder.decode(
                Polygon.self, fromValue: .object("Square", ["name": .string("s"), "sides": .int(4), "side": .double(2)])
            ))
        // Without the subclass registrations, Shape admits only "Shape".
        let plain = ArchiveDecoder(registry: ArchiveTypeRegistry().registering(Shape.self, as: "Shape"))
        XCTAssertThrowsError(
            try plain.decode(Shape.self, fromValue: .object("Circle", ["name": .string("c"), "radius": .double(1)]))
        ) {
            XCTAssertEqual(($0 as? ArchiveError)?.code, .classNotAllowed)
        }
        // An unregistered subclass still encodes, under no class name of its own: as its fields alone.
        let encoded = try ArchiveEncoder(registry: Self.registry).encodeToValue([Triangle(name: "t") as Shape])
        XCTAssertEqual(encoded.arrayValue?.first?.unshared, .dictionary(["name": .string("t")]))
    }
}
