import Foundation
import KcarKeychain
import VaultFormat
import XCTest

/// Which keychain files kcar trusts (SPEC.md §K1), what a search does with a group it cannot use (§K2), the
/// generation record against replaced and deleted files (§K6), and transactions kept after their closure.
/// The tests run as root: files "of another user" are chowned to uid 65534.
final class TrustTests: KeychainTestCase {
    let other: uid_t = 65534

    func assertUnsafe<T>(
        _ body: @autoclosure () throws -> T, _ fragment: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try body(), file: file, line: line) { e in
            let k = e as? KeychainError
            XCTAssertEqual(k?.reason, .unsafeFile, "\(e)", file: file, line: line)
            XCTAssertEqual(k?.status, .missingEntitlement, "\(e)", file: file, line: line)
            XCTAssertTrue(k?.message.contains(fragment) ?? false, "\(e) should say \(fragment)", file: file, line: line)
        }
    }

    func write(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600, owner: uid_t? = nil) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(chmod(path, mode), 0)
        if let owner { XCTAssertEqual(chown(path, owner, gid_t.max), 0) }
    }

    func seenGeneration(_ group: String) throws -> UInt64 {
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.path + "/\(KeychainDirectory.stem(group)).seen")))
        return (0..<8).reduce(0) { $0 | UInt64(b[28 + $1]) << (8 * UInt64($1)) }
    }

    // MARK: The directory

    func testADirectoryOthersCanWriteIsRefusedForEveryOperation() throws {
        let s = try store(["a"])
        try s.add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        s.close()
        for m: mode_t in [0o1777, 0o777, 0o770, 0o730] {
            XCTAssertEqual(chmod(dir.path, m), 0)
            let fresh = try store(["a"])
            assertUnsafe(try fresh.find(ItemQuery()), dir.path)
            assertUnsafe(
                try fresh.add(attributes: attrs(["svce": .string("y")]), value: [2], group: "a"), "writable by")
            assertUnsafe(try store(nil).find(ItemQuery()), "writable by")
            assertUnsafe(try dir.groups(), "writable by")
            assertUnsafe(try dir.readKey("a"), "writable by")
        }
        XCTAssertEqual(chmod(dir.path, 0o700), 0)
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 1)
        // Owned by another user.
        XCTAssertEqual(chown(dir.path, other, gid_t.max), 0)
        assertUnsafe(try store(["a"]).find(ItemQuery()), "owned by uid 65534")
    }

    func testAFolderAboveOthersCanWriteIsRefusedUnlessSticky() throws {
        try store(["a"]).add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        XCTAssertEqual(chmod(root, 0o777), 0)
        assertUnsafe(try store(["a"]).find(ItemQuery()), "a folder above the keychain is writable by others")
        XCTAssertEqual(chmod(root, 0o1777), 0)  // as /tmp: others cannot rename what they do not own
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 1)
        XCTAssertEqual(chmod(root, 0o755), 0)
        XCTAssertEqual(chown(root, other, gid_t.max), 0)
        assertUnsafe(try store(["a"]).find(ItemQuery()), "a folder above the keychain is owned by uid 65534")
    }

    // MARK: Group files

    func testUnsafeGroupFilesAreRefusedWithTheirPathAndReason() throws {
        let s = try store(["a"])
        try s.add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        s.close()
        let key = dir.keyPath("a")
        let vault = dir.vaultPath("a")
        let seen = dir.path + "/a.seen"
        let cases: [(String, mode_t, uid_t?, String)] = [
            (key, 0o644, nil, "a key readable by every user"), (key, 0o640, nil, "a key readable by its group"),
            (key, 0o602, nil, "writable by every user"), (key, 0o600, other, "owned by uid 65534"),
            (vault, 0o620, nil, "writable by its group"), (vault, 0o600, other, "owned by uid 65534"),
            (seen, 0o666, nil, "writable by every user"), (seen, 0o600, other, "owned by uid 65534")
        ]
        for (path, m, owner, why) in cases {
            XCTAssertEqual(chmod(path, m), 0)
            if let owner { XCTAssertEqual(chown(path, owner, gid_t.max), 0) }
            assertUnsafe(try store(["a"]).find(ItemQuery()), path + ": " + why)
            assertUnsafe(try store(["a"]).add(attributes: attrs(["svce": .string("y")]), value: [2], group: "a"), path)
            XCTAssertEqual(chmod(path, 0o600), 0)
            XCTAssertEqual(chown(path, 0, gid_t.max), 0)
        }
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 1)
    }

    func testSymlinksAndFIFOsAreRefusedWithoutBlocking() throws {
        let s = try store(["a"])
        try s.add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        s.close()
        for (name, kind) in [("a.key", "key"), ("a.kcv", "vault"), ("a.seen", "seen")] {
            let path = dir.path + "/" + name
            let real = root + "/real-" + kind
            XCTAssertEqual(rename(path, real), 0)
            XCTAssertEqual(symlink(real, path), 0)
            assertUnsafe(try store(["a"]).find(ItemQuery()), path + ": a symbolic link")
            XCTAssertEqual(unlink(path), 0)
            XCTAssertEqual(mkfifo(path, 0o600), 0)
            assertUnsafe(try store(["a"]).find(ItemQuery()), path + ": not a regular file (a FIFO)")
            assertUnsafe(try store(nil).find(ItemQuery()), "a FIFO")
            XCTAssertEqual(unlink(path), 0)
            XCTAssertEqual(rename(real, path), 0)
        }
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 1)
    }

    func testAKeyFileNotOf32BytesIsDamaged() throws {
        try store(["a"]).add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        for n in [0, 31, 33, 1 << 20] {
            try write(dir.keyPath("a"), [UInt8](repeating: 1, count: n))
            assertStatus(.decode, try dir.readKey("a"))
            assertStatus(.decode, try store(["a"]).find(ItemQuery()))
        }
    }

    // MARK: Planted groups and the implicit list

    func testAGroupPlantedByAnotherUserIsSkippedNamedAndNeverWritten() throws {
        try store(["mine"]).add(attributes: attrs(["svce": .string("api")]), value: Array("own".utf8), group: "mine")
        // Another user's group: their key (0644) and vault, as a writable directory would have let them plant.
        let theirKey = [UInt8](repeating: 9, count: 32)
        try Vault.create(
            path: dir.vaultPath("aaa"), group: "aaa", slots: [.keyFile(SecureBytes(copying: theirKey))],
            format: .version1
        ) {
            tx in
            try tx.add(
                class: .genericPassword, attributes: Attributes(["svce": .string("api")]),
                value: .bytes(Array("theirs".utf8)))
        }
        XCTAssertEqual(chown(dir.vaultPath("aaa"), other, gid_t.max), 0)
        try write(dir.keyPath("aaa"), theirKey, mode: 0o644, owner: other)
        let implicit = try store(nil)
        XCTAssertEqual(try implicit.accessGroups(), ["aaa", "mine"])
        let r = try implicit.search(.password(service: "api"))
        XCTAssertEqual(r.items.map(\.group), ["mine"])
        XCTAssertEqual(r.skipped.map(\.group), ["aaa"])
        XCTAssertEqual(r.skipped.first?.error.reason, .unsafeFile)
        XCTAssertEqual(
            try implicit.value(of: try XCTUnwrap(implicit.find(.password(service: "api")).first)), Array("own".utf8))
        XCTAssertEqual(try implicit.groupSummary().counts.map(\.group), ["mine"])
        // Naming the group, or adding to it, is refused: no secret reaches the attacker's vault.
        assertUnsafe(try implicit.find(ItemQuery(group: "aaa")), "owned by uid 65534")
        assertUnsafe(try implicit.search(ItemQuery(group: "aaa")), "owned by uid 65534")
        assertUnsafe(try implicit.add(attributes: attrs(["svce": .string("new")]), value: [1], group: "aaa"), "aaa.key")
        XCTAssertEqual(
            try Vault.open(path: dir.vaultPath("aaa"), secret: .keyFile(SecureBytes(copying: theirKey))).count, 1)
        // Only skipped groups: nothing found is not "not found".
        assertUnsafe(try implicit.find(.password(service: "nothing-here")), "aaa")
    }

    func testADamagedGroupDoesNotHideTheOthers() throws {
        let s = try store(["a", "b"])
        try s.add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        try s.add(attributes: attrs(["svce": .string("x")]), value: [2], group: "b")
        try write(dir.vaultPath("a"), [UInt8](repeating: 0, count: 4096))
        let r = try store(nil).search(ItemQuery())
        XCTAssertEqual(r.items.map(\.group), ["b"])
        XCTAssertEqual(r.skipped.map(\.group), ["a"])
        XCTAssertEqual(r.skipped.first?.error.status, .decode)
        // An explicit list names its groups: there the damaged one fails the search.
        assertStatus(.decode, try store(["a", "b"]).find(ItemQuery()))
    }

    // MARK: Shared on purpose

    func testAKeychainSharedWithAUnixGroupOnPurpose() throws {
        guard let users = getgrnam("users")?.pointee.gr_gid else { throw XCTSkip("no group users") }
        try dir.create(sharedGroup: "users")
        var st = stat()
        XCTAssertEqual(stat(dir.path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o7777, 0o3770)
        XCTAssertEqual(st.st_gid, users)
        try store(["team"]).add(attributes: attrs(["svce": .string("x")]), value: [1], group: "team")
        XCTAssertEqual(mode(dir.keyPath("team")), 0o640)
        XCTAssertEqual(mode(dir.vaultPath("team")), 0o660)
        XCTAssertEqual(mode(dir.path + "/team.seen"), 0o660)
        XCTAssertEqual(stat(dir.keyPath("team"), &st), 0)
        XCTAssertEqual(st.st_gid, users)
        // A member of the group (another uid) may write files of the group.
        XCTAssertEqual(chown(dir.vaultPath("team"), other, gid_t.max), 0)
        XCTAssertEqual(try store(["team"]).find(ItemQuery()).count, 1)
        // A file of another group is not shared.
        XCTAssertEqual(chown(dir.keyPath("team"), 0, 0), 0)
        assertUnsafe(try store(["team"]).find(ItemQuery()), "which the keychain is not shared with")
        XCTAssertEqual(chown(dir.keyPath("team"), 0, users), 0)
        XCTAssertEqual(chown(dir.vaultPath("team"), 0, gid_t.max), 0)
        // Without the restricted-deletion bit (as `init --shared-group` made it before keychain v1.4) it is
        // refused, with the command that fixes it.
        XCTAssertEqual(chmod(dir.path, 0o2770), 0)
        assertUnsafe(try store(["team"]).find(ItemQuery()), "`chmod +t ")
        XCTAssertEqual(chmod(dir.path, 0o3770), 0)
        // The owner chooses the group: a marker others can write, or that someone else owns, is refused.
        let marker = dir.path + "/" + KeychainDirectory.sharedMarker
        XCTAssertEqual(chmod(marker, 0o664), 0)
        assertUnsafe(try store(["team"]).find(ItemQuery()), "writable by others")
        XCTAssertEqual(chmod(marker, 0o644), 0)
        XCTAssertEqual(chown(marker, other, gid_t.max), 0)
        assertUnsafe(try store(["team"]).find(ItemQuery()), "not by the keychain's owner")
        XCTAssertEqual(chown(marker, 0, gid_t.max), 0)
        try write(marker, Array("staff\n".utf8), mode: 0o644)
        assertUnsafe(try store(["team"]).find(ItemQuery()), "but the keychain's group is")
        // Without the marker the group-writable directory is refused.
        XCTAssertEqual(unlink(marker), 0)
        assertUnsafe(try store(["team"]).find(ItemQuery()), "not shared with it on purpose")
        try dir.create(sharedGroup: "users")
        XCTAssertEqual(try store(["team"]).find(ItemQuery()).count, 1)
    }

    // MARK: The generation record

    func testAReplacedKeyOrVaultOrADeletedRecordIsDetected() throws {
        let s = try store(["a", "b"])
        try s.add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        try s.add(attributes: attrs(["svce": .string("y")]), value: [1], group: "a")
        s.close()
        let keep = root + "/keep"
        try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: false)
        for f in ["a.kcv", "a.key", "a.seen"] {
            try FileManager.default.copyItem(atPath: dir.path + "/" + f, toPath: keep + "/" + f)
        }
        func restore() throws {
            for f in ["a.kcv", "a.key", "a.seen"] {
                try? FileManager.default.removeItem(atPath: dir.path + "/" + f)
                try FileManager.default.copyItem(atPath: keep + "/" + f, toPath: dir.path + "/" + f)
            }
            XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 2)
        }
        // Key and vault swapped for another pair of the same group: the record no longer verifies.
        let forged = [UInt8](repeating: 5, count: 32)
        try FileManager.default.removeItem(atPath: dir.vaultPath("a"))
        try Vault.create(
            path: dir.vaultPath("a"), group: "a", slots: [.keyFile(SecureBytes(copying: forged))], format: .version1
        ) { _ in }
        try write(dir.keyPath("a"), forged)
        assertStatus(.rolledBack, try store(["a"]).find(ItemQuery()))
        try restore()
        // Another vault with the group's own key: the record names another vault.
        let key = try dir.readKey("a")
        try FileManager.default.removeItem(atPath: dir.vaultPath("a"))
        try Vault.create(path: dir.vaultPath("a"), group: "a", slots: [.keyFile(key)], format: .version1) { _ in }
        assertStatus(.rolledBack, try store(["a"]).find(ItemQuery()))
        try restore()
        // The record deleted, or replaced by bytes that do not verify, past the first commit.
        XCTAssertEqual(unlink(dir.path + "/a.seen"), 0)
        assertStatus(.rolledBack, try store(["a"]).find(ItemQuery()))
        assertStatus(
            .rolledBack, try store(["a"]).add(attributes: attrs(["svce": .string("z")]), value: [1], group: "a"))
        try write(dir.path + "/a.seen", [UInt8](repeating: 0xFF, count: 68))
        assertStatus(.rolledBack, try store(["a"]).find(ItemQuery()))
        // Accepting writes a record for the vault as it is.
        try store(["a"]).acceptRollback(group: "a")
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 2)
        XCTAssertEqual(
            try seenGeneration("a"), try Vault.open(path: dir.vaultPath("a"), secret: .keyFile(key)).generation)
        // A new group of a name whose old record is left over starts afresh.
        try FileManager.default.removeItem(atPath: dir.vaultPath("a"))
        try FileManager.default.removeItem(atPath: dir.keyPath("a"))
        try store(["a"]).add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 1)
    }

    func testAVaultRestoredWithItsRecordIsCaughtByThisUsersOwnCopy() throws {
        let s = try store(["a"])
        try s.add(attributes: attrs(["svce": .string("old")]), value: [1], group: "a")
        s.close()
        let snapshot = root + "/snapshot"
        try FileManager.default.createDirectory(atPath: snapshot, withIntermediateDirectories: false)
        for f in ["a.kcv", "a.seen"] {
            try FileManager.default.copyItem(atPath: dir.path + "/" + f, toPath: snapshot + "/" + f)
        }
        try store(["a"]).add(attributes: attrs(["svce": .string("new")]), value: [2], group: "a")
        for f in ["a.kcv", "a.seen"] {
            try FileManager.default.removeItem(atPath: dir.path + "/" + f)
            try FileManager.default.copyItem(atPath: snapshot + "/" + f, toPath: dir.path + "/" + f)
        }
        XCTAssertThrowsError(try store(["a"]).find(ItemQuery())) { e in
            XCTAssertEqual((e as? KeychainError)?.status, .rolledBack)
            XCTAssertTrue((e as? KeychainError)?.message.contains("this user saw 3") ?? false, "\(e)")
        }
        // Someone without a copy (another user, or a state folder lost with the keychain) cannot tell.
        let blind = KeychainDirectory(path: dir.path, statePath: nil)
        XCTAssertEqual(try KeychainStore(directory: blind, accessGroups: ["a"]).find(ItemQuery()).count, 1)
        // An untrusted state folder is not used (and not trusted to clear the alarm either: the keychain
        // record alone decides then).
        XCTAssertEqual(chmod(root + "/state/seen", 0o777), 0)
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 1)
        XCTAssertEqual(chmod(root + "/state/seen", 0o700), 0)
        try store(["a"]).acceptRollback(group: "a")
        XCTAssertEqual(try store(["a"]).find(ItemQuery()).count, 1)
    }

    /// A store that stays open (a daemon, an app) and last checked generation N sees another process commit
    /// N+1 and the vault then put back to its copy of generation N: it refuses it, as a fresh store does.
    /// Before, it checked again only when the generation differed from the one it had checked.
    func testALongLivedStoreCatchesAVaultPutBackToTheGenerationItChecked() throws {
        let daemon = try store(["a"])
        try daemon.add(attributes: attrs(["svce": .string("one")]), value: [1], group: "a")
        XCTAssertEqual(try daemon.find(ItemQuery()).count, 1)
        let copy = root + "/copy.kcv"
        try FileManager.default.copyItem(atPath: dir.vaultPath("a"), toPath: copy)
        try store(["a"]).add(attributes: attrs(["svce": .string("two")]), value: [2], group: "a")
        XCTAssertEqual(rename(copy, dir.vaultPath("a")), 0)
        assertStatus(.rolledBack, try daemon.find(ItemQuery()))
        assertStatus(.rolledBack, try store(["a"]).find(ItemQuery()))
    }

    /// A vault loaded before another process commits and writes its record is not rolled back: the check reads
    /// the records first, then catches the vault up, then compares. Before, a `--group` command compared the
    /// vault it had opened with a record written since (exit 14), and a store caught up first and read the
    /// record after, so a commit and its record could both land in between (`TypedAPITests`' concurrent
    /// writers failed 2 times in 40 runs with a false "replaced by an older copy").
    func testARecordWrittenAfterTheVaultWasLoadedIsNotARollback() throws {
        try store(["a"]).add(attributes: attrs(["svce": .string("one")]), value: [1], group: "a")
        let key = try dir.readKey("a")
        let copy = root + "/copy.kcv"
        try FileManager.default.copyItem(atPath: dir.vaultPath("a"), toPath: copy)
        let loaded = try Vault.open(path: dir.vaultPath("a"), secret: .keyFile(key), itemsOnDemand: true)
        try store(["a"]).add(attributes: attrs(["svce": .string("two")]), value: [2], group: "a")
        XCTAssertGreaterThan(try seenGeneration("a"), loaded.generation)
        XCTAssertNoThrow(try dir.checkGeneration(loaded, group: "a", key: key))
        XCTAssertEqual(loaded.generation, try seenGeneration("a"), "caught up")
        // The file put back to the copy taken before: caught up, the vault is still older than the record.
        XCTAssertEqual(rename(copy, dir.vaultPath("a")), 0)
        let old = try Vault.open(path: dir.vaultPath("a"), secret: .keyFile(key), itemsOnDemand: true)
        XCTAssertThrowsError(try dir.checkGeneration(old, group: "a", key: key)) { e in
            XCTAssertEqual((e as? KeychainError)?.status, .rolledBack, "\(e)")
        }
        assertStatus(.rolledBack, try store(["a"]).find(ItemQuery()))
    }

    /// A deletion (here played by the test: the key held exclusive, the vault unlinked, then the record and
    /// the key) racing an add that makes the group again: the add waits for the key, finds it gone, and
    /// makes the group under a key of its own, which opens what it stored. Before, it reused the key about to
    /// be removed, and its item could no longer be opened.
    func testAGroupMadeWhileItIsDeletedKeepsItsKey() throws {
        try store(["a"]).add(attributes: attrs(["svce": .string("old")]), value: [1], group: "a")
        let fd = open(dir.keyPath("a"), O_RDONLY)
        XCTAssertEqual(flock(fd, LOCK_EX), 0)
        XCTAssertEqual(unlink(dir.vaultPath("a")), 0)
        let added = DispatchSemaphore(value: 0)
        let path = dir.path
        final class Outcome: @unchecked Sendable { var error: Error? }
        let outcome = Outcome()
        Thread {
            do {
                try KeychainStore(directory: KeychainDirectory(path: path), accessGroups: ["a"]).add(
                    attributes: Attributes(["svce": .string("new")]), value: [2], group: "a")
            } catch { outcome.error = error }
            added.signal()
        }.start()
        usleep(300_000)  // the add is waiting for the key
        XCTAssertEqual(unlink(dir.path + "/a.seen"), 0)
        XCTAssertEqual(unlink(dir.keyPath("a")), 0)
        close(fd)
        added.wait()
        XCTAssertNil(outcome.error)
        let found = try store(["a"]).find(ItemQuery(group: "a"))
        XCTAssertEqual(found.compactMap { $0.attributes.string("svce") }, ["new"])
    }

    func testStaleTemporaryRecordsAreRemovedAndNoneIsLeft() throws {
        let s = try store(["a"])
        try s.add(attributes: attrs(["svce": .string("x")]), value: [1], group: "a")
        let stale = dir.path + "/.a.seen.0123456789ab.tmp"
        let foreign = dir.path + "/.a.seen.notkcarsname.tmp"
        try write(stale, [])
        try write(foreign, [])
        try s.add(attributes: attrs(["svce": .string("y")]), value: [1], group: "a")
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale))
        XCTAssertTrue(FileManager.default.fileExists(atPath: foreign))
        let temps = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".tmp") }
        XCTAssertEqual(temps, [".a.seen.notkcarsname.tmp"])
    }

    // MARK: Transactions

    func testATransactionKeptAfterItsClosureRefusesEveryMethod() throws {
        let s = try store(["a"])
        var kept: GroupTransaction?
        let added = try s.transaction(group: "a") { tx in
            kept = tx
            return try tx.add(attributes: attrs(["svce": .string("in")]), value: [1])
        }
        let tx = try XCTUnwrap(kept)
        func assertEnded<T>(_ body: @autoclosure () throws -> T, line: UInt = #line) {
            XCTAssertThrowsError(try body(), line: line) { e in
                XCTAssertEqual((e as? KeychainError)?.status, .param, "\(e)", line: line)
                XCTAssertEqual((e as? KeychainError)?.reason, .transactionEnded, "\(e)", line: line)
            }
        }
        assertEnded(try tx.add(attributes: attrs(["svce": .string("late")]), value: [2]))
        assertEnded(try tx.update([added.id], set: ["labl": .string("L")], value: nil))
        assertEnded(try tx.delete(added.id))
        assertEnded(try tx.find(ItemQuery()))
        assertEnded(try tx.items)
        assertEnded(try tx.value(of: added))
        XCTAssertEqual(try s.find(ItemQuery()).compactMap { $0.attributes.string("svce") }, ["in"])
    }
}
