// kcar-archive-bench: the keyed archiver (KeyedArchive) against Foundation's coders, in one process (issue 3).
//
//   kcar-archive-bench [--runs N] [--records N] [--nska-records N] [--nska-budget S] [--import-records N]
//                      [--only 1,2,3] [--seed N]
//
//   1. N (10,000) Codable records of mixed fields: ArchiveEncoder/ArchiveDecoder against JSONEncoder/JSONDecoder
//      (default settings) for time; archive size against PropertyListEncoder (binary) and JSONEncoder.
//   2. M (1,000) such records as NSDictionary values in an NSArray: NSKeyedArchiver.archivedData(withRootObject:
//      requiringSecureCoding: false) against ArchiveEncoder on the same records and NSKeyedArchive.exportValue on
//      the equivalent ArchiveValue. Foundation's archiver is quadratic on Linux: it is always also measured at
//      M/4 and M/2 for the trend, and when one run at M is predicted (or found) to take longer than the budget
//      (--nska-budget, 90 s), M is run once only, or not at all if the prediction is over 4x the budget.
//   3. An NSKeyedArchiver archive of K (10,000) dictionaries made by NSKeyedArchive.exportValue, checked with
//      NSKeyedUnarchiver: NSKeyedArchive.importValue(from:) against NSKeyedUnarchiver.unarchiveTopLevelObjectWithData
//      and unarchivedObject(ofClasses:from:).
//
// Every timing is the median of --runs runs (default 7) after one untimed warm-up run, on CLOCK_MONOTONIC.
// Every figure is printed as `name value unit` (for scripts: awk '$1 == "name" { print $2 }'); lines starting
// with `#` are comments; a table with ratios and the issue's targets closes the output.

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

// MARK: - 1. Codable records: ArchiveEncoder/Decoder vs JSONEncoder/Decoder, sizes vs binary plist and JSON

