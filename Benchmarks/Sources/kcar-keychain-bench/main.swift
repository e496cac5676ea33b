// kcar-keychain-bench: in-process timings of the Keychain library, for scripts/bench/keychain-bench.sh.
//
//   kcar-keychain-bench [--items N] [--bulk-runs R] [--single-runs R] [--query-runs R] [--sizes A,B,C]
//                       [--work DIR] [--keep DIR] [--seed S]
//
// Every figure is printed on its own line as `name value unit` (`#` lines are comments), so that scripts
// can pick it with `awk '$1 == "name" { print $2 }'`.
//
// The items: item i (0 <= i < N) is a generic password with service `bench.service.<i / 100>`, account
// `account-<i>`, user attribute `@ref` = `ref-<i>` and a 32-byte random value. The script makes the same
// items for the peers and asks for the same one.

import BenchSupport
import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Helpers

func fail(_ message: String) -> Never {
    let line = "kcar-keychain-bench: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

let usageText = """
    usage: kcar-keychain-bench [options]
      --items N          items of the big group (default 10000)
      --bulk-runs R      runs of "N adds in one transaction", each into a fresh group (default 5)
      --single-runs R    single durable adds timed per group size (default 50, after one warm-up add)
      --query-runs R     runs of each in-process find/get (default 200)
      --sizes LIST       group sizes for the single adds (default 100,1000,N)
      --work DIR         scratch directory (made, then removed; default: a new directory in $TMPDIR or /tmp).
                         Put it on the file system to be measured: fsync costs differ (tmpfs has none).
      --keep DIR         leave a keychain directory at DIR (must not exist) with group `bench` of N items,
                         made by one transaction, for whole-process timings
      --seed S           seed of the values (default 1)
      --only LIST        sections to run: bulk,single,query (default all; --keep needs query)
    """

func emit(_ name: String, _ s: Summary, mean: Bool = false) {
    emit(name + "_median_ms", s.median, "ms")
    emit(name + "_min_ms", s.min, "ms")
    if mean {
        emit(name + "_mean_ms", s.mean, "ms")
        emit(name + "_max_ms", s.max, "ms")
    }
}

func note(_ text: String) {
    print("# \(text)")
    fflush(nil)
}

func fileSize(_ path: String) -> UInt64 {
    var st = stat()
    return stat(path, &st) == 0 ? UInt64(st.st_size) : 0
}

// MARK: - Options

let options: [String: String] = {
    var options: [String: String] = [:]
    let valued: Set<String> = [
        "--items", "--bulk-runs", "--single-runs", "--query-runs", "--sizes", "--work", "--keep", "--seed", "--only"
    ]
    var args = CommandLine.arguments.dropFirst()
    while let a = args.popFirst() {
        if a == "-h" || a == "--help" {
            print(usageText)
            exit(0)
        }
        guard valued.contains(a) else { fail("unknown argument \(a)\n\(usageText)") }
        guard let v = args.popFirst() else { fail("\(a) needs a value") }
        options[a] = v
    }
    return options
}()

func intOption(_ name: String, _ fallback: Int) -> Int {
    guard let s = options[name] else { return fallback }
    guard let v = Int(s), v > 0 else { fail("\(name) needs a positive integer, not \(s)") }
    return v
}

let itemCount = intOption("--items", 10_000)
let bulkRuns = intOption("--bulk-runs", 5)
let singleRuns = intOption("--single-runs", 50)
let queryRuns = intOption("--query-runs", 200)
let seed = UInt64(intOption("--seed", 1))
let sizes: [Int] = {
    guard let s = options["--sizes"] else { return [100, 1_000, itemCount] }
    let v = s.split(separator: ",").map { Int($0) ?? -1 }
    guard !v.isEmpty, v.allSatisfy({ $0 > 0 }) else { fail("--sizes takes positive integers separated by commas") }
    return v
}()
let only = Set((options["--only"] ?? "bulk,single,query").split(separator: ",").map(String.init))
func want(_ section: String) -> Bool { only.contains(section) }
let keep = options["--keep"]
if let keep, access(keep, F_OK) == 0 { fail("--keep \(keep): exists (give a new path)") }
if keep != nil, !want("query") { fail("--keep needs the query section (--only ...,query)") }

let workParent = options["--work"] ?? getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
if options["--work"] != nil { mkdir(workParent, 0o700) }
guard let work = makeTempDir("kcar-keychain-bench", in: workParent) else {
    fail("mkdtemp in \(workParent): \(String(cString: strerror(errno)))")
}

// MARK: - Items

func service(_ i: Int) -> String { "bench.service.\(i / 100)" }
func account(_ i: Int) -> String { "account-\(i)" }

func attributes(_ i: Int) -> Attributes {
    var a = Attributes()
    a["svce"] = .string(service(i))
    a["acct"] = .string(account(i))
    a["@ref"] = .string("ref-\(i)")
    return a
}

nonisolated(unsafe) var rng = SplitMix64(state: seed)  // one thread
func randomValue() -> [UInt8] {
    var v = [UInt8](repeating: 0, count: 32)
    for j in stride(from: 0, to: 32, by: 8) {
        let r = rng.next()
        for k in 0..<8 { v[j + k] = UInt8(truncatingIfNeeded: r >> (8 * UInt64(k))) }
    }
    return v
}

/// Attributes and values made before any timing.
func makeItems(_ n: Int, offset: Int = 0) -> [(Attributes, [UInt8])] {
    (0..<n).map { (attributes($0 + offset), randomValue()) }
}

/// Adds `items` to `group` of `store` in one transaction; returns the milliseconds it takes.
func bulkAdd(_ store: KeychainStore, group: String, _ items: [(Attributes, [UInt8])]) throws -> Double {
    try timed {
        try store.transaction(group: group) { tx in
            for (a, v) in items { try tx.add(class: .genericPassword, attributes: a, value: v) }
        }
    }
}

func check(_ ok: Bool, _ what: String) {
    if !ok { fail("check failed: \(what)") }
}

/// The time of one write of 4 KiB plus fdatasync, the unit a durable commit is made of.
func syncBaseline(_ dir: String, runs: Int) -> Summary {
    let path = dir + "/sync-probe"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { fail("cannot create \(path)") }
    defer {
        close(fd)
        unlink(path)
    }
    let block = [UInt8](repeating: 0xA5, count: 4096)
    var offset: off_t = 0
    return repeatTimed(runs) {
        _ = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, offset) }
        offset += 4096
        guard fdatasync(fd) == 0 else { fail("fdatasync: \(String(cString: strerror(errno)))") }
    }
}

