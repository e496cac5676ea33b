#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The URL rule of SPEC.md Part 2 §A5.4: RFC 3986's grammar, checked byte by byte without Foundation, so
/// that what an archive may hold does not depend on the URL parser of a platform. Foundation is used only to
/// build the `URL` value of a string this rule accepts (a test checks that it gives the string back).
enum ArchiveURL {
    /// Which strings a URL slot may hold.
    enum Form {
        /// `URI / relative-ref` (tag `0x0B`).
        case reference
        /// `relative-ref` (the first slot of tag `0x0C`).
        case relative
        /// `URI`: a scheme is required (the base, second slot of tag `0x0C`).
        case absolute
    }

    /// Why `string` is not of `form`, or nil if it is.
    static func problem(_ string: String, _ form: Form) -> String? {
        var s = string
        return s.withUTF8 { problem(bytes: $0, form) }
    }

    /// Why `url` cannot be archived (its relative string and base's absolute string, §A5.4), or nil.
    static func problem(_ url: URL) -> String? {
        guard let base = url.baseURL else { return problem(url.relativeString, .reference).map { "URL: \($0)" } }
        if let p = problem(base.absoluteString, .absolute) { return "base URL: \(p)" }
        return problem(url.relativeString, .relative).map { "relative URL: \($0)" }
    }

    /// The URL of a slot (tag `0x0B`) or of a slot and a base (tag `0x0C`), both already checked by the
    /// rule; nil if Foundation does not give the strings back (never for a string the rule accepts).
    static func make(_ relative: String, base: String?) -> URL? {
        guard let base else {
            guard let url = URL(string: relative), url.relativeString == relative, url.baseURL == nil else {
                return nil
            }
            return url
        }
        guard let b = URL(string: base), b.absoluteString == base, b.baseURL == nil,
            let url = URL(string: relative, relativeTo: b), url.relativeString == relative,
            url.baseURL?.absoluteString == base
        else { return nil }
        return url
    }

    // MARK: The grammar

    private typealias Bytes = UnsafeBufferPointer<UInt8>

    private static func problem(bytes s: Bytes, _ form: Form) -> String? {
        guard !s.isEmpty else { return "empty" }
        // Every byte is a URI character; every "%" starts a pct-encoded triplet.
        var i = 0
        while i < s.count {
            let c = s[i]
            if c == UInt8(ascii: "%") {
                guard i + 2 < s.count, s[i + 1].isHexDigit, s[i + 2].isHexDigit else { return "bad %-escape" }
                i += 3
                continue
            }
            guard c.isUnreserved || c.isSubDelim || c.isGenDelim else { return "character outside RFC 3986" }
            i += 1
        }
        // Fragment: after the first "#"; query: after the first "?" before it.
        var end = s.count
        if let hash = s.firstIndex(of: UInt8(ascii: "#")) {
            guard !s[(hash + 1)...].contains(where: { $0 == UInt8(ascii: "#") || $0.isBracket }) else {
                return "bad fragment"
            }
            end = hash
        }
        if let question = s[..<end].firstIndex(of: UInt8(ascii: "?")) {
            guard !s[(question + 1)..<end].contains(where: \.isBracket) else { return "bad query" }
            end = question
        }
        // Scheme: a ":" before the first "/" ends one, and then it must be valid.
        var start = 0
        let firstSlash = s[..<end].firstIndex(of: UInt8(ascii: "/")) ?? end
        if let colon = s[..<firstSlash].firstIndex(of: UInt8(ascii: ":")) {
            guard form != .relative else { return "has a scheme (a URL with a base is a relative reference)" }
            guard colon > 0, s[0].isASCIILetter,
                s[1..<colon].allSatisfy({
                    $0.isASCIILetter || $0.isDigit || $0 == UInt8(ascii: "+")
                        || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                })
            else { return colon == 0 ? "empty scheme" : "bad scheme (or \":\" in a first path segment)" }
            start = colon + 1
        } else if form == .absolute {
            return "no scheme"
        }
        // Authority after "//", up to the next "/".
        var pathStart = start
        if end - start >= 2, s[start] == UInt8(ascii: "/"), s[start + 1] == UInt8(ascii: "/") {
            let authorityEnd = s[(start + 2)..<end].firstIndex(of: UInt8(ascii: "/")) ?? end
            if let p = authorityProblem(Bytes(rebasing: s[(start + 2)..<authorityEnd])) { return p }
            pathStart = authorityEnd
        }
        // Path: pchar and "/", so no bracket ("?" and "#" ended it already).
        guard !s[pathStart..<end].contains(where: \.isBracket) else { return "bad path" }
        return nil
    }

