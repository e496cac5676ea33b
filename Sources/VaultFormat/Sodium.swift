import CSodium

/// The thin layer over libsodium. Every call site of the C library is here; C return codes stop here.
package enum Sodium {
    private static let initResult: Int32 = sodium_init()

    static func ensureInitialized() {
        precondition(initResult >= 0, "sodium_init failed")
    }

    package static let aeadNonceBytes = 24
    static let aeadTagBytes = 16

    /// XChaCha20-Poly1305-IETF encryption; returns ciphertext || tag.
    package static func seal(key: SecureBytes, nonce: [UInt8], plaintext: UnsafeRawBufferPointer, ad: [UInt8])
        -> [UInt8]
    {
        ensureInitialized()
        var out = [UInt8](repeating: 0, count: plaintext.count + aeadTagBytes)
        var outLen: UInt64 = 0
        _ = out.withUnsafeMutableBufferPointer { o in
            crypto_aead_xchacha20poly1305_ietf_encrypt(
                o.baseAddress!, &outLen, bytePointer(plaintext),
                UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce, key.baseAddress)
        }
        return out
    }

    /// Encrypts the first `plaintextLength` bytes of `buffer` in place and appends the tag; returns the
    /// sealed length. `buffer` must have room for the tag.
    static func sealInPlace(
        key: SecureBytes, nonce: [UInt8], buffer: UnsafeMutableRawBufferPointer, plaintextLength: Int,
        ad: [UInt8]
    ) -> Int {
        ensureInitialized()
        precondition(buffer.count >= plaintextLength + aeadTagBytes)
        var outLen: UInt64 = 0
        let p = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        crypto_aead_xchacha20poly1305_ietf_encrypt(
            p, &outLen, p, UInt64(plaintextLength), ad, UInt64(ad.count), nil, nonce,
            key.baseAddress)
        return Int(outLen)
    }

    /// XChaCha20-Poly1305-IETF decryption; nil when the tag does not verify. No plaintext is released otherwise.
    static func open(key: SecureBytes, nonce: [UInt8], ciphertext: UnsafeRawBufferPointer, ad: [UInt8]) -> [UInt8]? {
        ensureInitialized()
        guard ciphertext.count >= aeadTagBytes, nonce.count == aeadNonceBytes else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - aeadTagBytes)
        var outLen: UInt64 = 0
        let rc = out.withUnsafeMutableBufferPointer { o in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                o.baseAddress!, &outLen, nil, bytePointer(ciphertext),
                UInt64(ciphertext.count), ad, UInt64(ad.count), nonce, key.baseAddress)
        }
        return rc == 0 ? out : nil
    }

    static func open(key: SecureBytes, nonce: [UInt8], ciphertext: [UInt8], ad: [UInt8]) -> [UInt8]? {
        ciphertext.withUnsafeBytes { open(key: key, nonce: nonce, ciphertext: $0, ad: ad) }
    }

    /// Unkeyed BLAKE2b-256.
    static func hash(_ data: UnsafeRawBufferPointer, outputBytes: Int = 32) -> [UInt8] {
        ensureInitialized()
        var out = [UInt8](repeating: 0, count: outputBytes)
        crypto_generichash(
            &out, outputBytes, bytePointer(data),
            UInt64(data.count), nil, 0)
        return out
    }

    package static func hash(_ data: [UInt8], outputBytes: Int = 32) -> [UInt8] {
        data.withUnsafeBytes { hash($0, outputBytes: outputBytes) }
    }

    /// Keyed BLAKE2b-256.
    package static func mac(key: SecureBytes, _ data: [UInt8]) -> [UInt8] {
        ensureInitialized()
        var out = [UInt8](repeating: 0, count: 32)
        crypto_generichash(&out, 32, data, UInt64(data.count), key.baseAddress, key.count)
        return out
    }

    /// Keyed BLAKE2b-256 whose output is itself key material.
    static func macKey(key: SecureBytes, _ data: [UInt8]) -> SecureBytes {
        SecureBytes(count: 32) { o in
            _ = crypto_generichash(
                o.baseAddress!.assumingMemoryBound(to: UInt8.self), 32, data, UInt64(data.count),
                key.baseAddress, key.count)
        }
    }

    /// `crypto_kdf_derive_from_key` with context "kcarvlt1".
    static func deriveSubkey(_ vaultKey: SecureBytes, id: UInt64) -> SecureBytes {
        SecureBytes(count: 32) { o in
            _ = crypto_kdf_derive_from_key(
                o.baseAddress!.assumingMemoryBound(to: UInt8.self), 32, id,
                "kcarvlt1", vaultKey.baseAddress)
        }
    }

    /// Argon2id; nil if the system refused the memory.
    static func pwhash(_ passphrase: SecureBytes, salt: [UInt8], params: KDFParameters) -> SecureBytes? {
        ensureInitialized()
        var ok = true
        let key = SecureBytes(count: 32) { o in
            let rc = passphrase.withUnsafeBytes { p in
                crypto_pwhash(
                    o.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                    UnsafeRawPointer(bytePointer(p)).assumingMemoryBound(to: CChar.self), UInt64(p.count), salt,
                    UInt64(params.ops), Int(params.memKiB) * 1024, crypto_pwhash_ALG_ARGON2ID13)
            }
            ok = rc == 0
        }
        return ok ? key : nil
    }

    /// `crypto_box_seal`, with its ephemeral key pair drawn from `random` so that vectors are reproducible.
    /// The output is exactly what `crypto_box_seal` produces and `crypto_box_seal_open` accepts.
    static func sealBox(publicKey: [UInt8], message: SecureBytes, random: RandomSource) -> [UInt8] {
        ensureInitialized()
        let seed = random.secureBytes(32)
        var epk = [UInt8](repeating: 0, count: 32)
        let esk = SecureBytes(count: 32) { sk in
            _ = crypto_box_seed_keypair(&epk, sk.baseAddress!.assumingMemoryBound(to: UInt8.self), seed.baseAddress)
        }
        let nonce = hash(epk + publicKey, outputBytes: 24)
        var box = [UInt8](repeating: 0, count: message.count + 16)
        _ = crypto_box_easy(&box, message.baseAddress, UInt64(message.count), nonce, publicKey, esk.baseAddress)
        return epk + box
    }

    /// `crypto_box_seal_open`; nil when it does not open.
    static func openBox(secretKey: SecureBytes, ciphertext: [UInt8]) -> SecureBytes? {
        ensureInitialized()
        guard ciphertext.count >= 48, secretKey.count == 32 else { return nil }
        var pk = [UInt8](repeating: 0, count: 32)
        _ = crypto_scalarmult_base(&pk, secretKey.baseAddress)
        var ok = false
        let out = SecureBytes(count: ciphertext.count - 48) { o in
            ok =
                crypto_box_seal_open(
                    o.baseAddress!.assumingMemoryBound(to: UInt8.self), ciphertext,
                    UInt64(ciphertext.count), pk, secretKey.baseAddress) == 0
        }
        return ok ? out : nil
    }

    /// The X25519 public key of a 32-byte secret key.
    static func publicKey(secretKey: SecureBytes) -> [UInt8] {
        ensureInitialized()
        var pk = [UInt8](repeating: 0, count: 32)
        _ = crypto_scalarmult_base(&pk, secretKey.baseAddress)
        return pk
    }

    /// A pointer to the bytes, or to a zero byte for an empty buffer (C wants non-null even for length 0).
    static func bytePointer(_ b: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
        if let p = b.baseAddress { return p.assumingMemoryBound(to: UInt8.self) }
        return UnsafePointer(zeroByte)
    }
    nonisolated(unsafe) private static let zeroByte: UnsafeMutablePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        p.initialize(to: 0)
        return p
    }()

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && sodium_memcmp(a, b, a.count) == 0
    }
}

/// BLAKE2b and constant-time comparison, for layers above the vault (the keychain's generation records).
package enum Digest {
    /// Unkeyed BLAKE2b with `outputBytes` (16...64) of output.
    package static func blake2b(_ data: [UInt8], outputBytes: Int = 32) -> [UInt8] {
        Sodium.hash(data, outputBytes: outputBytes)
    }
    /// Keyed BLAKE2b-256.
    package static func mac(key: SecureBytes, _ data: [UInt8]) -> [UInt8] { Sodium.mac(key: key, data) }
    /// Compares in time independent of where the bytes differ.
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool { Sodium.constantTimeEqual(a, b) }
}
