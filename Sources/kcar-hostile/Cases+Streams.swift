import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile inputs on standard input (`-` for a vault, an archive, an item file): the same
/// limits and the same refusals as for a file of those bytes.
func streamsCases() -> [HostileCase] {
    let nested =
        Array("{\"format\": \"kcar-items\", \"version\": 1, \"x\": ".utf8)
        + [UInt8](repeating: UInt8(ascii: "["), count: 2_000_000)
    return [
        HostileCase(
            name: "streams/zeros-vault-stdin",
            attack: "2 MB of zeros piped to list - as a vault (spooled, then refused)",
            make: { try writeFile($0 + "/k.key", Recipes.keyFile) },
            args: ["list", "-", "--key-file", "k.key"], stdin: [UInt8](repeating: 0, count: 2_000_000), exits: [4]),
        HostileCase(
            name: "streams/zeros-vault-stdin-verify", attack: "2 MB of zeros piped to verify - --no-key",
            make: { _ in }, args: ["verify", "-", "--no-key"], stdin: [UInt8](repeating: 0, count: 2_000_000),
            exits: [4]),
        HostileCase(
            name: "streams/zeros-archive-stdin", attack: "2 MB of zeros piped to archive show -",
            make: { _ in }, args: ["archive", "show", "-"], stdin: [UInt8](repeating: 0, count: 2_000_000), exits: [4]),
        HostileCase(
            name: "streams/nested-item-file-stdin",
            attack: "an item file whose unknown member opens 2,000,000 arrays, piped to pack --items -",
            // The key exists: item files are read as a stream, after the key, so the nesting is what is refused.
            make: { try writeFile($0 + "/k.key", Recipes.keyFile) },
            args: ["pack", "out.kcv", "--items", "-", "--key-file", "k.key"], stdin: nested, exits: [4]),
        // Found with item 3: archive show and convert opened their input blocking, so a FIFO hung them.
        HostileCase(
            name: "streams/fifo-archive-show", attack: "a FIFO (no writer ever comes) as archive show's FILE",
            make: { guard mkfifo($0 + "/a.kca", 0o600) == 0 else { throw HarnessError.io("mkfifo") } },
            args: ["archive", "show", "a.kca"], exits: [15])
    ]
}
