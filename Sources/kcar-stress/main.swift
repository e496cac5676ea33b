import TestSupport
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

// A writer for crash-consistency tests: commits seeded random changes to a vault until killed.
//   kcar-stress VAULT KEYFILE SEED
// Before each change it prints `pending GEN DIGEST` (the state the change leads to), after it `ack GEN`; the
// test kills it with SIGKILL at a random moment and checks that the vault holds the last acknowledged state
// or the pending one, and nothing else. Every 7th change is a compaction, every 11th a key-slot change.

func emit(_ s: String) {
    let line = s + "\n"
    _ = line.withCString { write(1, $0, strlen($0)) }
}

// A writer for the concurrency test, run beside others:
//   kcar-stress --batches VAULT KEYFILE WRITER COMMITS ITEMS
// Commit c (1...COMMITS) puts ITEMS items of service w<WRITER> holding batchValue(WRITER, c, item), or deletes
// them all when batchDeletes(c); it prints `ack WRITER c` once the commit returned.
func batches(_ args: [String]) -> Never {
    guard args.count == 7, let writer = Int(args[4]), let commits = Int(args[5]), let items = Int(args[6]) else {
        emit("usage: kcar-stress --batches VAULT KEYFILE WRITER COMMITS ITEMS")
        exit(2)
    }
    do {
        let vault = try Vault.open(path: args[2], secret: .keyFile(readKey(args[3])), mode: .write, lockTimeout: 120)
        for c in 1...commits {
            try commitBatch(vault, writer: writer, commit: c, items: items)
            emit("ack \(writer) \(c)")
        }
        exit(0)
    } catch {
        emit("error \(error)")
        exit(1)
    }
}

/// The same loop on a version 2 vault (SPEC.md Part 4): commits (delta, or a fold every 5th change, of 300
/// items), compactions, slot changes.
///   kcar-stress --paged VAULT KEYFILE SEED
func paged(_ args: [String]) -> Never {
    guard args.count == 5, let seed = UInt64(args[4]) else {
        emit("usage: kcar-stress --paged VAULT KEYFILE SEED")
        exit(2)
    }
    let secret = readKey(args[3])
    do {
        let vault = try PagedVault.open(path: args[2], secret: .keyFile(secret), mode: .write)
        var items: [String: Item] = [:]
        func reload() throws {
            items = [:]
            try vault.forEachItem {
                items[$0.account ?? ""] = $0
                return true
            }
        }
        try reload()
        var model: [String: [UInt8]] = [:]
        for (account, item) in items { model[account] = try vault.read(item) }
        try stressLoop(
            seed: seed, secret: secret, model: model, foldEvery: 5, generation: { vault.generation },
            compact: { try vault.compact() },
            changeSlots: { add, remove in
                try vault.changeSlots(remove: [], add: add)
                try vault.changeSlots(remove: remove(vault.header.slots.count), add: [])
            }
        ) { plan in
            // No automatic compaction: the loop expects one generation per commit (it compacts on its own steps).
            try vault.commit(autoCompact: false) { tx in
                for (account, value) in plan {
                    switch (items[account], value) {
                    case (let e?, nil): try tx.delete(e)
                    case (nil, nil): break
                    case (let e?, let v?): try tx.update(e, value: v)
                    case (nil, let v?): _ = try tx.add(attributes: stressAttributes(account), value: v)
                    }
                }
            }
            try reload()
        }
    } catch {
        emit("error \(error)")
        exit(1)
    }
}

func readKey(_ path: String) -> SecureBytes {
    let fd = open(path, O_RDONLY)
    var key = [UInt8](repeating: 0, count: 32)
    guard fd >= 0, read(fd, &key, 32) == 32 else { exit(2) }
    close(fd)
    return SecureBytes(copying: key)
}

func stressAttributes(_ account: String) -> Attributes {
    var a = Attributes()
    a[AttributeName.service] = .string("stress")
    a[AttributeName.account] = .string(account)
    return a
}