    private static func authorityProblem(_ a: Bytes) -> String? {
        var hostStart = 0
        if let at = a.firstIndex(of: UInt8(ascii: "@")) {
            guard !a[..<at].contains(where: \.isBracket) else { return "bad userinfo" }
            hostStart = at + 1
        }
        var portStart: Int?
        if hostStart < a.count, a[hostStart] == UInt8(ascii: "[") {
            guard let close = a[hostStart...].firstIndex(of: UInt8(ascii: "]")) else { return "unclosed IP literal" }
            guard isIPLiteral(Bytes(rebasing: a[(hostStart + 1)..<close])) else { return "bad IP literal" }
            if close + 1 < a.count {
                guard a[close + 1] == UInt8(ascii: ":") else { return "bad authority after IP literal" }
                portStart = close + 2
            }
        } else {
            let colon = a[hostStart...].firstIndex(of: UInt8(ascii: ":"))
            // reg-name: unreserved, pct-encoded, sub-delims.
            guard !a[hostStart..<(colon ?? a.count)].contains(where: { $0 == UInt8(ascii: "@") || $0.isBracket }) else {
                return "bad host"
            }
            portStart = colon.map { $0 + 1 }
        }
        if let portStart, !a[portStart...].allSatisfy(\.isDigit) { return "bad port" }
        return nil
    }

    /// `IPv6address / IPvFuture` (between the brackets).
    private static func isIPLiteral(_ s: Bytes) -> Bool {
        guard let first = s.first else { return false }
        if first == UInt8(ascii: "v") || first == UInt8(ascii: "V") {
            guard let dot = s.firstIndex(of: UInt8(ascii: ".")), dot > 1, dot + 1 < s.count else { return false }
            return s[1..<dot].allSatisfy(\.isHexDigit)
                && s[(dot + 1)...].allSatisfy { $0.isUnreserved || $0.isSubDelim || $0 == UInt8(ascii: ":") }
        }
        return isIPv6(s)
    }

    /// RFC 3986's IPv6address: eight 16-bit groups, or fewer around one "::" that stands for at least one; the
    /// last two groups may be an IPv4address.
    private static func isIPv6(_ s: Bytes) -> Bool {
        let colon = UInt8(ascii: ":")
        var doubleColon: Int?
        var i = 0
        while i + 1 < s.count {
            if s[i] == colon, s[i + 1] == colon {
                guard doubleColon == nil else { return false }
                doubleColon = i
                i += 2
            } else {
                i += 1
            }
        }
        func groups(_ part: Slice<Bytes>, last: Bool) -> Int? {
            if part.isEmpty { return 0 }
            var count = 0
            let fields = part.split(separator: colon, omittingEmptySubsequences: false)
            for (n, field) in fields.enumerated() {
                if last, n == fields.count - 1, field.contains(UInt8(ascii: ".")) {
                    guard isIPv4(field) else { return nil }
                    count += 2
                } else {
                    guard (1...4).contains(field.count), field.allSatisfy(\.isHexDigit) else { return nil }
                    count += 1
                }
            }
            return count
        }
        guard let d = doubleColon else {
            return groups(s[...], last: true) == 8
        }
        guard let left = groups(s[..<d], last: false), let right = groups(s[(d + 2)...], last: true) else {
            return false
        }
        return left + right <= 7
    }

    /// Four dec-octets (0-255, no leading zero) separated by ".".
    private static func isIPv4(_ s: Slice<Bytes>) -> Bool {
        let octets = s.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return octets.count == 4
            && octets.allSatisfy { o in
                guard (1...3).contains(o.count), o.allSatisfy(\.isDigit), o.count == 1 || o.first != UInt8(ascii: "0")
                else {
                    return false
                }
                return o.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) } <= 255
            }
    }
}

extension UInt8 {
    fileprivate var isDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
    fileprivate var isASCIILetter: Bool { (self | 0x20) >= UInt8(ascii: "a") && (self | 0x20) <= UInt8(ascii: "z") }
    fileprivate var isHexDigit: Bool {
        isDigit || ((self | 0x20) >= UInt8(ascii: "a") && (self | 0x20) <= UInt8(ascii: "f"))
    }
    fileprivate var isUnreserved: Bool {
        isDigit || isASCIILetter || self == UInt8(ascii: "-") || self == UInt8(ascii: ".")
            || self == UInt8(ascii: "_") || self == UInt8(ascii: "~")
    }
    /// `!$&'()*+,;=`
    fileprivate var isSubDelim: Bool {
        switch self {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="):
            true
        default: false
        }
    }
    /// `:/?#[]@`
    fileprivate var isGenDelim: Bool {
        switch self {
        case UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "["),
            UInt8(ascii: "]"), UInt8(ascii: "@"):
            true
        default: false
        }
    }
    fileprivate var isBracket: Bool { self == UInt8(ascii: "[") || self == UInt8(ascii: "]") }
}