func section1(_ o: Options) throws {
    let n = o.records
    note("1. \(n) Codable records (String, Int, Double, Bool, Date, 16-64 B Data, 1-5 String tags), seed \(o.seed)")
    let records = makeRecords(n, seed: o.seed)
    let kEncoder = ArchiveEncoder()
    let kDecoder = ArchiveDecoder()
    let jEncoder = JSONEncoder()
    let jDecoder = JSONDecoder()
    let pEncoder = PropertyListEncoder()
    pEncoder.outputFormat = .binary

    let archive = try kEncoder.encode(records)
    let json = try jEncoder.encode(records)
    let plist = try pEncoder.encode(records)
    guard try kDecoder.decode([Record].self, from: archive) == records else { fail("kcar archive does not round-trip") }
    guard try jDecoder.decode([Record].self, from: json) == records else { fail("JSON does not round-trip") }

    let kEnc = try measure(o.runs) { try kEncoder.encode(records).count }
    emit("s1_kcar_encode_median_ms", kEnc, "ms")
    let jEnc = try measure(o.runs) { try jEncoder.encode(records).count }
    emit("s1_json_encode_median_ms", jEnc, "ms")
    let kDec = try measure(o.runs) { try kDecoder.decode([Record].self, from: archive).count }
    emit("s1_kcar_decode_median_ms", kDec, "ms")
    let jDec = try measure(o.runs) { try jDecoder.decode([Record].self, from: json).count }
    emit("s1_json_decode_median_ms", jDec, "ms")
    let pEnc = try measure(o.runs) { try pEncoder.encode(records).count }
    emit("s1_plist_encode_median_ms", pEnc, "ms")
    let pDec = try measure(o.runs) { try PropertyListDecoder().decode([Record].self, from: plist).count }
    emit("s1_plist_decode_median_ms", pDec, "ms")
    emit("s1_kcar_bytes", Double(archive.count), "bytes", decimals: 0)
    emit("s1_plist_binary_bytes", Double(plist.count), "bytes", decimals: 0)
    emit("s1_json_bytes", Double(json.count), "bytes", decimals: 0)

    // Where kcar's time goes, by phase (public API): Codable <-> value tree, value tree <-> bytes.
    let tree = try kEncoder.encodeToValue(records)
    let encTree = try measure(o.runs) { size(try kEncoder.encodeToValue(records)) }
    let encBytes = try measure(o.runs) { try ArchiveSerialization.bytes(from: tree, options: .deterministic).count }
    let decTree = try measure(o.runs) { size(try ArchiveSerialization.value(from: archive)) }
    let decValue = try measure(o.runs) { try kDecoder.decode([Record].self, fromValue: tree).count }
    emit("s1_kcar_encode_phase_codable_to_tree_ms", encTree, "ms")
    emit("s1_kcar_encode_phase_tree_to_bytes_ms", encBytes, "ms")
    emit("s1_kcar_decode_phase_bytes_to_tree_ms", decTree, "ms")
    emit("s1_kcar_decode_phase_tree_to_codable_ms", decValue, "ms")
    note("  (phases: they locate the time; the totals above are what the targets use)")

    let s = "1"
    timeRow(
        s, "encode \(n) records", kcar: kEnc, peer: "JSONEncoder", jEnc, need: 1, targetName: "1 encode ≥ JSONEncoder")
    timeRow(
        s, "decode \(n) records", kcar: kDec, peer: "JSONDecoder", jDec, need: 1, targetName: "1 decode ≥ JSONDecoder")
    timeRow(s, "encode \(n) records", kcar: kEnc, peer: "PropertyListEncoder (binary)", pEnc)
    timeRow(s, "decode \(n) records", kcar: kDec, peer: "PropertyListDecoder", pDec)
    sizeRow(
        s, "archive size", kcar: archive.count, peer: "PropertyListEncoder (binary)", plist.count,
        mustNotExceed: true, targetName: "1 size ≤ binary plist")
    sizeRow(s, "archive size", kcar: archive.count, peer: "JSONEncoder", json.count)
    rows.append(
        Row(
            section: s, figure: "  encode: Codable -> ArchiveValue", kcar: fmt(encTree) + " ms", peer: "",
            peerValue: "",
            ratio: "", target: "", met: ""))
    rows.append(
        Row(
            section: s, figure: "  encode: ArchiveValue -> bytes", kcar: fmt(encBytes) + " ms", peer: "", peerValue: "",
            ratio: "", target: "", met: ""))
    rows.append(
        Row(
            section: s, figure: "  decode: bytes -> ArchiveValue", kcar: fmt(decTree) + " ms", peer: "", peerValue: "",
            ratio: "", target: "", met: ""))
    rows.append(
        Row(
            section: s, figure: "  decode: ArchiveValue -> Codable", kcar: fmt(decValue) + " ms", peer: "",
            peerValue: "",
            ratio: "", target: "", met: ""))
}

/// The tree without shared boxes (each box replaced by its contents).
func stripShared(_ v: ArchiveValue) -> ArchiveValue {
    switch v.unshared {
    case .array(let a): return .array(a.map(stripShared))
    case .dictionary(let d): return .dictionary(d.mapValues(stripShared))
    case let other: return other
    }
}

/// Where two value trees first differ (record index and field), for the interop check's warning.
func firstDifference(_ got: ArchiveValue, _ want: ArchiveValue) -> String {
    guard case .array(let g) = got, case .array(let w) = want else { return "root is \(got.kind), not an array" }
    guard g.count == w.count else { return "\(g.count) records, not \(w.count)" }
    for (i, (a, b)) in zip(g, w).enumerated() where a != b {
        guard case .dictionary(let da) = a, case .dictionary(let db) = b else { return "record \(i) is \(a.kind)" }
        for key in db.keys.sorted() where da[key] != db[key] {
            return "record \(i) field \(key): \(da[key].map { "\($0)" } ?? "missing") vs \(db[key]!)"
        }
        return "record \(i): keys \(da.keys.sorted())"
    }
    return "no difference found"
}

// MARK: - 2. NSKeyedArchiver vs kcar on NSDictionary-shaped records

