// kcar-archive-bench's options, timing, the records it measures and the table it prints (main.swift says what
// the benchmark measures).

import BenchSupport
import Foundation
import KeyedArchive

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Options

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("kcar-archive-bench: \(message)\n".utf8))
    exit(2)
}

struct Options {
    var runs = 7
    var records = 10_000
    var nskaRecords = 1_000
    var nskaBudget = 90.0
    var importRecords = 10_000
    var only: Set<Int> = [1, 2, 3]
    var seed: UInt64 = 0x6B63_6172_0003
    /// Loop one kcar operation only (for `perf record`): encode, decode, import.
    var profile: String?
    var profileSeconds = 10.0
}

func parseOptions() -> Options {
    var o = Options()
    var args = CommandLine.arguments.dropFirst()
    func next(_ flag: String) -> String {
        guard let v = args.popFirst() else { fail("\(flag) needs a value") }
        return v
    }
    func int(_ flag: String) -> Int {
        guard let v = Int(next(flag)), v > 0 else { fail("\(flag) needs a positive integer") }
        return v
    }
    while let a = args.popFirst() {
        switch a {
        case "--runs": o.runs = int(a)
        case "--records": o.records = int(a)
        case "--nska-records": o.nskaRecords = int(a)
        case "--nska-budget":
            guard let v = Double(next(a)), v > 0 else { fail("--nska-budget needs seconds") }
            o.nskaBudget = v
        case "--import-records": o.importRecords = int(a)
        case "--seed": o.seed = UInt64(int(a))
        case "--profile":
            o.profile = next(a)
            guard ["encode", "decode", "import"].contains(o.profile!) else {
                fail("--profile takes encode, decode or import")
            }
        case "--profile-seconds":
            guard let v = Double(next(a)), v > 0 else { fail("--profile-seconds needs seconds") }
            o.profileSeconds = v
        case "--only":
            o.only = Set(next(a).split(separator: ",").compactMap { Int($0) })
            guard !o.only.isEmpty, o.only.isSubset(of: [1, 2, 3]) else { fail("--only takes a list of 1, 2, 3") }
        case "-h", "--help":
            print("usage: kcar-archive-bench [--runs N] [--records N] [--nska-records N] [--nska-budget S]")
            print("                          [--import-records N] [--only 1,2,3] [--seed N]")
            print("       kcar-archive-bench --profile encode|decode|import [--profile-seconds S] [--records N]")
            print("                          [--import-records N]   (loops one kcar operation, for perf record)")
            exit(0)
        default: fail("unknown option \(a) (see --help)")
        }
    }
    return o
}

// MARK: - Timing

/// Monotonic clock, in seconds.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Keeps results alive so the optimizer cannot drop the work that made them.
nonisolated(unsafe) var sink = 0

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// A cheap use of a result: the top-level count.
func size(_ v: ArchiveValue) -> Int { if case .array(let a) = v { a.count } else { 1 } }
func plistSize(_ p: PropertyList) -> Int { if case .dictionary(let d) = p { d.count } else { 1 } }

/// Median milliseconds of `runs` runs of `body` after `warmup` untimed runs.
func measure(_ runs: Int, warmup: Int = 1, _ body: () throws -> Int) rethrows -> Double {
    for _ in 0..<warmup { sink &+= try body() }
    var samples: [Double] = []
    for _ in 0..<runs {
        let t = now()
        sink &+= try body()
        samples.append((now() - t) * 1000)
    }
    return median(samples)
}

func fmt(_ x: Double, _ decimals: Int = 2) -> String {
    guard x.isFinite else { return "-" }
    return String(format: "%.\(decimals)f", x)
}

func emit(_ name: String, _ value: Double, _ unit: String, decimals: Int = 3) {
    let pad = name.count < 40 ? String(repeating: " ", count: 40 - name.count) : " "
    print("\(name)\(pad)\(fmt(value, decimals)) \(unit)")
    fflush(nil)
}

func note(_ text: String) {
    print("# \(text)")
    fflush(nil)
}

// MARK: - Records

struct Record: Codable, Equatable {
    var id: Int
    var name: String
    var score: Double
    var active: Bool
    var created: Date
    var payload: Data
    var tags: [String]
}

let words = [
    "amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel",
    "lumen", "maple", "nimbus", "onyx", "pebble", "quartz", "raven", "sierra", "tundra", "umber", "violet",
    "willow", "xenon", "yarrow", "zephyr", "alpine", "basalt", "cedar", "dune", "estuary", "falcon"
]
let tagVocabulary = [
    "urgent", "archived", "draft", "review", "shared", "personal", "work", "finance", "travel", "health",
    "photo", "invoice", "receipt", "contract", "backup", "todo", "done", "idea", "family", "project-x"
]

