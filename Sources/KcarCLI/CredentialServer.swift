import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// What the git and docker credential helpers share: reading their request from standard input within a
/// limit, the keychain group they keep their items in, and the internet-password attributes of a server
/// as Apple maps them (`srvr`, `ptcl`, `port`, `path`; SPEC.md §K3).
enum CredentialServer {
    /// The most a helper reads from standard input: a request is a few lines (a URL, a user name, a token,
    /// git's `wwwauth[]` headers), so anything bigger is refused before it is parsed.
    static let requestMax = 1 << 20

    /// git's protocol names (a URL scheme) and Apple's four-character `kSecAttrProtocol` codes.
    static let protocolCodes: [String: String] = [
        "https": "htps", "http": "http", "ftp": "ftp ", "ftps": "ftps", "ssh": "ssh ", "imap": "imap",
        "imaps": "imps", "smtp": "smtp", "pop3": "pop3", "pop3s": "pops", "ldap": "ldap", "ldaps": "ldps",
        "telnet": "teln", "telnets": "tels", "socks": "sox ", "smb": "smb ", "afp": "afp ", "irc": "irc ",
        "ircs": "ircs", "nntp": "nntp", "nntps": "ntps", "rtsp": "rtsp", "ipp": "ipp ", "svn": "svn "
    ]

    /// Standard input up to its end, or up to the first empty line when `stopAtBlankLine` (git's protocol:
    /// the helper must not wait for an end of file that may never come). Refused beyond ``requestMax``.
    static func readRequest(what: String, stopAtBlankLine: Bool) throws -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1 << 14)
        defer { wipe(&buf) }
        // Where the line being read starts, and how far the bytes were scanned for line ends.
        var lineStart = 0
        var scanned = 0
        while true {
            if stopAtBlankLine {
                while scanned < out.count {
                    let b = out[scanned]
                    scanned += 1
                    guard b == UInt8(ascii: "\n") else { continue }
                    if scanned - lineStart == 1 || (scanned - lineStart == 2 && out[lineStart] == UInt8(ascii: "\r")) {
                        // What follows the empty line is not the request: dropped, and zeroed first.
                        for i in scanned..<out.count { out[i] = 0 }
                        out.removeSubrange(scanned...)
                        return out
                    }
                    lineStart = scanned
                }
            }
            let n = buf.withUnsafeMutableBytes { read(0, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 {
                throw CLIError(.io, "cannot read the \(what) from standard input: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return out }
            guard out.count + n <= requestMax else {
                wipe(&out)
                throw CLIError.usage("the \(what) on standard input is larger than \(requestMax >> 20) MiB")
            }
            out += buf[0..<n]
        }
    }

    /// A host as git and URLs write it, `name`, `name:port`, `[v6]` or `[v6]:port`: the server name
    /// (without brackets) and the port (0 when none is given).
    static func splitHost(_ host: String) throws -> (server: String, port: Int64) {
        var name = Substring(host)
        var portText: Substring?
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") {
            let after = name[name.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else {
                throw CLIError.usage("host \(shown(host)): text after ]")
            }
            if after.hasPrefix(":") { portText = after.dropFirst() }
            name = name[name.index(after: name.startIndex)..<close]
        } else if let colon = name.lastIndex(of: ":") {
            portText = name[name.index(after: colon)...]
            name = name[..<colon]
        }
        guard let portText else { return (String(name), 0) }
        guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let port = Int64(portText), (1...65_535).contains(port)
        else {
            throw CLIError.usage("host \(shown(host)): the port is not a number from 1 to 65535")
        }
        return (String(name), port)
    }

    /// Untrusted text in an error message, cut to 80 characters: a request can hold a megabyte of it.
    static func shown(_ text: String) -> String {
        text.count <= 80 ? text : String(text.prefix(80)) + "..."
    }

    /// The access group of a helper: `--group G`, else the environment variable, else the default.
    static func group(_ args: Arguments, environment: String, default name: String) -> String {
        if let g = args.value("group") { return g }
        if let g = getenv(environment).map({ String(cString: $0) }), !g.isEmpty { return g }
        return name
    }

    /// A value as a protocol line or JSON string can carry it: valid UTF-8 (and, for git's lines, no line
    /// break or NUL), else nil.
    static func text(_ bytes: [UInt8], lineSafe: Bool) -> String? {
        if lineSafe, bytes.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
