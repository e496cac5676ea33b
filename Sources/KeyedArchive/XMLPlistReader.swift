#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reads an XML property list (the `PropertyList-1.0` DTD) with an explicit stack of open containers:
/// nesting costs heap, never call stack. It reads the subset plists use: an optional `<?xml ...?>` and
/// `<!DOCTYPE ...>`, comments, one `<plist>` holding one value; text with the five named entities, character
/// references and CDATA. A `<dict>` whose only key is `CF$UID` with an integer is a UID, as CoreFoundation
/// reads it. Every count and length is checked against the limits before the work it allows.
struct XMLPlistReader {
    private let bytes: [UInt8]
    private let limits: ArchiveLimits
    private var p = 0
    private var values = 0

    private enum Frame {
        case array([PropertyList])
        case dictionary([String: PropertyList], key: String?)
    }

    init(bytes: [UInt8], limits: ArchiveLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    mutating func read() throws -> PropertyList {
        try limits.checkSize(bytes.count)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { p = 3 }
        try skipMisc()
        if matches("<?xml") { try skip(past: "?>") }
        try skipMisc()
        if matches("<!DOCTYPE") { try skip(past: ">") }
        try skipMisc()
        let open = try readTag()
        guard open.name == "plist", !open.closing, !open.empty else {
            throw ArchiveError(.notAPropertyList, at: open.at, "no <plist> element")
        }
        let root = try readValue()
        try skipMisc()
        let close = try readTag()
        guard close.name == "plist", close.closing else {
            throw ArchiveError(.invalidXML, at: close.at, "more than one value in <plist>")
        }
        try skipMisc()
        guard p == bytes.count else { throw ArchiveError(.trailingBytes, at: p, "after </plist>") }
        return root
    }

    // MARK: Values

    private mutating func readValue() throws -> PropertyList {
        var stack: [Frame] = []
        while true {
            try skipMisc()
            let tag = try readTag()
            var value: PropertyList
            if tag.closing {
                guard let frame = stack.popLast() else {
                    throw ArchiveError(.invalidXML, at: tag.at, "</\(tag.name)> closes nothing")
                }
                switch (frame, tag.name) {
                case (.array(let items), "array"): value = .array(items)
                case (.dictionary(let d, nil), "dict"):
                    if d.count == 1, case .int(let uid)? = d["CF$UID"], uid >= 0 {
                        value = .uid(UInt64(uid))
                    } else {
                        value = .dictionary(d)
                    }
                case (.dictionary(_, _?), "dict"):
                    throw ArchiveError(.invalidXML, at: tag.at, "a <key> without a value")
                default: throw ArchiveError(.invalidXML, at: tag.at, "</\(tag.name)> closes another element")
                }
            } else {
                values += 1
                guard values <= limits.maxValues else {
                    throw ArchiveError(.valueLimit, at: tag.at, "more than \(limits.maxValues) values")
                }
                if tag.name == "key" {
                    guard case .dictionary(let d, nil)? = stack.last else {
                        throw ArchiveError(.invalidXML, at: tag.at, "<key> outside a <dict> or after another <key>")
                    }
                    let key = tag.empty ? "" : try readText(closing: "key", at: tag.at)
                    guard d[key] == nil else { throw ArchiveError(.duplicateKey, at: tag.at, "key repeated") }
                    stack[stack.count - 1] = .dictionary(d, key: key)
                    continue
                }
                if case .dictionary(_, nil)? = stack.last {
                    throw ArchiveError(.invalidXML, at: tag.at, "a <dict> value without a <key>")
                }
                // The root value is at depth 1, as in the binary reader.
                guard stack.count < limits.maxDepth else {
                    throw ArchiveError(.depthLimit, at: tag.at, "deeper than \(limits.maxDepth)")
                }
                switch tag.name {
                case "array", "dict":
                    if tag.empty {
                        value = tag.name == "array" ? .array([]) : .dictionary([:])
                        break
                    }
                    stack.append(tag.name == "array" ? .array([]) : .dictionary([:], key: nil))
                    continue
                case "true", "false":
                    if !tag.empty {
                        let close = try readTag()
                        guard close.closing, close.name == tag.name else {
                            throw ArchiveError(.invalidXML, at: close.at, "<\(tag.name)> holds something")
                        }
                    }
                    value = .bool(tag.name == "true")
                default:
                    let text = tag.empty ? "" : try readText(closing: tag.name, at: tag.at)
                    value = try scalar(tag.name, text, at: tag.at)
                }
            }
            switch stack.last {
            case nil: return value
            case .array(var items)?:
                stack[stack.count - 1] = .array([])  // keep the array uniquely referenced while appending
                items.append(value)
                stack[stack.count - 1] = .array(items)
            case .dictionary(var d, let key?)?:
                stack[stack.count - 1] = .dictionary([:], key: nil)
                d[key] = value
                stack[stack.count - 1] = .dictionary(d, key: nil)
            case .dictionary(_, nil)?:
                throw ArchiveError(.invalidXML, at: p, "a <dict> value without a <key>")
            }
        }
    }

    /// `text` without leading and trailing white space (FoundationEssentials has no `trimmingCharacters`).
    private func trimmed(_ text: String) -> String {
        var s = Substring(text)
        while let f = s.unicodeScalars.first, f.properties.isWhitespace { s = s.dropFirst() }
        while let l = s.unicodeScalars.last, l.properties.isWhitespace { s = s.dropLast() }
        return String(s)
    }

    private func scalar(_ name: String, _ text: String, at: Int) throws -> PropertyList {
        switch name {
        case "string": return .string(text)
        case "integer":
            let t = trimmed(text)
            if let i = Int64(t) { return .int(i) }
            if let u = UInt64(t) { return .uint(u) }
            throw ArchiveError(.invalidValue, at: at, "<integer> is not a 64-bit integer")
        case "real":
            let t = trimmed(text)
            switch t.lowercased() {
            case "nan": return .real(.nan)
            case "inf", "+inf", "infinity", "+infinity": return .real(.infinity)
            case "-inf", "-infinity": return .real(-.infinity)
            default:
                guard let d = Double(t), t.first.map({ $0.isNumber || $0 == "-" || $0 == "+" || $0 == "." }) == true
                else { throw ArchiveError(.invalidValue, at: at, "<real> is not a number") }
                return .real(d)
            }
        case "data":
            let compact = String(text.unicodeScalars.filter { !$0.properties.isWhitespace })
            guard compact.utf8.count / 4 * 3 <= limits.maxDataLength + 2 else {
                throw ArchiveError(.lengthLimit, at: at, "data longer than \(limits.maxDataLength) bytes")
            }
            guard let d = Data(base64Encoded: compact) else {
                throw ArchiveError(.invalidValue, at: at, "<data> is not base64")
            }
            guard d.count <= limits.maxDataLength else {
                throw ArchiveError(.lengthLimit, at: at, "data longer than \(limits.maxDataLength) bytes")
            }
            return .data(d)
        case "date":
            guard let t = Self.referenceSeconds(text) else {
                throw ArchiveError(.invalidValue, at: at, "<date> is not YYYY-MM-DDTHH:MM:SSZ")
            }
            return .date(t)
        default:
            throw ArchiveError(.unknownTag, at: at, "element <\(name)>")
        }
    }

    /// Seconds since 2001-01-01T00:00:00Z of `YYYY-MM-DDTHH:MM:SSZ` (the plist date form), or nil.
    static func referenceSeconds(_ text: String) -> Double? {
        let u = Array(text.utf8)
        guard u.count == 20, u[4] == 0x2D, u[7] == 0x2D, u[10] == 0x54, u[13] == 0x3A, u[16] == 0x3A, u[19] == 0x5A
        else { return nil }
        func number(_ r: Range<Int>) -> Int? {
            var v = 0
            for i in r {
                guard (0x30...0x39).contains(u[i]) else { return nil }
                v = v * 10 + Int(u[i] - 0x30)
            }
            return v
        }
        guard let y = number(0..<4), let m = number(5..<7), let d = number(8..<10), let hh = number(11..<13),
            let mm = number(14..<16), let ss = number(17..<19), (1...12).contains(m), (1...31).contains(d),
            hh < 24, mm < 60, ss < 60
        else { return nil }
        // Days from the civil date (H. Hinnant's algorithm), relative to 2001-01-01.
        let yy = m <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468 - 11_323
        return Double(days * 86_400 + hh * 3_600 + mm * 60 + ss)
    }

    // MARK: Tokens

    private struct Tag {
        let name: String
        let closing: Bool
        let empty: Bool
        let at: Int
    }

    private func matches(_ s: String) -> Bool { bytes[p...].starts(with: s.utf8) }

    private mutating func skip(past s: String) throws {
        let needle = Array(s.utf8)
        while p < bytes.count {
            if bytes[p...].starts(with: needle) {
                p += needle.count
                return
            }
            p += 1
        }
        throw ArchiveError(.truncated, at: p, "no \(s)")
    }

    /// White space and comments.
    private mutating func skipMisc() throws {
        while p < bytes.count {
            switch bytes[p] {
            case 0x20, 0x09, 0x0A, 0x0D: p += 1
            case 0x3C where matches("<!--"): try skip(past: "-->")
            default: return
            }
        }
    }

    private mutating func readTag() throws -> Tag {
        let at = p
        guard p < bytes.count else { throw ArchiveError(.truncated, at: p, "element") }
        guard bytes[p] == 0x3C else { throw ArchiveError(.invalidXML, at: p, "text where an element belongs") }
        p += 1
        let closing = p < bytes.count && bytes[p] == 0x2F
        if closing { p += 1 }
        let nameStart = p
        while p < bytes.count, Self.isNameByte(bytes[p]) { p += 1 }
        guard p > nameStart, p - nameStart <= 32 else { throw ArchiveError(.invalidXML, at: at, "element name") }
        let name = String(decoding: bytes[nameStart..<p], as: UTF8.self)
        // Attributes (only <plist version="1.0"> has any): skipped, quotes respected.
        var quote: UInt8?
        while p < bytes.count {
            let b = bytes[p]
            if let q = quote {
                if b == q { quote = nil }
            } else if b == 0x22 || b == 0x27 {
                quote = b
            } else if b == 0x3E {
                p += 1
                let empty = bytes[p - 2] == 0x2F
                guard !(empty && closing) else { throw ArchiveError(.invalidXML, at: at, "</\(name)/>") }
                return Tag(name: name, closing: closing, empty: empty, at: at)
            } else if b == 0x3C {
                throw ArchiveError(.invalidXML, at: p, "< inside <\(name)>")
            }
            p += 1
        }
        throw ArchiveError(.truncated, at: at, "element <\(name)>")
    }

    private static func isNameByte(_ b: UInt8) -> Bool {
        (0x61...0x7A).contains(b) || (0x41...0x5A).contains(b) || (0x30...0x39).contains(b) || b == 0x5F || b == 0x2D
    }

    /// The text up to `</name>`: UTF-8, entities and character references decoded, CDATA sections kept.
    private mutating func readText(closing name: String, at: Int) throws -> String {
        var out: [UInt8] = []
        let close = Array("</\(name)>".utf8)
        while true {
            guard p < bytes.count else { throw ArchiveError(.truncated, at: at, "<\(name)> not closed") }
            guard out.count <= limits.maxStringLength else {
                throw ArchiveError(.lengthLimit, at: at, "text longer than \(limits.maxStringLength) bytes")
            }
            let b = bytes[p]
            if b == 0x3C {
                if bytes[p...].starts(with: close) {
                    p += close.count
                    break
                }
                if matches("<![CDATA[") {
                    let start = p + 9
                    try skip(past: "]]>")
                    out += bytes[start..<p - 3]
                    continue
                }
                if matches("<!--") {
                    try skip(past: "-->")
                    continue
                }
                throw ArchiveError(.invalidXML, at: p, "an element inside <\(name)>")
            }
            if b == 0x26 {
                out += try readReference()
                continue
            }
            out.append(b)
            p += 1
        }
        guard out.count <= limits.maxStringLength else {
            throw ArchiveError(.lengthLimit, at: at, "text longer than \(limits.maxStringLength) bytes")
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw ArchiveError(.invalidUTF8, at: at, "text") }
        try limits.checkNonStarterRun(s, at: at, "text")
        return s
    }

    /// `&name;` or `&#N;` / `&#xH;`, as UTF-8.
    private mutating func readReference() throws -> [UInt8] {
        let at = p
        guard let semicolon = bytes[p...].prefix(12).firstIndex(of: 0x3B) else {
            throw ArchiveError(.invalidXML, at: at, "& without ;")
        }
        let body = String(decoding: bytes[(p + 1)..<semicolon], as: UTF8.self)
        p = semicolon + 1
        switch body {
        case "lt": return [0x3C]
        case "gt": return [0x3E]
        case "amp": return [0x26]
        case "quot": return [0x22]
        case "apos": return [0x27]
        default:
            var code: UInt32?
            if body.hasPrefix("#x") || body.hasPrefix("#X") {
                code = UInt32(body.dropFirst(2), radix: 16)
            } else if body.hasPrefix("#") {
                code = UInt32(body.dropFirst(), radix: 10)
            }
            guard let code, code != 0, let scalar = Unicode.Scalar(code) else {
                throw ArchiveError(.invalidXML, at: at, "unknown entity")
            }
            return Array(String(Character(scalar)).utf8)
        }
    }
}

extension PropertyList {
    /// Reads an XML property list. Throws ``ArchiveError`` on anything malformed or beyond `limits`.
    public init(xml bytes: [UInt8], limits: ArchiveLimits = .default) throws {
        var reader = XMLPlistReader(bytes: bytes, limits: limits)
        self = try reader.read()
    }
}

extension ArchiveError.Code {
    /// An XML property list is not well formed: elements that do not nest, a `<key>` without a value, text
    /// where an element belongs, an unknown entity.
    public static let invalidXML = Self(rawValue: "invalid XML")
}
