// What a service and a deploy tool do with vault files, through VaultFormat's public API only. Each step says
// what it checks; the first that does not hold ends the program with exit 1 and its name.
import Foundation
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

// MARK: Steps

nonisolated(unsafe) var stepName = ""

func step(_ name: String, _ body: () throws -> Void) {
    stepName = name
    do { try body() } catch { fail("unexpected error: \(error)") }
    print("ok   \(name)")
}

func step(_ name: String, _ body: () async throws -> Void) async {
    stepName = name
    do { try await body() } catch { fail("unexpected error: \(error)") }
    print("ok   \(name)")
}

func fail(_ why: String) -> Never {
    print("FAIL \(stepName): \(why)")
    exit(1)
}

func expect(_ condition: Bool, _ why: @autoclosure () -> String) {
    if !condition { fail(why()) }
}

/// The error `body` throws, which must be a VaultError of `code`.
@discardableResult
func expectError(_ code: VaultError.Code, _ body: () throws -> Void) -> VaultError {
    do {
        try body()
    } catch let e as VaultError {
        expect(e.code == code, "expected \(code), got \(e.code): \(e)")
        return e
    } catch {
        fail("expected VaultError \(code), got \(error)")
    }
    fail("expected VaultError \(code), nothing was thrown")
}

func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    expect(fd >= 0, "cannot write \(path)")
    expect(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count, "short write to \(path)")
    close(fd)
}

func randomBytes(_ n: Int) -> [UInt8] {
    var g = SystemRandomNumberGenerator()
    return (0..<n).map { _ in UInt8.random(in: 0...255, using: &g) }
}

func key(_ service: String, _ account: String) -> Attributes {
    var a = Attributes()
    a[AttributeName.service] = .string(service)
    a[AttributeName.account] = .string(account)
    return a
}

func value(_ vault: Vault, _ service: String, _ account: String) throws -> [UInt8]? {
    guard let item = try vault.items(class: .genericPassword, key: key(service, account)).first else { return nil }
    return try vault.read(item)
}

// MARK: The tasks

let dir = NSTemporaryDirectory() + "kcar-consumer-\(getpid())"
try? FileManager.default.removeItem(atPath: dir)
expect(mkdir(dir, 0o700) == 0, "cannot make \(dir)")
defer { try? FileManager.default.removeItem(atPath: dir) }
let vaultPath = dir + "/secrets.kcv"

// An age identity and its recipient (age-keygen's format; the pair checked with age-keygen -y).
let identity = "AGE-SECRET-KEY-13W6UT6Z3H72N3YY9MXJMPPMN2K0KQGW863HPH258UCUXKLK3S3RQA32XH3"
let recipient = "age12v6newahxev3mukn7tmr2ycvu5wa0tzkf2yuwret3j8mjg49mggqnawwlu"

step("keys load from a key file, a passphrase file and an age identity file, with the CLI's checks") {
    writeFile(dir + "/vault.key", randomBytes(32))
    writeFile(dir + "/passphrase", Array("correct horse battery staple\n".utf8))
    writeFile(dir + "/identity.txt", Array("# created: 2026-12-06\n# public key: \(recipient)\n\(identity)\n".utf8))
    _ = try UnlockSecret.keyFile(atPath: dir + "/vault.key")
    _ = try UnlockSecret.passphraseFile(atPath: dir + "/passphrase")
    expect(try UnlockSecret.identities(atPath: dir + "/identity.txt").count == 1, "one identity")
    writeFile(dir + "/short.key", randomBytes(31))
    let short = expectError(.invalidArgument) { _ = try UnlockSecret.keyFile(atPath: dir + "/short.key") }
    expect(short.description.contains("short.key"), "the message names the file: \(short)")
    expectError(.unsafeFile) { _ = try UnlockSecret.keyFile(atPath: dir) }
    let missing = expectError(.io) { _ = try UnlockSecret.keyFile(atPath: dir + "/none.key") }
    expect(missing.errnoCode == ENOENT, "a missing key file is ENOENT, not \(String(describing: missing.errnoCode))")
    expectError(.invalidArgument) { _ = try SlotSecret.ageRecipient("age1notarecipient") }
}

step("a new vault is in the current format, with a slot per secret and an indexed attribute") {
    let keyBytes = try SecureBytes.keyFile(atPath: dir + "/vault.key")
    let schema = IndexSchema(classes: IndexSchema.primaryKeys.classes, indexed: ["@team"])
    try Vault.create(
        path: vaultPath, group: "com.example.app",
        slots: [
            .keyFile(keyBytes), .passphrase(SecureBytes(copying: Array("correct horse battery staple".utf8)), .minimum),
            try .ageRecipient(recipient)
        ],
        format: .current(schema: schema)
    ) { _ in }
    var st = stat()
    expect(stat(vaultPath, &st) == 0 && st.st_mode & 0o777 == 0o600, "the vault is mode 0600")
    for secret in [
        try UnlockSecret.keyFile(atPath: dir + "/vault.key"),
        try UnlockSecret.passphraseFile(atPath: dir + "/passphrase"),
        try UnlockSecret.identities(atPath: dir + "/identity.txt")[0]
    ] {
        let v = try Vault.open(path: vaultPath, secret: secret)
        expect(v.formatVersion == 2, "format \(v.formatVersion), not 2")
        expect(v.versioning != nil && v.itemIndex != nil, "version 2 has history and an index")
    }
}

