import KcarKeychain
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// `kcar credential get|store|erase` (also run as `git-credential-kcar`): git's credential helper protocol
/// (`git help credential`) over internet-password items of one access group.
enum Credential {
    static let defaultGroup = "git-credentials"
    static let groupVariable = "KCAR_CREDENTIAL_GROUP"

    static let help = """
        usage: kcar credential [--group G] [--keychain DIR] get|store|erase
               git-credential-kcar [--group G] [--keychain DIR] get|store|erase
          git's credential helper: `git config --global credential.helper kcar` (with git-credential-kcar
          on PATH) or `credential.helper '/path/to/kcar credential'`. Reads git's key=value lines on standard
          input up to an empty line (at most 1 MiB); unknown keys are ignored, as git requires.
          get     prints username=, password= (password_expiry_utc=, oauth_refresh_token=) of the first match, or
                  nothing (exit 0) when none matches
          store   adds the credential, or replaces the value of the item with the same protocol, host,
                  port, path and username (needs all of protocol, host, username and password)
          erase   deletes the matching items (only those whose password is the one given, if git gives one)
          Any other action is ignored (exit 0, nothing read or printed), as git's protocol asks.
          Items are internet passwords (class inet) in group G (default git-credentials, or
          $KCAR_CREDENTIAL_GROUP): srvr the host, port its port, ptcl Apple's protocol code (htps, http, ...),
          path the path (git sends one with credential.useHttpPath), acct the username, the value the
          password; `kcar find --class inet --group git-credentials` lists them. A protocol without an Apple
          code is not kept (a warning on standard error). An oauth_refresh_token is kept as the value of a
          genp item beside the credential (service git-oauth-refresh-token), never as an attribute.
        """

    /// A request as git sends it: the attributes kcar uses, the others ignored.
    struct Request {
        var fields: [String: String] = [:]
        var protocolName: String? { fields["protocol"] }
        var host: String? { fields["host"] }
        var path: String? { fields["path"] }
        var username: String? { fields["username"] }
        var password: String? { fields["password"] }
        var expiry: String? { fields["password_expiry_utc"] }
        var refreshToken: String? { fields["oauth_refresh_token"] }

        static let used: Set<String> = [
            "protocol", "host", "path", "username", "password", "password_expiry_utc", "oauth_refresh_token"
        ]

