/// An X.509 certificate (RFC 5280) read as far as the keychain needs: the fields Apple derives a
/// certificate item's attributes from (SPEC.md Part 3 §K3.1). Every element on the way is checked for its one
/// DER encoding; signatures, validity and extensions other than the subject key identifier are not
/// interpreted (nothing here decides trust).
public struct Certificate: Sendable, Hashable {
    /// 1, 2 or 3 (the encoded `version` plus one; absent is 1).
    public let version: Int
    /// The `serialNumber` INTEGER's content bytes, as encoded (a leading `0x00` kept): `slnr`.
    public let serialNumber: [UInt8]
    /// The issuer `Name`, its whole DER element (tag and length included): `issr`.
    public let issuer: [UInt8]
    /// The subject `Name`, its whole DER element: `subj`.
    public let subject: [UInt8]
    /// The `SubjectPublicKeyInfo`, its whole DER element.
    public let subjectPublicKeyInfo: [UInt8]
    /// The `subjectPublicKey` bits (the BIT STRING's content after its unused-bits byte).
    public let publicKey: [UInt8]
    /// The subject key identifier extension's `keyIdentifier` content bytes, if the extension is present: `skid`.
    public let subjectKeyIdentifier: [UInt8]?
    /// The value of the subject's last `commonName` attribute, if any and if it decodes: `labl`.
    public let commonName: String?

    /// SHA-1 of ``publicKey``: `pkhh`, and the `klbl` of the certificate's key.
    public var publicKeyHash: [UInt8] { SHA1.hash(publicKey) }

    /// Reads a DER certificate: exactly one `Certificate` SEQUENCE, at most `DER_INPUT_MAX` bytes.
    public init(der bytes: [UInt8]) throws {
        var c = try DERReader.sequence(bytes, "Certificate")
        let tbs = try c.read(DERTag.sequence, "tbsCertificate")
        try c.readAlgorithmIdentifier("signatureAlgorithm")
        _ = try c.checkBitString(try c.read(DERTag.bitString, "signatureValue"), "signatureValue", wholeBytes: false)
        try c.finish()

        var t = c.contents(of: tbs, "tbsCertificate")
        if let v = try t.readOptional(DERTag.explicit(0), "version") {
            var r = t.contents(of: v, "version")
            let n = try r.readSmallInteger("version")
            try r.finish()
            // v1 is the DEFAULT, which DER leaves out.
            guard n == 1 || n == 2 else {
                throw t.error(.invalidVersion, at: v.start, "version \(n) (1 or 2 when encoded)")
            }
            version = n + 1
        } else {
            version = 1
        }
        serialNumber = t.content(try t.readInteger("serialNumber"))
        try t.readAlgorithmIdentifier("signature")
        let issuerElement = try t.read(DERTag.sequence, "issuer")
        _ = try t.checkName(issuerElement, "issuer")
        issuer = t.encoded(issuerElement)
        let validity = try t.read(DERTag.sequence, "validity")
        var vr = t.contents(of: validity, "validity")
        for name in ["notBefore", "notAfter"] {
            let time = try vr.readElement()
            guard time.tag == DERTag.utcTime || time.tag == DERTag.generalizedTime else {
                throw vr.error(.unexpectedTag, at: time.start, "\(name): not a UTCTime or GeneralizedTime")
            }
        }
        try vr.finish()
        let subjectElement = try t.read(DERTag.sequence, "subject")
        commonName = try t.checkName(subjectElement, "subject")
        subject = t.encoded(subjectElement)
        let spki = try t.read(DERTag.sequence, "subjectPublicKeyInfo")
        subjectPublicKeyInfo = t.encoded(spki)
        var k = t.contents(of: spki, "subjectPublicKeyInfo")
        try k.readAlgorithmIdentifier("algorithm")
        let keyBits = try k.checkBitString(
            try k.read(DERTag.bitString, "subjectPublicKey"), "subjectPublicKey", wholeBytes: true)
        publicKey = Array(bytes[keyBits])
        try k.finish()
        for n: UInt8 in [1, 2] {
            if let id = try t.readOptional(DERTag.implicit(n), n == 1 ? "issuerUniqueID" : "subjectUniqueID") {
                guard version >= 2 else {
                    throw t.error(.invalidVersion, at: id.start, "a unique identifier in a v1 certificate")
                }
                _ = try t.checkBitString(id, "uniqueID", wholeBytes: false)
            }
        }
        var skid: [UInt8]?
        if let extensions = try t.readOptional(DERTag.explicit(3), "extensions") {
            guard version == 3 else {
                throw t.error(.invalidVersion, at: extensions.start, "extensions in a v\(version) certificate")
            }
            skid = try t.contents(of: extensions, "extensions").readExtensions()
        }
        subjectKeyIdentifier = skid
        try t.finish()
    }
}

/// Object identifiers kcar compares against (content bytes).
enum DEROID {
    /// 2.5.4.3 commonName
    static let commonName: [UInt8] = [0x55, 0x04, 0x03]
    /// 2.5.29.14 subjectKeyIdentifier
    static let subjectKeyIdentifier: [UInt8] = [0x55, 0x1D, 0x0E]
    /// 1.2.840.113549.1.1.1 rsaEncryption
    static let rsaEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
    /// 1.2.840.10045.2.1 id-ecPublicKey
    static let ecPublicKey: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    /// The named curves kcar knows the size of: secp256r1, secp384r1, secp521r1.
    static let curves: [(oid: [UInt8], bits: Int64)] = [
        ([0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07], 256),
        ([0x2B, 0x81, 0x04, 0x00, 0x22], 384),
        ([0x2B, 0x81, 0x04, 0x00, 0x23], 521)
    ]
}

