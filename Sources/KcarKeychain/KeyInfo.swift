/// What kcar learns from a key item's value when it is one of the DER key encodings it reads (SPEC.md
/// Part 3 §K3.1): the key's class, type, size and application label (`klbl`, SHA-1 of the public key as
/// Apple computes it: the PKCS #1 `RSAPublicKey` for RSA, the uncompressed point for EC). Raw keys (Apple's
/// X9.63 `04 || X || Y [|| K]`, a symmetric key's bytes) are not recognized: their format is ambiguous.
public struct KeyInfo: Sendable, Hashable {
    /// `kcls`: `"0"` public, `"1"` private.
    public let keyClass: String
    /// `type`: `"42"` RSA, `"73"` EC.
    public let keyType: String
    /// `bsiz`: the modulus's bits (RSA) or the curve's (EC); nil for an EC curve kcar does not know.
    public let sizeInBits: Int64?
    /// `klbl`: SHA-1 of the public key.
    public let applicationLabel: [UInt8]

    /// Reads a `SubjectPublicKeyInfo` (RSA or EC), a PKCS #1 `RSAPublicKey` or `RSAPrivateKey`, or a SEC 1
    /// `ECPrivateKey` that carries its public key; throws ``DERError`` for anything else.
    public init(der bytes: [UInt8]) throws {
        var r = try DERReader.sequence(bytes, "key")
        switch r.peekTag {
        case DERTag.sequence:
            self = try KeyInfo.subjectPublicKeyInfo(&r)
        case DERTag.integer:
            let first = try r.readInteger("first INTEGER")
            if r.peekTag == DERTag.octetString {
                self = try KeyInfo.ecPrivateKey(first, &r)
            } else if r.content(first) == [0], r.peekTag == DERTag.integer, !KeyInfo.isPublicRSA(r) {
                self = try KeyInfo.rsaPrivateKey(&r)
            } else {
                // RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }
                _ = try r.readInteger("publicExponent")
                try r.finish()
                self = KeyInfo(
                    keyClass: "0", keyType: "42", sizeInBits: KeyInfo.bits(r, first), applicationLabel: SHA1.hash(bytes)
                )
            }
        default:
            throw r.error(.unexpectedTag, "neither SubjectPublicKeyInfo, RSAPublicKey, RSAPrivateKey nor ECPrivateKey")
        }
    }

    init(keyClass: String, keyType: String, sizeInBits: Int64?, applicationLabel: [UInt8]) {
        self.keyClass = keyClass
        self.keyType = keyType
        self.sizeInBits = sizeInBits
        self.applicationLabel = applicationLabel
    }

    /// Whether exactly one more INTEGER follows (an `RSAPublicKey` whose modulus is 0 is still public).
    private static func isPublicRSA(_ r: DERReader) -> Bool {
        var probe = r
        return (try? probe.readInteger("publicExponent")) != nil && probe.isAtEnd
    }

    private static func subjectPublicKeyInfo(_ r: inout DERReader) throws -> KeyInfo {
        let (algorithm, parameters) = try r.readAlgorithmIdentifier("algorithm")
        let keyBits = try r.checkBitString(
            try r.read(DERTag.bitString, "subjectPublicKey"), "subjectPublicKey", wholeBytes: true)
        try r.finish()
        let key = Array(r.bytes[keyBits])
        if r.contentEquals(algorithm, DEROID.rsaEncryption) {
            var inner = DERReader(key, what: "RSAPublicKey")
            let seq = try inner.read(DERTag.sequence, "RSAPublicKey")
            try inner.finish()
            var k = inner.contents(of: seq, "RSAPublicKey")
            let modulus = try k.readInteger("modulus")
            _ = try k.readInteger("publicExponent")
            try k.finish()
            return KeyInfo(keyClass: "0", keyType: "42", sizeInBits: bits(k, modulus), applicationLabel: SHA1.hash(key))
        }
        if r.contentEquals(algorithm, DEROID.ecPublicKey) {
            return KeyInfo(
                keyClass: "0", keyType: "73", sizeInBits: curveBits(r, parameters), applicationLabel: SHA1.hash(key))
        }
        throw r.error(.unexpectedTag, at: algorithm.start, "a key algorithm other than RSA or EC")
    }

    /// `RSAPrivateKey ::= SEQUENCE { version 0, modulus, publicExponent, privateExponent, prime1, prime2,
    /// exponent1, exponent2, coefficient }` (two-prime only); the label hashes the `RSAPublicKey` of
    /// modulus and publicExponent, re-encoded.
    private static func rsaPrivateKey(_ r: inout DERReader) throws -> KeyInfo {
        let modulus = try r.readInteger("modulus")
        let exponent = try r.readInteger("publicExponent")
        for name in ["privateExponent", "prime1", "prime2", "exponent1", "exponent2", "coefficient"] {
            _ = try r.readInteger(name)
        }
        try r.finish()
        let content = r.encoded(modulus) + r.encoded(exponent)
        let publicKey = [DERTag.sequence] + DERTree.lengthBytes(content.count) + content
        return KeyInfo(
            keyClass: "1", keyType: "42", sizeInBits: bits(r, modulus), applicationLabel: SHA1.hash(publicKey))
    }

    /// `ECPrivateKey ::= SEQUENCE { version 1, privateKey OCTET STRING, [0] parameters OPTIONAL,
    /// [1] publicKey BIT STRING OPTIONAL }`: recognized only with its public key.
    private static func ecPrivateKey(_ version: DERElement, _ r: inout DERReader) throws -> KeyInfo {
        guard r.content(version) == [1] else {
            throw r.error(.invalidVersion, at: version.start, "ECPrivateKey version is 1")
        }
        _ = try r.read(DERTag.octetString, "privateKey")
        var size: Int64?
        if let p = try r.readOptional(DERTag.explicit(0), "parameters") {
            var pr = r.contents(of: p, "parameters")
            size = curveBits(pr, try pr.readObjectIdentifier("namedCurve"))
            try pr.finish()
        }
        guard let pk = try r.readOptional(DERTag.explicit(1), "publicKey") else {
            throw r.error(.truncated, "an ECPrivateKey without its public key")
        }
        try r.finish()
        var kr = r.contents(of: pk, "publicKey")
        let point = try kr.checkBitString(try kr.read(DERTag.bitString, "publicKey"), "publicKey", wholeBytes: true)
        try kr.finish()
        return KeyInfo(
            keyClass: "1", keyType: "73", sizeInBits: size, applicationLabel: SHA1.hash(Array(r.bytes[point])))
    }

    /// The bit length of a non-negative INTEGER.
    private static func bits(_ r: DERReader, _ e: DERElement) -> Int64? {
        var i = e.contentStart
        while i < e.end, r.bytes[i] == 0 { i += 1 }
        guard i < e.end, r.bytes[e.contentStart] < 0x80 else { return nil }
        return Int64((e.end - i - 1) * 8 + (8 - r.bytes[i].leadingZeroBitCount))
    }

    private static func curveBits(_ r: DERReader, _ parameters: DERElement?) -> Int64? {
        guard let p = parameters, p.tag == DERTag.objectIdentifier else { return nil }
        return DEROID.curves.first { r.contentEquals(p, $0.oid) }?.bits
    }
}
