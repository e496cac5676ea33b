#if canImport(Glibc)
import Glibc
#endif
import FixtureRecipes
import VaultFormat

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
    let fd = open(args[3], O_RDONLY)
    var key = [UInt8](repeating: 0, count: 32)
    guard fd >= 0, read(fd, &key, 32) == 32 else { exit(2) }
    close(fd)
    do {
        let vault = try Vault.open(path: args[2], secret: .keyFile(SecureBytes(copying: key)), mode: .write, lockTimeout: 120)
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

let args = CommandLine.arguments
if args.count > 1, args[1] == "--batches" { batches(args) }
guard args.count == 4, let seed = UInt64(args[3]) else {
    emit("usage: kcar-stress VAULT KEYFILE SEED")
    exit(2)
}
let path = args[1]
let fd = open(args[2], O_RDONLY)
var key = [UInt8](repeating: 0, count: 32)
guard fd >= 0, read(fd, &key, 32) == 32 else { exit(2) }
close(fd)
let secret = SecureBytes(copying: key)
var rng = SplitMix64(state: seed)

do {
    let vault = try Vault.open(path: path, secret: .keyFile(secret), mode: .write)
    var model: [String: [UInt8]] = [:]
    for item in vault.items { model[item.account ?? ""] = try vault.read(item) }
    var step = 0
    while true {
        step += 1
        let generation = vault.generation + 1
        if step % 7 == 0 {
            emit("pending \(generation) \(stateDigest(model))")
            try vault.compact()
        } else if step % 11 == 0 {
            emit("pending \(generation - 1) \(stateDigest(model))")  // a slot change keeps the generation
            try vault.changeSlots(remove: [], add: [.keyFile(secret)])
            try vault.changeSlots(remove: [vault.header.slots.count - 1], add: [])
        } else {
            var next = model
            var plan: [(String, [UInt8]?)] = []
            for _ in 0..<(1 + rng.next() % 4) {
                let account = "a\(rng.next() % 12)"
                if rng.next() % 4 == 0 {
                    plan.append((account, nil))
                    next[account] = nil
                } else {
                    let size = rng.next() % 10 == 0 ? 200_000 + Int(rng.next() % 100_000) : Int(rng.next() % 2000)
                    // Cheap to make (the time between changes should be short): a fill byte and a random tail.
                    var value = [UInt8](repeating: UInt8(truncatingIfNeeded: rng.next()), count: size)
                    for i in stride(from: 0, to: size, by: 4096) { value[i] = UInt8(truncatingIfNeeded: rng.next()) }
                    plan.append((account, value))
                    next[account] = value
                }
            }
            emit("pending \(generation) \(stateDigest(next))")
            try vault.commit(options: WriteOptions(autoCompact: false)) { tx in
                for (account, value) in plan {
                    let existing = tx.items.first { $0.account == account }
                    switch (existing, value) {
                    case (let e?, nil): try tx.delete(e.id)
                    case (nil, nil): break
                    case (let e?, let v?): try tx.update(e.id, value: .bytes(v))
                    case (nil, let v?):
                        var a = Attributes()
                        a[AttributeName.service] = .string("stress")
                        a[AttributeName.account] = .string(account)
                        try tx.add(attributes: a, value: .bytes(v))
                    }
                }
            }
            model = next
        }
        emit("ack \(vault.generation)")
    }
} catch {
    emit("error \(error)")
    exit(1)
}
