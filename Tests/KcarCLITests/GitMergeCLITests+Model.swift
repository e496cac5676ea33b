import Foundation
import XCTest

@testable import VaultFormat

/// Issue 11's test: three clones of a bare repository change one vault through the CLI for many rounds and pull
/// and push in a random order, and every merge git runs is checked against a model of the rules of SPEC.md
/// Part 4, V9 (computed from that merge's own three inputs, since the versions are kcar's to give).
extension GitMergeCLITests {
    /// Rounds of the model test: issue 11's 50 (78-100 s in a debug build on 2 busy cores); KCAR_GIT_MODEL_ROUNDS
    /// sets another count (more for a longer run by hand).
    static var modelRounds: Int { Int(ProcessInfo.processInfo.environment["KCAR_GIT_MODEL_ROUNDS"] ?? "") ?? 50 }

    /// In each round every clone, in a random order, may pull, then changes its vault with `kcar add` and
    /// `kcar delete` (new items, the same new name as other clones, value updates, relabels (a new mode, the
    /// value kept), the item every clone changes, deletions, re-adding a deleted name), commits (the round's
    /// first clone checks before that that `git diff` names exactly the items it changed), and then pulls,
    /// pushes, both, or neither. git merges the
    /// vault with `kcar merge` through a driver that keeps each merge's inputs, and each merge is checked
    /// against ``MergeModel``. At the end every clone holds the same states; each item holds the newest state
    /// any clone ever had (so no deletion is undone by an older copy), and every other live state it had is in
    /// its history (unless retention dropped it for newer ones).
    func testThreeClonesFollowTheMergeModel() throws {
        let started = Date()
        let bare = dir + "/origin.git"
        let log = dir + "/merges"
        _ = try git(["init", "-q", "--bare", bare], in: dir)
        try FileManager.default.createDirectory(atPath: log, withIntermediateDirectories: true)
        let driver = dir + "/driver.sh"
        try """
        n=$(cat "\(log)/next" 2>/dev/null || echo 0); echo $((n + 1)) > "\(log)/next"
        d="\(log)/$n"; mkdir "$d" && cp "$1" "$d/base" && cp "$2" "$d/ours" && cp "$3" "$d/theirs" || exit 99
        kcar merge -q "$1" "$2" "$3"; rc=$?
        cp "$2" "$d/result"; echo "$rc" > "$d/rc"; exit "$rc"

        """.write(toFile: driver, atomically: true, encoding: .utf8)
        let names = ["a", "b", "c"]
        let clones = names.map { dir + "/" + $0 }
        let states = names.map { dir + "/state-" + $0 }
        var start: [String: String] = [:]
        for i in 0..<10 { start["svc/k\(i)"] = "v\(i)" }
        let made = try makeVault("start.kcv", start)
        for (i, c) in clones.enumerated() {
            // Writer ids of the test's choosing (kcar keeps a made one there), so that a run repeats its ties.
            try FileManager.default.createDirectory(atPath: states[i] + "/kcar", withIntermediateDirectories: true)
            try String(format: "%016x\n", 0xA11CE + i).write(
                toFile: states[i] + "/kcar/writer-id", atomically: true, encoding: .utf8)
            _ = try git(["clone", "-q", bare, c], in: dir)
            try setUpClone(c)
            // kcar git setup's driver, with the inputs kept; each clone is a writer of its own (its own state folder).
            _ = try git(["config", "merge.kcar.driver", "sh \(driver) %O %A %B"], in: c)
            if i == 0 {
                try FileManager.default.copyItem(atPath: made, toPath: c + "/team.kcv")
                _ = try git(["add", "."], in: c)
                _ = try git(["commit", "-qm", "start"], in: c)
                _ = try git(["push", "-q", "origin", "HEAD"], in: c)
            }
        }

        var rng = SplitMix(seed: 0x5EED_0011)
        var stats = MergeStats()
        var seen = SeenStates()
        var deletedNames = Set<String>()
        var valueCounter = 0
        var ops: [String: Int] = [:]
        func vault(_ ci: Int) -> String { clones[ci] + "/team.kcv" }
        func snapshot(_ ci: Int) throws -> ModelSnapshot {
            let s = try ModelSnapshot.read(vault(ci), key: key)
            seen.record(s)
            XCTAssertNil(s.sharedPrimaryKey, "clone \(names[ci]) holds two live items under one primary key")
            return s
        }
        func pull(_ ci: Int) throws {
            try mustGit(["pull", "-q", "--no-rebase", "origin", "HEAD"], in: clones[ci], state: states[ci])
            try checkMerges(in: log, stats: &stats)
            _ = try snapshot(ci)
        }
        func push(_ ci: Int) throws -> Bool {
            try git(["push", "-q", "origin", "HEAD"], in: clones[ci], expect: nil, state: states[ci]).code == 0
        }
        func sync(_ ci: Int) throws {
            try pull(ci)
            XCTAssertTrue(try push(ci), "clone \(names[ci]) could not push after a pull")
        }

        for round in 0..<Self.modelRounds {
            var order = Array(clones.indices)
            for i in order.indices.reversed() { order.swapAt(i, rng.next(i + 1)) }
            for ci in order {
                if rng.next(3) == 0 { try pull(ci) }
                let now = try snapshot(ci)
                let live = now.liveNames
                let work = dir + "/work-" + names[ci]
                var set: [String: (value: String, mode: Int16)] = [:]
                var delete: [String] = []
                func value() -> String {
                    valueCounter += 1
                    return "\(names[ci])-r\(round)-\(valueCounter)"
                }
                func pick() -> String? {
                    let free = live.keys.filter { set[$0] == nil && !delete.contains($0) }.sorted()
                    return free.isEmpty ? nil : free[rng.next(free.count)]
                }
                for _ in 0..<(1 + rng.next(3)) {
                    switch rng.next(8) {
                    case 0:
                        set["new/r\(round)-\(names[ci])-\(set.count)"] = (value(), 0o600)
                        ops["add", default: 0] += 1
                    case 1:
                        set["shared/r\(round / 2)"] = (value(), 0o600)  // the same new name in several clones
                        ops["add or update a shared name", default: 0] += 1
                    case 2, 3:
                        guard let n = pick() else { continue }
                        set[n] = (value(), live[n]!.mode)
                        ops["update", default: 0] += 1
                    case 4:
                        guard let n = pick() else { continue }
                        let modes: [Int16] = [0o600, 0o640, 0o644, 0o604].filter { $0 != live[n]!.mode }
                        set[n] = (live[n]!.value, modes[rng.next(modes.count)])  // a relabel: the value kept
                        ops["relabel", default: 0] += 1
                    case 5:
                        guard set["svc/k0"] == nil, !delete.contains("svc/k0") else { continue }
                        set["svc/k0"] = (value(), 0o600)  // one item changed everywhere
                        ops["change svc/k0", default: 0] += 1
                    case 6:
                        guard let n = pick() else { continue }
                        delete.append(n)
                        ops["delete", default: 0] += 1
                    default:
                        let gone = deletedNames.subtracting(live.keys).subtracting(set.keys).sorted()
                        guard !gone.isEmpty else { continue }
                        set[gone[rng.next(gone.count)]] = (value(), 0o600)  // re-added after a deletion
                        ops["re-add", default: 0] += 1
                    }
                }
                delete.removeAll { set[$0] != nil }
                for (name, v) in set {
                    let file = work + "/" + name
                    try FileManager.default.createDirectory(
                        atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                    try v.value.write(toFile: file, atomically: false, encoding: .utf8)
                    try FileManager.default.setAttributes([.posixPermissions: v.mode], ofItemAtPath: file)
                }
                let env = ["KCAR_KEY_FILE": key, "XDG_STATE_HOME": states[ci]]
                if !set.isEmpty {
                    let r = try runProcess(
                        CLITests.binary, ["add", "team.kcv", "-C", work] + set.keys.sorted(), env: env, cwd: clones[ci])
                    XCTAssertEqual(r.code, 0, r.err)
                }
                if !delete.isEmpty {
                    let r = try runProcess(
                        CLITests.binary, ["delete", "team.kcv"] + delete.sorted(), env: env, cwd: clones[ci])
                    XCTAssertEqual(r.code, 0, r.err)
                    deletedNames.formUnion(delete)
                }
                let after = try snapshot(ci).liveNames
                for (name, v) in set { XCTAssertEqual(after[name]?.value, v.value, name) }
                for name in delete { XCTAssertNil(after[name], name) }
                // git diff, through kcar git textconv: exactly the items this clone changed (in the round's first
                // clone only: a diff runs kcar twice, and the test must stay near a minute and a half).
                if ci == order[0] {
                    let diff = try git(["diff", "--", "team.kcv"], in: clones[ci], state: states[ci]).out
                    let changed = Set(
                        diff.split(separator: "\n").filter { $0.hasPrefix("+genp ") || $0.hasPrefix("-genp ") }
                            .map { String($0.split(separator: " ")[1]) })
                    XCTAssertEqual(
                        changed, Set(set.keys).union(delete), "round \(round), clone \(names[ci]): git diff\n\(diff)")
                }
                if !set.isEmpty || !delete.isEmpty {
                    _ = try git(["commit", "-qam", "round \(round) in \(names[ci])"], in: clones[ci], state: states[ci])
                }
                switch rng.next(4) {
                case 0: break
                case 1: try pull(ci)
                case 2: if try !push(ci) { try sync(ci) }  // a push first: rejected when another clone pushed since
                default: try sync(ci)
                }
            }
        }
        for _ in 0..<2 { for ci in clones.indices { try sync(ci) } }

        let final = try clones.indices.map { try snapshot($0) }
        XCTAssertEqual(final[0].items, final[1].items, "clones a and b differ")
        XCTAssertEqual(final[0].items, final[2].items, "clones a and c differ")
        try seen.check(final: final[0])
        for c in clones { XCTAssertTrue(try keyed(["verify", c + "/team.kcv"]).output.contains("intact"), c) }
        // A change that lost a merge is shown by kcar history, as merged.
        let lostLive = final[0].kept.keys.sorted().first { id in
            final[0].items[id]?.attributes != nil && final[0].kept[id]!.contains { $0.why == 2 }
        }
        let lost = try XCTUnwrap(lostLive.flatMap(seen.name), "no live item lost a conflict")
        let h = try keyed(["history", clones[0] + "/team.kcv", lost])
        XCTAssertTrue(h.code == 0 && h.output.contains("merged"), h.output)
        // The rules were all exercised, not only fast-forwards.
        XCTAssertGreaterThan(stats.merges, Self.modelRounds / 2, "\(stats)")
        XCTAssertGreaterThan(stats.conflicts, 0, "\(stats)")
        XCTAssertGreaterThan(stats.sharedKeys, 0, "\(stats)")
        XCTAssertGreaterThan(stats.deletionsTaken, 0, "\(stats)")
        XCTAssertGreaterThan(final[0].items.values.filter { $0.attributes == nil }.count, 0, "no tombstone at the end")
        XCTAssertEqual(ops.count, 7, "not every kind of change was made: \(ops)")
        print(
            "model test: \(Self.modelRounds) rounds, \(ops.sorted { $0.key < $1.key }), \(stats), \(seen.items.count) items, "
                + "\(final[0].items.values.filter { $0.attributes == nil }.count) deleted, \(Int(Date().timeIntervalSince(started))) s"
        )
    }

    /// git in `cwd` as the clone whose writer id lives in `state`; a failure stops the test (what follows would
    /// only repeat it).
    func mustGit(_ args: [String], in cwd: String, state: String) throws {
        let r = try git(args, in: cwd, expect: nil, state: state)
        if r.code != 0 { throw ModelFailure("git \(args.joined(separator: " ")) in \(cwd): \(r.out)\(r.err)") }
    }

    /// Checks every merge the logging driver kept since the last call against ``MergeModel``, and removes them.
    func checkMerges(in log: String, stats: inout MergeStats) throws {
        let runs = try FileManager.default.contentsOfDirectory(atPath: log).compactMap(Int.init).sorted()
        for n in runs {
            let d = "\(log)/\(n)"
            let rc = try String(contentsOfFile: d + "/rc", encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            guard rc == "0" else { throw ModelFailure("merge \(n): kcar merge exited \(rc)") }
            let (b, o, t, r) = try (read(d + "/base"), read(d + "/ours"), read(d + "/theirs"), read(d + "/result"))
            let model = MergeModel(base: b, ours: o, theirs: t)
            stats.add(model)
            for (id, e) in model.items { XCTAssertEqual(r.items[id], e, "merge \(n): item \(id)") }
            let above = (o.items.values.map(\.version) + t.items.values.map(\.version)).max()
            for (id, loser) in model.replaced {
                let got = r.items[id]
                XCTAssertTrue(
                    got?.attributes == nil && got?.key == loser.key && got.map { $0.version > above! } == true,
                    "merge \(n): item \(id) gave way to another of its primary key but is \(String(describing: got))")
            }
            XCTAssertEqual(Set(r.items.keys), Set(model.items.keys).union(model.replaced.keys), "merge \(n): items")
            XCTAssertNil(r.sharedPrimaryKey, "merge \(n): two live items under one primary key")
            let kept =
                o.kept.flatMap { id, k in k.map { (id, $0.version) } }
                + t.kept.flatMap { id, k in k.map { (id, $0.version) } }
            for (id, v) in kept + model.losers {
                XCTAssertTrue(r.isKept(id, v), "merge \(n): \(id) version \(v) is not in history")
            }
            try FileManager.default.removeItem(atPath: d)
        }
    }

    func read(_ path: String) throws -> ModelSnapshot {
        // git hands the driver an empty BASE when the two sides have no common ancestor.
        if (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) == 0 { return ModelSnapshot() }
        return try ModelSnapshot.read(path, key: key)
    }
}

struct ModelFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// SplitMix64: the test's seeded choices.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next(_ n: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(n))
    }
}

