import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Several writers on one vault at once (threads, each with its own `Vault`, and `kcar-stress --batches`
/// processes), each committing batches of items that add, update and delete (`commitBatch`), while readers
/// open the vault again and again (threads through the library, and `kcar extract` processes). Every
/// reader must see each writer's items whole and from one commit, never older than a commit acknowledged
/// before it opened; at the end every acknowledged change is there and the vault verifies.
final class ConcurrencyTests: XCTestCase {
    static let commits = 47  // the last one puts items (a multiple of 4 would delete them)
    static let items = 4
    static let threadWriters = [1, 2]
    static let processWriters = [3, 4]
    static var writers: [Int] { threadWriters + processWriters }

    /// What writers have begun and had acknowledged, and what went wrong, shared between threads.
    final class Ledger: @unchecked Sendable {
        private let lock = NSLock()
        private var acked: [Int: Int] = [:]
        private var started: [Int: Int] = [:]
        private(set) var problems: [String] = []
        private(set) var reads = 0
        private var stopped = false

        func start(_ w: Int, _ c: Int) { lock.withLock { started[w] = c } }
        func ack(_ w: Int, _ c: Int) {
            lock.withLock {
                if c != (acked[w] ?? 0) + 1 { problems.append("writer \(w): ack \(c) after \(acked[w] ?? 0)") }
                acked[w] = c
            }
        }
        func problem(_ p: String) { lock.withLock { if problems.count < 20 { problems.append(p) } } }
        func read() { lock.withLock { reads += 1 } }
        func stop() { lock.withLock { stopped = true } }
        var isStopped: Bool { lock.withLock { stopped } }
        var ackedNow: [Int: Int] { lock.withLock { acked } }
        /// Upper bounds: what thread writers have started (process writers are not known: unbounded).
        var startedNow: [Int: Int] { lock.withLock { started } }
    }

    /// Problems in one reader's view: service -> account -> value. `last` is the reader's previous view.
    static func check(
        _ view: [String: [String: [UInt8]]], acked: [Int: Int], started: [Int: Int], last: inout [Int: Int],
        who: String
    ) -> [String] {
        var problems: [String] = []
        for w in writers {
            let mine = view["w\(w)"] ?? [:]
            let low = acked[w] ?? 0
            let high = threadWriters.contains(w) ? started[w] ?? 0 : Int.max
            if mine.isEmpty {
                // Before the first commit, or after a deleting one that is not older than the acknowledged one.
                if low > 0, !(low...max(low, high)).contains(where: batchDeletes) {
                    problems.append("\(who): writer \(w) has no items, but commit \(low) was acknowledged")
                }
                continue
            }
            guard Set(mine.keys) == Set((0..<items).map { "i\($0)" }) else {
                problems.append("\(who): writer \(w): a partial batch \(mine.keys.sorted())")
                continue
            }
            let commits = Set(mine.values.map(batchCommit))
            guard commits.count == 1, let c = commits.first!, !batchDeletes(c) else {
                problems.append("\(who): writer \(w): items from commits \(commits)")
                continue
            }
            for (account, value) in mine
            where value != batchValue(writer: w, commit: c, item: Int(account.dropFirst())!) {
                problems.append("\(who): writer \(w) commit \(c): \(account) is not the value written")
            }
            if c < low || c > high {
                problems.append("\(who): writer \(w): commit \(c) seen, \(low) acknowledged, \(high) started")
            }
            if c < last[w] ?? 0 { problems.append("\(who): writer \(w): commit \(c) after commit \(last[w]!)") }
            last[w] = c
        }
        return problems
    }

    func testWritersAndReadersAlwaysSeeWholeCommits() throws {
        let dir = NSTemporaryDirectory() + "kcar-concurrency-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keyPath = CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path
        let path = dir + "/shared.kcv"
        let secret = UnlockSecret.keyFile(SecureBytes(copying: Recipes.keyFile))
        try Vault.create(
            path: path, group: "concurrency", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            format: .version1
        ) {
            _ in
        }
        let ledger = Ledger()
        let writing = DispatchGroup()
        let reading = DispatchGroup()

        var children: [Process] = []
        for w in Self.processWriters {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CrashTests.stressBinary)
            p.arguments = ["--batches", path, keyPath, String(w), String(Self.commits), String(Self.items)]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            children.append(p)
            writing.enter()
            Thread.detachNewThread {
                let h = out.fileHandleForReading
                var buffer = Data()
                while true {
                    let chunk = h.availableData
                    if chunk.isEmpty { break }
                    buffer += chunk
                    while let nl = buffer.firstIndex(of: 10) {
                        let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                        buffer = Data(buffer[(nl + 1)...])
                        let f = line.split(separator: " ")
                        if f.count == 3, f[0] == "ack", let c = Int(f[2]) {
                            ledger.ack(w, c)
                        } else {
                            ledger.problem("writer \(w): \(line)")
                        }
                    }
                }
                writing.leave()
            }
        }
        defer { for p in children where p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        for w in Self.threadWriters {
            writing.enter()
            Thread.detachNewThread {
                defer { writing.leave() }
                do {
                    let vault = try Vault.open(path: path, secret: secret, mode: .write, lockTimeout: 120)
                    for c in 1...Self.commits {
                        // Readers poll for their shared lock and can lose every race to busy writers: half way,
                        // wait (at most 5 s) for a few whole reads, so some surely happen while writers write.
                        if c == Self.commits / 2 {
                            for _ in 0..<500 where ledger.reads < 6 { usleep(10_000) }
                        }
                        ledger.start(w, c)
                        try commitBatch(vault, writer: w, commit: c, items: Self.items)
                        ledger.ack(w, c)
                    }
                } catch {
                    ledger.problem("writer \(w): \(error)")
                }
            }
        }
        // Readers through the library: open, read every item, check, again.
        for r in 0..<2 {
            reading.enter()
            Thread.detachNewThread {
                defer { reading.leave() }
                var last: [Int: Int] = [:]
                repeat {
                    let acked = ledger.ackedNow
                    do {
                        let vault = try Vault.open(path: path, secret: secret, lockTimeout: 120)
                        var view: [String: [String: [UInt8]]] = [:]
                        for item in vault.items {
                            view[item.service!, default: [:]][item.account!] = try vault.read(item)
                        }
                        for p in Self.check(
                            view, acked: acked, started: ledger.startedNow, last: &last, who: "reader \(r)")
                        { ledger.problem(p) }
                        ledger.read()
                    } catch {
                        ledger.problem("reader \(r): \(error)")
                    }
                } while !ledger.isStopped
            }
        }
        // A reader through the command line: extract everything into a fresh folder and check the files.
        reading.enter()
        Thread.detachNewThread {
            defer { reading.leave() }
            var last: [Int: Int] = [:]
            var n = 0
            repeat {
                n += 1
                let acked = ledger.ackedNow
                let out = "x\(n)"
                do {
                    let r = try runKcar(["extract", path, "-C", out, "--key-file", keyPath], in: dir)
                    // On a slow machine busy writers may keep the lock longer than kcar waits: a clear
                    // error, not an inconsistency; try again.
                    if r.code == 8, r.err.contains("is locked by another process") { continue }
                    guard r.code == 0 else {
                        ledger.problem("kcar extract: exit \(r.code): \(r.err)")
                        continue
                    }
                    var view: [String: [String: [UInt8]]] = [:]
                    for (rel, bytes) in regularFiles(dir + "/" + out) {
                        let parts = rel.split(separator: "/").map(String.init)
                        view[parts[0], default: [:]][parts[1]] = bytes
                    }
                    try? FileManager.default.removeItem(atPath: dir + "/" + out)
                    for p in Self.check(
                        view, acked: acked, started: ledger.startedNow, last: &last, who: "kcar extract")
                    { ledger.problem(p) }
                    ledger.read()
                } catch {
                    ledger.problem("kcar extract: \(error)")
                }
            } while !ledger.isStopped
        }

        let finished = writing.wait(timeout: .now() + 60) == .success
        for p in children { p.waitUntilExit() }
        ledger.stop()
        XCTAssertEqual(reading.wait(timeout: .now() + 30), .success, "readers did not stop")
        XCTAssertTrue(finished, "writers did not finish within 60 s")
        for p in children { XCTAssertEqual(p.terminationStatus, 0) }
        XCTAssertEqual(ledger.problems, [])

        // Every acknowledged change is there: each writer's last commit.
        XCTAssertEqual(ledger.ackedNow, Dictionary(uniqueKeysWithValues: Self.writers.map { ($0, Self.commits) }))
        let vault = try Vault.open(path: path, secret: secret)
        var view: [String: [String: [UInt8]]] = [:]
        for item in vault.items { view[item.service!, default: [:]][item.account!] = try vault.read(item) }
        var last: [Int: Int] = [:]
        let final = Dictionary(uniqueKeysWithValues: Self.writers.map { ($0, Self.commits) })
        XCTAssertEqual(Self.check(view, acked: final, started: final, last: &last, who: "final"), [])
        XCTAssertEqual(view.count, batchDeletes(Self.commits) ? 0 : Self.writers.count)
        XCTAssertTrue(vault.verify().isIntact, "\(vault.verify().problems)")
        XCTAssertGreaterThanOrEqual(ledger.reads, 6)
        print(
            "concurrency: \(Self.writers.count) writers x \(Self.commits) commits, \(ledger.reads) whole reads, generation \(vault.generation)"
        )
    }
}
