import TestSupport
import XCTest

@testable import VaultFormat

/// Reading one value checks its record's member table as a whole table is checked, keeping one member
/// (``MemberTable/locate(_:in:fail:)``): on seeded tables, cut and damaged, it gives what ``MemberTable/parse(_:fail:)``
/// gives (the same refusal, the same "not complete yet", the same extent and member).
final class MemberTableTests: XCTestCase {
    func outcome<T>(_ body: () throws -> T?) -> String {
        do { return try body().map { "\($0)" } ?? "incomplete" } catch { return "refused: \(error)" }
    }

    func testLocatingOneMemberChecksTheTableAsParsingItDoes() {
        var rng = SplitMix64(state: 0x3e3b)
        let fail = { (m: String) in VaultError(.damagedRecord, "record: \(m)") }
        var kinds = Set<String>()
        for round in 0..<400 {
            let n = 1 + rng.below(rng.below(3) == 0 ? 4 : 300)
            let members = (0..<n).map { i in
                (
                    id: ItemID(raw: ID128(hi: UInt64(round), lo: UInt64(i))),
                    size: UInt64(rng.below(3) == 0 ? rng.below(1 << 20) : rng.below(200))
                )
            }
            var bytes = MemberTable.encode(members) + [UInt8](repeating: 7, count: rng.below(40))
            switch rng.below(4) {
            case 0: break
            case 1: bytes.removeSubrange(rng.below(bytes.count)...)
            case 2: bytes[rng.below(bytes.count)] = UInt8([0, 0x80, 0xFF, 0x7F][rng.below(4)])
            default: bytes[rng.below(min(bytes.count, 4))] ^= UInt8(1 << rng.below(8))
            }
            let index = rng.below(n + 2)
            let parsed = outcome { try MemberTable.parse(bytes, fail: fail) }
            let located = outcome { try MemberTable.locate(index, in: bytes, fail: fail) }
            kinds.insert(String(parsed.prefix(8)))
            if parsed.hasPrefix("refused") || parsed == "incomplete" {
                XCTAssertEqual(located, parsed, "round \(round)")
                continue
            }
            guard let t = try? MemberTable.parse(bytes, fail: fail),
                let l = try? MemberTable.locate(index, in: bytes, fail: fail)
            else { return XCTFail("round \(round): \(located)") }
            XCTAssertEqual(l.length, t.length)
            XCTAssertEqual(l.totalData, t.totalData)
            if index < t.members.count {
                XCTAssertEqual(l.member?.id, t.members[index].id)
                XCTAssertEqual(l.member?.size, t.members[index].size)
                XCTAssertEqual(l.member?.dataOffset, t.offsets[index])
            } else {
                XCTAssertNil(l.member)
            }
        }
        // Whole tables, cut ones and refused ones were all met.
        XCTAssertEqual(kinds.count, 3, "\(kinds)")
    }
}
