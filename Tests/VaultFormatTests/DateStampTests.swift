import Foundation
import TestSupport
import XCTest

@testable import VaultFormat

/// Issue 26: under `WriteOptions(stampsDates: true)` a transaction stamps creation and modification dates as
/// `kcar add` and the keychain do; without it, the attributes are stored as given (so the same items make the
/// same vault). In both formats, and on demand.
final class DateStampTests: VaultTestCase {
    let created = AttributeName.creationDate
    let modified = AttributeName.modificationDate

    func item(_ account: String) -> Attributes {
        Attributes([AttributeName.service: .string("db"), AttributeName.account: .string(account)])
    }

    func nanoseconds(_ v: AttributeValue?) -> Int64? {
        if case .date(let ns)? = v { return ns }
        return nil
    }

    func eachWay(_ body: (_ name: String, _ v: Vault) throws -> Void) throws {
        try eachWayOfWriting { name, open in try body(name, try open()) }
    }

    func stored(_ v: Vault, _ account: String) throws -> Item {
        let r = try Vault.open(path: v.path, secret: secret)
        return try XCTUnwrap(try r.items(class: .genericPassword, key: item(account)).first)
    }

    func testWithoutTheOptionNothingIsStamped() throws {
        try eachWay { name, v in
            try v.commit { tx in try tx.add(attributes: self.item("a"), value: .bytes([1])) }
            let a = try stored(v, "a")
            XCTAssertNil(a.attributes[created], name)
            XCTAssertNil(a.attributes[modified], name)
        }
    }

    func testAnAddIsStampedWithTheCommitsTimeUnlessGivenDates() throws {
        try eachWay { name, v in
            let before = Int64(Date().timeIntervalSince1970 * 1e9)
            try v.commit(options: WriteOptions(stampsDates: true)) { tx in
                try tx.add(attributes: self.item("a"), value: .bytes([1]))
                var given = self.item("b")
                given[self.created] = .date(nanoseconds: 1_000_000_000)
                try tx.add(attributes: given, value: .bytes([2]))
            }
            let after = Int64(Date().timeIntervalSince1970 * 1e9)
            let a = try stored(v, "a")
            let stamp = try XCTUnwrap(nanoseconds(a.attributes[created]), name)
            XCTAssertTrue((before...after).contains(stamp), name)
            XCTAssertEqual(nanoseconds(a.attributes[modified]), stamp, name)
            let b = try stored(v, "b")
            XCTAssertEqual(nanoseconds(b.attributes[created]), 1_000_000_000, "a given date is kept: \(name)")
            XCTAssertEqual(nanoseconds(b.attributes[modified]), stamp, name)
        }
    }

    func testAnUpdateOrReplaceKeepsTheCreationDateAndStampsTheModification() throws {
        try eachWay { name, v in
            var first = item("a")
            first[created] = .date(nanoseconds: 1_000)
            first[modified] = .date(nanoseconds: 2_000)
            try v.commit { tx in try tx.add(attributes: first, value: .bytes([1])) }
            let id = try stored(v, "a").id
            // A value-only update.
            try v.commit(options: WriteOptions(stampsDates: true)) { tx in try tx.update(id, value: .bytes([2])) }
            var a = try stored(v, "a")
            XCTAssertEqual(nanoseconds(a.attributes[created]), 1_000, name)
            let m1 = try XCTUnwrap(nanoseconds(a.attributes[modified]), name)
            XCTAssertGreaterThan(m1, 2_000, name)
            // A replace through add, its attributes without dates.
            try v.commit(options: WriteOptions(stampsDates: true)) { tx in
                try tx.add(attributes: self.item("a"), value: .bytes([3]), ifKeyExists: .replace)
            }
            a = try stored(v, "a")
            XCTAssertEqual(a.id, id, name)
            XCTAssertEqual(nanoseconds(a.attributes[created]), 1_000, "the creation date is kept: \(name)")
            XCTAssertGreaterThanOrEqual(try XCTUnwrap(nanoseconds(a.attributes[modified])), m1, name)
            // An update that sets the modification date itself keeps it.
            var set = a.attributes
            set[modified] = .date(nanoseconds: 5_000)
            try v.commit(options: WriteOptions(stampsDates: true)) { tx in try tx.update(id, attributes: set) }
            XCTAssertEqual(nanoseconds(try stored(v, "a").attributes[modified]), 5_000, name)
        }
    }

    func testAnAgeRecipientMakesASlotItsIdentityOpens() throws {
        let identityFile = dir + "/identity.txt"
        try Data(
            "AGE-SECRET-KEY-13W6UT6Z3H72N3YY9MXJMPPMN2K0KQGW863HPH258UCUXKLK3S3RQA32XH3\n".utf8
        ).write(to: URL(fileURLWithPath: identityFile))
        let path = dir + "/age.kcv"
        try Vault.create(
            path: path, group: "g",
            slots: [try .ageRecipient("age12v6newahxev3mukn7tmr2ycvu5wa0tzkf2yuwret3j8mjg49mggqnawwlu")]
        ) { tx in try tx.add(attributes: self.item("a"), value: .bytes([7])) }
        let v = try Vault.open(path: path, secret: try UnlockSecret.identities(atPath: identityFile)[0])
        XCTAssertEqual(try v.read(try XCTUnwrap(v.items.first)), [7])
        // An identity given by mistake is refused without being repeated: it is a secret key.
        let identity = "AGE-SECRET-KEY-13W6UT6Z3H72N3YY9MXJMPPMN2K0KQGW863HPH258UCUXKLK3S3RQA32XH3"
        XCTAssertThrowsError(try SlotSecret.ageRecipient(identity)) {
            XCTAssertFalse("\($0)".contains("13W6UT6Z3H72"), "\($0)")
            XCTAssertTrue("\($0)".contains("age identity"), "\($0)")
        }
        for bad in [
            "age1xyz", "AGE-SECRET-KEY-1QQQ", "", "age12v6newahxev3mukn7tmr2ycvu5wa0tzkf2yuwret3j8mjg49mggqnawwlv"
        ] {
            XCTAssertThrowsError(try SlotSecret.ageRecipient(bad), bad) {
                XCTAssertEqual(($0 as? VaultError)?.code, .invalidArgument, bad)
            }
        }
    }
}