func makeRecords(_ n: Int, seed: UInt64) -> [Record] {
    var rng = SplitMix64(state: seed)
    var out: [Record] = []
    out.reserveCapacity(n)
    for i in 0..<n {
        let wordCount = Int.random(in: 2...3, using: &rng)
        let name = (0..<wordCount).map { _ in words.randomElement(using: &rng)! }.joined(separator: " ") + " \(i)"
        let payloadCount = Int.random(in: 16...64, using: &rng)
        let payload = Data((0..<payloadCount).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let tags = (0..<Int.random(in: 1...5, using: &rng)).map { _ in tagVocabulary.randomElement(using: &rng)! }
        out.append(
            Record(
                id: Int.random(in: -1_000_000...1_000_000_000_000, using: &rng),
                name: name,
                score: Double.random(in: 0..<1000, using: &rng),
                active: Bool.random(using: &rng),
                // Whole milliseconds, like most stored dates.
                created: Date(
                    timeIntervalSinceReferenceDate: Double(Int.random(in: 0...800_000_000_000, using: &rng)) / 1000),
                payload: payload,
                tags: tags
            ))
    }
    return out
}

/// The record as kcar's value tree: the tree ArchiveEncoder makes of it (a dictionary of the fields).
func archiveValue(_ r: Record) -> ArchiveValue {
    .dictionary([
        "id": .int(Int64(r.id)), "name": .string(r.name), "score": .double(r.score), "active": .bool(r.active),
        "created": .date(r.created), "payload": .data(r.payload), "tags": .array(r.tags.map { .string($0) })
    ])
}

/// The record as Foundation objects: an NSDictionary of NSNumber, NSString, NSDate, NSData and an NSArray.
func foundationDictionary(_ r: Record) -> NSDictionary {
    let d = NSMutableDictionary()
    d.setObject(NSNumber(value: r.id), forKey: "id" as NSString)
    d.setObject(NSString(string: r.name), forKey: "name" as NSString)
    d.setObject(NSNumber(value: r.score), forKey: "score" as NSString)
    d.setObject(NSNumber(value: r.active), forKey: "active" as NSString)
    d.setObject(
        NSDate(timeIntervalSinceReferenceDate: r.created.timeIntervalSinceReferenceDate), forKey: "created" as NSString)
    d.setObject(NSData(data: r.payload), forKey: "payload" as NSString)
    d.setObject(NSArray(array: r.tags.map { NSString(string: $0) }), forKey: "tags" as NSString)
    return d
}

func foundationArray(_ records: ArraySlice<Record>) -> NSArray { NSArray(array: records.map(foundationDictionary)) }

// MARK: - Results

struct Row {
    var section: String
    var figure: String
    var kcar: String
    var peer: String
    var peerValue: String
    var ratio: String
    var target: String
    var met: String
}

nonisolated(unsafe) var rows: [Row] = []
nonisolated(unsafe) var verdicts: [(String, Bool)] = []

/// A timing row: ratio = peer / kcar (how many times faster kcar is).
func timeRow(
    _ section: String, _ figure: String, kcar: Double, peer: String, _ peerMs: Double,
    need: Double? = nil, targetName: String? = nil
) {
    let ratio = peerMs / kcar
    var met = ""
    var target = ""
    if let need {
        target = "≥ \(fmt(need, need < 10 ? 1 : 0))x"
        let ok = ratio >= need
        met = ok ? "yes" : "NO"
        verdicts.append((targetName ?? "\(section) \(figure) vs \(peer)", ok))
    }
    rows.append(
        Row(
            section: section, figure: figure, kcar: fmt(kcar, 2) + " ms", peer: peer,
            peerValue: fmt(peerMs, 2) + " ms", ratio: fmt(ratio, 2) + "x faster", target: target, met: met))
}

/// A size row: ratio = kcar / peer (below 1: kcar is smaller).
func sizeRow(
    _ section: String, _ figure: String, kcar: Int, peer: String, _ peerBytes: Int, mustNotExceed: Bool = false,
    targetName: String? = nil
) {
    let ratio = Double(kcar) / Double(peerBytes)
    var met = ""
    var target = ""
    if mustNotExceed {
        target = "≤ 1.00x size"
        let ok = kcar <= peerBytes
        met = ok ? "yes" : "NO"
        verdicts.append((targetName ?? "\(section) \(figure) vs \(peer)", ok))
    }
    rows.append(
        Row(
            section: section, figure: figure, kcar: "\(kcar) B", peer: peer, peerValue: "\(peerBytes) B",
            ratio: fmt(ratio, 3) + "x size", target: target, met: met))
}

func printTable() {
    let header = Row(
        section: "§", figure: "figure", kcar: "kcar", peer: "peer", peerValue: "peer value",
        ratio: "ratio", target: "target", met: "met")
    let all = [header] + rows
    func w(_ f: (Row) -> String) -> Int { all.map { f($0).count }.max() ?? 0 }
    let widths = [w(\.section), w(\.figure), w(\.kcar), w(\.peer), w(\.peerValue), w(\.ratio), w(\.target), w(\.met)]
    func line(_ r: Row) -> String {
        let cells = [r.section, r.figure, r.kcar, r.peer, r.peerValue, r.ratio, r.target, r.met]
        return "| "
            + zip(cells, widths).enumerated().map { i, cw in
                let (c, width) = cw
                let pad = String(repeating: " ", count: max(0, width - c.count))
                return (i >= 2 && i != 3 && i != 6 && i != 7) ? pad + c : c + pad
            }.joined(separator: " | ") + " |"
    }
    print("")
    print(line(header))
    print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|")
    let ordered = rows.enumerated().sorted { ($0.element.section, $0.offset) < ($1.element.section, $1.offset) }.map(
        \.element)
    for r in ordered { print(line(r)) }
    print("")
    for (name, ok) in verdicts.sorted(by: { $0.0 < $1.0 }) { print("target \(ok ? "met   " : "MISSED"): \(name)") }
    fflush(nil)
}
