import Foundation
import KeyedArchive
import XCTest

/// The XML plist reader: Foundation's XML output reads to the same tree as its binary output; text rules.
final class XMLPlistTests: XCTestCase {
    static func xml(_ body: String) -> [UInt8] { NSKeyedFixtures.xml(body) }

    func testFoundationXMLReadsAsItsBinary() throws {
        let object: [String: Any] = [
            "s": "a < b & \"c\" ünï 🔑", "i": -5, "big": Int64.max, "r": 2.25, "t": true, "f": false,
            "d": Data((0..<100).map { UInt8($0) }), "when": Date(timeIntervalSinceReferenceDate: 812_345_678),
            "old": Date(timeIntervalSinceReferenceDate: -978_307_200), "a": ["x", 7, [String: Any]()], "e": ""
        ]
        let xml = try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
        let binary = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        XCTAssertEqual(try PropertyList(xml: [UInt8](xml)), try PropertyList(binary: [UInt8](binary)))
    }

    func testFoundationXMLArchiveImports() throws {
        let archiver = NSKeyedArchiver(requiringSecureCoding: false)
        archiver.outputFormat = .xml
        archiver.encode(["k": "v", "n": 3] as NSDictionary, forKey: NSKeyedArchiveRootObjectKey)
        archiver.finishEncoding()
        XCTAssert(NSKeyedArchive.isKeyedArchive([UInt8](archiver.encodedData)))
        XCTAssertEqual(try NSKeyedArchive.importValue(from: archiver.encodedData), ["k": "v", "n": 3])
    }

    func testTextRules() throws {
        XCTAssertEqual(
            try PropertyList(xml: Self.xml("<string>&lt;&#65;&#x42;<![CDATA[<&>]]><!-- c --></string>")),
            "<AB<&>")
        XCTAssertEqual(try PropertyList(xml: Self.xml("<dict><key>CF$UID</key><integer>7</integer></dict>")), .uid(7))
        XCTAssertEqual(
            try PropertyList(xml: Self.xml("<array><string/><dict/><array/><true/></array>")),
            .array(["", .dictionary([:]), .array([]), .bool(true)]))
        XCTAssertEqual(try PropertyList(xml: Self.xml("<integer>18446744073709551615</integer>")), .uint(.max))
        XCTAssertEqual(try PropertyList(xml: Self.xml("<date>2001-01-01T00:00:00Z</date>")), .date(0))
        XCTAssertEqual(try PropertyList(xml: Self.xml("<date>1970-01-01T00:00:00Z</date>")), .date(-978_307_200))
    }

    func testMalformedXML() {
        let cases: [(String, ArchiveError.Code)] = [
            ("<array><string>a</array>", .invalidXML), ("<dict><key>a</key></dict>", .invalidXML),
            ("<dict><string>a</string></dict>", .invalidXML), ("<blob/>", .unknownTag),
            ("<data>!!!</data>", .invalidValue), ("<date>2001-13-01T00:00:00Z</date>", .invalidValue),
            ("<integer>1.5</integer>", .invalidValue), ("<real>abc</real>", .invalidValue),
            ("<dict><key>a</key><true/><key>a</key><true/></dict>", .duplicateKey),
            ("<string>&bogus;</string>", .invalidXML), ("<true/><true/>", .invalidXML)
        ]
        for (body, code) in cases {
            assertArchiveError(code, body) { try PropertyList(xml: Self.xml(body)) }
        }
        assertArchiveError(.truncated) {
            try PropertyList(xml: Array(Self.xml("<array><string>a</string>").dropLast(10)))
        }
        assertArchiveError(.trailingBytes) { try PropertyList(xml: Self.xml("<true/>") + Array("x".utf8)) }
        assertArchiveError(.invalidUTF8) {
            try PropertyList(xml: Self.xml("<string>\u{1}</string>").map { $0 == 1 ? 0xFF : $0 })
        }
        assertArchiveError(.depthLimit) {
            try PropertyList(
                xml: Self.xml(
                    String(repeating: "<array>", count: 20_000) + String(repeating: "</array>", count: 20_000)))
        }
        let limits = ArchiveLimits(maxDepth: 3)
        XCTAssertNoThrow(try PropertyList(xml: Self.xml("<array><array><true/></array></array>"), limits: limits))
        assertArchiveError(.depthLimit) {
            try PropertyList(
                xml: Self.xml("<array><array><array/></array></array>"), limits: ArchiveLimits(maxDepth: 2))
        }
    }

    func testEveryPrefixFails() throws {
        let bytes = [UInt8](
            try Data(contentsOf: AppleArchiveTests.directory.appendingPathComponent("NSKeyedUnarchiver-URLTest.plist")))
        // Every prefix that ends before `</plist>` is complete (white space after it is optional).
        let end = bytes.count - bytes.reversed().prefix { $0 == 0x0A || $0 == 0x20 }.count
        XCTAssertNoThrow(try NSKeyedArchive.importValue(from: Array(bytes[..<end])))
        for n in 0..<end {
            XCTAssertThrowsError(try NSKeyedArchive.importValue(from: Array(bytes[..<n]))) {
                XCTAssert($0 is ArchiveError, "prefix \(n): \($0)")
            }
        }
    }
}