func section2(_ o: Options) throws {
    let m = o.nskaRecords
    note("2. \(m) records as NSDictionary values: NSKeyedArchiver vs ArchiveEncoder and NSKeyedArchive.exportValue")
    let records = makeRecords(m, seed: o.seed)
    let kEncoder = ArchiveEncoder()

    // kcar first (fast): full runs at every size.
    var sizes = [max(1, m / 4), max(1, m / 2), m]
    sizes = Array(Set(sizes)).sorted()
    var kcarEnc: [Int: Double] = [:]
    var kcarExp: [Int: Double] = [:]
    var kcarBytes: [Int: (Int, Int)] = [:]
    for n in sizes {
        let slice = Array(records[0..<n])
        let value = ArchiveValue.array(slice.map(archiveValue))
        kcarEnc[n] = try measure(o.runs) { try kEncoder.encode(slice).count }
        kcarExp[n] = try measure(o.runs) { try NSKeyedArchive.exportValue(value).count }
        kcarBytes[n] = (try kEncoder.encode(slice).count, try NSKeyedArchive.exportValue(value).count)
        emit("s2_kcar_encode_\(n)_median_ms", kcarEnc[n]!, "ms")
        emit("s2_kcar_export_\(n)_median_ms", kcarExp[n]!, "ms")
    }

    // Foundation: smallest size first, each size's first run predicts the next; runs are capped by the budget.
    var nska: [Int: Double] = [:]
    var nskaRuns: [Int: Int] = [:]
    var nskaBytes: [Int: Int] = [:]
    var capped: [String] = []
    var last: (n: Int, ms: Double)?
    for n in sizes {
        let root = foundationArray(records[0..<n])
        if let last {
            // Quadratic prediction from the previous size.
            let predicted = last.ms * Double(n * n) / Double(last.n * last.n) / 1000
            note("  NSKeyedArchiver at \(n): predicted \(fmt(predicted, 1)) s per run (quadratic from \(last.n))")
            if predicted > 4 * o.nskaBudget {
                capped.append(
                    "\(n) records skipped (predicted \(fmt(predicted, 0)) s > 4 x budget \(fmt(o.nskaBudget, 0)) s)")
                note("  skipped: \(capped.last!)")
                continue
            }
        }
        // The smallest size's first run is the process's warm-up for Foundation's archiver and is not counted.
        // At the bigger sizes (seconds per run, where a warm-up changes nothing measurable) the first run
        // counts, and is followed by as many runs as fit the budget (total time at that size), up to --runs.
        let warm = last == nil
        var t = now()
        let data = try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: false)
        let first = (now() - t) * 1000
        nskaBytes[n] = data.count
        var samples: [Double] = warm ? [] : [first]
        let fit = max(1, Int(o.nskaBudget * 1000 / max(first, 0.001)))
        let want = min(o.runs, fit)
        while samples.count < want {
            t = now()
            sink &+= try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: false).count
            samples.append((now() - t) * 1000)
        }
        if samples.isEmpty { samples = [first] }
        if samples.count < o.runs {
            capped.append(
                "\(n) records: \(samples.count) of \(o.runs) runs (\(fmt(first / 1000, 1)) s per run, "
                    + "budget \(fmt(o.nskaBudget, 0)) s per size)")
            note("  capped: \(capped.last!)")
        }
        nska[n] = median(samples)
        nskaRuns[n] = samples.count
        last = (n, nska[n]!)
        emit("s2_nska_archive_\(n)_median_ms", nska[n]!, "ms")
        emit("s2_nska_archive_\(n)_runs", Double(samples.count), "runs", decimals: 0)
        emit("s2_nska_archive_\(n)_bytes", Double(data.count), "bytes", decimals: 0)
        // Interop check: kcar imports what Foundation wrote.
        let imported = try NSKeyedArchive.importValue(from: data)
        let expected = ArchiveValue.array(records[0..<n].map(archiveValue))
        // NSKeyedArchiver on Linux writes equal objects once (two records with the same tags share one NSArray),
        // and kcar imports an object referenced twice as a shared box: compare without the boxes.
        if stripShared(imported) != expected {
            note(
                "  WARNING: kcar's import of NSKeyedArchiver's archive of \(n) records differs from the records: "
                    + firstDifference(imported, expected))
        }
    }
    // Trend: exponent of n between consecutive sizes.
    let measured = sizes.filter { nska[$0] != nil }
    for (a, b) in zip(measured, measured.dropFirst()) {
        let k = log(nska[b]! / nska[a]!) / log(Double(b) / Double(a))
        emit("s2_nska_exponent_\(a)_to_\(b)", k, "(time ~ n^k)")
    }
    if let a = measured.first, let b = measured.last, a != b {
        let k = log(nska[b]! / nska[a]!) / log(Double(b) / Double(a))
        note("  NSKeyedArchiver time grows as n^\(fmt(k, 2)) from \(a) to \(b) records")
    }
    for n in sizes {
        let s = "2"
        let need: Double? = n == m ? 30 : nil
        if let f = nska[n] {
            timeRow(
                s, "archive \(n) dicts: ArchiveEncoder", kcar: kcarEnc[n]!,
                peer: "NSKeyedArchiver (\(nskaRuns[n]!) runs)", f,
                need: need, targetName: "2 ArchiveEncoder ≥ 30x NSKeyedArchiver at \(m)")
            timeRow(
                s, "archive \(n) dicts: NSKeyedArchive.exportValue", kcar: kcarExp[n]!,
                peer: "NSKeyedArchiver (\(nskaRuns[n]!) runs)", f,
                need: need, targetName: "2 exportValue ≥ 30x NSKeyedArchiver at \(m)")
            sizeRow(s, "\(n) dicts: ArchiveEncoder size", kcar: kcarBytes[n]!.0, peer: "NSKeyedArchiver", nskaBytes[n]!)
            sizeRow(s, "\(n) dicts: exportValue size", kcar: kcarBytes[n]!.1, peer: "NSKeyedArchiver", nskaBytes[n]!)
        } else {
            rows.append(
                Row(
                    section: s, figure: "archive \(n) dicts: ArchiveEncoder", kcar: fmt(kcarEnc[n]!) + " ms",
                    peer: "NSKeyedArchiver (skipped)", peerValue: "-", ratio: "-", target: need == nil ? "" : "≥ 30x",
                    met: need == nil ? "" : "n/a"))
        }
    }
    for c in capped { note("  capped run: \(c)") }
}

