import Crafting
import KeyedArchive

/// A case whose one crafted file is `name` (written from `bytes`), handed to kcar with `args`, and refused
/// with exit 4 (the archive and plist areas).
func refusedFile(
    _ case: String, _ attack: String, _ name: String, _ args: [String], env: [String: String] = [:],
    _ bytes: @escaping () -> [UInt8]
) -> HostileCase {
    HostileCase(
        name: `case`, attack: attack, make: { try writeFile($0 + "/" + name, bytes()) }, args: args, env: env,
        exits: [4])
}

/// Hostile inputs for the archive area. Each case is one crafted file and the command handed it.
func archiveCases() -> [HostileCase] {
    let show = ["archive", "show", "a.kca"]
    let convert = ["archive", "convert", "a.kca", "out.plist"]
    // 100 shared definitions, each 500 nested arrays around a reference to the one before: every item within
    // 503 levels, the last definition 50,000 levels deep (100 KB).
    let chain = { ArchiveCrafting.sharedChain(100, levels: 500) }
    let sortKeys = { ArchiveCrafting.sharedDataInSet(dataBytes: 4_000_000, elements: 4_000) }
    return [
        refusedFile(
            "archive/shared-chain-show", "a chain of 100 shared definitions 500 levels each, printed as JSON", "a.kca",
            show + ["--json"], chain),
        refusedFile(
            "archive/shared-chain-convert", "a chain of 100 shared definitions 500 levels each, converted then freed",
            "a.kca",
            convert, chain),
        refusedFile(
            "archive/shared-chain-unknown-tag",
            "a chain of 100 shared definitions 500 levels each, then an unknown tag",
            "a.kca", show
        ) { ArchiveCrafting.sharedChain(100, levels: 500, then: [0xFF]) },
        refusedFile(
            "archive/show-output", "100 KB of shared data used 5,000 times: 666 MB of JSON from 110 KB", "a.kca",
            show
        ) { ArchiveCrafting.sharedDataUses(dataBytes: 100_000, uses: 5_000) },
        refusedFile(
            "archive/sort-keys-convert", "4 MB of shared data in 4,000 set elements: 16 GB of sort keys", "a.kca",
            convert, sortKeys),
        refusedFile(
            "archive/sort-keys-show", "4 MB of shared data in 4,000 set elements, printed", "a.kca", show, sortKeys),
        refusedFile("archive/shared-key", "one 4 MB key shared by 2,000 dictionaries (4 MB)", "a.kca", convert) {
            ArchiveCrafting.sharedKey(keyBytes: 4_000_000, dictionaries: 2_000)
        },
        // An export to NSKeyedArchiver used to build its whole property list as a tree, about 800 bytes per
        // value: 990,000 empty arrays cost 807 MiB. It now builds the plist in flat storage (about 100 bytes per
        // plist object) and refuses a plist of more than VALUES_MAX objects, which import would refuse.
        refusedFile(
            "archive/empty-arrays-convert-nskeyed",
            "990,000 empty arrays (2 MB) converted to an NSKeyedArchiver plist: 2,970,000 plist objects", "a.kca",
            convert + ["--to", "nskeyed"]
        ) { ArchiveCrafting.emptyArrays(990_000) },
        HostileCase(
            name: "archive/empty-arrays-convert-nskeyed-largest",
            attack:
                "333,000 empty arrays (670 KB) converted to an NSKeyedArchiver plist: 999,000 plist objects, just within VALUES_MAX",
            make: { try writeFile($0 + "/a.kca", ArchiveCrafting.emptyArrays(333_000)) },
            args: convert + ["--to", "nskeyed"], exits: [0]),
        refusedFile(
            "archive/nested-sets", "505 nested sets around 990,000 ints (2 MB): each level hashes all again",
            "a.kca", convert
        ) { ArchiveCrafting.nestedSets(levels: 505, values: 990_000) },
        // Sets nested in set elements, each ordered again inside every sort key around it before each set's order
        // was worked out once: these took 47 s, 16 s and 19 s of CPU (the 23 levels are the largest that fit).
        HostileCase(
            name: "archive/nested-sets-sort-keys-show",
            attack:
                "23 levels of sets nested in set elements, sorted (78 bytes): 67,108,788 bytes of sort keys, just within the limit",
            make: { try writeFile($0 + "/a.kca", ArchiveCrafting.setChain(levels: 23, sorted: true)) }, args: show,
            exits: [0]),
        refusedFile(
            "archive/nested-sets-sort-keys-deepest", "510 levels of sets nested in set elements (1.5 KB), converted",
            "a.kca",
            convert
        ) { ArchiveCrafting.setChain(levels: 510) },
        refusedFile(
            "archive/nested-sets-sort-keys-copies",
            "23,809 chains of 20 levels of nested sets (a million items, 1.5 MB), printed",
            "a.kca", show
        ) { ArchiveCrafting.setChains(levels: 20, copies: 23_809) },
        refusedFile(
            "archive/combining-key", "a dictionary key of 200,000 combining marks of two classes in turn (400 KB)",
            "a.kca", show
        ) { ArchiveCrafting.combiningKey(marks: 200_000) }
    ]
}
