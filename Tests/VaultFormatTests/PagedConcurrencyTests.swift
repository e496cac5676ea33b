import Foundation
import TestSupport
import VaultFormat
import XCTest

/// Writers on one version 2 vault at once, each through its own `PagedVault` (threads of one process: the
/// same file lock as processes), committing batches (delta commits, and folds of 300 changes), while a
/// reader opens the vault again and again. Every view holds each writer's items from one commit, whole; at
/// the end every commit is there and the vault verifies.
final class PagedConcurrencyTests: PagedTestCase {
    final class Problems: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var list: [String] = []
        private var done = 0
        func add(_ p: String) { lock.withLock { if list.count < 20 { list.append(p) } } }
        func finish() { lock.withLock { done += 1 } }
        var writersDone: Int { lock.withLock { done } }
    }

    static let writers = 3, commits = 24

    /// Writer `w`'s commit `c`: its items `i0...` hold "w c i"; every 6th commit puts 300 of them (a fold).
    static func values(_ w: Int, _ c: Int) -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for i in 0..<(c % 6 == 0 ? 300 : 4) { out["i\(i)"] = Array("\(w) \(c) \(i)".utf8) }
        return out
    }

    func testWritersAndReadersAtOnce() throws {
        let path = dir + "/c.kcv"
        try PagedVault.create(
            path: path, group: "g", slots: [.keyFile(SecureBytes(copying: Recipes.keyFile))],
            schema: .servicesAndAccounts)
        let problems = Problems()
        let secret = self.secret
        DispatchQueue.concurrentPerform(iterations: Self.writers + 1) { n in
            do {
                if n < Self.writers {
                    let v = try PagedVault.open(path: path, secret: secret, mode: .write, writerID: UInt64(n + 1))
                    for c in 1...Self.commits {
                        try v.commit { tx in
                            let mine = try v.items(class: .genericPassword, keyValues: [.string("w\(n)")])
                            let want = Self.values(n, c)
                            for item in mine {
                                if let value = want[item.account!] {
                                    try tx.update(item, value: value)
                                } else {
                                    try tx.delete(item)
                                }
                            }
                            for (account, value) in want where !mine.contains(where: { $0.account == account }) {
                                _ = try tx.add(
                                    attributes: Attributes(["svce": .string("w\(n)"), "acct": .string(account)]),
                                    value: value)
                            }
                        }
                    }
                    problems.finish()
                } else {
                    while problems.writersDone < Self.writers {
                        let r = try PagedVault.open(path: path, secret: secret)
                        for w in 0..<Self.writers {
                            let mine = try r.items(class: .genericPassword, keyValues: [.string("w\(w)")])
                            guard !mine.isEmpty else { continue }
                            let seen = Set(
                                try mine.map {
                                    String(decoding: try r.read($0), as: UTF8.self).split(separator: " ")[1]
                                })
                            guard seen.count == 1, let c = Int(seen.first!), mine.count == Self.values(w, c).count
                            else {
                                problems.add(
                                    "writer \(w): items of several commits \(seen.sorted()) or a partial batch (\(mine.count))"
                                )
                                continue
                            }
                        }
                    }
                }
            } catch {
                problems.add("\(n): \(error)")
                if n < Self.writers { problems.finish() }
            }
        }
        XCTAssertEqual(problems.list, [])
        let r = try PagedVault.open(path: path, secret: secret)
        for w in 0..<Self.writers {
            let mine = try r.items(class: .genericPassword, keyValues: [.string("w\(w)")])
            XCTAssertEqual(
                Dictionary(uniqueKeysWithValues: try mine.map { ($0.account!, try r.read($0)) }),
                Self.values(w, Self.commits))
        }
        XCTAssertEqual(r.verify().problems, [])
        XCTAssertEqual(r.generation, UInt64(1 + Self.writers * Self.commits))
    }
}
