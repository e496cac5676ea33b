import FoundationEssentials
import VaultFormat

// KeychainAccess's common spellings on kcar's `Keychain`, so code written for
// KeychainAccess compiles with its import changed: `Keychain(service:)`, `set(_:key:)`, `get(_:)`,
// `getData(_:)`, `remove(_:)`, `removeAll()`, `allKeys()`, the `label(_:)`, `comment(_:)`,
// `accessibility(_:)` and `synchronizable(_:)` modifiers, the subscripts, and `Keychain(server:protocolType:)`
// for internet passwords. Each is one call of the typed API; KeychainAccess's authentication UI, shared web
// credentials and `allItems()` dictionaries have no counterpart here.

extension Keychain {
    /// KeychainAccess's `Keychain()`: generic passwords of the program's own service, its name (as iOS uses
    /// the bundle identifier).
    public init() {
        self.init(service: KeychainStore.programGroup ?? "kcar")
    }

    /// Internet passwords for one server (KeychainAccess's `Keychain(server:protocolType:)`): keys are
    /// accounts, items are `inet` with `kSecAttrServer` the URL's host, `kSecAttrPort` its port if it has one,
    /// `kSecAttrProtocol` and `kSecAttrAuthenticationType` (SPEC.md §K3).
    public init(
        server: URL, protocolType: ProtocolType, accessGroup: String? = nil,
        authenticationType: AuthenticationType = .default, store: KeychainStore? = nil
    ) {
        self.init(service: "", accessGroup: accessGroup, store: store)
        internet = InternetServer(
            host: server.host ?? server.absoluteString, port: server.port, protocolType: protocolType,
            authenticationType: authenticationType)
    }

    /// The same from a URL string (`"https://github.com"`); a string that is not a URL is taken as the host.
    public init(
        server: String, protocolType: ProtocolType, accessGroup: String? = nil,
        authenticationType: AuthenticationType = .default, store: KeychainStore? = nil
    ) {
        if let url = URL(string: server), url.host != nil {
            self.init(
                server: url, protocolType: protocolType, accessGroup: accessGroup,
                authenticationType: authenticationType, store: store)
        } else {
            self.init(service: "", accessGroup: accessGroup, store: store)
            internet = InternetServer(
                host: server, port: nil, protocolType: protocolType, authenticationType: authenticationType)
        }
    }

    /// `genericPassword`, or `internetPassword` for a keychain made with `init(server:protocolType:)`.
    public var itemClass: ItemClass { internet == nil ? .genericPassword : .internetPassword }
    /// The server of an internet-password keychain (scheme and host, with the port if one was given).
    public var server: URL? {
        guard let internet else { return nil }
        var s = "\(internet.protocolType.scheme)://\(internet.host)"
        if let port = internet.port { s += ":\(port)" }
        return URL(string: s)
    }
    /// The protocol of an internet-password keychain.
    public var protocolType: ProtocolType? { internet?.protocolType }
    /// The authentication type of an internet-password keychain.
    public var authenticationType: AuthenticationType? { internet?.authenticationType }

    /// A copy that writes this label (`kSecAttrLabel`) with each value.
    public func label(_ label: String) -> Keychain {
        var k = self
        k.label = label
        return k
    }

    /// A copy that writes this comment (`kSecAttrComment`) with each value.
    public func comment(_ comment: String) -> Keychain {
        var k = self
        k.comment = comment
        return k
    }

    /// KeychainAccess's `set(_:key:)`: stores a string as UTF-8.
    public func set(_ value: String, key: String) throws { try setString(value, forKey: key) }

    /// KeychainAccess's `set(_:key:)`: stores bytes.
    public func set(_ value: Data, key: String) throws { try setData(value, forKey: key) }

    /// KeychainAccess's `get(_:)`: the string under `key`, or nil.
    public func get(_ key: String) throws -> String? { try getString(key) }

    /// KeychainAccess's `subscript(string:)`, the same as ``subscript(_:)``.
    public subscript(string key: String) -> String? {
        get { self[key] }
        nonmutating set { self[key] = newValue }
    }
}

/// An internet password's server, protocol and authentication type: the attributes every item of such a
/// keychain has (and its queries select).
struct InternetServer: Sendable, Hashable {
    var host: String
    var port: Int?
    var protocolType: ProtocolType
    var authenticationType: AuthenticationType

    func select(_ a: inout Attributes) {
        a[AttributeName.server] = .string(host)
        a[AttributeName.protocol] = .string(protocolType.rawValue)
        a[AttributeName.authenticationType] = .string(authenticationType.rawValue)
        if let port { a[AttributeName.port] = .integer(Int64(port)) }
    }
}