extension DERReader {
    /// `AlgorithmIdentifier ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY OPTIONAL }`; returns
    /// the algorithm's element and the parameters' element, if any.
    @discardableResult
    mutating func readAlgorithmIdentifier(_ name: String) throws -> (algorithm: DERElement, parameters: DERElement?) {
        let e = try read(DERTag.sequence, name)
        var r = contents(of: e, name)
        let oid = try r.readObjectIdentifier("algorithm")
        let parameters = r.isAtEnd ? nil : try r.readElement()
        try r.finish()
        return (oid, parameters)
    }

    /// Checks a `Name ::= SEQUENCE OF RelativeDistinguishedName`, each a non-empty `SET OF
    /// SEQUENCE { type OBJECT IDENTIFIER, value ANY }`, and returns its last commonName as text.
    func checkName(_ e: DERElement, _ name: String) throws -> String? {
        var rdns = contents(of: e, name)
        var commonName: String?
        while !rdns.isAtEnd {
            let rdn = try rdns.read(DERTag.set, "RelativeDistinguishedName")
            var atvs = rdns.contents(of: rdn, "RelativeDistinguishedName")
            guard !atvs.isAtEnd else {
                throw atvs.error(.truncated, at: rdn.start, "an empty RelativeDistinguishedName")
            }
            while !atvs.isAtEnd {
                let atv = try atvs.read(DERTag.sequence, "AttributeTypeAndValue")
                var r = atvs.contents(of: atv, "AttributeTypeAndValue")
                let type = try r.readObjectIdentifier("type")
                let value = try r.readElement()
                try r.finish()
                if r.contentEquals(type, DEROID.commonName) { commonName = try r.directoryString(value, "commonName") }
            }
        }
        return commonName
    }

    /// A DirectoryString (or IA5String) as text; the other string types of X.520 are checked for their encoding.
    func directoryString(_ e: DERElement, _ name: String) throws -> String {
        let b = bytes[e.contentStart..<e.end]
        let bad = error(.invalidString, at: e.start, "\(name): not valid in its string type")
        switch e.tag {
        case DERTag.utf8String:
            guard let s = String(validating: b, as: UTF8.self) else { throw bad }
            return s
        case DERTag.printableString, DERTag.ia5String:
            guard b.allSatisfy({ $0 < 0x80 }) else { throw bad }
            return String(decoding: b, as: UTF8.self)
        case DERTag.teletexString:
            // T.61 read as Latin-1, as most software (and Apple's) does.
            return String(String.UnicodeScalarView(b.map { Unicode.Scalar($0) }))
        case DERTag.bmpString:
            guard b.count % 2 == 0 else { throw bad }
            let units = stride(from: b.startIndex, to: b.endIndex, by: 2).map { UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]) }
            guard let s = String(validating: units, as: UTF16.self) else { throw bad }
            return s
        case DERTag.universalString:
            guard b.count % 4 == 0 else { throw bad }
            var scalars = String.UnicodeScalarView()
            for i in stride(from: b.startIndex, to: b.endIndex, by: 4) {
                let v = UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
                guard let u = Unicode.Scalar(v) else { throw bad }
                scalars.append(u)
            }
            return String(scalars)
        default:
            throw error(.unexpectedTag, at: e.start, "\(name): tag 0x\(Hex.encode([e.tag])) is not a string type")
        }
    }

    /// `Extensions ::= SEQUENCE OF Extension`; returns the subject key identifier, if present. Refuses an
    /// extension present twice, and `critical` encoded as FALSE (its DEFAULT).
    func readExtensions() throws -> [UInt8]? {
        var outer = self
        let list = try outer.read(DERTag.sequence, "Extensions")
        try outer.finish()
        var r = contents(of: list, "Extensions")
        var seen = Set<[UInt8]>()
        var skid: [UInt8]?
        while !r.isAtEnd {
            let ext = try r.read(DERTag.sequence, "Extension")
            var x = r.contents(of: ext, "Extension")
            let id = try x.readObjectIdentifier("extnID")
            guard seen.insert(x.content(id)).inserted else {
                throw x.error(.duplicateExtension, at: ext.start, "extension \(Hex.encode(x.content(id))) twice")
            }
            if let critical = try x.readOptional(DERTag.boolean, "critical") {
                guard try x.checkBoolean(critical, "critical") else {
                    throw x.error(.invalidBoolean, at: critical.start, "critical encoded as FALSE, its DEFAULT")
                }
            }
            let value = try x.read(DERTag.octetString, "extnValue")
            try x.finish()
            if x.contentEquals(id, DEROID.subjectKeyIdentifier) {
                var k = x.contents(of: value, "subjectKeyIdentifier")
                skid = k.content(try k.read(DERTag.octetString, "keyIdentifier"))
                try k.finish()
            }
        }
        return skid
    }
}
