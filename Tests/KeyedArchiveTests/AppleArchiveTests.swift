import Foundation
import KeyedArchive
import XCTest

/// Every real Apple archive in the shared fixtures imports, and those whose content their names give import
/// to exactly that content.
final class AppleArchiveTests: XCTestCase {
    /// `shared/` beside the repository (where CI puts its copy), else the workplace's.
    static let directory: URL = {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let beside = repo.deletingLastPathComponent().appendingPathComponent("shared/fixtures/apple-nskeyedarchiver")
        return FileManager.default.fileExists(atPath: beside.path)
            ? beside : URL(fileURLWithPath: "/work/shared/fixtures/apple-nskeyedarchiver")
    }()

    /// The files of the folder (README aside), as bytes.
    static func archives() throws -> [(name: String, bytes: [UInt8])] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { !$0.hasSuffix(".md") }.sorted()
        return try names.map { ($0, [UInt8](try Data(contentsOf: directory.appendingPathComponent($0)))) }
    }

    /// An archive as a binary plist: XML ones converted by Foundation.
    static func binary(_ bytes: [UInt8]) throws -> [UInt8] {
        if bytes.starts(with: Array("bplist00".utf8)) { return bytes }
        let object = try PropertyListSerialization.propertyList(from: Data(bytes), format: nil)
        return [UInt8](try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0))
    }

    static func value(_ name: String) throws -> ArchiveValue {
        try NSKeyedArchive.importValue(from: [UInt8](Data(contentsOf: directory.appendingPathComponent(name))))
    }

    func testEveryAppleArchiveImports() throws {
        let all = try Self.archives()
        XCTAssertEqual(all.count, 46)
        var binaryCount = 0
        for (name, bytes) in all {
            XCTAssert(NSKeyedArchive.isKeyedArchive(bytes), name)
            if bytes.starts(with: Array("bplist00".utf8)) { binaryCount += 1 }
            XCTAssertNoThrow(try NSKeyedArchive.importValue(from: bytes), name)
        }
        XCTAssertEqual(binaryCount, 37)
    }

    /// Each XML archive reads to the same property list as Foundation's binary conversion of it, and
    /// imports to the same value.
    func testXMLArchivesReadAsFoundationReadsThem() throws {
        var xmlCount = 0
        for (name, bytes) in try Self.archives() where !bytes.starts(with: Array("bplist00".utf8)) {
            xmlCount += 1
            let converted = try Self.binary(bytes)
            XCTAssertEqual(try PropertyList(xml: bytes), try PropertyList(binary: converted), name)
            XCTAssertEqual(
                try NSKeyedArchive.importValue(from: bytes), try NSKeyedArchive.importValue(from: converted),
                name)
        }
        XCTAssertEqual(xmlCount, 9)
    }

    func testKnownContents() throws {
        XCTAssertEqual(try Self.value("NSKeyedUnarchiver-ArrayTest.plist"), ["baa", "baa", "black", "sheep"])
        XCTAssertEqual(try Self.value("NSKeyedUnarchiver-OrderedSetTest.plist"), ["valgeir", "nico", "puzzle"])
        XCTAssertEqual(
            try Self.value("NSKeyedUnarchiver-UUIDTest.plist"),
            .uuid(UUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!))
        let url = try Self.value("NSKeyedUnarchiver-URLTest.plist").urlValue
        XCTAssertEqual(url?.relativeString, "foo.xml")
        XCTAssertEqual(url?.baseURL?.absoluteString, "https://www.example.com")
        XCTAssertEqual(url?.absoluteString, "https://www.example.com/foo.xml")

        let numbers = ArchiveValue.set([1, 2, 3, 4, 5])
        XCTAssertEqual(try Self.value("NSSet-Numbers.archive"), numbers)
        XCTAssertEqual(try Self.value("NSMutableSet-Numbers.archive"), numbers)
        XCTAssertEqual(try Self.value("NSOrderedSet-Numbers.archive"), [1, 2, 3, 4, 5])
        XCTAssertEqual(try Self.value("NSMutableOrderedSet-Numbers.archive"), [1, 2, 3, 4, 5])
        for empty in ["NSSet-Empty", "NSMutableSet-Empty"] {
            XCTAssertEqual(try Self.value(empty + ".archive"), .set([]), empty)
        }
        for empty in ["NSOrderedSet-Empty", "NSMutableOrderedSet-Empty"] {
            XCTAssertEqual(try Self.value(empty + ".archive"), [], empty)
        }

        let complex = try Self.value("NSKeyedUnarchiver-ComplexTest.plist")
        XCTAssertEqual(complex["array"], [nil, "hello", 34545, ["key": "val"]])
        XCTAssertEqual(complex["string"], "hello")
        XCTAssertEqual(complex["url"]?.urlValue?.absoluteString, "https://www.swift.org/index.xml")
        XCTAssertEqual(complex["uuid"]?.uuidValue, UUID(uuidString: "71DC068E-3420-45FF-919E-3A267D55EC22"))

        // Classes with no value kind stay objects: class name and fields, references resolved.
        let counted = try Self.value("NSCountedSet-NumbersAppearingSeveralTimes.archive").objectValue
        XCTAssertEqual(counted?.className, "NSCountedSet")
        XCTAssertEqual(counted?.fields["NS.count"], 5)
        XCTAssertEqual(Set((0..<5).compactMap { counted?.fields["NS.object\($0)"] }), [1, 2, 3, 4, 5])
        let indexSet = try Self.value("NSIndexSet-ManyRanges.archive").objectValue
        XCTAssertEqual(indexSet?.fields["NSRangeCount"], 4)
        XCTAssertEqual(indexSet?.fields["NSRangeData"]?.dataValue?.count, 17)  // NSMutableData -> data

        // An attributed string: attribute dictionaries by run; equal dictionaries that are distinct objects.
        let attributed = try Self.value("NSAttributedString.archive")
        XCTAssertEqual(attributed["NSString"], "0123456789")
        guard let runs = attributed["NSAttributes"]?.arrayValue, runs.count == 4 else {
            return XCTFail("NSAttributes: \(String(describing: attributed["NSAttributes"]))")
        }
        XCTAssertEqual(runs[0], .dictionary([:]))
        XCTAssertEqual(runs[1], ["Font": "Helvetica", "Size": 123])
        XCTAssertEqual(runs[2].kind, .dictionary, "two equal dictionaries that are distinct objects stay distinct")
        XCTAssertEqual(runs[2], runs[3])
    }
}