        init(_ bytes: [UInt8]) throws {
            for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
                guard let eq = line.firstIndex(of: UInt8(ascii: "=")) else {
                    throw CLIError.usage("credential request: a line without '=' (git sends key=value lines)")
                }
                guard let key = String(validating: line[line.startIndex..<eq], as: UTF8.self) else { continue }
                guard Request.used.contains(key) else { continue }
                guard let value = String(validating: line[(eq + 1)...], as: UTF8.self) else {
                    throw CLIError.usage("credential request: the value of \(key) is not UTF-8")
                }
                // git sends each once; as git does when reading, the last one given wins.
                fields[key] = value
            }
        }
    }

    static func run(_ argv: Invocation) throws -> ExitCode {
        let args = try Arguments(argv, specs: CLI.specs("credential"))
        guard let action = try args.positionals(["get|store|erase"]).first else {
            throw CLIError.usage("expected get, store or erase")
        }
        let group = CredentialServer.group(args, environment: groupVariable, default: defaultGroup)
        // git's protocol: a helper ignores an operation it does not know (future ones), silently.
        guard ["get", "store", "erase"].contains(action) else { return .success }
        var input = try CredentialServer.readRequest(what: "credential request", stopAtBlankLine: true)
        defer { wipe(&input) }
        let request = try Request(input)
        switch action {
        case "get": try get(request, args, group)
        case "store": try store(request, args, group)
        default: try erase(request, args, group)
        }
        return .success
    }

    /// The query for a request: class inet in the helper's group, by each attribute git gave (one it did
    /// not give matches any value, as git's own helpers do); nil when it cannot match anything kcar keeps.
    static func query(_ r: Request, group: String, exact: Bool) throws -> ItemQuery? {
        var a = Attributes()
        if let p = r.protocolName {
            guard let code = CredentialServer.protocolCodes[p] else {
                warn(
                    "credential: protocol \(CredentialServer.shown(p)) has no Apple protocol code; kcar keeps no credentials for it"
                )
                return nil
            }
            a["ptcl"] = .string(code)
        }
        if let host = r.host {
            let (server, port) = try CredentialServer.splitHost(host)
            a["srvr"] = .string(server)
            a["port"] = .integer(port)
        }
        if let path = r.path { a["path"] = .string(path) }
        if let user = r.username { a[AttributeName.account] = .string(user) }
        if exact {
            // The whole primary key (SPEC.md §K4): the item a store replaces, not one that only shares a host.
            for name in ["path", AttributeName.account, "sdmn", "atyp"] where a[name] == nil { a[name] = .string("") }
        }
        return ItemQuery(class: .internetPassword, attributes: a, group: group)
    }

    /// An OAuth refresh token is a secret: it is the value of a generic-password item beside its credential
    /// (service `git-oauth-refresh-token`, account the credential's primary key, each part length-prefixed
    /// so no two credentials share one), never an attribute that `kcar find` would print.
    static let refreshService = "git-oauth-refresh-token"

    static func refreshQuery(_ credential: Attributes, group: String) -> ItemQuery {
        var port: Int64 = 0
        if case .integer(let p)? = credential["port"] { port = p }
        let parts = [
            credential.string("ptcl") ?? "", credential.string("srvr") ?? "", String(port),
            credential.string("path") ?? "",
            credential.string(AttributeName.account) ?? ""
        ]
        var a = Attributes()
        a[AttributeName.service] = .string(refreshService)
        a[AttributeName.account] = .string(parts.map { "\($0.utf8.count):\($0)" }.joined())
        return ItemQuery(class: .genericPassword, attributes: a, group: group)
    }

    static func get(_ r: Request, _ args: Arguments, _ group: String) throws {
        guard r.protocolName != nil || r.host != nil, let q = try query(r, group: group, exact: false) else { return }
        let s = try ItemCommands.store(args)
        for item in try s.find(q) {
            var value = try s.value(of: item)
            defer { wipe(&value) }
            let user = item.attributes.string(AttributeName.account) ?? ""
            guard let password = CredentialServer.text(value, lineSafe: true),
                CredentialServer.text(Array(user.utf8), lineSafe: true) != nil
            else {
                warn(
                    "credential: item \(item.id) of group \(group) holds a line break, NUL or non-UTF-8 byte git cannot take; skipped"
                )
                continue
            }
            var lines = "username=\(user)\npassword=\(password)\n"
            if let expiry = item.attributes.string("@password_expiry_utc") {
                lines += "password_expiry_utc=\(expiry)\n"
            }
            if let companion = try s.find(refreshQuery(item.attributes, group: group)).first {
                var token = try s.value(of: companion)
                defer { wipe(&token) }
                if let t = CredentialServer.text(token, lineSafe: true) { lines += "oauth_refresh_token=\(t)\n" }
            }
            Output.out.write(lines)
            return
        }
    }

    static func store(_ r: Request, _ args: Arguments, _ group: String) throws {
        // As git's credential-store: a credential without these is not kept.
        guard let p = r.protocolName, let host = r.host, let user = r.username, let password = r.password else {
            return
        }
        guard let q = try query(r, group: group, exact: true) else { return }
        var attributes = q.attributes
        for name in ["sdmn", "atyp"] { attributes[name] = nil }
        if attributes["path"] == .string("") { attributes["path"] = nil }
        if attributes["port"] == .integer(0) { attributes["port"] = nil }
        if user.isEmpty { attributes[AttributeName.account] = nil }
        attributes["labl"] = .string("\(p)://\(host)" + (r.path.map { "/" + $0 } ?? ""))
        if let e = r.expiry { attributes["@password_expiry_utc"] = .string(e) }
        var value = Array(password.utf8)
        var token = r.refreshToken.map { Array($0.utf8) }
        defer {
            wipe(&value)
            if token != nil { wipe(&token!) }
        }
        let s = try ItemCommands.store(args)
        try s.transaction(group: group) { tx in
            if let old = try tx.find(q).first {
                var changes: [String: AttributeValue?] = [:]
                // An expiry the new credential does not carry is removed (nil), not kept from the old one.
                for name in ["labl", "@password_expiry_utc"] { changes.updateValue(attributes[name], forKey: name) }
                try tx.update([old.id], set: changes, value: value)
            } else {
                try tx.add(class: .internetPassword, attributes: attributes, value: value)
            }
            // Likewise a refresh token: the new one, or none.
            let rq = refreshQuery(attributes, group: group)
            let companions = try tx.find(rq)
            if let token, let first = companions.first {
                try tx.update([first.id], set: [:], value: token)
                for c in companions.dropFirst() { try tx.delete(c.id) }
            } else if let token {
                var a = rq.attributes
                a["labl"] = .string("OAuth refresh token for " + (attributes.string("labl") ?? host))
                try tx.add(class: .genericPassword, attributes: a, value: token)
            } else {
                for c in companions { try tx.delete(c.id) }
            }
        }
    }

    static func erase(_ r: Request, _ args: Arguments, _ group: String) throws {
        guard r.protocolName != nil || r.host != nil || r.path != nil || r.username != nil else { return }
        guard let q = try query(r, group: group, exact: false) else { return }
        let s = try ItemCommands.store(args)
        guard s.directory.exists(group) else { return }
        try s.transaction(group: group) { tx in
            for item in try tx.find(q) {
                if let password = r.password {
                    // git erases what it just found rejected: an item since changed to another password stays.
                    var value = try tx.value(of: item)
                    defer { wipe(&value) }
                    guard value == Array(password.utf8) else { continue }
                }
                try tx.delete(item.id)
                for c in try tx.find(refreshQuery(item.attributes, group: group)) { try tx.delete(c.id) }
            }
        }
    }
}
