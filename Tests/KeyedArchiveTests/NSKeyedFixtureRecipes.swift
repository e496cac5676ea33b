import Foundation
import KeyedArchive

/// The recipes of `Fixtures/nskeyed/`: hostile property lists and NSKeyedArchiver archives, each breaking
/// one rule, with the error it must fail with. Made here, never by hand;
/// `KCAR_WRITE_FIXTURES=1 swift test --filter KeyedArchiveTests.NSKeyedHostileTests` rewrites the files.
enum NSKeyedFixtures {
    static let directory = ArchiveFixtures.root.appendingPathComponent("Fixtures/nskeyed")

    /// A `bplist00` assembled from encoded objects (references of `refSize` bytes inside them), with any
    /// trailer field overridden.
    static func bplist(
        _ objects: [[UInt8]], top: UInt64 = 0, refSize: UInt8 = 1, offsetSize: UInt8? = nil,
        count: UInt64? = nil, tableOffset: UInt64? = nil, offsets: [UInt64]? = nil
    ) -> [UInt8] {
        var out = Array("bplist00".utf8)
        var at: [UInt64] = []
        for o in objects {
            at.append(UInt64(out.count))
            out += o
        }
        let table = UInt64(out.count)
        let size = offsetSize ?? (table < 256 ? 1 : table < 65_536 ? 2 : 4)
        for o in offsets ?? at { out += be(o, Int(size)) }
        out += [0, 0, 0, 0, 0, 0, size, refSize]
        out += be(count ?? UInt64(objects.count), 8) + be(top, 8) + be(tableOffset ?? table, 8)
        return out
    }

