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
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let ftp = ProtocolType(rawValue: "ftp ")
    public static let ftpAccount = ProtocolType(rawValue: "ftpa")
    public static let http = ProtocolType(rawValue: "http")
    public static let irc = ProtocolType(rawValue: "irc ")
    public static let nntp = ProtocolType(rawValue: "nntp")
    public static let pop3 = ProtocolType(rawValue: "pop3")
    public static let smtp = ProtocolType(rawValue: "smtp")
    public static let socks = ProtocolType(rawValue: "sox ")
    public static let imap = ProtocolType(rawValue: "imap")
    public static let ldap = ProtocolType(rawValue: "ldap")
    public static let appleTalk = ProtocolType(rawValue: "atlk")
    public static let afp = ProtocolType(rawValue: "afp ")
    public static let telnet = ProtocolType(rawValue: "teln")
    public static let ssh = ProtocolType(rawValue: "ssh ")
    public static let ftps = ProtocolType(rawValue: "ftps")
    public static let https = ProtocolType(rawValue: "htps")
    public static let httpProxy = ProtocolType(rawValue: "htpx")
    public static let httpsProxy = ProtocolType(rawValue: "htsx")
    public static let ftpProxy = ProtocolType(rawValue: "ftpx")
    public static let smb = ProtocolType(rawValue: "smb ")
    public static let rtsp = ProtocolType(rawValue: "rtsp")
    public static let rtspProxy = ProtocolType(rawValue: "rtsx")
    public static let daap = ProtocolType(rawValue: "daap")
    public static let eppc = ProtocolType(rawValue: "eppc")
    public static let ipp = ProtocolType(rawValue: "ipp ")
    public static let nntps = ProtocolType(rawValue: "ntps")
    public static let ldaps = ProtocolType(rawValue: "ldps")
    public static let telnetS = ProtocolType(rawValue: "tels")
    public static let imaps = ProtocolType(rawValue: "imps")
    public static let ircs = ProtocolType(rawValue: "ircs")
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
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let ntlm = AuthenticationType(rawValue: "ntlm")
    public static let msn = AuthenticationType(rawValue: "msna")
    public static let dpa = AuthenticationType(rawValue: "dpaa")
    public static let rpa = AuthenticationType(rawValue: "rpaa")
    public static let httpBasic = AuthenticationType(rawValue: "http")
    public static let httpDigest = AuthenticationType(rawValue: "httd")
    public static let htmlForm = AuthenticationType(rawValue: "form")
    public static let `default` = AuthenticationType(rawValue: "dflt")
}
