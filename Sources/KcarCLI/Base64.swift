/// Standard base64 (RFC 4648) for JSON output.
enum Base64 {
    static let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ data: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((data.count + 2) / 3 * 4)
        var i = 0
        while i < data.count {
            let n = min(3, data.count - i)
            append(data[i], n > 1 ? data[i + 1] : 0, n > 2 ? data[i + 2] : 0, count: n, to: &out)
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes standard, padded, canonical base64 (RFC 4648 §4, §3.5: the bits a padded group leaves over are
    /// zero, so that one value has one spelling); nil for anything else (no whitespace, no missing padding). The
    /// only base64 decoder of the CLI: item files and `--attr NAME:data=...` read alike.
    static func decode(_ text: [UInt8]) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt32? {
            switch c {
            case 0x41...0x5A: return UInt32(c - 0x41)
            case 0x61...0x7A: return UInt32(c - 0x47)
            case 0x30...0x39: return UInt32(c + 4)
            case 0x2B: return 62
            case 0x2F: return 63
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        var i = 0
        while i < text.count {
            let last = i + 4 == text.count
            let pad = last ? (text[i + 3] == 61 ? (text[i + 2] == 61 ? 2 : 1) : 0) : 0
            guard let a = value(text[i]), let b = value(text[i + 1]) else { return nil }
            let c = pad >= 2 ? 0 : value(text[i + 2])
            let d = pad >= 1 ? 0 : value(text[i + 3])
            guard let c, let d else { return nil }
            // Canonical: the bits of the last character that no output byte holds are zero.
            guard pad != 2 || b & 0xF == 0, pad != 1 || c & 0x3 == 0 else { return nil }
            let v = a << 18 | b << 12 | c << 6 | d
            out.append(UInt8(v >> 16))
            if pad < 2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if pad < 1 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        return out
    }

    /// Appends the four characters of one group of `count` (1...3) bytes, padded with `=`.
    @inline(__always)
    static func append(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, count: Int, to out: inout [UInt8]) {
        out.append(table[Int(b0 >> 2)])
        out.append(table[Int((b0 & 3) << 4 | b1 >> 4)])
        out.append(count > 1 ? table[Int((b1 & 15) << 2 | b2 >> 6)] : 61)
        out.append(count > 2 ? table[Int(b2 & 63)] : 61)
    }
}
