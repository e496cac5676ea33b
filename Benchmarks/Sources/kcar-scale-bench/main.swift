import BenchSupport
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

// The scale benchmark of issue 10 (scripts/bench/scale-bench.sh, `make bench-scale`): the same N generic
// passwords (64-byte values, a user attribute `@team` of which 10 items share each value) in a version 1 vault
// and in a version 2 (paged, SPEC.md Part 4 draft) vault, measured in process; `get` is the whole-process
// probe hyperfine times.
//
//   kcar-scale-bench build N DIR      writes DIR/v1.kcv, DIR/v2.kcv, DIR/key (and DIR/rows.csv for SQLite)
//   kcar-scale-bench measure N DIR    prints `name value unit` lines
//   kcar-scale-bench get DIR SERVICE ACCOUNT   opens v2, prints the value's length (one lookup)
//   kcar-scale-bench merge N DIR      merges two copies with 100 updates on each side
//   kcar-scale-bench merge-sides DIR  writes those copies (base, ours, theirs .kcv) and the same as .txt
//   kcar-scale-bench commits N DIR COUNT [off]   COUNT single-item commits (`off`: no automatic compaction),
//                                                then open + get
//   kcar-scale-bench library VAULT KEYFILE N    one lookup through the public API (issue 26) on a keychain
//                                               group's vault of N items (svcK.example.com/userI): open + get,
//                                               get on an open Vault and on a SharedVault, in process
//   kcar-scale-bench library-once VAULT KEYFILE SERVICE ACCOUNT   the same lookup as a whole process

let args = CommandLine.arguments
func die(_ m: String) -> Never {
    let s = "kcar-scale-bench: \(m)\n"
    _ = s.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    exit(2)
}
func service(_ i: Int) -> String { "svc\(i % 1000).example.com" }
func account(_ i: Int) -> String { "user\(i)" }
func team(_ i: Int) -> String { "t\(i / 10)" }
let schema = IndexSchema(
    classes: [
        "genp": ClassSchema(keyAttributes: [("sync", .bool(false)), ("svce", .string("")), ("acct", .string(""))])
    ],
    indexed: ["@*"])
func attributes(_ i: Int) -> Attributes {
    var a = Attributes()
    a["svce"] = .string(service(i))
    a["acct"] = .string(account(i))
    a["@team"] = .string(team(i))
    a["mdat"] = .date(nanoseconds: 1_764_000_000_000_000_000 + Int64(i))
    return a
}
func value(_ i: Int) -> [UInt8] { (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) } }
func fileSize(_ p: String) -> UInt64 {
    var st = stat()
    return stat(p, &st) == 0 ? UInt64(st.st_size) : 0
}
func peakRSSMiB() -> Double {
    var u = rusage()
    getrusage(RUSAGE_SELF.rawValue, &u)
    return Double(u.ru_maxrss) / 1024
}
func report(_ name: String, _ v: Double, _ unit: String) { print("\(name) \(v) \(unit)") }
func secretIn(_ dir: String) -> UnlockSecret {
    var kb = [UInt8](repeating: 0, count: 32)
    let fd = open(dir + "/key", O_RDONLY)
    _ = read(fd, &kb, 32)
    close(fd)
    return .keyFile(SecureBytes(copying: kb))
}
func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}
func copyFile(_ from: String, _ to: String) {
    let src = open(from, O_RDONLY)
    let dst = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    defer {
        close(src)
        close(dst)
    }
    guard src >= 0, dst >= 0 else { die("cannot copy \(from) to \(to)") }
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
        let n = read(src, &buffer, buffer.count)
        guard n >= 0, n == 0 || buffer.withUnsafeBytes({ write(dst, $0.baseAddress, n) }) == n else {
            die("cannot copy \(from) to \(to)")
        }
        if n == 0 { return }
    }
}

