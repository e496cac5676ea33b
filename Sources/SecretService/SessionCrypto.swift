import CCrypto
import VaultFormat

/// How an open session carries secrets over the bus (SPEC.md §K10, Sessions).
package enum SessionAlgorithm: String, Sendable, CaseIterable {
    /// Secrets as they are; the parameters are empty.
    case plain
    /// Diffie-Hellman in the 1024-bit MODP group of RFC 2409, HKDF-SHA256, AES-128-CBC with PKCS#7 padding.
    case dhAES = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
}

/// An error a Secret Service call returns: a D-Bus error name and a message for the client.
package struct SecretServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The D-Bus error name (`org.freedesktop.DBus.Error.InvalidArgs`, `org.freedesktop.Secret.Error.IsLocked`).
    package let name: String
    package let message: String
    /// Whether it is one group's failure (damaged, refused, rolled back: K2), which a search of every
    /// collection skips.
    package var groupLocal = false

    package init(_ name: String, _ message: String) {
        self.name = name
        self.message = message
    }

    package static func invalidArgs(_ message: String) -> SecretServiceError {
        SecretServiceError("org.freedesktop.DBus.Error.InvalidArgs", message)
    }

    /// The error name of a well-known name that another program owns and does not let go.
    package static let nameTaken = "kcar.Error.NameTaken"

    package static func failed(_ message: String) -> SecretServiceError {
        SecretServiceError("org.freedesktop.DBus.Error.Failed", message)
    }

    package var description: String { "\(name): \(message)" }
}

