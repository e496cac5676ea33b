// kcar-bench: in-process timings of the VaultFormat library, for scripts/bench/bench.sh.
//
//   kcar-bench kdf [--runs N] [--mem-mib M] [--passes P]
//   kcar-bench items VAULT KEYFILE [--runs N]
//   kcar-bench append N_ITEMS MB DIR [--runs N] [--level L] [--random]
//   kcar-bench solid DIR MEMBERS RECORDS
//   kcar-bench solid-copy VAULT OUT
//
// Every figure is printed on its own line as `name value unit`, so that scripts can pick it with
// `awk '$1 == "name" { print $2 }'`; lines starting with `#` are comments.

import BenchSupport
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Helpers

func fail(_ message: String) -> Never {
    let line = "kcar-bench: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

func usage(help: Bool = false) -> Never {
    let text = """
        usage:
          kcar-bench kdf [--runs N] [--mem-mib M] [--passes P]
              time one Argon2id derivation at the default (or given) parameters: create a passphrase vault
              of zero items and subtract the time to create a key-file one; also time opening it
          kcar-bench items VAULT KEYFILE [--runs N]
              open + read the first item, open + read the last item, open + list, open + verify (min, median ms)
          kcar-bench append N_ITEMS MB DIR [--runs N] [--level L] [--random]
              make a vault of N_ITEMS values totalling MB megabytes in DIR, then time adding one item with a
              durable commit against rewriting the whole vault with the same items
          kcar-bench solid DIR MEMBERS RECORDS
              write the vaults of issue 21's attack on copies out of solid records, under the fixtures' key file:
              RECORDS solid records of MEMBERS 8-byte values each, which cannot be copied whole: compact.kcv
              (version 2, no history kept, a member of each record deleted), v1.kcv (the same in version 1),
              merge-ours.kcv and merge-theirs.kcv (a copy that added them, one ThisDeviceOnly item in each record)
          kcar-bench solid-copy VAULT OUT
              time a sync's first push of VAULT (its copy without ThisDeviceOnly items) to OUT, in CPU seconds
        """
    if help {
        print(text)
        exit(0)
    }
    fail(text)
}

func emit(_ name: String, _ summary: Summary) {
    emit(name + "_min_ms", summary.min, "ms")
    emit(name + "_median_ms", summary.median, "ms")
}

func note(_ text: String) { print("# \(text)") }

func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { fail("cannot open \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR { continue }
            fail("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        if n == 0 { break }
        out.append(contentsOf: buf[0..<n])
    }
    return out
}

func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
    guard fd >= 0 else { fail("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var done = 0
    while done < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
        if n < 0 {
            if errno == EINTR { continue }
            fail("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        done += n
    }
}

func fileSize(_ path: String) -> UInt64 {
    var st = stat()
    return stat(path, &st) == 0 ? UInt64(st.st_size) : 0
}

/// Parses `--name value` options after the positional arguments.
struct Options {
    var positional: [String] = []
    var values: [String: String] = [:]
    var flags: Set<String> = []

    init(_ args: ArraySlice<String>, valued: Set<String>, flags known: Set<String>) {
        var i = args.startIndex
        while i < args.endIndex {
            let a = args[i]
            if valued.contains(a) {
                guard i + 1 < args.endIndex else { fail("\(a) needs a value") }
                values[a] = args[i + 1]
                i += 2
            } else if known.contains(a) {
                flags.insert(a)
                i += 1
            } else if a.hasPrefix("--") {
                fail("unknown option \(a)")
            } else {
                positional.append(a)
                i += 1
            }
        }
    }

    func int(_ name: String, _ fallback: Int) -> Int {
        guard let s = values[name] else { return fallback }
        guard let v = Int(s), v > 0 else { fail("\(name) needs a positive integer, not \(s)") }
        return v
    }

    func double(_ name: String) -> Double? {
        guard let s = values[name] else { return nil }
        guard let v = Double(s), v > 0 else { fail("\(name) needs a positive number, not \(s)") }
        return v
    }
}

/// Makes values that compress about like text (a few hundred made-up words, Zipf-ish), or random bytes.
struct ValueMaker {
    var rng: SplitMix64
    let words: [[UInt8]]
    let random: Bool

    init(seed: UInt64, random: Bool) {
        rng = SplitMix64(state: seed)
        self.random = random
        let syllables = [
            "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "bar", "cor", "den", "fal", "gor", "han", "lin",
            "mon", "par", "ser", "tan", "vor", "data", "key", "user", "item", "read", "write", "open",
            "close", "value", "token"
        ]
        var w: [[UInt8]] = []
        var g = SplitMix64(state: 42)
        for _ in 0..<600 {
            var s = ""
            for _ in 0..<(1 + g.below(3)) { s += syllables[g.below(syllables.count)] }
            w.append(Array(s.utf8))
        }
        words = w
    }

    mutating func value(size: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(size + 32)
        if random {
            while out.count < size {
                var x = rng.next()
                withUnsafeBytes(of: &x) { out.append(contentsOf: $0) }
            }
            out.removeLast(out.count - size)
            return out
        }
        var column = 0
        while out.count < size {
            // Zipf-ish: small indexes far more often.
            let r = Double(rng.next() >> 11) / Double(1 << 53)
            let i = min(words.count - 1, Int(r * r * r * Double(words.count)))
            let word = words[i]
            out.append(contentsOf: word)
            column += word.count + 1
            if column > 72 || rng.below(16) == 0 {
                out.append(0x0A)
                column = 0
            } else {
                out.append(0x20)
            }
            if rng.below(10) == 0 {
                var n = rng.next() % 100_000
                repeat {
                    out.append(UInt8(0x30 + n % 10))
                    n /= 10
                } while n > 0
                out.append(0x20)
            }
        }
        out.removeLast(out.count - size)
        return out
    }
}

func attributes(service: String, account: String) -> Attributes {
    var a = Attributes()
    a[AttributeName.service] = .string(service)
    a[AttributeName.account] = .string(account)
    a[AttributeName.modificationDate] = .date(nanoseconds: 1_767_225_600_000_000_000)
    return a
}

func check<T>(_ what: String, _ body: () throws -> T) -> T {
    do {
        return try body()
    } catch {
        fail("\(what): \(error)")
    }
}

// MARK: - kdf

func runKDF(_ args: ArraySlice<String>) {
    let o = Options(args, valued: ["--runs", "--mem-mib", "--passes"], flags: [])
    guard o.positional.isEmpty else { usage() }
    let runs = o.int("--runs", 3)
    var params = KDFParameters.default
    if let m = o.values["--mem-mib"] {
        guard let v = UInt32(m), v > 0 else { fail("--mem-mib needs a positive integer") }
        params.memKiB = v * 1024
    }
    if let p = o.values["--passes"] {
        guard let v = UInt32(p), v > 0 else { fail("--passes needs a positive integer") }
        params.ops = v
    }
    guard let dir = makeTempDir("kcar-bench") else { fail("mkdtemp: \(String(cString: strerror(errno)))") }
    defer { removeTree(dir) }
    let pass: [UInt8] = Array("correct horse battery staple".utf8)
    var key = [UInt8](repeating: 0, count: 32)
    for i in key.indices { key[i] = UInt8(truncatingIfNeeded: i &* 37 &+ 11) }
    let passVault = dir + "/pass.kcv"
    let keyVault = dir + "/key.kcv"

    note("Argon2id ops \(params.ops), memory \(params.memKiB / 1024) MiB, \(runs) runs, empty vaults in \(dir)")
    let create = check("create a passphrase vault") {
        try repeatTimed(runs) {
            try Vault.create(
                path: passVault, group: "bench", slots: [.passphrase(SecureBytes(copying: pass), params)],
                format: .version1, overwrite: true
            ) { _ in }
        }
    }
    let openPass = check("open the passphrase vault") {
        try repeatTimed(runs) {
            let v = try Vault.open(path: passVault, secret: .passphrase(SecureBytes(copying: pass)))
            guard v.count == 0 else { fail("expected an empty vault") }
        }
    }
    let createKey = check("create a key-file vault") {
        try repeatTimed(max(runs, 5)) {
            try Vault.create(
                path: keyVault, group: "bench", slots: [.keyFile(SecureBytes(copying: key))],
                format: .version1, overwrite: true
            ) { _ in }
        }
    }
    let openKey = check("open the key-file vault") {
        try repeatTimed(max(runs, 10)) {
            _ = try Vault.open(path: keyVault, secret: .keyFile(SecureBytes(copying: key)))
        }
    }
    // Creating derives the passphrase key once; the two creations differ only by that derivation.
    let kdf = max(0, create.min - createKey.min)
    let openCost = max(0, openPass.min - openKey.min)
    emit("kdf_create_vault", create)
    emit("kdf_open_vault", openPass)
    emit("keyfile_create_vault", createKey)
    emit("keyfile_open_vault", openKey)
    emit("kdf_ms", kdf, "ms")
    emit("kdf_open_extra_ms", openCost, "ms")
    emit("kdf_per_open", kdf > 0 ? openCost / kdf : .nan, "x", decimals: 2)
    if kdf > 0, openCost / kdf > 1.5 {
        note("WARNING: opening a passphrase vault costs \(fmt(openCost / kdf, 1)) key derivations, creating it one")
    }
}

// MARK: - items

func runItems(_ args: ArraySlice<String>) {
    let o = Options(args, valued: ["--runs"], flags: [])
    guard o.positional.count == 2 else { usage() }
    let path = o.positional[0]
    let keyBytes = readFile(o.positional[1])
    let runs = o.int("--runs", 20)
    func secret() -> UnlockSecret { .keyFile(SecureBytes(copying: keyBytes)) }

    // First and last in list order; each is then found by service and account, as `kcar extract NAME` does.
    let (count, first, last) = check("open \(path)") {
        () throws -> (Int, (String?, String?, UInt64), (String?, String?, UInt64)) in
        let v = try Vault.open(path: path, secret: secret())
        let items = v.items
        guard let f = items.first, let l = items.last else { fail("\(path) holds no items") }
        return (items.count, (f.service, f.account, f.size), (l.service, l.account, l.size))
    }
    note(
        "\(path): \(count) items, \(fileSize(path)) bytes; first \(first.0 ?? "")/\(first.1 ?? "") (\(first.2) B), last \(last.0 ?? "")/\(last.1 ?? "") (\(last.2) B); \(runs) runs"
    )
    var sink = 0
    let open = check("open") {
        try repeatTimed(runs) { sink &+= try Vault.open(path: path, secret: secret()).count }
    }
    func readOne(_ name: (String?, String?, UInt64)) throws {
        let v = try Vault.open(path: path, secret: secret())
        guard let item = v.unorderedItems.first(where: { $0.service == name.0 && $0.account == name.1 }) else {
            fail("item vanished")
        }
        sink &+= try v.read(item).count
    }
    let firstTimes = check("read the first item") { try repeatTimed(runs) { try readOne(first) } }
    let lastTimes = check("read the last item") { try repeatTimed(runs) { try readOne(last) } }
    let list = check("list") {
        try repeatTimed(runs) {
            let v = try Vault.open(path: path, secret: secret())
            for item in v.items { sink &+= item.displayName.utf8.count &+ Int(item.size) }
        }
    }
    var intact = true
    let verify = check("verify") {
        try repeatTimed(max(3, runs / 4)) {
            // As `kcar verify` opens it: a version 2 vault's items are read once, by the check, not at open too.
            let v = try Vault.open(path: path, secret: secret(), itemsOnDemand: true)
            let report = v.verify()
            intact = intact && report.isIntact
            sink &+= report.items
        }
    }
    if !intact { note("WARNING: verify reported problems") }
    emit("items_count", Double(count), "items", decimals: 0)
    emit("open", open)
    emit("open_read_first", firstTimes)
    emit("open_read_last", lastTimes)
    emit("open_list", list)
    emit("open_verify", verify)
    if sink == 42 { note("") }  // keep the work observable
}

// MARK: - append

func runAppend(_ args: ArraySlice<String>) {
    let o = Options(args, valued: ["--runs", "--level"], flags: ["--random"])
    guard o.positional.count == 3, let n = Int(o.positional[0]), n > 0, let mb = Double(o.positional[1]), mb > 0 else {
        usage()
    }
    let dir = o.positional[2]
    let runs = o.int("--runs", 10)
    var options = WriteOptions()
    if let l = o.values["--level"] {
        guard let v = Int32(l), (0...9).contains(v) else { fail("--level needs 0 to 9") }
        options.level = v
    }
    options.autoCompact = false
    if mkdir(dir, 0o755) != 0, errno != EEXIST { fail("cannot create \(dir): \(String(cString: strerror(errno)))") }

    // The values, in memory, so that the append and the rewrite both start from bytes at hand.
    let total = Int(mb * 1_000_000)
    var maker = ValueMaker(seed: 7, random: o.flags.contains("--random"))
    var sizeRng = SplitMix64(state: 99)
    let mean = max(1, total / n)
    var values: [[UInt8]] = []
    values.reserveCapacity(n + runs)
    let tGen = now()
    // Sizes vary from mean/2 to 3*mean/2, scaled so that they add up to the total.
    let drawn = (0..<n).map { _ in mean / 2 + sizeRng.below(mean + 1) }
    let scale = Double(total) / Double(max(1, drawn.reduce(0, +)))
    var sizes = drawn.map { max(1, Int(Double($0) * scale)) }
    sizes[n - 1] = max(1, sizes[n - 1] + total - sizes.reduce(0, +))
    for size in sizes { values.append(maker.value(size: size)) }
    let made = sizes.reduce(0, +)
    let extra = (0..<runs).map { _ in maker.value(size: mean) }
    note("made \(n) values, \(made) bytes, in \(fmt((now() - tGen) * 1000, 0)) ms; level \(options.level)")

    var keyRng = SplitMix64(state: 2026)
    let key = (0..<32).map { _ in UInt8(truncatingIfNeeded: keyRng.next()) }
    writeFile(dir + "/append.key", key)
    let path = dir + "/append.kcv"
    let rewritePath = dir + "/rewrite.kcv"
    let slots: [SlotSecret] = [.keyFile(SecureBytes(copying: key))]
    func secret() -> UnlockSecret { .keyFile(SecureBytes(copying: key)) }
    func attrs(_ i: Int) -> Attributes {
        attributes(service: "service-\(i % 100)", account: "item-\(i)")
    }

    let create = check("create the vault") {
        try timed {
            try Vault.create(
                path: path, group: "bench", slots: slots, format: .version1, options: options, overwrite: true
            ) { tx in
                for (i, v) in values.enumerated() {
                    try tx.add(class: .genericPassword, attributes: attrs(i), value: .bytes(v))
                }
            }
        }
    }
    let vaultBytes = fileSize(path)
    note("vault \(path): \(n) items, \(vaultBytes) bytes, created in \(fmt(create, 1)) ms")

    // Append one item per run: open for writing, one durable commit (records, fdatasync, trailer, fdatasync).
    var commitOnly: [Double] = []
    let append = check("append one item") {
        try repeatTimed(runs) {
            let v = try Vault.open(path: path, secret: secret(), mode: .write)
            let i = v.count
            let t = now()
            try v.commit(options: options) { tx in
                try tx.add(class: .genericPassword, attributes: attrs(i), value: .bytes(extra[i - n]))
            }
            commitOnly.append((now() - t) * 1000)
        }
    }
    let appended = fileSize(path)

    // Rewrite: a whole new vault with the same items (what a format without appends does for one change).
    let all = values + extra
    let rewrite = check("rewrite the vault") {
        try repeatTimed(max(1, min(3, runs))) {
            try Vault.create(
                path: rewritePath, group: "bench", slots: slots, format: .version1, options: options, overwrite: true
            ) { tx in
                for (i, v) in all.enumerated() {
                    try tx.add(class: .genericPassword, attributes: attrs(i), value: .bytes(v))
                }
            }
        }
    }
    // Compaction: the cheapest whole-file rewrite (live records copied as they are).
    let compact = check("compact the vault") {
        try repeatTimed(max(1, min(3, runs))) {
            let v = try Vault.open(path: path, secret: secret(), mode: .write)
            try v.compact(options: options)
        }
    }
    let verify = check("verify") { () throws -> Bool in
        let v = try Vault.open(path: path, secret: secret())
        guard v.count == n + runs else { fail("expected \(n + runs) items, found \(v.count)") }
        return v.verify().isIntact
    }
    if !verify { note("WARNING: verify reported problems after the appends") }

    emit("append_vault_items", Double(n), "items", decimals: 0)
    emit("append_vault_bytes", Double(vaultBytes), "bytes", decimals: 0)
    emit("append_growth_bytes_per_item", Double(appended - vaultBytes) / Double(runs), "bytes", decimals: 0)
    emit("append_open_commit", append)
    emit("append_commit", Summary(samples: commitOnly))
    emit("rewrite", rewrite)
    emit("compact", compact)
    emit("rewrite_over_append", rewrite.median / append.median, "x", decimals: 1)
    emit("compact_over_append", compact.median / append.median, "x", decimals: 1)
}

// MARK: - solid: the vaults of issue 21, point 3

func runSolid(_ args: ArraySlice<String>) {
    let a = Array(args)
    guard a.count == 3, let members = Int(a[1]), let records = Int(a[2]), members > 1, records > 0 else { usage() }
    let dir = a[0]
    let slots: [SlotSecret] = [.keyFile(SecureBytes(copying: fixtureKeyFile))]
    let secret = UnlockSecret.keyFile(SecureBytes(copying: fixtureKeyFile))
    let schema = IndexSchema(classes: [
        "genp": ClassSchema(keyAttributes: [("svce", .string("")), ("acct", .string(""))])
    ])
    func attrs(_ i: Int, own: Bool) -> Attributes {
        var a = Attributes(["svce": .string("s"), "acct": .string("a\(i)")])
        if own { a["pdmn"] = .string("aku") }
        return a
    }
    func value(_ i: Int) -> [UInt8] {
        let digits = String(i)
        return Array(("v" + String(repeating: "0", count: max(0, 7 - digits.count)) + digits).utf8)
    }
    let n = members * records
    _ = check("write the vaults") {
        // Version 2, no history: a deleted member is dead at the next compaction.
        let c = dir + "/compact.kcv"
        try PagedVault.create(
            path: c, group: "g", slots: slots, schema: schema, retention: Retention(keep: 0), overwrite: true)
        let v = try PagedVault.open(path: c, secret: secret, mode: .write, writerID: 1)
        try v.commit(solidMembers: members, autoCompact: false) { tx in
            for i in 0..<n { _ = try tx.add(attributes: attrs(i, own: false), value: value(i)) }
        }
        try v.commit(autoCompact: false) { tx in
            for r in 0..<records {
                guard
                    let item = try v.items(
                        class: .genericPassword, keyValues: [.string("s"), .string("a\(r * members)")]
                    ).first
                else { fail("lost an item") }
                try tx.delete(item)
            }
        }
        // Version 1, the same.
        let one = dir + "/v1.kcv"
        try Vault.create(
            path: one, group: "g", slots: slots, format: .version1,
            options: WriteOptions(autoCompact: false, solidMembers: members),
            overwrite: true
        ) { tx in
            for i in 0..<n { try tx.add(attributes: attrs(i, own: false), value: .bytes(value(i))) }
        }
        let v1 = try Vault.open(path: one, secret: secret, mode: .write)
        try v1.commit(options: WriteOptions(autoCompact: false)) { tx in
            for item in v1.items where Int(item.account?.dropFirst() ?? "1").map({ $0 % members == 0 }) ?? false {
                try tx.delete(item.id)
            }
        }
        // A merge: THEIRS added the items, one of each record ThisDeviceOnly (the device-only rule splits them).
        let ours = dir + "/merge-ours.kcv"
        let theirs = dir + "/merge-theirs.kcv"
        try PagedVault.create(path: ours, group: "g", slots: slots, schema: schema, overwrite: true)
        let bytes = readFile(ours)
        unlink(theirs)
        let fd = open(theirs, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0, write(fd, bytes, bytes.count) == bytes.count else { fail("cannot copy \(ours)") }
        close(fd)
        let t = try PagedVault.open(path: theirs, secret: secret, mode: .write, writerID: 2)
        try t.commit(solidMembers: members, autoCompact: false) { tx in
            for i in 0..<n { _ = try tx.add(attributes: attrs(i, own: i % members == 1), value: value(i)) }
        }
        return true
    }
    for name in ["compact", "v1", "merge_ours", "merge_theirs"] {
        let file = dir + "/" + name.split(separator: "_").joined(separator: "-") + ".kcv"
        emit("solid_" + name + "_bytes", Double(fileSize(file)), "bytes", decimals: 0)
    }
}

func runSolidCopy(_ args: ArraySlice<String>) {
    let a = Array(args)
    guard a.count == 2 else { usage() }
    let secret = UnlockSecret.keyFile(SecureBytes(copying: fixtureKeyFile))
    var before = rusage()
    var after = rusage()
    let who = __rusage_who_t(RUSAGE_SELF.rawValue)
    getrusage(who, &before)
    _ = check("write the copy") {
        try PagedVault.open(path: a[0], secret: secret).writeCopy(
            to: a[1],
            keeping: { item in
                guard case .string(let p)? = item.attributes["pdmn"] else { return true }
                return !p.hasSuffix("u")
            })
        return true
    }
    getrusage(who, &after)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    emit(
        "solid_copy_cpu_s",
        seconds(after.ru_utime) + seconds(after.ru_stime) - seconds(before.ru_utime) - seconds(before.ru_stime), "s",
        decimals: 2)
    emit("solid_copy_max_rss_kib", Double(after.ru_maxrss), "KiB", decimals: 0)
}

// MARK: - main

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { usage() }
switch arguments[1] {
case "kdf": runKDF(arguments.dropFirst(2))
case "items": runItems(arguments.dropFirst(2))
case "append": runAppend(arguments.dropFirst(2))
case "solid": runSolid(arguments.dropFirst(2))
case "solid-copy": runSolidCopy(arguments.dropFirst(2))
case "-h", "--help", "help": usage(help: true)
default: fail("unknown command \(arguments[1]); try kcar-bench --help")
}
