import Crafting
import Foundation
import KeyedArchive

/// The recipes of `Fixtures/archive/`: every golden and malformed archive is made here, never by hand.
/// `KCAR_WRITE_FIXTURES=1 swift test --filter KeyedArchiveTests.FixtureTests` rewrites the files.
enum ArchiveFixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let directory = root.appendingPathComponent("Fixtures/archive")

    /// Golden archives: name -> value, all written with `.deterministic`.
    static var golden: [(name: String, value: ArchiveValue)] {
        let shared = ArchiveValue.dictionary(["host": "db.internal", "port": 5432]).makeShared()
        return [
            ("distinct.kca", [true, 1, 1.0, .uint(1)]),
            ("shared.kca", [shared, shared, ["host": "db.internal", "port": 5432], shared]),
            (
                "empty.kca",
                [
                    .array([]), .dictionary([:]), .anyKeyDictionary([:]), .set([]), .string(""),
                    .data(Data()), .object("Empty", [:])
                ]
            ),
            ("scalars.kca", scalars),
            ("users.kca", users),
            (
                "any-keys.kca",
                .anyKeyDictionary([
                    1: "one", "1": "string one", .uint(1): "unsigned one",
                    [1, 2]: "pair", .null: "null"
                ])
            ),
            ("set.kca", .set([3, 1, 2, "a", "b", .double(-0.0), .double(0.0), .double(.nan)])),
            ("urls.kca", urls),
            // U+1AEC is unassigned in Unicode 17.0.0: class 0, so the two keys are not equivalent (§A4).
            ("unicode.kca", .dictionary(["a\u{1AEC}\u{0316}": 1, "a\u{0316}\u{1AEC}": 2]))
        ]
    }

    /// URLs at the edges of §A5.6, with and without a base.
    static var urls: ArchiveValue {
        let base = URL(string: "https://x.example/#f")!
        return .array([
            .url(URL(string: "mailto:")!),
            .url(URL(string: "//[v7.a:b]")!),
            .url(URL(string: "http://u:p:w@h:99999999999999999999/")!),
            .url(URL(string: "http://[::ffff:1.2.3.4]:/p")!),
            .url(URL(string: "a/b:c?d:e#f:g/?")!),
            .url(URL(string: "?", relativeTo: base)!),
            .url(URL(string: "//h/p", relativeTo: base)!)
        ])
    }

    static var scalars: ArchiveValue {
        [
            .null, false, true,
            .int(0), .int(-1), .int(63), .int(-64), .int(64), .int(.max), .int(.min),
            .uint(0), .uint(127), .uint(128), .uint(.max),
            .double(0.0), .double(-0.0), .double(.nan), .double(.infinity), .double(-.infinity),
            .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude), .double(1.5),
            "", "ascii", "ünïcødé", "名前", "🔑 non-BMP 𝄞", "e\u{301}", "\u{e9}", "ascii",
            .data(Data([0, 1, 2, 0xFF])),
            .date(Date(timeIntervalSinceReferenceDate: 0)), .date(.distantPast), .date(.distantFuture),
            .date(Date(timeIntervalSince1970: 1_798_761_600)),
            .uuid(UUID(uuid: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))),
            .url(URL(string: "https://example.com/a?b=c#d")!),
            .url(URL(string: "img/logo.png", relativeTo: URL(string: "https://example.com/static/")!)!)
        ]
    }

    /// The seed's `[UserData]` as a value tree: optional fields absent, nested objects.
    static var users: ArchiveValue {
        .array([
            .object("UserData", ["userName": "张三", "password": "123456", "categoryName": "普通用户"]),
            .object(
                "UserData",
                [
                    "userName": "李四", "password": "abc123", "categoryName": "管理员",
                    "email": "li@example.com", "image": .data(Data([0x89, 0x50, 0x4E, 0x47]))
                ])
        ])
    }

    /// Malformed archives: name, bytes, expected error. One rule broken per file.
    static var malformed: [(name: String, bytes: [UInt8], expect: ArchiveError.Code)] {
        let h: [UInt8] = [0x89, 0x4B, 0x43, 0x41, 0x01, 0x00]
        let hs: [UInt8] = [0x89, 0x4B, 0x43, 0x41, 0x01, 0x01]
        // A reference bomb, 458 bytes: an array of 65 shared definitions, definition k+1 an array holding
        // definition k twice, so the last one stands for 2^65 values.
        var bomb = h + [0x0D, 65, 0x12, 0x00]
        for k in 0..<64 { bomb += [0x12, 0x0D, 0x02, 0x13, UInt8(k), 0x13, UInt8(k)] }
        var nothing = h
        nothing.removeAll()
        return [
            ("empty-file.kca", nothing, .truncated),
            ("not-an-archive.kca", Array("KCA1 hello".utf8), .notAnArchive),
            ("version-2.kca", [0x89, 0x4B, 0x43, 0x41, 0x02, 0x00, 0x00], .unsupportedVersion),
            ("reserved-flag.kca", [0x89, 0x4B, 0x43, 0x41, 0x01, 0x02, 0x00], .reservedFlags),
            ("header-only.kca", h, .truncated),
            ("trailing-bytes.kca", h + [0x00, 0x00], .trailingBytes),
            ("unknown-tag.kca", h + [0x14], .unknownTag),
            ("non-minimal-varint.kca", h + [0x04, 0x81, 0x00], .nonMinimalVarint),
            ("varint-overflow.kca", h + [0x04] + [UInt8](repeating: 0xFF, count: 9) + [0x02], .nonMinimalVarint),
            ("string-defined-twice.kca", h + [0x0D, 0x02, 0x06, 0x01, 0x61, 0x06, 0x01, 0x61], .nonCanonical),
            ("string-bad-reference.kca", h + [0x07, 0x00], .badReference),
            ("invalid-utf8.kca", h + [0x06, 0x02, 0xC3, 0x28], .invalidUTF8),
            ("overlong-utf8.kca", h + [0x06, 0x02, 0xC0, 0xAF], .invalidUTF8),
            ("surrogate-utf8.kca", h + [0x06, 0x03, 0xED, 0xA0, 0x80], .invalidUTF8),
            ("duplicate-key.kca", h + [0x0E, 0x02, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x00], .duplicateKey),
            (
                "canonically-equal-keys.kca",
                h + [0x0E, 0x02, 0x00, 0x02, 0xC3, 0xA9, 0x00, 0x00, 0x03, 0x65, 0xCC, 0x81, 0x00], .duplicateKey
            ),
            (
                "keys-out-of-order.kca", hs + [0x0E, 0x02, 0x00, 0x01, 0x62, 0x00, 0x00, 0x01, 0x61, 0x00],
                .nonCanonical
            ),
            ("set-out-of-order.kca", hs + [0x10, 0x02, 0x03, 0x04, 0x03, 0x02], .nonCanonical),
            ("set-duplicate.kca", h + [0x10, 0x02, 0x03, 0x02, 0x03, 0x02], .duplicateKey),
            ("any-key-duplicate.kca", h + [0x0F, 0x02, 0x00, 0x01, 0x00, 0x02], .duplicateKey),
            ("empty-class-name.kca", h + [0x11, 0x00, 0x00, 0x00], .invalidValue),
            ("invalid-url.kca", h + [0x0B, 0x00, 0x03, 0x61, 0x20, 0x62], .invalidValue),
            ("url-empty-scheme.kca", h + [0x0B] + slot(":a"), .invalidValue),
            ("url-two-fragments.kca", h + [0x0B] + slot("a#b#c"), .invalidValue),
            ("url-bad-ip-literal.kca", h + [0x0B] + slot("http://[1::2::3]"), .invalidValue),
            ("url-zone-id.kca", h + [0x0B] + slot("http://[fe80::1%25en0]"), .invalidValue),
            ("url-relative-base.kca", h + [0x0C] + slot("a") + slot("rel/"), .invalidValue),
            ("url-scheme-with-base.kca", h + [0x0C] + slot("http://z/q") + slot("https://x.example/"), .invalidValue),
            // Unicode 17.0.0 (§A4): U+1ACF (new in 17.0.0, class 230) and U+0316 (class 220) reorder.
            (
                "unicode-17-equal-keys.kca",
                h + [0x0E, 0x02] + slot("a\u{1ACF}\u{0316}") + [0x00] + slot("a\u{0316}\u{1ACF}") + [0x00],
                .duplicateKey
            ),
            // U+16D68 (new in 16.0.0) decomposes to U+16D67 U+16D67.
            (
                "unicode-16-equal-elements.kca",
                h + [0x10, 0x02, 0x06] + slot("\u{16D68}").dropFirst() + [0x06]
                    + slot("\u{16D67}\u{16D67}").dropFirst(),
                .duplicateKey
            ),
            (
                "class-names-equal.kca",
                h + [0x10, 0x02, 0x11] + slot("\u{E9}") + [0x00, 0x11] + slot("e\u{301}") + [0x00], .duplicateKey
            ),
            ("cycle.kca", h + [0x12, 0x0D, 0x01, 0x13, 0x00], .cycle),
            ("indirect-cycle.kca", h + [0x12, 0x0D, 0x01, 0x12, 0x0D, 0x01, 0x13, 0x00], .cycle),
            ("shared-bad-reference.kca", h + [0x13, 0x00], .badReference),
            ("reference-bomb.kca", bomb, .expansionLimit),
            ("huge-count.kca", h + [0x0D, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], .countExceedsInput),
            ("huge-string.kca", h + [0x06, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], .lengthLimit),
            ("deep-nesting.kca", h + [UInt8](repeating: 0x12, count: 20_000) + [0x00], .depthLimit),
            ("truncated-double.kca", h + [0x05, 0x00, 0x00, 0x00], .truncated),
            // Issue 9 (§A3): 256 chained shared definitions, each item within 4 levels, the last standing for
            // 514; a key of 31 combining marks; U+00C0 (A U+0300) and 30 marks, a run of 31.
            ("shared-chain-too-deep.kca", ArchiveCrafting.sharedChain(256), .depthLimit),
            ("nonstarter-run.kca", ArchiveCrafting.combiningKey(marks: 31), .nonStarterRunLimit),
            (
                "precomposed-nonstarter-run.kca", ArchiveCrafting.combiningKey(base: "\u{C0}", marks: 30),
                .nonStarterRunLimit
            )
        ]
    }

    /// A string slot holding a new string (shorter than 128 bytes).
    static func slot(_ s: String) -> [UInt8] { [0x00, UInt8(s.utf8.count)] + Array(s.utf8) }

    /// The manifest of `malformed/`: one line per file, `name<TAB>expected error code`.
    static var manifest: String {
        "# name\texpect (ArchiveError.Code raw value). Written by the test suite: see ../README.md\n"
            + malformed.map { "\($0.name)\t\($0.expect.rawValue)\n" }.joined()
    }

    /// Every fixture file: relative path -> bytes.
    static func files() throws -> [(path: String, bytes: [UInt8])] {
        var out: [(String, [UInt8])] = []
        for g in golden {
            out.append((g.name, try ArchiveSerialization.bytes(from: g.value, options: .deterministic)))
        }
        for m in malformed { out.append(("malformed/" + m.name, m.bytes)) }
        out.append(("malformed/MANIFEST.tsv", Array(manifest.utf8)))
        return out
    }

    /// Writes every fixture under `directory`.
    static func write(to directory: URL) throws {
        let fm = FileManager.default
        for (path, bytes) in try files() {
            let url = directory.appendingPathComponent(path)
            try fm.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        }
    }
}
