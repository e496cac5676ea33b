import Foundation
import KeyedArchive
import XCTest

/// Builds NSKeyedArchiver property lists object by object, for tests and fixture recipes: `add` returns the
/// UID of a new `$objects` entry, `set` fills one in later (self references, cycles).
struct KeyedArchiveBuilder {
    var objects: [PropertyList] = [.string("$null")]
    private var classes: [String: PropertyList] = [:]

    @discardableResult
    mutating func add(_ p: PropertyList) -> PropertyList {
        objects.append(p)
        return .uid(UInt64(objects.count - 1))
    }

    mutating func set(_ uid: PropertyList, _ p: PropertyList) {
        if case .uid(let i) = uid { objects[Int(i)] = p }
    }

    mutating func classUID(_ name: String) -> PropertyList {
        if let uid = classes[name] { return uid }
        let uid = add(
            .dictionary(["$classname": .string(name), "$classes": .array([.string(name), .string("NSObject")])]))
        classes[name] = uid
        return uid
    }

    /// A new instance of `className` with `fields` (plus `$class`).
    mutating func instance(_ className: String, _ fields: [String: PropertyList]) -> PropertyList {
        var d = fields
        d["$class"] = classUID(className)
        return add(.dictionary(d))
    }

    func plist(root: PropertyList) -> PropertyList {
        .dictionary([
            "$archiver": "NSKeyedArchiver", "$version": .int(100_000), "$top": .dictionary(["root": root]),
            "$objects": .array(objects)
        ])
    }

    func bytes(root: PropertyList) -> [UInt8] { plist(root: root).binaryBytes() }
}

/// Expects `body` to throw an ``ArchiveError`` with `code`, within a second.
func assertArchiveError<T>(
    _ code: ArchiveError.Code, _ what: String = "", file: StaticString = #filePath, line: UInt = #line,
    _ body: () throws -> T
) {
    // A guard against hangs and runaway work (the input is refused early), not a speed test: the bound is
    // far above the milliseconds it takes, so a loaded CI machine does not fail it.
    let start = Date()
    XCTAssertThrowsError(try body(), what, file: file, line: line) {
        XCTAssertEqual(($0 as? ArchiveError)?.code, code, "\(what): \($0)", file: file, line: line)
    }
    XCTAssertLessThan(Date().timeIntervalSince(start), 5, "\(what) took too long to fail", file: file, line: line)
}