/// Copies DIR/v2.kcv to base, ours and theirs .kcv, then makes 100 updates on each side, 10 of them to the same
/// items (the "merge" figures). Each side is also written as the plain text the manual path keeps
/// (scripts/bench/merge-bench.sh encrypts it with age): DIR/NAME.txt, one `service/account hex-value` line per
/// item, in the vault's order.
func prepareMergeSides(_ dir: String) throws {
    let secret = secretIn(dir)
    for name in ["base", "ours", "theirs"] { copyFile(dir + "/v2.kcv", dir + "/\(name).kcv") }
    for (name, range, writer) in [("ours", 0..<100, UInt64(2)), ("theirs", 90..<190, 3)] {
        let v = try PagedVault.open(path: dir + "/\(name).kcv", secret: secret, mode: .write, writerID: writer)
        try v.commit { tx in
            for i in range {
                try tx.update(
                    try v.items(
                        class: .genericPassword, keyValues: [.bool(false), .string(service(i)), .string(account(i))]
                    ).first!,
                    value: value(i + 1))
            }
        }
    }
    for name in ["base", "ours", "theirs"] {
        let v = try PagedVault.open(path: dir + "/\(name).kcv", secret: secret)
        var text = ""
        try v.forEachItem { item in
            text += "\(item.service ?? "")/\(item.account ?? "") \(Hex.encode(try v.read(item)))\n"
            return true
        }
        writeFile(dir + "/\(name).txt", Array(text.utf8))
    }
}

