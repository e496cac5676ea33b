import Foundation
import KeyedArchive
import XCTest

/// Inputs the fuzz targets (Fuzz/) found, kept in `Fixtures/fuzz/<target>/`, each with what it must do now.
final class FuzzRegressionTests: XCTestCase {
    static let directory = ArchiveFixtures.root.appendingPathComponent("Fixtures/fuzz")

    /// fuzz-plist: an NSSet held two equal NSSets, one of them also named by the set's own `NS.keys`, a field
    /// NSSet decoding never reads. That UID counted as a reference, so the second set imported as a shared box
    /// and the two stayed distinct; exported, both became plain sets again and the export did not import
    /// ("set element repeated"). A UID in an unread field is no reference now: the archive itself is refused.
    func testAnUnreadUIDMakesNoSharedBox() throws {
        let bytes = try [UInt8](Data(contentsOf: Self.directory.appendingPathComponent("plist/crash-unread-uid-makes-a-box.bplist")))
        assertArchiveError(.duplicateKey) { try NSKeyedArchive.importValue(from: bytes) }

        let set = NSKeyedFixtures.archive { b in
            let one = b.add(.int(1))
            let first = b.instance("NSSet", ["NS.objects": .array([one])])
            let second = b.instance("NSSet", ["NS.objects": .array([one])])
            return b.instance("NSSet", ["NS.objects": .array([first, second]), "NS.keys": .array([second])])
        }
        assertArchiveError(.duplicateKey) { try NSKeyedArchive.importValue(from: set) }

        // A dictionary an NSArray holds once, and names again in a field NSArray decoding ignores: one use, no box.
        let array = NSKeyedFixtures.archive { b in
            let d = b.instance("NSDictionary", ["NS.keys": .array([b.add("k")]), "NS.objects": .array([b.add(.int(2))])])
            return b.instance("NSArray", ["NS.objects": .array([d]), "extra": d])
        }
        let value = try NSKeyedArchive.importValue(from: array)
        XCTAssertEqual(value, [["k": 2]])
        guard case .array(let items) = value, case .dictionary = items[0] else { return XCTFail("\(value)") }
        XCTAssertEqual(try NSKeyedArchive.importValue(from: try NSKeyedArchive.exportValue(value)), value)
        // Custom classes are made of all their fields: a second use there still shares.
        let object = NSKeyedFixtures.archive { b in
            let d = b.instance("NSArray", ["NS.objects": .array([])])
            return b.instance("Pair", ["a": d, "b": d])
        }
        guard case .object(let pair) = try NSKeyedArchive.importValue(from: object), case .shared(let a)? = pair.fields["a"],
              case .shared(let b)? = pair.fields["b"] else { return XCTFail("not shared") }
        XCTAssert(a === b)
    }
}
