// kcar-archive-bench's three sections (main.swift says what each measures).

import BenchSupport
import Foundation
import KeyedArchive

#if canImport(Glibc)
    import Glibc
#endif

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
