import Foundation
import TestSupport
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

// Writes Fixtures/ from the recipes (seeded, deterministic) and the SPEC.md test vector.
// usage: kcar-fixtures [REPO_ROOT]   (default: .)
let root = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "."

func write(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
    guard fd >= 0, bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress!, $0.count) }) == bytes.count else {
        fatalError("cannot write \(path)")
    }
    close(fd)
}

func mkdirs(_ path: String) {
    var p = ""
    for c in path.split(separator: "/", omittingEmptySubsequences: false) {
        p += (p.isEmpty && path.hasPrefix("/") ? "" : (p.isEmpty ? "" : "/")) + c
        if !p.isEmpty { mkdir(p, 0o755) }
    }
}

mkdirs("\(root)/Fixtures/keys")
mkdirs("\(root)/Fixtures/vault/malformed")
write("\(root)/Fixtures/keys/keyfile.key", Recipes.keyFile)
write("\(root)/Fixtures/keys/other.key", Recipes.otherKeyFile)
write("\(root)/Fixtures/keys/x25519.key", Recipes.x25519Secret)
write(
    "\(root)/Fixtures/keys/x25519.key.pub",
    Array((Hex.encode(X25519.publicKey(secretKey: SecureBytes(copying: Recipes.x25519Secret))) + "\n").utf8))
write("\(root)/Fixtures/keys/passphrase.txt", Array((Recipes.passphrase + "\n").utf8))

var oneItem: [UInt8] = []
for g in Recipes.goldens {
    let b = try Recipes.bytes(of: g)
    if g.name == "one-item" { oneItem = b }
    write("\(root)/Fixtures/vault/\(g.name).kcv", b)
    print("vault/\(g.name).kcv  \(b.count) bytes")
}
/// Writes each malformed vault into `dir` and their MANIFEST.tsv.
func writeMalformed(_ dir: String, _ list: [Malformed]) throws {
    var manifest = "# name  stage  expected-error  what\n"
    for m in list {
        write("\(root)/\(dir)/\(m.name).kcv", try m.build())
        manifest += "\(m.name)\t\(m.stage.rawValue)\t\(m.expect.rawValue)\t\(m.summary)\n"
    }
    write("\(root)/\(dir)/MANIFEST.tsv", Array(manifest.utf8))
    print("\(dir): \(list.count) files")
}
try writeMalformed("Fixtures/vault/malformed", Recipes.malformed)

// Golden and malformed vaults of format version 2 (SPEC.md Part 4, released 2026-12-02): pinned, as above.
mkdirs("\(root)/Fixtures/vault-v2/malformed")
var expectedV2: [(String, RecipesV2.Expected)] = []
for g in RecipesV2.goldens {
    let (b, e) = try RecipesV2.build(g)
    write("\(root)/Fixtures/vault-v2/\(g.name).kcv", b)
    expectedV2.append((g.name, e))
    print("vault-v2/\(g.name).kcv  \(b.count) bytes")
}
write("\(root)/Fixtures/vault-v2/EXPECTED.json", Array(RecipesV2.expectedJSON(expectedV2).utf8))
try writeMalformed("Fixtures/vault-v2/malformed", RecipesV2.malformed)

// The SPEC.md test vector: the hex of one-item.kcv, 32 bytes a line.
let specPath = "\(root)/SPEC.md"
let spec = String(decoding: try Recipes.read(specPath), as: UTF8.self)
let marker = "<!-- vector:one-item.kcv -->\n```\n"
if let start = spec.range(of: marker), let end = spec.range(of: "```", range: start.upperBound..<spec.endIndex) {
    var hex = ""
    var i = 0
    while i < oneItem.count {
        hex += Hex.encode(Array(oneItem[i..<min(i + 32, oneItem.count)])) + "\n"
        i += 32
    }
    let updated = String(spec[..<start.upperBound]) + hex + String(spec[end.lowerBound...])
    write(specPath, Array(updated.utf8))
    print("SPEC.md: vector of \(oneItem.count) bytes")
}
