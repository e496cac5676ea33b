// kcar-archive-bench: the keyed archiver (KeyedArchive) against Foundation's coders, in one process.
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
// with `#` are comments; a table with ratios and the targets closes the output.

import BenchSupport
import Foundation
import KeyedArchive

#if canImport(Glibc)
    import Glibc
#endif

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
