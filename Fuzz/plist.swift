import Crafting

@testable import KcarCLI
@testable import KeyedArchive

// Target `plist`: the property-list readers and the NSKeyedArchiver importer (Sources/KeyedArchive:
// BinaryPlistReader, XMLPlistReader, NSKeyedImport). Input: a binary or XML plist (Fixtures/nskeyed and
// Apple's archives are seeds). Each input is read as `kcar archive` reads it (format told by its first
// bytes), and also by both plist readers whatever it starts with. A plist that reads must write back
// (binaryBytes) to bytes that read as the same plist; an archive that imports must archive and print.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Whether the tree a plist stands for has at most `budget` values (the reader allows 10 million).
func isSmall(_ p: PropertyList, _ budget: Int = 50_000) -> Bool {
    var stack = [p]
    var n = 0
    while let x = stack.popLast() {
        n += 1
        if n > budget { return false }
        switch x {
        case .array(let a), .set(let a): stack += a
        case .dictionary(let d): stack += d.values
        default: break
        }
    }
    return true
}

func read(_ body: () throws -> PropertyList) -> PropertyList? {
    do {
        return try body()
    } catch is ArchiveError {
        return nil
    } catch {
        fatalError("not an ArchiveError: \(error)")
    }
}

/// A plist that read writes as bplist00 bytes that read as the same plist (compared as bytes: NaN).
func roundTrip(_ p: PropertyList) {
    guard isSmall(p) else { return }
    let bytes = p.binaryBytes()
    guard let again = read({ try PropertyList(binary: bytes) }) else {
        fatalError("a plist, written again, does not read")
    }
    precondition(again.binaryBytes() == bytes, "a plist, written again, reads as another plist")
}

func fuzzOne(_ input: [UInt8]) {
    var plists: [PropertyList] = []
    if let p = read({ try NSKeyedArchive.propertyList(from: input) }) { plists.append(p) }
    if !input.starts(with: BinaryPlistReader.magic), let p = read({ try PropertyList(binary: input) }) {
        plists.append(p)
    }
    if !NSKeyedArchive.looksLikeXML(input), let p = read({ try PropertyList(xml: input) }) { plists.append(p) }
    for p in plists {
        roundTrip(p)
        let v: ArchiveValue
        do {
            v = try NSKeyedArchive.importValue(from: p)
        } catch is ArchiveError {
            continue
        } catch {
            fatalError("not an ArchiveError: \(error)")
        }
        guard isSmall(v) else { continue }
        // An imported value is an archive value like any other.
        do {
            let bytes = try ArchiveSerialization.bytes(from: v, options: .deterministic)
            let again = try ArchiveSerialization.value(from: bytes)
            precondition(again == v, "an imported value archives as another value")
        } catch let e as ArchiveError where e.code == .sortKeyLimit {
            // NSSets nested deep in NSSets: their sort keys pass SORT_KEYS_MAX, so the value is archived
            // without the sorted flag (SPEC.md Part 2 §A3), as fuzz-archive accepts too.
            precondition(
                (try? ArchiveSerialization.value(from: ArchiveSerialization.bytes(from: v))) == v,
                "an imported value archives as another value")
        } catch {
            fatalError("an imported value does not archive: \(error)")
        }
        checkBounded(v)
        var printer = JSONPrinter(indent: false, sink: JSONCounter())
        _ = try? printer.print(v)
        // Exported again (if it can be) it imports as itself: every box of an imported value has two uses.
        if let exported = try? NSKeyedArchive.exportValue(v) {
            guard let back = try? NSKeyedArchive.importValue(from: exported) else {
                fatalError("an exported value does not import")
            }
            precondition(back == v, "an exported value imports as another value")
        }
    }
}

func seeds(repo: String) -> [[UInt8]] {
    let values: [ArchiveValue] = [
        .array([
            .null, .bool(true), .int(-1), .uint(.max), .double(-0.0), .string("ü😀"), .data(Data([1, 2])),
            .date(Date(timeIntervalSinceReferenceDate: 1)),
            .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
            .url(URL(string: "b/c", relativeTo: URL(string: "https://x.example/a/"))!)
        ]),
        .dictionary(["a": .set([.int(1), .string("1")]), "b": .anyKeyDictionary([.int(2): .null])]),
        .object(ArchiveObject(className: "MyApp.User", fields: ["name": .string("x"), "tags": .array([.string("t")])]))
    ]
    let box = ArchiveShared(.array([.int(1)]))
    // Table entries at one offset, and overlapping objects (PlistOffsetTests).
    var out: [[UInt8]] = [
        ArchiveCrafting.aliasedPlist(dataBytes: 100, aliases: 20), ArchiveCrafting.overlappingPlist(count: 20)
    ]
    for v in values + [.array([.shared(box), .shared(box)])] {
        if let b = try? NSKeyedArchive.exportValue(v) { out.append(b) }
    }
    // An XML keyed archive.
    out.append(
        Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict><key>$archiver</key><string>NSKeyedArchiver</string>
            <key>$objects</key><array><string>$null</string><dict><key>$class</key><dict><key>CF$UID</key><integer>2</integer></dict>
            <key>NS.objects</key><array><dict><key>CF$UID</key><integer>3</integer></dict></array></dict>
            <dict><key>$classes</key><array><string>NSArray</string><string>NSObject</string></array><key>$classname</key><string>NSArray</string></dict>
            <real>1.5</real></array><key>$top</key><dict><key>root</key><dict><key>CF$UID</key><integer>1</integer></dict></dict>
            <key>$version</key><integer>100000</integer></dict></plist>
            """.utf8))
    out.append(
        Array(
            "<plist><array><data>AAEC</data><date>2001-01-01T00:00:00Z</date><true/><false/><integer>-5</integer></array></plist>"
                .utf8))
    return out
}