/// The writer's loop, for either format: before each change `pending GEN DIGEST`, after it `ack GEN`. Every
/// 7th change is a compaction, every 11th a key-slot change (one added, then removed); the others commit 1-4
/// puts and deletes of 12 accounts (a tenth of the values 100-300 KB), or, every `foldEvery`th, 300 of 400.
func stressLoop(
    seed: UInt64, secret: SecureBytes, model start: [String: [UInt8]], foldEvery: Int?, generation: () -> UInt64,
    compact: () throws -> Void,
    changeSlots: ([SlotSecret], (Int) -> [Int]) throws -> Void, commit: ([(String, [UInt8]?)]) throws -> Void
) throws -> Never {
    var rng = SplitMix64(state: seed)
    var model = start
    var step = 0
    while true {
        step += 1
        let next = generation() + 1
        if step % 7 == 0 {
            emit("pending \(next) \(stateDigest(model))")
            try compact()
        } else if step % 11 == 0 {
            emit("pending \(next - 1) \(stateDigest(model))")  // a slot change keeps the generation
            try changeSlots([.keyFile(secret)]) { [$0 - 1] }
        } else {
            var after = model
            var plan: [(String, [UInt8]?)] = []
            let fold = foldEvery.map { step % $0 == 0 } ?? false
            for _ in 0..<(fold ? 300 : 1 + Int(rng.next() % 4)) {
                let account = "a\(rng.next() % (fold ? 400 : 12))"
                guard !plan.contains(where: { $0.0 == account }) else { continue }
                if rng.next() % 4 == 0 {
                    plan.append((account, nil))
                    after[account] = nil
                } else {
                    let size =
                        !fold && rng.next() % 10 == 0 ? 200_000 + Int(rng.next() % 100_000) : Int(rng.next() % 2000)
                    // Cheap to make (the time between changes should be short): a fill byte and a random tail.
                    var value = [UInt8](repeating: UInt8(truncatingIfNeeded: rng.next()), count: size)
                    for i in stride(from: 0, to: size, by: 4096) { value[i] = UInt8(truncatingIfNeeded: rng.next()) }
                    plan.append((account, value))
                    after[account] = value
                }
            }
            emit("pending \(next) \(stateDigest(after))")
            try commit(plan)
            model = after
        }
        emit("ack \(generation())")
    }
}

let args = CommandLine.arguments
if args.count > 1, args[1] == "--batches" { batches(args) }
if args.count > 1, args[1] == "--paged" { paged(args) }
guard args.count == 4, let seed = UInt64(args[3]) else {
    emit("usage: kcar-stress VAULT KEYFILE SEED")
    exit(2)
}
do {
    let secret = readKey(args[2])
    let vault = try Vault.open(path: args[1], secret: .keyFile(secret), mode: .write)
    var model: [String: [UInt8]] = [:]
    for item in vault.items { model[item.account ?? ""] = try vault.read(item) }
    try stressLoop(
        seed: seed, secret: secret, model: model, foldEvery: nil, generation: { vault.generation },
        compact: { try vault.compact() },
        changeSlots: { add, remove in
            try vault.changeSlots(remove: [], add: add)
            try vault.changeSlots(remove: remove(vault.header.slots.count), add: [])
        }
    ) { plan in
        try vault.commit(options: WriteOptions(autoCompact: false)) { tx in
            for (account, value) in plan {
                let existing = tx.items.first { $0.account == account }
                switch (existing, value) {
                case (let e?, nil): try tx.delete(e.id)
                case (nil, nil): break
                case (let e?, let v?): try tx.update(e.id, value: .bytes(v))
                case (nil, let v?): try tx.add(attributes: stressAttributes(account), value: .bytes(v))
                }
            }
        }
    }
} catch {
    emit("error \(error)")
    exit(1)
}
