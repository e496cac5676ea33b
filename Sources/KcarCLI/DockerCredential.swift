import FoundationEssentials
import KcarKeychain
import KeyedArchive
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar docker-credential store|get|erase|list` (also run as `docker-credential-kcar`): the protocol of
/// docker/docker-credential-helpers over internet-password items of one access group.
enum DockerCredential {
    static let defaultGroup = "docker-credentials"
    static let groupVariable = "KCAR_DOCKER_CREDENTIAL_GROUP"
    /// What docker's CLI matches on standard output to tell "no credentials" from a failure.
    static let notFound = "credentials not found in native keychain"
    /// The label docker's own keychain helper (osxkeychain) gives its items.
    static let label = "Docker Credentials"
    /// The server URL as docker gave it, so `list` and `get` answer with docker's own key.
    static let serverURLAttribute = "@docker_server_url"

    static let help = """
        usage: kcar docker-credential [--group G] [--keychain DIR] store|get|erase|list|version
               docker-credential-kcar store|get|erase|list|version
          docker's credential helper: `"credsStore": "kcar"` in ~/.docker/config.json, with
          docker-credential-kcar on PATH. The protocol of docker-credential-helpers:
          store   reads {"ServerURL": ..., "Username": ..., "Secret": ...} on standard input
          get     reads a server URL on standard input, prints {"ServerURL":...,"Username":...,"Secret":...}
          erase   reads a server URL on standard input and deletes its credentials
          list    prints a JSON object from each server URL to its username
          A missing credential prints `credentials not found in native keychain` on standard output; every
          failure prints its message on standard output and exits 1, as docker expects. Items are internet
          passwords (class inet) in group G (default docker-credentials, or $KCAR_DOCKER_CREDENTIAL_GROUP):
          srvr the registry's host, ptcl htps (http for http://), port, path, acct the username, the value
          the secret, label "Docker Credentials"; one per server URL, as docker keeps them.
        """

    struct StoreRequest: Decodable {
        var ServerURL: String?
        var Username: String?
        var Secret: String?
    }

    /// Runs an action; every failure is reported as docker-credential-helpers' `Serve` reports it.
    static func run(_ argv: Invocation) throws -> ExitCode {
        do {
            try perform(argv)
            return .success
        } catch {
            Output.out.line(terminalSafe(message(error)))
            return .failure
        }
    }

    private struct NotFound: Error {}

    static func message(_ error: any Error) -> String {
        switch error {
        case is NotFound: return notFound
        case let e as CLIError: return e.message
        case let e as KeychainError: return e.description
        case let e as VaultError: return e.description
        default: return "\(error)"
        }
    }

    static func perform(_ argv: Invocation) throws {
        let args = try Arguments(argv, specs: CLI.specs("docker-credential"))
        guard let action = try args.positionals(["store|get|erase|list|version"]).first else {
            throw CLIError.usage("expected an action")
        }
        let group = CredentialServer.group(args, environment: groupVariable, default: defaultGroup)
        switch action {
        case "store": try store(args, group)
        case "get": try get(args, group)
        case "erase": try erase(args, group)
        case "list": try list(args, group)
        case "version": Output.out.line("docker-credential-kcar (kcar) 0.1")
        default: throw CLIError.usage("docker-credential-kcar: unknown action: \(action)")
        }
    }

    /// A server URL as docker-credential-helpers' `registryurl.Parse` reads it: lowercased, `https://` when
    /// no scheme is given, only http and https, a host required; the query and fragment dropped.
    static func attributes(ofServer url: String) throws -> Attributes {
        let lower = url.lowercased()
        var rest = Substring(lower)
        var scheme = "https"
        if let sep = lower.firstRange(of: "://") {
            scheme = String(lower[..<sep.lowerBound])
            rest = lower[sep.upperBound...]
            guard scheme == "https" || scheme == "http" else {
                throw CLIError.usage("unsupported scheme: \(CredentialServer.shown(scheme))")
            }
        } else if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
        }
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let (server, port) = try CredentialServer.splitHost(String(authority))
        guard !server.isEmpty else { throw CLIError.usage("no hostname in URL") }
        var a = Attributes()
        a["srvr"] = .string(server)
        a["ptcl"] = .string(scheme == "http" ? "http" : "htps")
        a["port"] = .integer(port)
        a["path"] = .string(String(rest[slash...]))
        return a
    }

    static func query(_ url: String, _ group: String) throws -> ItemQuery {
        ItemQuery(class: .internetPassword, attributes: try attributes(ofServer: url), group: group)
    }

    /// The server URL of a get or erase: standard input with surrounding white space removed.
    static func readServerURL() throws -> String {
        let bytes = try CredentialServer.readRequest(what: "server URL", stopAtBlankLine: false)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CLIError.usage("the server URL is not UTF-8")
        }
        let scalars = Array(text.unicodeScalars)
        var (lo, hi) = (0, scalars.count)
        while lo < hi, scalars[lo].properties.isWhitespace { lo += 1 }
        while hi > lo, scalars[hi - 1].properties.isWhitespace { hi -= 1 }
        var trimmed = String.UnicodeScalarView()
        trimmed.append(contentsOf: scalars[lo..<hi])
        let url = String(trimmed)
        guard !url.isEmpty else { throw CLIError.usage("no credentials server URL") }
        return url
    }

    static func store(_ args: Arguments, _ group: String) throws {
        var input = try CredentialServer.readRequest(what: "credentials", stopAtBlankLine: false)
        defer { wipe(&input) }
        let request: StoreRequest
        do {
            request = try JSONDecoder().decode(StoreRequest.self, from: Data(input))
        } catch {
            throw CLIError.usage(
                "the credentials on standard input are not a JSON object of ServerURL, Username and Secret strings")
        }
        guard let url = request.ServerURL, !url.isEmpty else { throw CLIError.usage("no credentials server URL") }
        guard let user = request.Username, !user.isEmpty else { throw CLIError.usage("no credentials username") }
        let q = try query(url, group)
        var attributes = q.attributes
        if attributes["port"] == .integer(0) { attributes["port"] = nil }
        if attributes["path"] == .string("") { attributes["path"] = nil }
        attributes[AttributeName.account] = .string(user)
        attributes["labl"] = .string(label)
        attributes[serverURLAttribute] = .string(url)
        var value = Array((request.Secret ?? "").utf8)
        defer { wipe(&value) }
        try ItemCommands.store(args).transaction(group: group) { tx in
            // One credential per server, as docker keeps them: a new username replaces the old one.
            for old in try tx.find(q) { try tx.delete(old.id) }
            try tx.add(class: .internetPassword, attributes: attributes, value: value)
        }
    }

    static func get(_ args: Arguments, _ group: String) throws {
        let url = try readServerURL()
        let s = try ItemCommands.store(args)
        guard let item = try s.find(query(url, group)).first else { throw NotFound() }
        var value = try s.value(of: item)
        defer { wipe(&value) }
        guard let secret = CredentialServer.text(value, lineSafe: false) else {
            throw CLIError(
                .damaged, "item \(item.id) of group \(group): its secret is not UTF-8, which docker cannot take")
        }
        Output.out.line(
            "{\"ServerURL\":\(JSON.string(url)),\"Username\":\(JSON.string(item.attributes.string(AttributeName.account) ?? "")),"
                + "\"Secret\":\(JSON.string(secret))}")
    }

    static func erase(_ args: Arguments, _ group: String) throws {
        let url = try readServerURL()
        let s = try ItemCommands.store(args)
        guard s.directory.exists(group) else { throw NotFound() }
        let q = try query(url, group)
        let n = try s.transaction(group: group) { tx in
            let found = try tx.find(q)
            for item in found { try tx.delete(item.id) }
            return found.count
        }
        guard n > 0 else { throw NotFound() }
    }

    static func list(_ args: Arguments, _ group: String) throws {
        let s = try ItemCommands.store(args)
        var users: [String: String] = [:]
        for item in try s.find(ItemQuery(class: .internetPassword, group: group)) {
            let a = item.attributes
            let url = a.string(serverURLAttribute) ?? serverURL(a)
            if users[url] == nil { users[url] = a.string(AttributeName.account) ?? "" }
        }
        // Go's encoding/json writes a map's keys sorted, by their bytes.
        let pairs = users.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
        Output.out.line(
            "{" + pairs.map { "\(JSON.string($0.key)):\(JSON.string($0.value))" }.joined(separator: ",") + "}")
    }

    /// The URL of an item another program added (without docker's server URL attribute).
    static func serverURL(_ a: Attributes) -> String {
        let scheme = a.string("ptcl") == "http" ? "http" : "https"
        var host = a.string("srvr") ?? ""
        if host.contains(":") { host = "[\(host)]" }
        if case .integer(let p)? = a["port"], p != 0 { host += ":\(p)" }
        return "\(scheme)://\(host)\(a.string("path") ?? "")"
    }
}