let secret = try UnlockSecret.keyFile(atPath: dir + "/vault.key")
var firstModified: AttributeValue?

step("a deploy writes its items in one commit, with dates stamped; a second item with a key is refused") {
    let vault = try Vault.open(path: vaultPath, secret: secret, mode: .write, itemsOnDemand: true)
    try vault.commit(options: WriteOptions(stampsDates: true)) { tx in
        for (i, account) in ["app", "admin", "reporting"].enumerated() {
            var a = key("postgres", account)
            a["@team"] = .string(i == 0 ? "backend" : "data")
            try tx.add(attributes: a, value: .bytes(Array("pw-\(account)-1".utf8)))
        }
    }
    let app = try vault.itemIndex!.items(class: .genericPassword, key: key("postgres", "app"))
    expect(app.count == 1, "one postgres/app, found \(app.count)")
    guard case .date(let created)? = app[0].attributes[AttributeName.creationDate],
        case .date(let modified)? = app[0].attributes[AttributeName.modificationDate]
    else { fail("no dates stamped: \(app[0].attributes)") }
    let now = Int64(Date().timeIntervalSince1970 * 1e9)
    expect(abs(now - created) < 60_000_000_000 && created == modified, "the dates are the commit's time")
    firstModified = app[0].attributes[AttributeName.modificationDate]
    let refused = expectError(.exists) {
        try vault.commit { tx in try tx.add(attributes: key("postgres", "app"), value: .bytes([1])) }
    }
    expect(refused.item == app[0].id, "the refusal names the item that has the key")
    expect(try vault.itemIndex!.items(class: .genericPassword, key: key("postgres", "app")).count == 1, "no second")
}

step("a replace on purpose keeps the id and the creation date, stamps the modification, keeps the old value") {
    let vault = try Vault.open(path: vaultPath, secret: secret, mode: .write, itemsOnDemand: true)
    let before = try vault.items(class: .genericPassword, key: key("postgres", "app"))[0]
    try vault.commit(options: WriteOptions(stampsDates: true)) { tx in
        var a = key("postgres", "app")
        a["@team"] = .string("backend")
        try tx.add(attributes: a, value: .bytes(Array("pw-app-2".utf8)), ifKeyExists: .replace)
    }
    let after = try vault.items(class: .genericPassword, key: key("postgres", "app"))
    expect(after.count == 1 && after[0].id == before.id, "replaced in place")
    expect(try vault.read(after[0]) == Array("pw-app-2".utf8), "the new value")
    expect(
        after[0].attributes[AttributeName.creationDate] == before.attributes[AttributeName.creationDate],
        "the creation date is kept")
    expect(after[0].attributes[AttributeName.modificationDate] != firstModified, "the modification date moved")
    let kept = try vault.versioning!.keptVersions(of: before.id)
    expect(kept.count == 1, "one kept version, not \(kept.count)")
    expect(try vault.versioning!.read(kept[0].item) == Array("pw-app-1".utf8), "the old value is kept")
}

step("lookups by key and by indexed attribute, with the items on demand") {
    let vault = try Vault.open(path: vaultPath, secret: secret, itemsOnDemand: true)
    expect(try value(vault, "postgres", "admin") == Array("pw-admin-1".utf8), "postgres/admin")
    expect(try value(vault, "postgres", "nobody") == nil, "no postgres/nobody")
    let data = try vault.itemIndex!.items(attribute: "@team", equals: .string("data"))
    expect(Set(data.compactMap { $0.account }) == ["admin", "reporting"], "two items of team data")
}

await step("64 tasks share one SharedVault: concurrent reads, a commit beside them, then close()") {
    let shared = try SharedVault(path: vaultPath, secret: secret, mode: .write, readers: 8)
    try await withThrowingTaskGroup(of: Bool.self) { group in
        for i in 0..<64 {
            group.addTask {
                let account = ["app", "admin", "reporting"][i % 3]
                let v = try await shared.async.value(class: .genericPassword, key: key("postgres", account))
                return v != nil && v!.starts(with: Array("pw-\(account)-".utf8))
            }
        }
        group.addTask {
            try await shared.async.commit { tx in
                try tx.add(attributes: key("redis", "cache"), value: .bytes(Array("pw-cache-1".utf8)))
            }
            return true
        }
        for try await ok in group { expect(ok, "a task read a wrong value") }
    }
    expect(
        try await shared.async.value(class: .genericPassword, key: key("redis", "cache")) == Array("pw-cache-1".utf8),
        "the commit is seen by the readers")
    shared.close()
    expectError(.closed) { _ = try shared.value(class: .genericPassword, key: key("redis", "cache")) }
}