    static func be(_ v: UInt64, _ size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64(size - 1 - $0))) }
    }

    /// An XML plist around `body`, as Apple writes them.
    static func xml(_ body: String) -> [UInt8] {
        Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            \(body)
            </plist>

            """.utf8)
    }

    /// An XML keyed archive whose `$objects` after `$null` are `objects` and whose root is UID 1.
    static func xmlArchive(_ objects: String) -> [UInt8] {
        xml(
            """
            <dict><key>$archiver</key><string>NSKeyedArchiver</string><key>$version</key><integer>100000</integer>
            <key>$top</key><dict><key>root</key><dict><key>CF$UID</key><integer>1</integer></dict></dict>
            <key>$objects</key><array><string>$null</string>\(objects)</array></dict>
            """)
    }

    /// `levels` plist arrays, each holding the next (2-byte references).
    static func nestedPlistArrays(_ levels: Int) -> [UInt8] {
        var objects = (0..<levels - 1).map { [0xA1] + be(UInt64($0 + 1), 2) }
        objects.append([0xA0])
        return bplist(objects, refSize: 2)
    }

    /// `levels` NSArrays, each holding the next.
    static func nestedArchiveArrays(_ levels: Int) -> [UInt8] {
        var b = KeyedArchiveBuilder()
        let cls = b.classUID("NSArray")
        let first = b.objects.count
        for i in 0..<levels {
            let inner: [PropertyList] = i == levels - 1 ? [] : [.uid(UInt64(first + i + 1))]
            b.add(.dictionary(["$class": cls, "NS.objects": .array(inner)]))
        }
        return b.bytes(root: .uid(UInt64(first)))
    }

    /// An archive of one instance of `className` with `fields` (built by `make` from the builder).
    static func archive(_ make: (inout KeyedArchiveBuilder) -> PropertyList) -> [UInt8] {
        var b = KeyedArchiveBuilder()
        let root = make(&b)
        return b.bytes(root: root)
    }

    static var hostile: [(name: String, bytes: [UInt8], expect: ArchiveError.Code)] {
        let array1: [UInt8] = [0xA1, 0x00]
        // Reference bombs: 64 containers, each holding the previous one twice: 2^64 values once expanded.
        var plistBomb: [[UInt8]] = [[0x00]]
        for k in 0..<64 { plistBomb.append([0xA2, UInt8(k), UInt8(k)]) }
        let archiveBomb = archive { b in
            var last = b.add("leaf")
            for _ in 0..<64 { last = b.instance("NSArray", ["NS.objects": .array([last, last])]) }
            return last
        }
        return [
            // The property list layer.
            ("not-a-plist.bin", Array("hello, world".utf8), .notAPropertyList),
            ("truncated.bplist", Array("bplist00".utf8) + [0x08, 0x00], .truncated),
            ("trailer-huge-object-count.bplist", bplist([[0x08]], count: UInt64.max), .valueLimit),
            ("trailer-object-count-past-table.bplist", bplist([[0x08]], count: 1_000), .invalidPlistTrailer),
            ("trailer-top-out-of-range.bplist", bplist([[0x08]], top: 1), .invalidPlistTrailer),
            ("trailer-table-offset-huge.bplist", bplist([[0x08]], tableOffset: UInt64.max), .invalidPlistTrailer),
            ("trailer-zero-reference-size.bplist", bplist([[0x08]], refSize: 0), .invalidPlistTrailer),
            ("offset-out-of-range.bplist", bplist([[0x08]], offsets: [200]), .invalidPlistOffset),
            ("reference-out-of-range.bplist", bplist([[0xA1, 0x05], [0x08]]), .badReference),
            ("plist-cycle.bplist", bplist([array1]), .cycle),
            ("plist-indirect-cycle.bplist", bplist([[0xA1, 0x01], [0xD1, 0x02, 0x00], [0x51, 0x6B]]), .cycle),
            ("plist-deep-nesting.bplist", nestedPlistArrays(1_000), .depthLimit),
            ("plist-reference-bomb.bplist", bplist(plistBomb, top: 64), .expansionLimit),
            (
                "plist-huge-count.bplist", bplist([[0xAF, 0x13, 0x3F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]]),
                .countExceedsInput
            ),
            ("non-string-key.bplist", bplist([[0xD1, 0x01, 0x01], [0x10, 0x01]]), .nonStringKey),
            ("unpaired-surrogate.bplist", bplist([[0x61, 0xD8, 0x00]]), .invalidString),
            ("non-ascii-ascii-string.bplist", bplist([[0x51, 0xE9]]), .invalidString),
            ("unknown-marker.bplist", bplist([[0x70]]), .unknownTag),
            ("fill-as-object.bplist", bplist([[0x0F]]), .unknownTag),
            (
                "int-beyond-64-bits.bplist", bplist([[0x14, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]),
                .invalidValue
            ),
            // The keyed-archive layer.
            (
                "not-keyed.bplist", PropertyList.dictionary(["$objects": .array(["$null"])]).binaryBytes(),
                .notAKeyedArchive
            ),
            (
                "version-99.bplist",
                PropertyList.dictionary([
                    "$archiver": "NSKeyedArchiver", "$version": .int(99), "$top": .dictionary([:]),
                    "$objects": .array(["$null"])
                ]).binaryBytes(), .unsupportedVersion
            ),
            (
                "cycle.bplist",
                archive { b in
                    let me = b.add(.null)
                    b.set(me, .dictionary(["$class": b.classUID("NSArray"), "NS.objects": .array([me])]))
                    return me
                }, .cycle
            ),
            (
                "indirect-cycle.bplist",
                archive { b in
                    let a = b.add(.null)
                    let inner = b.instance("NSDictionary", ["NS.keys": .array([b.add("k")]), "NS.objects": .array([a])])
                    b.set(a, .dictionary(["$class": b.classUID("NSArray"), "NS.objects": .array([inner])]))
                    return a
                }, .cycle
            ),
            ("deep-nesting.bplist", nestedArchiveArrays(1_000), .depthLimit),
            ("reference-bomb.bplist", archiveBomb, .expansionLimit),
            (
                "uid-out-of-range.bplist", archive { b in b.instance("NSArray", ["NS.objects": .array([.uid(99)])]) },
                .badReference
            ),
            ("top-uid-out-of-range.bplist", archive { _ in .uid(1_000_000) }, .badReference),
            ("class-is-a-string.bplist", archive { b in b.add(.dictionary(["$class": b.add("NSArray")])) }, .badClass),
            ("class-missing.bplist", archive { b in b.add(.dictionary(["NS.objects": .array([])])) }, .badClass),
            ("class-is-null.bplist", archive { b in b.add(.dictionary(["$class": .uid(0)])) }, .badClass),
            (
                "classes-not-strings.bplist",
                archive { b in
                    let cls = b.add(.dictionary(["$classname": "X", "$classes": .array([.int(1)])]))
                    return b.add(.dictionary(["$class": cls]))
                }, .badClass
            ),
            (
                "count-mismatch.bplist",
                archive { b in
                    b.instance(
                        "NSDictionary",
                        ["NS.keys": .array([b.add("a"), b.add("b")]), "NS.objects": .array([b.add("v")])])
                }, .countMismatch
            ),
            (
                "short-uuid.bplist", archive { b in b.instance("NSUUID", ["NS.uuidbytes": .data(Data(count: 15))]) },
                .invalidValue
            ),
            ("date-time-is-a-string.bplist", archive { b in b.instance("NSDate", ["NS.time": "0"]) }, .wrongFieldType),
            ("date-time-missing.bplist", archive { b in b.instance("NSDate", [:]) }, .missingField),
            (
                "array-objects-not-uids.bplist",
                archive { b in b.instance("NSArray", ["NS.objects": .array([.int(1)])]) },
                .wrongFieldType
            ),
            (
                "url-base-not-a-url.bplist",
                archive { b in
                    b.instance("NSURL", ["NS.base": b.add("https://example.com/"), "NS.relative": b.add("x")])
                }, .wrongFieldType
            ),
            (
                "ordered-set-gap.bplist",
                archive { b in
                    b.instance("NSOrderedSet", ["NS.object.0": b.add("a"), "NS.object.2": b.add("c")])
                }, .missingField
            ),
            (
                "dictionary-duplicate-key.bplist",
                archive { b in
                    let k = b.add("k")
                    return b.instance("NSDictionary", ["NS.keys": .array([k, k]), "NS.objects": .array([k, k])])
                }, .duplicateKey
            ),
            (
                "set-duplicate.bplist",
                archive { b in
                    let one = b.add(.int(1))
                    return b.instance("NSSet", ["NS.objects": .array([one, one])])
                }, .duplicateKey
            ),
            ("objects-entry-is-an-array.bplist", archive { b in b.add(.array([])) }, .invalidValue),
            // XML plists.
            (
                "xml-deep-nesting.plist",
                xml(String(repeating: "<array>", count: 1_000) + String(repeating: "</array>", count: 1_000)),
                .depthLimit
            ),
            ("xml-mismatched-tags.plist", xml("<array><string>a</array></string>"), .invalidXML),
            ("xml-unknown-element.plist", xml("<array><blob/></array>"), .unknownTag),
            ("xml-truncated.plist", Array(xml("<array><string>abc</string></array>").prefix(180)), .truncated),
            ("xml-trailing-text.plist", xml("<true/>") + Array("<true/>".utf8), .trailingBytes),
            (
                "xml-cycle.plist",
                xmlArchive(
                    """
                    <dict><key>$class</key><dict><key>CF$UID</key><integer>2</integer></dict>
                    <key>NS.objects</key><array><dict><key>CF$UID</key><integer>1</integer></dict></array></dict>
                    <dict><key>$classname</key><string>NSArray</string></dict>
                    """), .cycle
            ),
            (
                "xml-uid-out-of-range.plist",
                xmlArchive(
                    """
                    <dict><key>$class</key><dict><key>CF$UID</key><integer>2</integer></dict>
                    <key>NS.objects</key><array><dict><key>CF$UID</key><integer>7</integer></dict></array></dict>
                    <dict><key>$classname</key><string>NSArray</string></dict>
                    """), .badReference
            ),
            (
                "xml-date-time-is-a-string.plist",
                xmlArchive(
                    """
                    <dict><key>$class</key><dict><key>CF$UID</key><integer>2</integer></dict>
                    <key>NS.time</key><string>0</string></dict>
                    <dict><key>$classname</key><string>NSDate</string></dict>
                    """), .wrongFieldType
            )
        ]
    }

    static var manifest: String {
        "# name\texpect (ArchiveError.Code raw value). Written by the test suite: see README.md\n"
            + hostile.map { "\($0.name)\t\($0.expect.rawValue)\n" }.joined()
    }

    static func files() -> [(path: String, bytes: [UInt8])] {
        hostile.map { ($0.name, $0.bytes) } + [("MANIFEST.tsv", Array(manifest.utf8))]
    }

    static func write(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (path, bytes) in files() { try Data(bytes).write(to: directory.appendingPathComponent(path)) }
    }
}