// MARK: - Run

do {
    note(
        "kcar-keychain-bench: \(itemCount) items, \(bulkRuns) bulk runs, \(singleRuns) single adds per size, \(queryRuns) query runs"
    )
    note("work directory \(work)")
    emit("items", Double(itemCount), "items", decimals: 0)

    // The file system's price of durability, for reading the single-add figures.
    let sync = syncBaseline(work, runs: max(singleRuns, 20))
    emit("fdatasync_4k", sync)

    // (a) N adds in one transaction, each run into a fresh group of a fresh keychain directory.
    let bulkItems = makeItems(itemCount)
    var bulk: [Double] = []
    for r in 0..<(want("bulk") ? bulkRuns : 0) {
        let dir = KeychainDirectory(path: "\(work)/bulk\(r)")
        let store = try KeychainStore(directory: dir, accessGroups: ["bench"])
        _ = try dir.createGroup("bench")
        bulk.append(try bulkAdd(store, group: "bench", bulkItems))
        if r == 0 {
            emit("bulk_vault_bytes", Double(fileSize(dir.vaultPath("bench"))), "bytes", decimals: 0)
            check(try store.find(ItemQuery(group: "bench")).count == itemCount, "bulk item count")
        }
        store.close()
        removeTree(dir.path)
    }
    if want("bulk") {
        emit("bulk_add_\(itemCount)", Summary(samples: bulk))
        emit("bulk_add_per_item_us", Summary(samples: bulk).median * 1000 / Double(itemCount), "us")
    }

    // (b) single durable adds (one commit each) into groups of several sizes.
    for size in want("single") ? sizes : [] {
        let dir = KeychainDirectory(path: "\(work)/single\(size)")
        let store = try KeychainStore(directory: dir, accessGroups: ["g"])
        _ = try dir.createGroup("g")
        _ = try bulkAdd(store, group: "g", makeItems(size))
        // One add first: it opens nothing new (the store keeps the vault open) but warms the code paths.
        let extra = makeItems(singleRuns + 1, offset: size)
        try store.add(attributes: extra[0].0, value: extra[0].1, group: "g")
        let before = fileSize(dir.vaultPath("g"))
        var samples: [Double] = []
        for (a, v) in extra.dropFirst() {
            samples.append(try timed { try store.add(attributes: a, value: v, group: "g") })
        }
        let growth = Double(fileSize(dir.vaultPath("g")) - before) / Double(singleRuns)
        emit("single_add_\(size)", Summary(samples: samples), mean: true)
        emit("single_add_\(size)_growth_bytes", growth, "bytes", decimals: 0)
        // The same add with a store opened for it, as a process that adds one item does.
        let fresh = makeItems(min(singleRuns, 20), offset: size + singleRuns + 1)
        var opened: [Double] = []
        for (a, v) in fresh {
            opened.append(
                try timed {
                    let s = try KeychainStore(directory: dir, accessGroups: ["g"])
                    try s.add(attributes: a, value: v, group: "g")
                })
        }
        emit("open_single_add_\(size)", Summary(samples: opened))
        store.close()
        removeTree(dir.path)
    }

    // (c) queries on the N-item group: by user attribute (index only) and get (find + value).
    guard want("query") else {
        removeTree(work)
        exit(0)
    }
    let keptPath = keep ?? "\(work)/kept"
    let dir = KeychainDirectory(path: keptPath)
    let store = try KeychainStore(directory: dir, accessGroups: ["bench"])
    _ = try dir.createGroup("bench")
    let keptTime = try bulkAdd(store, group: "bench", bulkItems)
    note(
        "group bench of \(dir.path): \(itemCount) items in \(fmt(keptTime)) ms, \(fileSize(dir.vaultPath("bench"))) bytes"
    )
    let target = itemCount * 7 / 10
    var byRef = Attributes()
    byRef["@ref"] = .string("ref-\(target)")
    let refQuery = ItemQuery(class: .genericPassword, attributes: byRef, group: "bench")
    var byKey = ItemQuery.password(service: service(target), account: account(target), group: "bench")
    byKey.limit = 2
    let expected = bulkItems[target].1
    func get(_ s: KeychainStore) throws -> [UInt8] {
        let found = try s.find(byKey)
        guard found.count == 1 else { fail("get found \(found.count) items") }
        return try s.value(of: found[0])
    }
    check(try store.find(refQuery).count == 1, "find by @ref")
    check(try get(store) == expected, "get value")

    // The values of 200 matching items (two services of 100): one by one, and in one pass (issue 12, item 7).
    let batchItems = try [70, 71].flatMap { n in
        try store.find(ItemQuery.password(service: service(min(n * 100, itemCount - 1)), group: "bench"))
    }
    check(try store.values(of: batchItems) == batchItems.map { try store.value(of: $0) }, "batch values")
    emit(
        "values_\(batchItems.count)_one_by_one",
        try repeatTimed(max(5, queryRuns / 20)) {
            for item in batchItems { _ = try store.value(of: item) }
        })
    emit(
        "values_\(batchItems.count)_batch",
        try repeatTimed(max(5, queryRuns / 20)) { _ = try store.values(of: batchItems) })
    emit("find_attr_warm", try repeatTimed(queryRuns) { _ = try store.find(refQuery) })
    emit("get_warm", try repeatTimed(queryRuns) { _ = try get(store) })
    // Cold: a new store each time, so the vault is opened (key file, header, index) as a process would.
    let coldRuns = max(10, queryRuns / 4)
    emit(
        "open",
        try repeatTimed(coldRuns) {
            _ = try KeychainStore(directory: dir, accessGroups: ["bench"]).groupCounts()
        })
    emit(
        "open_find_attr",
        try repeatTimed(coldRuns) {
            _ = try KeychainStore(directory: dir, accessGroups: ["bench"]).find(refQuery)
        })
    emit(
        "open_get",
        try repeatTimed(coldRuns) {
            _ = try get(try KeychainStore(directory: dir, accessGroups: ["bench"]))
        })
    store.close()
    if keep != nil {
        emit("kept_vault_bytes", Double(fileSize(dir.vaultPath("bench"))), "bytes", decimals: 0)
        note("kept \(keptPath): group bench, get target service \(service(target)) account \(account(target))")
        print("target_index \(target) index")
    }
} catch {
    removeTree(work)
    fail("\(error)")
}
removeTree(work)