// MARK: - 3. Importing an NSKeyedArchiver archive: NSKeyedArchive.importValue vs NSKeyedUnarchiver

func section3(_ o: Options) throws {
    let k = o.importRecords
    note("3. import an NSKeyedArchiver archive of \(k) dictionaries (made by NSKeyedArchive.exportValue)")
    let records = makeRecords(k, seed: o.seed)
    let value = ArchiveValue.array(records.map(archiveValue))
    let archive = Data(try NSKeyedArchive.exportValue(value))
    emit("s3_archive_bytes", Double(archive.count), "bytes", decimals: 0)

    // Foundation must read it, and read the same records.
    let classes: [AnyClass] = [NSArray.self, NSDictionary.self, NSString.self, NSNumber.self, NSDate.self, NSData.self]
    // (in a scope of its own: Foundation's objects are released before anything is timed)
    do {
        guard let any = try NSKeyedUnarchiver.unarchivedObject(ofClasses: classes, from: archive) else {
            fail("NSKeyedUnarchiver returned nil for kcar's archive")
        }
        guard let array = any as? NSArray, array.count == k else {
            fail("NSKeyedUnarchiver did not return an array of \(k)")
        }
        for i in [0, k / 2, k - 1] {
            guard let d = array[i] as? NSDictionary,
                (d["name"] as? NSString).map({ String($0) }) == records[i].name,
                (d["id"] as? NSNumber)?.intValue == records[i].id,
                (d["score"] as? NSNumber)?.doubleValue == records[i].score,
                (d["active"] as? NSNumber)?.boolValue == records[i].active,
                (d["created"] as? NSDate)?.timeIntervalSinceReferenceDate
                    == records[i].created.timeIntervalSinceReferenceDate,
                (d["payload"] as? NSData).map({ Data($0) }) == records[i].payload,
                (d["tags"] as? NSArray)?.count == records[i].tags.count
            else { fail("NSKeyedUnarchiver read record \(i) differently") }
        }
        note(
            "  NSKeyedUnarchiver reads it: \(array.count) dictionaries, records 0, \(k / 2), \(k - 1) checked field by field"
        )
    }
    guard try NSKeyedArchive.importValue(from: archive) == value else { fail("kcar's import does not round-trip") }

    let bytes = [UInt8](archive)
    let kImport = try measure(o.runs) { size(try NSKeyedArchive.importValue(from: archive)) }
    emit("s3_kcar_import_median_ms", kImport, "ms")
    let kImportBytes = try measure(o.runs) { size(try NSKeyedArchive.importValue(from: bytes)) }
    emit("s3_kcar_import_bytes_median_ms", kImportBytes, "ms")
    let plistOnly = try measure(o.runs) { plistSize(try NSKeyedArchive.propertyList(from: bytes)) }
    emit("s3_kcar_phase_bplist_read_ms", plistOnly, "ms")
    let plist = try NSKeyedArchive.propertyList(from: bytes)
    let graphOnly = try measure(o.runs) { size(try NSKeyedArchive.importValue(from: plist)) }
    emit("s3_kcar_phase_keyed_graph_ms", graphOnly, "ms")
    let fTop = try measure(o.runs) {
        ((try NSKeyedUnarchiver.unarchiveTopLevelObjectWithData(archive)) as? NSArray)?.count ?? 0
    }
    emit("s3_nsku_top_level_median_ms", fTop, "ms")
    let fClasses = try measure(o.runs) {
        ((try NSKeyedUnarchiver.unarchivedObject(ofClasses: classes, from: archive)) as? NSArray)?.count ?? 0
    }
    emit("s3_nsku_of_classes_median_ms", fClasses, "ms")

    let s = "3"
    timeRow(
        s, "import \(k) dicts", kcar: kImport, peer: "NSKeyedUnarchiver.unarchiveTopLevelObjectWithData", fTop,
        need: 5, targetName: "3 importValue ≥ 5x unarchiveTopLevelObjectWithData")
    timeRow(
        s, "import \(k) dicts", kcar: kImport, peer: "NSKeyedUnarchiver.unarchivedObject(ofClasses:)", fClasses,
        need: 5, targetName: "3 importValue ≥ 5x unarchivedObject(ofClasses:from:)")
    rows.append(
        Row(
            section: s, figure: "  import: bplist -> PropertyList", kcar: fmt(plistOnly) + " ms", peer: "",
            peerValue: "",
            ratio: "", target: "", met: ""))
    rows.append(
        Row(
            section: s, figure: "  import: PropertyList -> ArchiveValue", kcar: fmt(graphOnly) + " ms", peer: "",
            peerValue: "", ratio: "", target: "", met: ""))
}

