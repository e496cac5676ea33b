import KeyedArchive

/// Hostile inputs for the plist area (issue 9). Each case is one crafted file and the command handed it.
func plistCases() -> [HostileCase] {
    let show = ["archive", "show", "p.plist"], convert = ["archive", "convert", "p.plist", "out.kca"]
    let imports = ["import", "--nskeyed", "p.plist", "--class", "genp", "--account", "a", "--service", "s"]
    let keychain = ["KCAR_KEYCHAIN": "kc"]
    // 999,999 offset-table entries at one 4 MB data object, all in the top array (12 MB).
    let aliased = { ArchiveCrafting.aliasedPlist(dataBytes: 4_000_000, aliases: 999_999) }
    // 400,000 data objects, each 6 bytes after the previous one and running to the end of one 2.4 MB region.
    let overlapping = { ArchiveCrafting.overlappingPlist(count: 400_000) }
    let xml = {
        let key = "a" + ArchiveCrafting.combiningMarks(200_000)
        return Array("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>\(key)</key><true/></dict></plist>".utf8)
    }
    return [
        refusedFile("plist/aliased-offsets-show", "999,999 table entries at one 4 MB data object", "p.plist", show, aliased),
        refusedFile("plist/aliased-offsets-import", "999,999 table entries at one 4 MB data object, imported", "p.plist",
                    imports, env: keychain, aliased),
        refusedFile("plist/overlapping-objects-convert", "400,000 overlapping data objects (2.4 MB each at most)", "p.plist",
                    convert, overlapping),
        refusedFile("plist/overlapping-objects-import", "400,000 overlapping data objects, imported", "p.plist", imports,
                    env: keychain, overlapping),
        refusedFile("plist/shared-key", "one 4 MB string object, the key of 2,000 dictionaries", "p.plist", show) {
            ArchiveCrafting.sharedKeyPlist(keyBytes: 4_000_000, dictionaries: 2_000)
        },
        refusedFile("plist/combining-key-xml", "an XML plist key of 200,000 combining marks", "p.plist", show, xml),
        refusedFile("plist/combining-key-xml-import", "an XML plist key of 200,000 combining marks, imported", "p.plist",
                    imports, env: keychain, xml),
    ]
}
