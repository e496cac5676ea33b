import VaultFormat

/// The attributes kcar derives from a certificate's or a key's value when it is added (SPEC.md Part 3
/// §K3.1), as Apple's `SecItemAdd` derives them from a `kSecValueRef`: a certificate's type, encoding,
/// subject, issuer, serial number, key ids and label; a key's class, type, size and application label.
/// Attributes the caller gave win (Apple lets the add dictionary override the reference's attributes).
/// A value that does not parse is stored as given, with only the caller's attributes, as Apple stores a
/// `kSecValueData` it does not look into.
enum DerivedAttributes {
    /// `ctyp`'s unit: CSSM_CERT_X_509v1 is 1, so a version-n certificate is n.
    /// `cenc`: CSSM_CERT_ENCODING_DER.
    static let derEncoding: Int64 = 3

    /// The derived attributes for an item of class `c` whose value is `value`; empty when there are none.
    static func derive(class c: String, value: [UInt8]) -> [String: AttributeValue] {
        guard value.count <= DERLimits.inputMax else { return [:] }
        switch c {
        case "cert", "idnt":
            guard let cert = try? Certificate(der: value) else { return [:] }
            var a = certificate(cert)
            // An identity's key is the certificate's private key: its label is the certificate's key hash.
            if c == "idnt" { a["klbl"] = .data(cert.publicKeyHash) }
            return a
        case "keys":
            guard let key = try? KeyInfo(der: value) else { return [:] }
            var a: [String: AttributeValue] = [
                "kcls": .string(key.keyClass), "type": .string(key.keyType), "klbl": .data(key.applicationLabel)
            ]
            if let bits = key.sizeInBits {
                a["bsiz"] = .integer(bits)
                a["esiz"] = .integer(bits)
            }
            return a
        default:
            return [:]
        }
    }

    static func certificate(_ cert: Certificate) -> [String: AttributeValue] {
        var a: [String: AttributeValue] = [
            "ctyp": .integer(Int64(cert.version)), "cenc": .integer(derEncoding),
            "subj": .data(cert.subject), "issr": .data(cert.issuer), "slnr": .data(cert.serialNumber),
            "pkhh": .data(cert.publicKeyHash)
        ]
        if let skid = cert.subjectKeyIdentifier { a["skid"] = .data(skid) }
        if let cn = cert.commonName, !cn.isEmpty { a["labl"] = .string(cn) }
        return a
    }

    /// `attributes` with the derived ones added where the caller gave none.
    static func filling(_ attributes: Attributes, class c: String, value: [UInt8]) -> Attributes {
        var a = attributes
        for (name, v) in derive(class: c, value: value) where a[name] == nil { a[name] = v }
        return a
    }
}