// MARK: - Main

/// Loops one kcar operation for `perf record -g`: section 1's encode or decode, or section 3's import.
func profileLoop(_ o: Options) throws -> Never {
    let records = makeRecords(o.profile == "import" ? o.importRecords : o.records, seed: o.seed)
    let body: () throws -> Int
    switch o.profile {
    case "encode":
        body = { try ArchiveEncoder().encode(records).count }
    case "decode":
        let archive = try ArchiveEncoder().encode(records)
        body = { try ArchiveDecoder().decode([Record].self, from: archive).count }
    default:
        let archive = Data(try NSKeyedArchive.exportValue(.array(records.map(archiveValue))))
        body = { size(try NSKeyedArchive.importValue(from: archive)) }
    }
    let start = now()
    var n = 0
    while now() - start < o.profileSeconds {
        sink &+= try body()
        n += 1
    }
    note("profile \(o.profile!): \(n) runs, \(fmt((now() - start) * 1000 / Double(n), 2)) ms each")
    exit(0)
}

let options = parseOptions()
if options.profile != nil {
    do { try profileLoop(options) } catch { fail("\(error)") }
}
note("kcar-archive-bench: runs \(options.runs) (median, after 1 warm-up), CLOCK_MONOTONIC")
do {
    if options.only.contains(1) { try section1(options) }
    if options.only.contains(3) { try section3(options) }
    if options.only.contains(2) { try section2(options) }
} catch {
    fail("\(error)")
}
printTable()
if sink == 42 { note("") }  // keeps sink observable