/// The service's side of a `dh-ietf1024-sha256-aes128-cbc-pkcs7` session (SPEC.md §K10, Sessions), as
/// libsecret and gnome-keyring speak it: the client's public value in, the service's out, and a 16-byte AES
/// key from HKDF-SHA256 of the shared value padded to 128 bytes, with an empty salt and info. The private
/// exponent and the shared value are OpenSSL numbers cleared when freed (`BN_secure_new`, `BN_clear_free`),
/// the exponent's bytes are wiped, and the shared value's bytes and the AES key are ``SecureBytes``.
package final class DHSession: Sendable {
    /// Bytes of a public value at most (the prime's).
    package static let publicBytesMax = 128
    /// Bytes of the private exponent: 512 bits, far beyond the 160 that the group's strength asks.
    static let exponentBytes = 64
    static let keyBytes = 16
    static let ivBytes = 16

    /// The service's public value, big-endian without leading zeros, for the reply to `OpenSession`.
    package let servicePublic: [UInt8]
    private let key: SecureBytes

    /// Opens a session for a client whose public value is `clientPublic` (big-endian, 1 < y < p - 1), drawing
    /// the service's private exponent from `random`.
    package init(clientPublic: [UInt8], random: RandomSource) throws(SecretServiceError) {
        guard (1...DHSession.publicBytesMax).contains(clientPublic.count) else {
            throw .invalidArgs("a public value of \(clientPublic.count) bytes (1 to \(DHSession.publicBytesMax))")
        }
        let (servicePublic, shared) = try DHSession.agree(clientPublic, random: random)
        self.servicePublic = servicePublic
        key = SecureBytes(count: DHSession.keyBytes) { out in
            shared.withUnsafeBytes { ikm in DHSession.hkdf(ikm, into: out) }
        }
    }

    /// The 1024-bit MODP group: the service's public value and the shared value (128 bytes, big-endian).
    private static func agree(_ clientPublic: [UInt8], random: RandomSource) throws(SecretServiceError) -> (
        [UInt8], SecureBytes
    ) {
        guard let ctx = BN_CTX_secure_new(), let p = BN_get_rfc2409_prime_1024(nil), let y = BN_new(),
            let limit = BN_new(), let g = BN_new(), let x = BN_secure_new(), let pub = BN_new(),
            let shared = BN_secure_new()
        else { throw .failed("out of memory for the session's numbers") }
        defer {
            BN_CTX_free(ctx)
            for n in [p, y, limit, g, pub] { BN_free(n) }
            BN_clear_free(x)
            BN_clear_free(shared)
        }
        BN_bin2bn(clientPublic, Int32(clientPublic.count), y)
        // 1 < y < p - 1: 0, 1 and p - 1 would make the shared value known to anyone.
        guard BN_copy(limit, p) != nil, BN_sub_word(limit, 1) == 1, BN_cmp(y, BN_value_one()) > 0,
            BN_cmp(y, limit) < 0
        else { throw .invalidArgs("the client's public value is not in the group (1 < y < p - 1)") }
        var exponent = random.bytes(exponentBytes)
        defer { wipe(&exponent) }
        exponent[0] |= 0x80
        BN_bin2bn(exponent, Int32(exponentBytes), x)
        BN_set_flags(x, BN_FLG_CONSTTIME)
        guard BN_set_word(g, 2) == 1, BN_mod_exp_mont_consttime(pub, g, x, p, ctx, nil) == 1,
            BN_mod_exp_mont_consttime(shared, y, x, p, ctx, nil) == 1
        else { throw .failed("the session's exponentiation failed") }
        var out = [UInt8](repeating: 0, count: (Int(BN_num_bits(pub)) + 7) / 8)
        BN_bn2bin(pub, &out)
        let secret = SecureBytes(count: publicBytesMax) { buffer in
            _ = BN_bn2binpad(
                shared, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(publicBytesMax))
        }
        return (out, secret)
    }

    /// HKDF-SHA256 (RFC 5869) of `ikm`, empty salt and info, into `out` (16 bytes).
    private static func hkdf(_ ikm: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { fatalError("no HKDF context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var length = out.count
        guard EVP_PKEY_derive_init(ctx) == 1, EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) == 1,
            EVP_PKEY_CTX_set1_hkdf_key(ctx, ikm.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(ikm.count))
                == 1,
            EVP_PKEY_derive(ctx, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) == 1,
            length == out.count
        else { fatalError("HKDF-SHA256 failed") }
    }

    /// A secret for the client: a fresh IV (the secret's parameters) and the secret encrypted with PKCS#7
    /// padding.
    package func encrypt(_ secret: UnsafeRawBufferPointer, random: RandomSource) -> (iv: [UInt8], value: [UInt8]) {
        let iv = random.bytes(DHSession.ivBytes)
        var out = [UInt8](repeating: 0, count: secret.count + DHSession.ivBytes)
        let n = key.withUnsafeBytes { k in
            cipher(encrypt: true, key: k, iv: iv, input: secret, output: &out)
        }
        guard let n else { fatalError("AES-128-CBC encryption failed") }
        out.removeSubrange(n...)
        return (iv, out)
    }

    /// A secret from the client: `value` decrypted with `iv`, its padding checked.
    package func decrypt(iv: [UInt8], value: [UInt8]) throws(SecretServiceError) -> SecureBytes {
        guard iv.count == DHSession.ivBytes else {
            throw .invalidArgs("a secret's parameters of \(iv.count) bytes, not a \(DHSession.ivBytes)-byte IV")
        }
        guard !value.isEmpty, value.count % 16 == 0 else {
            throw .invalidArgs("an encrypted secret of \(value.count) bytes, not a whole number of AES blocks")
        }
        var plain = [UInt8](repeating: 0, count: value.count + DHSession.ivBytes)
        defer { wipe(&plain) }
        let n = key.withUnsafeBytes { k in
            value.withUnsafeBytes { cipher(encrypt: false, key: k, iv: iv, input: $0, output: &plain) }
        }
        guard let n else { throw .invalidArgs("the secret does not decrypt under this session's key") }
        return SecureBytes(copying: plain[..<n])
    }

    /// AES-128-CBC with PKCS#7 padding; the bytes written, or nil if OpenSSL refused (a decryption whose
    /// padding does not check).
    private func cipher(
        encrypt: Bool, key: UnsafeRawBufferPointer, iv: [UInt8], input: UnsafeRawBufferPointer,
        output: inout [UInt8]
    ) -> Int? {
        guard let ctx = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let k = key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard EVP_CipherInit_ex(ctx, EVP_aes_128_cbc(), nil, k, iv, encrypt ? 1 : 0) == 1 else { return nil }
        var written: Int32 = 0
        var final: Int32 = 0
        let ok = output.withUnsafeMutableBufferPointer { out -> Bool in
            let src = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
            guard EVP_CipherUpdate(ctx, out.baseAddress, &written, src, Int32(input.count)) == 1 else { return false }
            return EVP_CipherFinal_ex(ctx, out.baseAddress! + Int(written), &final) == 1
        }
        return ok ? Int(written + final) : nil
    }
}