guard args.count >= 3 else { die("usage: build N DIR | measure N DIR | get DIR SERVICE ACCOUNT") }
do {
    switch args[1] {
    case "build":
        guard args.count == 4, let n = Int(args[2]) else { die("build N DIR") }
        let dir = args[3]
        let keyBytes = SystemRandom.shared.bytes(32)
        let key = SecureBytes(copying: keyBytes)
        let fd = open(dir + "/key", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = keyBytes.withUnsafeBytes { write(fd, $0.baseAddress, 32) }
        close(fd)
        // KCAR_SCALE_ONLY=v2 builds only the version 2 vault, so that the peak RSS is its own.
        let only = getenv("KCAR_SCALE_ONLY").map { String(cString: $0) }
        let t1 =
            only == "v2"
            ? 0
            : try timed {
                try Vault.create(
                    path: dir + "/v1.kcv", group: "bench", slots: [.keyFile(key)],
                    format: .version1, options: WriteOptions(solidMembers: 256), overwrite: true
                ) { tx in
                    for i in 0..<n { try tx.add(attributes: attributes(i), value: .bytes(value(i))) }
                }
            }
        if only != "v2" { report("build.v1", t1, "ms") }
        let t2 = try timed {
            try PagedVault.create(
                path: dir + "/v2.kcv", group: "bench", slots: [.keyFile(key)], schema: schema, overwrite: true)
            let v = try PagedVault.open(path: dir + "/v2.kcv", secret: .keyFile(key), mode: .write)
            // One commit, as `kcar import --items` makes.
            try v.commit(solidMembers: 256) { tx in
                for j in 0..<n { try tx.add(attributes: attributes(j), value: value(j)) }
            }
        }
        report("build.v2", t2, "ms")
        report("build.peak_rss", peakRSSMiB(), "MiB")
        var csv = ""
        for i in 0..<n { csv += "\(service(i)),\(account(i)),\(team(i)),\(Hex.encode(value(i)))\n" }
        let f = open(dir + "/rows.csv", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = csv.utf8CString.withUnsafeBufferPointer { write(f, $0.baseAddress, $0.count - 1) }
        close(f)
    case "measure":
        guard args.count == 4, let n = Int(args[2]) else { die("measure N DIR") }
        let dir = args[3]
        let secret = secretIn(dir)
        var rng = SplitMix64(state: 1)
        func keyValues(_ i: Int) -> [AttributeValue] { [.bool(false), .string(service(i)), .string(account(i))] }
        // v1: open (whole index) + one read.
        let v1 = repeatTimed(5) {
            let v = try! Vault.open(path: dir + "/v1.kcv", secret: secret)
            let i = rng.below(n)
            let item = v.unorderedItems.first { $0.account == account(i) && $0.service == service(i) }!
            precondition(try! v.read(item) == value(i))
        }
        report("v1.open_get", v1.median, "ms")
        let v2 = repeatTimed(21) {
            let v = try! PagedVault.open(path: dir + "/v2.kcv", secret: secret)
            let i = rng.below(n)
            let item = try! v.items(class: .genericPassword, keyValues: keyValues(i)).first!
            precondition(try! v.read(item) == value(i))
        }
        report("v2.open_get", v2.median, "ms")
        // The same through the public API a program uses (issue 26): Vault, its items on demand, its index.
        let library = repeatTimed(21) {
            let v = try! Vault.open(path: dir + "/v2.kcv", secret: secret, itemsOnDemand: true)
            let i = rng.below(n)
            let key = Attributes([
                AttributeName.service: .string(service(i)), AttributeName.account: .string(account(i))
            ])
            let item = try! v.items(class: .genericPassword, key: key).first!
            precondition(try! v.read(item) == value(i))
        }
        report("v2.library_open_get", library.median, "ms")
        let open = try PagedVault.open(path: dir + "/v2.kcv", secret: secret, mode: .write)
        let repeated = repeatTimed(2001) {
            let i = rng.below(n)
            let item = try! open.items(class: .genericPassword, keyValues: keyValues(i)).first!
            precondition(item.size == 64)
        }
        report("v2.repeated_get", repeated.median * 1000, "us")
        let find = repeatTimed(21) {
            let v = try! PagedVault.open(path: dir + "/v2.kcv", secret: secret)
            let found = try! v.items(attribute: "@team", equals: .string(team(rng.below(n))))
            precondition(found.count == min(10, n))
        }
        report("v2.open_find_attr10", find.median, "ms")
        var k = 0
        let add = repeatTimed(41) {
            k += 1
            try! open.commit { tx in try tx.add(attributes: attributes(n + k), value: value(n + k)) }
        }
        report("v2.durable_add", add.median, "ms")
        report("v2.durable_add_max", add.max, "ms")
        let getAfter = repeatTimed(21) {
            let v = try! PagedVault.open(path: dir + "/v2.kcv", secret: secret)
            let i = rng.below(n)
            precondition(try! v.items(class: .genericPassword, keyValues: keyValues(i)).count == 1)
        }
        report("v2.open_get_after_adds", getAfter.median, "ms")
        var listed = 0
        let list = try timed {
            let v = try PagedVault.open(path: dir + "/v2.kcv", secret: secret)
            try v.forEachItem { _ in
                listed += 1
                return true
            }
        }
        report("v2.list_items_per_s", Double(listed) / list * 1000, "items/s")
        let verify = try timed { _ = try PagedVault.open(path: dir + "/v2.kcv", secret: secret).verifyIndex() }
        report("v2.verify_index", verify, "ms")
        report(
            "v1.index_bytes_per_item",
            Double(try Vault.open(path: dir + "/v1.kcv", secret: secret).indexBytes()) / Double(n), "B")
        report(
            "v2.index_bytes_per_item",
            Double(try PagedVault.open(path: dir + "/v2.kcv", secret: secret).indexBytes()) / Double(n + k), "B")
        for t in try PagedVault.open(path: dir + "/v2.kcv", secret: secret).treeBytes() where t.pages > 0 {
            report("v2.\(t.tree)_tree_bytes_per_item", Double(t.bytes) / Double(n + k), "B")
            report("v2.\(t.tree)_tree_pages", Double(t.pages), "")
        }
        report("v1.file_bytes_per_item", Double(fileSize(dir + "/v1.kcv")) / Double(n), "B")
        report("v2.file_bytes_per_item", Double(fileSize(dir + "/v2.kcv")) / Double(n + k), "B")
        report("measure.peak_rss", peakRSSMiB(), "MiB")
    case "get-loop":
        // For profiling: N random primary-key lookups on one open v2 vault.
        guard args.count == 5, let n = Int(args[3]), let loops = Int(args[4]) else { die("get-loop DIR N LOOPS") }
        let v = try PagedVault.open(path: args[2] + "/v2.kcv", secret: secretIn(args[2]))
        var rng = SplitMix64(state: 3)
        let t = try timed {
            for _ in 0..<loops {
                let i = rng.below(n)
                guard
                    try v.items(
                        class: .genericPassword, keyValues: [.bool(false), .string(service(i)), .string(account(i))]
                    ).count == 1
                else { die("lost \(i)") }
            }
        }
        report("v2.get_loop_mean", t / Double(loops) * 1000, "us")
        report("v2.pages_opened", Double(v.pagesOpened), "pages")
    case "list":
        // For profiling: one full scan of the v2 vault, decoding every item.
        guard args.count == 3 else { die("list DIR") }
        var listed = 0
        let t = try timed {
            try PagedVault.open(path: args[2] + "/v2.kcv", secret: secretIn(args[2])).forEachItem { _ in
                listed += 1
                return true
            }
        }
        report("v2.list_items_per_s", Double(listed) / t * 1000, "items/s")
    case "verify-loop":
        // For profiling: LOOPS index verifications of the v2 vault (opened once), the median reported.
        guard args.count == 4, let loops = Int(args[3]) else { die("verify-loop DIR LOOPS") }
        let v = try PagedVault.open(path: args[2] + "/v2.kcv", secret: secretIn(args[2]))
        let t = repeatTimed(loops) { _ = try! v.verifyIndex() }
        report("v2.verify_index_median", t.median, "ms")
    case "library":
        // What a program embedding VaultFormat pays for one lookup by service and account, public API only.
        guard args.count == 5, let n = Int(args[4]) else { die("library VAULT KEYFILE N") }
        let (path, secret) = (args[2], try UnlockSecret.keyFile(atPath: args[3]))
        var rng = SplitMix64(state: 7)
        func key(_ i: Int) -> Attributes {
            Attributes([AttributeName.service: .string(service(i)), AttributeName.account: .string(account(i))])
        }
        let cold = repeatTimed(21) {
            let v = try! Vault.open(path: path, secret: secret, itemsOnDemand: true)
            precondition(try! v.read(v.items(class: .genericPassword, key: key(rng.below(n))).first!).count == 64)
        }
        report("library.open_get", cold.median, "ms")
        let open = try Vault.open(path: path, secret: secret, itemsOnDemand: true)
        let warm = repeatTimed(2001) {
            precondition(try! open.read(open.items(class: .genericPassword, key: key(rng.below(n))).first!).count == 64)
        }
        report("library.get_on_open_vault", warm.median * 1000, "us")
        // Pages opened per random get (the leaves a lookup misses in the cache; branches stay cached).
        let pagesBefore = open.itemIndex!.pagesOpened
        for _ in 0..<1000 { _ = try! open.read(open.items(class: .genericPassword, key: key(rng.below(n))).first!) }
        report("library.pages_per_get", Double(open.itemIndex!.pagesOpened - pagesBefore) / 1000, "pages")
        // The same get over and over: every page it reads is in the cache (what a program that reads one
        // secret repeatedly pays).
        let same = key(n / 2)
        let hot = repeatTimed(2001) {
            precondition(try! open.read(open.items(class: .genericPassword, key: same).first!).count == 64)
        }
        report("library.same_get_on_open_vault", hot.median * 1000, "us")
        let shared = try SharedVault(path: path, secret: secret)
        let viaShared = repeatTimed(2001) {
            precondition(try! shared.value(class: .genericPassword, key: key(rng.below(n)))!.count == 64)
        }
        report("library.shared_vault_value", viaShared.median * 1000, "us")
        report("library.peak_rss", peakRSSMiB(), "MiB")
    case "library-once":
        guard args.count == 6 else { die("library-once VAULT KEYFILE SERVICE ACCOUNT") }
        let v = try Vault.open(path: args[2], secret: try UnlockSecret.keyFile(atPath: args[3]), itemsOnDemand: true)
        let key = Attributes([AttributeName.service: .string(args[4]), AttributeName.account: .string(args[5])])
        guard let item = try v.items(class: .genericPassword, key: key).first else { die("not found") }
        print(try v.read(item).count)
    case "get":
        guard args.count == 5 else { die("get DIR SERVICE ACCOUNT") }
        let v = try PagedVault.open(path: args[2] + "/v2.kcv", secret: secretIn(args[2]))
        guard
            let item = try v.items(
                class: .genericPassword, keyValues: [.bool(false), .string(args[3]), .string(args[4])]
            ).first
        else { die("not found") }
        print(try v.read(item).count)
    case "merge":
        // Two copies of the N-item vault, 100 updates on each side (10 of them to the same items), merged
        // (SPEC.md Part 4, V9) in process: with BASE, and without (`merge --into`).
        guard args.count == 4, let n = Int(args[2]), n >= 200 else { die("merge N DIR (N >= 200)") }
        let dir = args[3]
        let secret = secretIn(dir)
        var withBase: [Double] = []
        var withoutBase: [Double] = []
        for run in 0..<10 {
            try prepareMergeSides(dir)
            let base = run % 2 == 0
            let t = try timed {
                let ours = try PagedVault.open(path: dir + "/ours.kcv", secret: secret, mode: .write, writerID: 4)
                let r = try ours.merge(
                    base: base ? try PagedVault.open(path: dir + "/base.kcv", secret: secret) : nil,
                    theirs: try PagedVault.open(path: dir + "/theirs.kcv", secret: secret))
                precondition(r.taken == 100 && (!base || r.conflicts == 10), "\(r)")
            }
            if base { withBase.append(t) } else { withoutBase.append(t) }
        }
        report("v2.merge_100_each_side", withBase.sorted()[withBase.count / 2], "ms")
        report("v2.merge_into_no_base", withoutBase.sorted()[withoutBase.count / 2], "ms")
    case "merge-sides":
        // Only the three files of "merge" (base, ours, theirs .kcv in DIR, and as .txt), for timing `kcar merge`
        // and the manual path as processes.
        guard args.count == 3 else { die("merge-sides DIR") }
        try prepareMergeSides(args[2])
    case "commits":
        // COUNT single-item commits into a copy of the N-item vault, with automatic compaction (SPEC.md V8.1)
        // unless `off`: the durable add, then open + get, the bytes the file grew by, its size and how much
        // of it is dead.
        guard args.count == 5 || (args.count == 6 && args[5] == "off"), let n = Int(args[2]), let count = Int(args[4])
        else {
            die("commits N DIR COUNT [off]")
        }
        let dir = args[3]
        let secret = secretIn(dir)
        let autoCompact = args.count == 5
        let path = dir + "/commits.kcv"
        copyFile(dir + "/v2.kcv", path)
        let before = fileSize(path)
        let v = try PagedVault.open(path: path, secret: secret, mode: .write)
        var k = 0
        var compactions = 0
        var largest = before
        let adds = repeatTimed(count) {
            k += 1
            let generation = v.generation
            try! v.commit(autoCompact: autoCompact) { tx in
                try tx.add(attributes: attributes(n + k), value: value(n + k))
            }
            if v.generation == generation + 2 { compactions += 1 }  // the commit's, then the compaction's
            largest = max(largest, fileSize(path))
        }
        if let e = v.lastCompactionError { die("an automatic compaction failed: \(e)") }
        report("v2.commits_durable_add", adds.median, "ms")
        // The compactions are the slowest commits; the mean spreads their cost over all of them.
        report("v2.commits_durable_add_mean", adds.mean, "ms")
        report("v2.commits_slowest", adds.max, "ms")
        report("v2.automatic_compactions", Double(compactions), "")
        report("v2.file_bytes_before_commits", Double(before), "B")
        report("v2.file_bytes_after_commits", Double(fileSize(path)), "B")
        report("v2.largest_file_bytes", Double(largest), "B")
        var rng = SplitMix64(state: 5)
        let get = repeatTimed(21) {
            let r = try! PagedVault.open(path: path, secret: secret)
            let i = rng.below(n + count)
            precondition(
                try! r.items(
                    class: .genericPassword, keyValues: [.bool(false), .string(service(i)), .string(account(i))]
                ).count == 1)
        }
        report("v2.open_get_after_commits", get.median, "ms")
        report("v2.bytes_per_commit", Double(fileSize(path) - before) / Double(count), "B")
        report(
            "v2.dead_bytes_share",
            Double(try PagedVault.open(path: path, secret: secret).verify().deadBytes) / Double(fileSize(path)), "")
    default:
        die("unknown mode \(args[1])")
    }
} catch {
    die("\(error)")
}