/// One item's entry in the items tree: live (attributes and value) or a tombstone (neither).
struct ModelEntry: Equatable, CustomStringConvertible {
    var key: [UInt8]
    var version: Version
    var attributes: Attributes?
    var value: [UInt8]?

    /// The key without the item id: what two items with one primary key share (V9 step 3).
    var primaryKey: [UInt8] { Array(key.dropLast(16)) }

    var description: String {
        let what = attributes.map { a in
            "\(a.string(AttributeName.service) ?? "")/\(a.string(AttributeName.account) ?? "") = \(String(decoding: value ?? [], as: UTF8.self))"
        }
        return "\(what ?? "tombstone") at \(version.hlc).\(String(version.writer, radix: 16))"
    }
}

/// Every entry of a vault's items tree (tombstones too) and its history, read through the library.
struct ModelSnapshot {
    var items: [ItemID: ModelEntry] = [:]
    var kept: [ItemID: [(version: Version, why: UInt8)]] = [:]

    static func read(_ path: String, key: String) throws -> ModelSnapshot {
        let v = try V2Edit.open(path, key: key)
        var s = ModelSnapshot()
        try v.scan(.items) { e in
            let st = try ItemEntries.decode(e, schema: v.schema)
            s.items[st.id] = ModelEntry(
                key: st.key, version: st.version, attributes: st.item?.attributes,
                value: try st.item.map { try v.read($0) })
            return true
        }
        try v.forEachKeptVersion { k in
            s.kept[k.item.id, default: []].append((k.version, k.why))
            return true
        }
        return s
    }

