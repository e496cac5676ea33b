import KeyedArchive

/// Hostile inputs for the archive area (issue 9). Each case is one crafted file and the command handed it.
func archiveCases() -> [HostileCase] {
    func file(_ name: String, _ bytes: @escaping () -> [UInt8]) -> (String) throws -> Void {
        { try writeFile($0 + "/" + name, bytes()) }
    }
    // 3,000 shared definitions, each an array holding a reference to the one before: every item within 4
    // levels and 9 million values expanded, the last definition 6,002 levels deep (17 KB).
    let chain = file("a.kca") { ArchiveCrafting.sharedChain(3_000) }
    return [
        HostileCase(name: "archive/shared-chain-show", attack: "a chain of 3,000 shared definitions, printed as JSON",
                    make: chain, args: ["archive", "show", "a.kca", "--json"], exits: [4]),
        HostileCase(name: "archive/shared-chain-convert", attack: "a chain of 3,000 shared definitions, converted then freed",
                    make: chain, args: ["archive", "convert", "a.kca", "out.plist"], exits: [4]),
        HostileCase(name: "archive/shared-chain-unknown-tag", attack: "a chain of 3,000 shared definitions, then an unknown tag",
                    make: file("a.kca") { ArchiveCrafting.sharedChain(3_000, then: [0xFF]) },
                    args: ["archive", "show", "a.kca"], exits: [4]),
        HostileCase(name: "archive/show-output", attack: "100 KB of shared data used 5,000 times: 666 MB of JSON from 110 KB",
                    make: file("a.kca") { ArchiveCrafting.sharedDataUses(dataBytes: 100_000, uses: 5_000) },
                    args: ["archive", "show", "a.kca"], exits: [4]),
        HostileCase(name: "archive/sort-keys-convert", attack: "4 MB of shared data in 4,000 set elements: 16 GB of sort keys",
                    make: file("a.kca") { ArchiveCrafting.sharedDataInSet(dataBytes: 4_000_000, elements: 4_000) },
                    args: ["archive", "convert", "a.kca", "out.plist"], exits: [4]),
        HostileCase(name: "archive/sort-keys-show", attack: "4 MB of shared data in 4,000 set elements, printed",
                    make: file("a.kca") { ArchiveCrafting.sharedDataInSet(dataBytes: 4_000_000, elements: 4_000) },
                    args: ["archive", "show", "a.kca"], exits: [4]),
        HostileCase(name: "archive/shared-key", attack: "one 4 MB key shared by 2,000 dictionaries (4 MB)",
                    make: file("a.kca") { ArchiveCrafting.sharedKey(keyBytes: 4_000_000, dictionaries: 2_000) },
                    args: ["archive", "convert", "a.kca", "out.plist"], exits: [4]),
        HostileCase(name: "archive/nested-sets", attack: "505 nested sets around 990,000 ints (2 MB): each level hashes all again",
                    make: file("a.kca") { ArchiveCrafting.nestedSets(levels: 505, values: 990_000) },
                    args: ["archive", "convert", "a.kca", "out.plist"], exits: [4]),
        HostileCase(name: "archive/combining-key", attack: "a dictionary key of 200,000 combining marks of two classes in turn (400 KB)",
                    make: file("a.kca") { ArchiveCrafting.combiningKey(marks: 200_000) },
                    args: ["archive", "show", "a.kca"], exits: [4]),
    ]
}
