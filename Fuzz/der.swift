// Target `der`: the DER reader of KcarKeychain (DERReader, DERTree, Certificate, KeyInfo and the attributes
// an add derives from them). Input: DER bytes (Fixtures/certs are seeds).
// Invariants: what DERTree reads, it writes back byte for byte (the reading is canonical); a certificate or
// key that reads is also a well-formed DER tree; every field a certificate gives lies in the input, and the
// issuer and subject read again as DER trees; SHA-1 gives 20 bytes; deriving attributes never traps.
@testable import KcarKeychain

func fuzzOne(_ input: [UInt8]) {
    let tree = try? DERTree.parse(input)
    if let tree {
        let again = tree.encode()
        precondition(again == input, "a DER tree that read does not write back to its bytes")
        precondition(tree.nodes.allSatisfy { $0.depth >= 1 && $0.depth <= DERLimits.depthMax }, "depth out of bounds")
    }
    if let c = try? Certificate(der: input) {
        precondition(tree != nil, "a certificate that is not a DER tree")
        precondition((1...3).contains(c.version), "version out of range")
        for part in [c.issuer, c.subject, c.subjectPublicKeyInfo] {
            precondition((try? DERTree.parse(part))?.encode() == part, "a certificate part is not DER")
            precondition(contains(input, part), "a certificate part that is not in the input")
        }
        precondition(
            contains(input, c.serialNumber) && contains(input, c.publicKey), "a field that is not in the input")
        precondition(c.publicKeyHash.count == 20, "SHA-1 is 20 bytes")
        // The certificate's key, as a key item would hold it, reads as a key or fails cleanly.
        _ = try? KeyInfo(der: c.subjectPublicKeyInfo)
    }
    if let k = try? KeyInfo(der: input) {
        precondition(tree != nil, "a key that is not a DER tree")
        precondition(k.applicationLabel.count == 20, "SHA-1 is 20 bytes")
    }
    for c in ["cert", "keys", "idnt"] { _ = DerivedAttributes.derive(class: c, value: input) }
}

func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    if needle.isEmpty { return true }
    guard needle.count <= haystack.count else { return false }
    for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
        if haystack[i..<i + needle.count].elementsEqual(needle) { return true }
    }
    return false
}

/// The fixtures' keys and two hand-made trees (deep nesting, every universal primitive the reader checks).
func seeds(repo: String) -> [[UInt8]] {
    var out: [[UInt8]] = []
    for name in listDirectory(repo + "/Fixtures/certs/keys", suffix: ".der") {
        if let b = readFile(repo + "/Fixtures/certs/keys/" + name) { out.append(b) }
    }
    var nested: [UInt8] = [0x05, 0x00]
    for _ in 0..<DERLimits.depthMax { nested = [0x30] + DERTree.lengthBytes(nested.count) + nested }
    out.append(nested)
    out.append([
        0x30, 0x13, 0x01, 0x01, 0xFF, 0x02, 0x01, 0x00, 0x03, 0x02, 0x07, 0x80, 0x06, 0x03, 0x55, 0x1D, 0x0E,
        0x05, 0x00, 0xA0, 0x00
    ])
    return out
}