    /// service/account -> value and mode of each live item.
    var liveNames: [String: (value: String, mode: Int16)] {
        var out: [String: (value: String, mode: Int16)] = [:]
        for e in items.values {
            guard let a = e.attributes, let value = e.value else { continue }
            var mode: Int16 = 0
            if case .integer(let m)? = a["@kcar.mode"] { mode = Int16(truncatingIfNeeded: m) }
            out["\(a.string(AttributeName.service) ?? "")/\(a.string(AttributeName.account) ?? "")"] = (
                String(decoding: value, as: UTF8.self), mode
            )
        }
        return out
    }

    /// A primary key two live items share, if any (a merge leaves one item per primary key).
    var sharedPrimaryKey: [UInt8]? {
        var keys = Set<[UInt8]>()
        for e in items.values where e.attributes != nil {
            if !keys.insert(e.primaryKey).inserted { return e.primaryKey }
        }
        return nil
    }

    /// Whether version `v` of item `id` is in the history, or was dropped by retention (V8: an item keeps its
    /// `keep` most recent earlier versions, and holds that many newer ones).
    func isKept(_ id: ItemID, _ v: Version, keep: Int = Retention().keep) -> Bool {
        let k = kept[id] ?? []
        return k.contains { $0.version == v } || (k.count >= keep && k.allSatisfy { $0.version > v })
    }
}

