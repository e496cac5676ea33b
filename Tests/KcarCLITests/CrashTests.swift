import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Crash consistency: a writer (`kcar-stress`: commits, compactions and key-slot changes in a loop) is killed
/// with SIGKILL at seeded random moments; the vault must then open, verify (at most an incomplete commit), and
/// hold exactly the last acknowledged state or the one being written, and the next writer must go on from it.
/// `KCAR_CRASH_RUNS=500 swift test --filter CrashTests` runs it longer.
final class CrashTests: XCTestCase {
    static var stressBinary: String {
        URL(fileURLWithPath: CLITests.binary).deletingLastPathComponent().appendingPathComponent("kcar-stress").path
    }

    func testKilledWritersLeaveTheAcknowledgedOrThePendingState() throws {
        let runs = Int(ProcessInfo.processInfo.environment["KCAR_CRASH_RUNS"] ?? "") ?? 40
        let dir = NSTemporaryDirectory() + "kcar-crash-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let secret = UnlockSecret.keyFile(SecureBytes(copying: Recipes.keyFile))
        let path = dir + "/stress.kcv"
        try Vault.create(
            path: path, group: "stress", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))], format: .version1
        ) { _ in }
        let (commits, pendingSeen) = try killWriters(runs: runs, arguments: [path]) { run in
            let vault = try Vault.open(path: path, secret: secret)
            var state: [String: [UInt8]] = [:]
            for item in vault.items { state[item.account!] = try vault.read(item) }
            let problems = vault.verify().problems
            XCTAssertTrue(problems.allSatisfy { $0.code == .incompleteCommit }, "run \(run): \(problems)")
            // The next writer cuts an incomplete commit off and goes on.
            if run % 5 == 4 {
                let writer = try Vault.open(path: path, secret: secret, mode: .write)
                try writer.cutIncomplete()
                XCTAssertTrue(writer.verify().isIntact, "run \(run)")
            }
            return state
        }
        // A killed rewrite leaves its temporary file; the next rewrite removes it (nobody holds its lock).
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".tmp") }
        for f in leftovers { XCTAssertTrue(f.hasPrefix(".stress.kcv.")) }
        try Vault.open(path: path, secret: secret, mode: .write).compact()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".tmp") }, [])
        print(
            "crash runs: \(runs), changes acknowledged: \(commits), killed mid-change: \(pendingSeen), temporary files left by killed rewrites: \(leftovers.count)"
        )
    }

    /// The same for a version 2 vault (SPEC.md Part 4): delta commits, folds, compactions and slot changes.
    func testKilledVersion2WritersLeaveTheAcknowledgedOrThePendingState() throws {
        let runs = Int(ProcessInfo.processInfo.environment["KCAR_CRASH_RUNS"] ?? "") ?? 30
        let dir = NSTemporaryDirectory() + "kcar-crash2-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let secret = UnlockSecret.keyFile(SecureBytes(copying: Recipes.keyFile))
        let path = dir + "/stress.kcv"
        try PagedVault.create(
            path: path, group: "stress", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            schema: .servicesAndAccounts)
        // Longer delays: each run first reads every value back, and some commits fold 300 changes.
        let (commits, pendingSeen) = try killWriters(runs: runs, arguments: ["--paged", path], delays: 50_000...900_000)
        { run in
            let vault = try PagedVault.open(path: path, secret: secret)
            var state: [String: [UInt8]] = [:]
            try vault.forEachItem { item in
                state[item.account!] = try vault.read(item)
                return true
            }
            let problems = vault.verify().problems
            XCTAssertTrue(problems.allSatisfy { $0.code == .incompleteCommit }, "run \(run): \(problems)")
            // The next writer cuts an incomplete commit off as it commits.
            if run % 5 == 4 {
                let writer = try PagedVault.open(path: path, secret: secret, mode: .write)
                try writer.commit { tx in
                    if let item = try writer.items(
                        class: .genericPassword, keyValues: [.string("stress"), .string("a0")]
                    ).first {
                        try tx.update(item, value: state["a0"]!)
                    }
                }
                XCTAssertEqual(writer.verify().problems, [], "run \(run)")
            }
            return state
        }
        print("version 2 crash runs: \(runs), changes acknowledged: \(commits), killed mid-change: \(pendingSeen)")
    }

    /// Runs `kcar-stress ARGUMENTS KEYFILE SEED` `runs` times, killing it at a seeded random moment; `check`
    /// reads the vault the kill left (and may go on writing). Each state found must be the last acknowledged
    /// state or the pending one. Returns the changes acknowledged and the runs killed mid-change.
    func killWriters(
        runs: Int, arguments: [String], delays range: ClosedRange<UInt32> = 20_000...250_000,
        check: (Int) throws -> [String: [UInt8]]
    ) throws -> (Int, Int) {
        let keyPath = CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path
        var delays = SplitMix64(state: 7)  // seeded delays; where a kill lands still depends on the machine
        var pendingSeen = 0
        var commits = 0
        var previous = stateDigest([:])  // the new vault is empty
        for run in 0..<runs {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Self.stressBinary)
            p.arguments = arguments + [keyPath, String(run + 1)]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            usleep(UInt32.random(in: range, using: &delays))
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let lines = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(
                separator: "\n")
            XCTAssertFalse(
                lines.contains { $0.hasPrefix("error") }, "run \(run): \(lines.filter { $0.hasPrefix("error") })")
            // Before the first acknowledgement, the acknowledged state is the one the previous run left.
            var acked: UInt64? = previous
            var pending: UInt64? = nil
            for line in lines {
                let f = line.split(separator: " ")
                if f[0] == "pending", f.count == 3 { pending = UInt64(f[2]) }
                if f[0] == "ack" {
                    commits += 1
                    acked = pending
                    pending = nil
                }
            }
            let found = stateDigest(try check(run))
            XCTAssertTrue(
                found == acked || found == pending,
                "run \(run): the vault holds neither the acknowledged nor the pending state")
            previous = found
            if pending != nil { pendingSeen += 1 }
        }
        return (commits, pendingSeen)
    }
}
