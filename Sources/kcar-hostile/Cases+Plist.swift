import Crafting
import KeyedArchive

/// Hostile inputs for the plist area. Each case is one crafted file and the command handed it.
func plistCases() -> [HostileCase] {
    let show = ["archive", "show", "p.plist"]
    let convert = ["archive", "convert", "p.plist", "out.kca"]
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
    // 9,000,000 one-byte UIDs naming one NSNumber (9 MB): 579 MiB to show, 1.15 GiB to convert when the
    // import built a value per UID (it no longer does); and two arrays of 9,900,000 (20 MB): 570 MiB to
    // refuse, the plist reader having built the first whole before the second's refusal.
    let uids = { ArchiveCrafting.uidArraysArchive(arrays: 1, uids: 9_000_000) }
    let twoArrays = { ArchiveCrafting.uidArraysArchive(arrays: 2, uids: 9_900_000) }
    return [
        refusedFile("plist/uid-array-show", "9,000,000 UIDs naming one NSNumber (9 MB)", "p.plist", show, uids),
        refusedFile(
            "plist/uid-array-convert", "9,000,000 UIDs naming one NSNumber (9 MB), converted", "p.plist", convert, uids),
        refusedFile(
            "plist/uid-array-import", "9,000,000 UIDs naming one NSNumber (9 MB), imported", "p.plist", imports,
            env: keychain, uids),
        refusedFile("plist/uid-arrays-show", "two arrays of 9,900,000 UIDs (20 MB)", "p.plist", show, twoArrays),
        refusedFile(
            "plist/aliased-offsets-show", "999,999 table entries at one 4 MB data object", "p.plist", show, aliased),
        refusedFile(
            "plist/aliased-offsets-import", "999,999 table entries at one 4 MB data object, imported", "p.plist",
            imports, env: keychain, aliased),
        refusedFile(
            "plist/overlapping-objects-convert", "400,000 overlapping data objects (2.4 MB each at most)", "p.plist",
            convert, overlapping),
        refusedFile(
            "plist/overlapping-objects-import", "400,000 overlapping data objects, imported", "p.plist", imports,
            env: keychain, overlapping),
        refusedFile("plist/shared-key", "one 4 MB string object, the key of 2,000 dictionaries", "p.plist", show) {
            ArchiveCrafting.sharedKeyPlist(keyBytes: 4_000_000, dictionaries: 2_000)
        },
        refusedFile("plist/combining-key-xml", "an XML plist key of 200,000 combining marks", "p.plist", show, xml),
        refusedFile(
            "plist/combining-key-xml-import", "an XML plist key of 200,000 combining marks, imported", "p.plist",
            imports, env: keychain, xml)
    ]
}