/// The merged state the rules of SPEC.md Part 4, V9 give for one merge, from its three inputs alone.
struct MergeModel {
    /// The expected entry of every item, but those in `replaced`.
    var items: [ItemID: ModelEntry] = [:]
    /// Live items that gave way to a newer one of the same primary key: tombstones in the result, at their own
    /// key, with a version of the merge's (above every version of OURS).
    var replaced: [ItemID: ModelEntry] = [:]
    /// Live versions that lost and must be in the result's history.
    var losers: [(ItemID, Version)] = []
    var conflicts = 0
    var deletionsTaken = 0

    init(base: ModelSnapshot, ours: ModelSnapshot, theirs: ModelSnapshot) {
        for id in Set(base.items.keys).union(ours.items.keys).union(theirs.items.keys) {
            let b = base.items[id]
            let o = ours.items[id]
            let t = theirs.items[id]
            // A change is a state other than BASE's and newer than it (an older one is no change); a side that
            // lacks the item altogether changed nothing.
            func changed(_ s: ModelEntry?) -> Bool {
                s.map { s in s != b && b.map { s.version > $0.version } ?? true } ?? false
            }
            var winner: ModelEntry?
            switch (changed(o), changed(t)) {
            case (true, true) where o != t:
                let (w, l) = o!.version > t!.version ? (o!, t!) : (t!, o!)
                winner = w
                conflicts += 1
                if l.attributes != nil { losers.append((id, l.version)) }
            case (false, true): winner = t
            default: winner = o ?? t
            }
            if winner?.attributes == nil, winner != nil, winner != o { deletionsTaken += 1 }
            items[id] = winner
        }
        var byKey: [[UInt8]: [ItemID]] = [:]
        for (id, e) in items where e.attributes != nil { byKey[e.primaryKey, default: []].append(id) }
        for ids in byKey.values where ids.count > 1 {
            let newest = ids.max { items[$0]!.version < items[$1]!.version }!
            for id in ids where id != newest {
                replaced[id] = items[id]
                losers.append((id, items[id]!.version))
                items[id] = nil
            }
        }
    }
}