/// The protocol of an internet password (`kSecAttrProtocol`), KeychainAccess's `ProtocolType`: Apple's
/// four-character codes, as kcar stores them (`.https` is `htps`). An open set: any code is a value.
public struct ProtocolType: RawRepresentable, Hashable, Sendable {
    /// Apple's four-character code.
    public let rawValue: String
    /// The value of code `rawValue` (any code: the set is open).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// KeychainAccess's `.ftp`: Apple's code `"ftp "`.
    public static let ftp = ProtocolType(rawValue: "ftp ")
    /// KeychainAccess's `.ftpAccount`: Apple's code `"ftpa"`.
    public static let ftpAccount = ProtocolType(rawValue: "ftpa")
    /// KeychainAccess's `.http`: Apple's code `"http"`.
    public static let http = ProtocolType(rawValue: "http")
    /// KeychainAccess's `.irc`: Apple's code `"irc "`.
    public static let irc = ProtocolType(rawValue: "irc ")
    /// KeychainAccess's `.nntp`: Apple's code `"nntp"`.
    public static let nntp = ProtocolType(rawValue: "nntp")
    /// KeychainAccess's `.pop3`: Apple's code `"pop3"`.
    public static let pop3 = ProtocolType(rawValue: "pop3")
    /// KeychainAccess's `.smtp`: Apple's code `"smtp"`.
    public static let smtp = ProtocolType(rawValue: "smtp")
    /// KeychainAccess's `.socks`: Apple's code `"sox "`.
    public static let socks = ProtocolType(rawValue: "sox ")
    /// KeychainAccess's `.imap`: Apple's code `"imap"`.
    public static let imap = ProtocolType(rawValue: "imap")
    /// KeychainAccess's `.ldap`: Apple's code `"ldap"`.
    public static let ldap = ProtocolType(rawValue: "ldap")
    /// KeychainAccess's `.appleTalk`: Apple's code `"atlk"`.
    public static let appleTalk = ProtocolType(rawValue: "atlk")
    /// KeychainAccess's `.afp`: Apple's code `"afp "`.
    public static let afp = ProtocolType(rawValue: "afp ")
    /// KeychainAccess's `.telnet`: Apple's code `"teln"`.
    public static let telnet = ProtocolType(rawValue: "teln")
    /// KeychainAccess's `.ssh`: Apple's code `"ssh "`.
    public static let ssh = ProtocolType(rawValue: "ssh ")
    /// KeychainAccess's `.ftps`: Apple's code `"ftps"`.
    public static let ftps = ProtocolType(rawValue: "ftps")
    /// KeychainAccess's `.https`: Apple's code `"htps"`.
    public static let https = ProtocolType(rawValue: "htps")
    /// KeychainAccess's `.httpProxy`: Apple's code `"htpx"`.
    public static let httpProxy = ProtocolType(rawValue: "htpx")
    /// KeychainAccess's `.httpsProxy`: Apple's code `"htsx"`.
    public static let httpsProxy = ProtocolType(rawValue: "htsx")
    /// KeychainAccess's `.ftpProxy`: Apple's code `"ftpx"`.
    public static let ftpProxy = ProtocolType(rawValue: "ftpx")
    /// KeychainAccess's `.smb`: Apple's code `"smb "`.
    public static let smb = ProtocolType(rawValue: "smb ")
    /// KeychainAccess's `.rtsp`: Apple's code `"rtsp"`.
    public static let rtsp = ProtocolType(rawValue: "rtsp")
    /// KeychainAccess's `.rtspProxy`: Apple's code `"rtsx"`.
    public static let rtspProxy = ProtocolType(rawValue: "rtsx")
    /// KeychainAccess's `.daap`: Apple's code `"daap"`.
    public static let daap = ProtocolType(rawValue: "daap")
    /// KeychainAccess's `.eppc`: Apple's code `"eppc"`.
    public static let eppc = ProtocolType(rawValue: "eppc")
    /// KeychainAccess's `.ipp`: Apple's code `"ipp "`.
    public static let ipp = ProtocolType(rawValue: "ipp ")
    /// KeychainAccess's `.nntps`: Apple's code `"ntps"`.
    public static let nntps = ProtocolType(rawValue: "ntps")
    /// KeychainAccess's `.ldaps`: Apple's code `"ldps"`.
    public static let ldaps = ProtocolType(rawValue: "ldps")
    /// KeychainAccess's `.telnetS`: Apple's code `"tels"`.
    public static let telnetS = ProtocolType(rawValue: "tels")
    /// KeychainAccess's `.imaps`: Apple's code `"imps"`.
    public static let imaps = ProtocolType(rawValue: "imps")
    /// KeychainAccess's `.ircs`: Apple's code `"ircs"`.
    public static let ircs = ProtocolType(rawValue: "ircs")
    /// KeychainAccess's `.pop3S`: Apple's code `"pops"`.
    public static let pop3S = ProtocolType(rawValue: "pops")

    /// The URL scheme of the protocol (`https` for `htps`), for ``Keychain/server``.
    var scheme: String {
        switch self {
        case .https: "https"
        case .ftps: "ftps"
        case .imaps: "imaps"
        case .pop3S: "pop3s"
        case .telnetS: "telnets"
        case .nntps: "nntps"
        default: String(rawValue.filter { $0 != " " })
        }
    }
}

/// How an internet password authenticates (`kSecAttrAuthenticationType`), KeychainAccess's
/// `AuthenticationType`, as Apple's four-character codes. An open set.
public struct AuthenticationType: RawRepresentable, Hashable, Sendable {
    /// Apple's four-character code.
    public let rawValue: String
    /// The value of code `rawValue` (any code: the set is open).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// KeychainAccess's `.ntlm`: Apple's code `"ntlm"`.
    public static let ntlm = AuthenticationType(rawValue: "ntlm")
    /// KeychainAccess's `.msn`: Apple's code `"msna"`.
    public static let msn = AuthenticationType(rawValue: "msna")
    /// KeychainAccess's `.dpa`: Apple's code `"dpaa"`.
    public static let dpa = AuthenticationType(rawValue: "dpaa")
    /// KeychainAccess's `.rpa`: Apple's code `"rpaa"`.
    public static let rpa = AuthenticationType(rawValue: "rpaa")
    /// KeychainAccess's `.httpBasic`: Apple's code `"http"`.
    public static let httpBasic = AuthenticationType(rawValue: "http")
    /// KeychainAccess's `.httpDigest`: Apple's code `"httd"`.
    public static let httpDigest = AuthenticationType(rawValue: "httd")
    /// KeychainAccess's `.htmlForm`: Apple's code `"form"`.
    public static let htmlForm = AuthenticationType(rawValue: "form")
    /// KeychainAccess's `.default`: Apple's code `"dflt"`.
    public static let `default` = AuthenticationType(rawValue: "dflt")
}
