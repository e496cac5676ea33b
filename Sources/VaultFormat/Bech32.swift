/// Bech32 (BIP-173), as age spells its X25519 keys: `age1...` recipients (HRP `age`) and `AGE-SECRET-KEY-1...`
/// identities (HRP `age-secret-key-`, written in upper case). Like age, and unlike BIP-173, no length limit of
/// 90 characters applies; everything else is BIP-173's: one case throughout, the checksum constant 1 (not
/// bech32m's), and padding bits of zero. Decoding wipes its working copies: an identity is a secret key.
package enum Bech32 {
    static let charset = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)

    /// Each charset character's value, -1 for the other bytes.
    static let values: [Int8] = {
        var v = [Int8](repeating: -1, count: 128)
        for (i, c) in charset.enumerated() { v[Int(c)] = Int8(i) }
        return v
    }()

    static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3B6A_57B2, 0x2650_8E6D, 0x1EA1_19FA, 0x3D42_33DD, 0x2A14_62B3]
        var chk: UInt32 = 1
        for v in values {
            let top = chk >> 25
            chk = (chk & 0x1FF_FFFF) << 5 ^ UInt32(v)
            for i in 0..<5 where (top >> UInt32(i)) & 1 == 1 { chk ^= generator[i] }
        }
        return chk
    }

    static func expand(_ hrp: [UInt8]) -> [UInt8] { hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 } }

    /// Regroups `data` from `from`-bit to `to`-bit values; `pad` for encoding, and when decoding the
    /// leftover bits must be fewer than `from` and zero (nil otherwise).
    static func convert(_ data: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var acc = 0
        var bits = 0
        var out: [UInt8] = []
        let maxv = (1 << to) - 1
        for v in data {
            guard Int(v) >> from == 0 else { return nil }
            acc = acc << from | Int(v)
            bits += from
            while bits >= to {
                bits -= to
                out.append(UInt8(acc >> bits & maxv))
            }
            acc &= (1 << bits) - 1
        }
        if pad {
            if bits > 0 { out.append(UInt8(acc << (to - bits) & maxv)) }
        } else if bits >= from || acc << (to - bits) & maxv != 0 {
            return nil
        }
        return out
    }

    /// The string of `hrp` (lower case) and 8-bit `data`, in lower case.
    package static func encode(hrp: String, _ data: [UInt8]) -> String {
        let h = Array(hrp.lowercased().utf8)
        let five = convert(data, from: 8, to: 5, pad: true) ?? []
        let chk = polymod(expand(h) + five + [0, 0, 0, 0, 0, 0]) ^ 1
        let checksum = (0..<6).map { UInt8(chk >> UInt32(5 * (5 - $0)) & 31) }
        return String(decoding: h + [UInt8(ascii: "1")] + (five + checksum).map { charset[Int($0)] }, as: UTF8.self)
    }

    /// The human-readable part (lower case) and the 8-bit data of `text`, or nil if it is not valid bech32:
    /// mixed case, a character outside the charset, a wrong checksum or non-zero padding.
    package static func decode(_ text: String) -> (hrp: String, data: [UInt8])? { decode(Array(text.utf8)) }

    package static func decode(_ bytes: [UInt8]) -> (hrp: String, data: [UInt8])? {
        guard bytes.allSatisfy({ $0 >= 33 && $0 <= 126 }) else { return nil }
        let hasLower = bytes.contains { $0 >= 97 && $0 <= 122 }
        let hasUpper = bytes.contains { $0 >= 65 && $0 <= 90 }
        guard !(hasLower && hasUpper) else { return nil }
        var lower = bytes.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
        var five: [UInt8] = []
        defer {
            wipe(&lower)
            wipe(&five)
        }
        guard let sep = lower.lastIndex(of: UInt8(ascii: "1")), sep >= 1, lower.count - sep - 1 >= 6 else { return nil }
        let hrp = Array(lower[..<sep])
        for c in lower[(sep + 1)...] {
            let v = values[Int(c)]
            guard v >= 0 else { return nil }
            five.append(UInt8(v))
        }
        guard polymod(expand(hrp) + five) == 1 else { return nil }
        var payload = Array(five.dropLast(6))
        defer { wipe(&payload) }
        guard let data = convert(payload, from: 5, to: 8, pad: false) else { return nil }
        return (String(decoding: hrp, as: UTF8.self), data)
    }
}

/// age's X25519 key encodings (age-encryption.org/v1): the same curve and the same 32-byte keys kcar's
/// x25519 slots use, so `age-keygen`'s keys open and receive kcar vaults; age's file format is not read.
package enum AgeKey {
    static let recipientHRP = "age"
    static let identityHRP = "age-secret-key-"

    /// The 32-byte public key of an `age1...` recipient, or nil.
    package static func recipient(_ text: String) -> [UInt8]? {
        guard text.hasPrefix("age1"), let (hrp, data) = Bech32.decode(text), hrp == recipientHRP, data.count == 32
        else { return nil }
        return data
    }

    /// The 32-byte secret key of an `AGE-SECRET-KEY-1...` identity line (upper case, as age writes it), or nil.
    package static func identity(_ line: [UInt8]) -> SecureBytes? {
        guard line.starts(with: Array("AGE-SECRET-KEY-1".utf8)), var decoded = Bech32.decode(line) else { return nil }
        defer { wipe(&decoded.data) }
        guard decoded.hrp == identityHRP, decoded.data.count == 32 else { return nil }
        return SecureBytes(copying: decoded.data)
    }

    /// The `age1...` spelling of a public key.
    package static func recipientString(_ publicKey: [UInt8]) -> String { Bech32.encode(hrp: recipientHRP, publicKey) }
}
