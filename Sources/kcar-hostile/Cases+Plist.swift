import KeyedArchive

/// Hostile inputs for the plist area (issue 9). Each case is one crafted file and the command handed it.
func plistCases() -> [HostileCase] {
    func file(_ name: String, _ bytes: @escaping () -> [UInt8]) -> (String) throws -> Void {
        { try writeFile($0 + "/" + name, bytes()) }
    }
    // 999,999 offset-table entries at one 4 MB data object, all in the top array (12 MB).
    let aliased = file("p.plist") { ArchiveCrafting.aliasedPlist(dataBytes: 4_000_000, aliases: 999_999) }
    // 400,000 data objects, each 6 bytes after the previous one and running to the end of one 2.4 MB region.
    let overlapping = file("p.plist") { ArchiveCrafting.overlappingPlist(count: 400_000) }
    let longKey = "a" + ArchiveCrafting.combiningMarks(200_000)
    let xml = file("p.plist") {
        Array("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>\(longKey)</key><true/></dict></plist>".utf8)
    }
    let keychain = ["KCAR_KEYCHAIN": "kc"]
    let item = ["--class", "genp", "--account", "a", "--service", "s"]
    return [
        HostileCase(name: "plist/aliased-offsets-show", attack: "999,999 table entries at one 4 MB data object",
                    make: aliased, args: ["archive", "show", "p.plist"], exits: [4]),
        HostileCase(name: "plist/aliased-offsets-import", attack: "999,999 table entries at one 4 MB data object, imported",
                    make: aliased, args: ["import", "--nskeyed", "p.plist"] + item, env: keychain, exits: [4]),
        HostileCase(name: "plist/overlapping-objects-convert", attack: "400,000 overlapping data objects (2.4 MB each at most)",
                    make: overlapping, args: ["archive", "convert", "p.plist", "out.kca"], exits: [4]),
        HostileCase(name: "plist/overlapping-objects-import", attack: "400,000 overlapping data objects, imported",
                    make: overlapping, args: ["import", "--nskeyed", "p.plist"] + item, env: keychain, exits: [4]),
        HostileCase(name: "plist/shared-key", attack: "one 4 MB string object, the key of 2,000 dictionaries",
                    make: file("p.plist") { ArchiveCrafting.sharedKeyPlist(keyBytes: 4_000_000, dictionaries: 2_000) },
                    args: ["archive", "show", "p.plist"], exits: [4]),
        HostileCase(name: "plist/combining-key-xml", attack: "an XML plist key of 200,000 combining marks",
                    make: xml, args: ["archive", "show", "p.plist"], exits: [4]),
        HostileCase(name: "plist/combining-key-xml-import", attack: "an XML plist key of 200,000 combining marks, imported",
                    make: xml, args: ["import", "--nskeyed", "p.plist"] + item, env: keychain, exits: [4]),
    ]
}