step("a write lock is held only while a change runs, as OpenMode says") {
    let a = try Vault.open(path: vaultPath, secret: secret, mode: .write, lockTimeout: 0.2)
    let b = try Vault.open(path: vaultPath, secret: secret, mode: .write, lockTimeout: 0.2)
    try b.commit { tx in try tx.add(attributes: key("b", "between"), value: .bytes([2])) }
    try a.commit { _ in
        // Inside a's commit the exclusive lock is held: b waits its timeout and gives up.
        expectError(.lockTimeout) {
            try b.commit { tx in try tx.add(attributes: key("b", "inside"), value: .bytes([3])) }
        }
    }
    try a.refresh()
    expect(a.items.contains { $0.service == "b" && $0.account == "between" }, "a sees b's commit after refresh()")
}

step("errors name the file and say what happened; a rekey elsewhere is told from a wrong key") {
    let wrong = expectError(.wrongKey) {
        _ = try Vault.open(path: vaultPath, secret: .keyFile(SecureBytes(copying: randomBytes(32))))
    }
    expect(
        wrong.path == vaultPath && wrong.localizedDescription.contains(vaultPath),
        "named: \(wrong.localizedDescription)")
    expect(!wrong.localizedDescription.contains("error 1"), "a message, not a number: \(wrong.localizedDescription)")
    let missing = expectError(.io) { _ = try Vault.open(path: dir + "/none.kcv", secret: secret) }
    expect(missing.errnoCode == ENOENT && missing.localizedDescription.contains("none.kcv"), "\(missing)")
    writeFile(dir + "/not-a-vault.kcv", Array("hello".utf8))
    expectError(.notAVault) { _ = try Vault.open(path: dir + "/not-a-vault.kcv", secret: secret) }
    expectError(.invalidArgument) {
        _ = try Vault.open(path: vaultPath, secret: .keyFile(SecureBytes(copying: [1, 2])))
    }

    let service = try Vault.open(path: vaultPath, secret: secret, itemsOnDemand: true)
    try FileManager.default.copyItem(atPath: vaultPath, toPath: dir + "/before-rekey.kcv")
    let deploy = try Vault.open(path: vaultPath, secret: secret, mode: .write)
    let newKey = randomBytes(32)
    try deploy.rekey(slots: [.keyFile(SecureBytes(copying: newKey))])
    let replaced = expectError(.replaced) { try service.refresh() }
    expect(replaced.path == vaultPath, "the rekey error names the vault")
    expect(
        try Vault.open(path: vaultPath, secret: .keyFile(SecureBytes(copying: newKey))).verify().problems.isEmpty,
        "verifies")
    // Back to the vault the rest of the program opens with the key file.
    _ = rename(dir + "/before-rekey.kcv", vaultPath)
}

step("history: an item's kept version is restored") {
    let vault = try Vault.open(path: vaultPath, secret: secret, mode: .write, itemsOnDemand: true)
    let app = try vault.items(class: .genericPassword, key: key("postgres", "app"))[0]
    let kept = try vault.versioning!.keptVersions(of: app.id)
    try vault.versioning!.restore(kept[0])
    expect(try value(vault, "postgres", "app") == Array("pw-app-1".utf8), "restored")
}

step("two copies changed apart merge: each side's change is in the result") {
    let base = dir + "/base.kcv"
    let theirs = dir + "/theirs.kcv"
    try FileManager.default.copyItem(atPath: vaultPath, toPath: base)
    try FileManager.default.copyItem(atPath: vaultPath, toPath: theirs)
    let ours = try Vault.open(path: vaultPath, secret: secret, mode: .write)
    try ours.commit { tx in try tx.add(attributes: key("ours", "x"), value: .bytes([1])) }
    let their = try Vault.open(path: theirs, secret: secret, mode: .write)
    try their.commit { tx in try tx.add(attributes: key("theirs", "y"), value: .bytes([2])) }
    let report = try ours.versioning!.merge(
        base: try Vault.open(path: base, secret: secret).versioning,
        theirs: try Vault.open(path: theirs, secret: secret).versioning!)
    expect(report.taken == 1 && report.conflicts == 0, "\(report)")
    expect(try value(ours, "ours", "x") == [1] && value(ours, "theirs", "y") == [2], "both sides' items")
    expect(ours.verify().problems.isEmpty, "the merge verifies")
}

step("a version 1 vault upgrades in place to the current format") {
    let old = dir + "/old.kcv"
    try Vault.create(
        path: old, group: "legacy", slots: [.keyFile(try SecureBytes.keyFile(atPath: dir + "/vault.key"))],
        format: .version1
    ) { tx in
        try tx.add(attributes: key("legacy", "one"), value: .bytes(Array("v1".utf8)))
    }
    let vault = try Vault.open(path: old, secret: secret, mode: .write)
    expect(vault.formatVersion == 1 && vault.versioning == nil, "made as version 1")
    try vault.upgrade()
    expect(vault.formatVersion == 2 && vault.versioning != nil, "version 2 after upgrade()")
    expect(try Vault.open(path: old, secret: secret).formatVersion == 2, "on disk too")
    expect(try value(vault, "legacy", "one") == Array("v1".utf8), "the item is kept")
}

print("every task done through VaultFormat's public API")
