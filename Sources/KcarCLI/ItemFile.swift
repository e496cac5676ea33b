import FoundationEssentials
import Keychain
import VaultFormat

/// The JSON item file of `extract --items`, `pack --items` and `import --items` (SPEC.md §K7).
enum ItemFile {
    struct Entry {
        let itemClass: ItemClass
        let attributes: Attributes
        let value: [UInt8]
    }

    static let maxBytes = 1 << 30

    /// One item's JSON: what `list --json` prints, plus the value in base64.
    static func entry(_ item: Item, value: [UInt8]) -> String {
        ItemJSON.object(id: item.id, class: item.itemClass, attributes: item.attributes, size: item.size,
                        extra: [("value", JSON.string(Base64.encode(value)))])
    }

    static func document(group: String, entries: [String]) -> String {
        JSON.object([("format", JSON.string("kcar-items")), ("version", "1"), ("group", JSON.string(group)),
                     ("items", JSON.array(entries))])
    }

    private struct Document: Decodable {
        let format: String
        let version: Int
        let items: [Item]
        struct Item: Decodable {
            let `class`: String
            let attributes: [String: Value]?
            let value: String
        }
    }

    private enum Value: Decodable {
        case plain(AttributeValue)
        case date(String)
        case data(String)

        private enum Keys: String, CodingKey {
            case date = "$date", data = "$data"
        }

        init(from decoder: Decoder) throws {
            if let c = try? decoder.singleValueContainer() {
                if let b = try? c.decode(Bool.self) { self = .plain(.bool(b)); return }
                if let n = try? c.decode(Int64.self) { self = .plain(.integer(n)); return }
                if let s = try? c.decode(String.self) { self = .plain(.string(s)); return }
            }
            let k = try decoder.container(keyedBy: Keys.self)
            guard k.allKeys.count == 1 else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected {\"$date\": ...} or {\"$data\": ...}"))
            }
            if let d = try k.decodeIfPresent(String.self, forKey: .date) { self = .date(d) } else {
                self = .data(try k.decode(String.self, forKey: .data))
            }
        }
    }

    /// Reads and checks an item file: every class, attribute and value well formed.
    static func read(_ path: String) throws -> [Entry] {
        let bytes = try ArchiveCommand.readLimited(path, max: maxBytes)
        let doc: Document
        do { doc = try JSONDecoder().decode(Document.self, from: Data(bytes)) } catch {
            throw CLIError(.damaged, "\(path) is not a kcar item file: \(describe(error))")
        }
        guard doc.format == "kcar-items", doc.version == 1 else {
            throw CLIError(.damaged, "\(path): format \(doc.format) version \(doc.version); expected kcar-items version 1")
        }
        return try doc.items.enumerated().map { i, item in
            var a = Attributes()
            for (name, v) in item.attributes ?? [:] {
                switch v {
                case .plain(let p): a[name] = p
                case .date(let text):
                    guard let ns = parseISO8601(text) else { throw CLIError(.damaged, "\(path): item \(i): \(name): bad date \(text)") }
                    a[name] = .date(nanoseconds: ns)
                case .data(let text):
                    guard let d = Data(base64Encoded: text) else { throw CLIError(.damaged, "\(path): item \(i): \(name): bad base64") }
                    a[name] = .data([UInt8](d))
                }
            }
            guard let value = Data(base64Encoded: item.value) else { throw CLIError(.damaged, "\(path): item \(i): value is not base64") }
            return Entry(itemClass: ItemClass(rawValue: item.class), attributes: a, value: [UInt8](value))
        }
    }

    private static func describe(_ error: Error) -> String {
        guard let e = error as? DecodingError else { return "\(error)" }
        switch e {
        case .dataCorrupted(let c), .keyNotFound(_, let c), .typeMismatch(_, let c), .valueNotFound(_, let c):
            let at = c.codingPath.map(\.stringValue).joined(separator: ".")
            return (at.isEmpty ? "" : "at \(at): ") + c.debugDescription
        @unknown default: return "\(error)"
        }
    }
}