/// What the checked merges did, so that the test can tell that every rule was exercised.
struct MergeStats: CustomStringConvertible {
    var merges = 0, conflicts = 0, sharedKeys = 0, deletionsTaken = 0

    mutating func add(_ m: MergeModel) {
        merges += 1
        conflicts += m.conflicts
        sharedKeys += m.replaced.count
        deletionsTaken += m.deletionsTaken
    }

    var description: String {
        "\(merges) merges checked, \(conflicts) conflicts, \(sharedKeys) items replaced by one of the same primary key, "
            + "\(deletionsTaken) deletions taken"
    }
}

/// Every state any clone's vault held (after each change and each pull), by item.
struct SeenStates {
    var items: [ItemID: [ModelEntry]] = [:]

    mutating func record(_ s: ModelSnapshot) {
        for (id, e) in s.items where !(items[id] ?? []).contains(e) { items[id, default: []].append(e) }
    }

    func name(of id: ItemID) -> String? {
        items[id]?.lazy.compactMap(\.attributes).first.map {
            "\($0.string(AttributeName.service) ?? "")/\($0.string(AttributeName.account) ?? "")"
        }
    }

    /// Each item ends as the newest state it ever had (newer wins, and nothing older brings a deletion back),
    /// and every other live state it had is in its history.
    func check(final: ModelSnapshot, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(Set(final.items.keys), Set(items.keys), "items seen but gone", file: file, line: line)
        for (id, states) in items {
            let newest = states.max { $0.version < $1.version }!
            XCTAssertEqual(final.items[id], newest, "item \(id) is not its newest state", file: file, line: line)
            for s in states where s.attributes != nil && s != newest {
                XCTAssertTrue(
                    final.isKept(id, s.version), "item \(id): a live version \(s.version) was lost", file: file,
                    line: line)
            }
        }
    }
}
