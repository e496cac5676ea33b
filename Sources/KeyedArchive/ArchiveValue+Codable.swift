#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `ArchiveValue` through any coder (JSON, property lists, ...): a keyed container whose one key names the
/// kind, `{"int": 5}`, `{"class": "Point", "object": {...}}`, `{"url": "a", "base": "https://x/"}`. Dates are
/// their `timeIntervalSinceReferenceDate`. A shared box comes back as a new box per use (only
/// ``ArchiveEncoder`` and ``ArchiveDecoder`` keep identity; they pass values through unchanged).
extension ArchiveValue: Codable {
    private enum Key: String, CodingKey {
        case null, bool, int, uint, double, string, data, date, uuid, url, base, array, dictionary
        case anyKeyDictionary, set, object, shared
        case className = "class"
    }

    /// Encodes the value with any `Encoder` as a keyed container whose key names its kind, so that
    /// ``init(from:)`` reads back the same kind.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .null: try c.encodeNil(forKey: .null)
        case .bool(let v): try c.encode(v, forKey: .bool)
        case .int(let v): try c.encode(v, forKey: .int)
        case .uint(let v): try c.encode(v, forKey: .uint)
        case .double(let v): try c.encode(v, forKey: .double)
        case .string(let v): try c.encode(v, forKey: .string)
        case .data(let v): try c.encode(v, forKey: .data)
        case .date(let v): try c.encode(v.timeIntervalSinceReferenceDate, forKey: .date)
        case .uuid(let v): try c.encode(v, forKey: .uuid)
        case .url(let v):
            try c.encode(v.relativeString, forKey: .url)
            try c.encodeIfPresent(v.baseURL?.absoluteString, forKey: .base)
        case .array(let v): try c.encode(v, forKey: .array)
        case .dictionary(let v): try c.encode(v, forKey: .dictionary)
        case .anyKeyDictionary(let v):
            var pairs = c.nestedUnkeyedContainer(forKey: .anyKeyDictionary)
            for (key, value) in v {
                try pairs.encode(key)
                try pairs.encode(value)
            }
        case .set(let v): try c.encode(Array(v), forKey: .set)
        case .object(let v):
            try c.encode(v.className, forKey: .className)
            try c.encode(v.fields, forKey: .object)
        case .shared(let v): try c.encode(v.value, forKey: .shared)
        }
    }

    /// Decodes a value ``encode(to:)`` wrote.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        let kinds = c.allKeys.filter { $0 != .base && $0 != .className }
        guard kinds.count == 1, let kind = kinds.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: c.codingPath,
                    debugDescription: "expected exactly one kind key, found \(kinds.count)"))
        }
        switch kind {
        case .null: self = .null
        case .bool: self = .bool(try c.decode(Bool.self, forKey: kind))
        case .int: self = .int(try c.decode(Int64.self, forKey: kind))
        case .uint: self = .uint(try c.decode(UInt64.self, forKey: kind))
        case .double: self = .double(try c.decode(Double.self, forKey: kind))
        case .string: self = .string(try c.decode(String.self, forKey: kind))
        case .data: self = .data(try c.decode(Data.self, forKey: kind))
        case .date: self = .date(Date(timeIntervalSinceReferenceDate: try c.decode(Double.self, forKey: kind)))
        case .uuid: self = .uuid(try c.decode(UUID.self, forKey: kind))
        case .url:
            let relative = try c.decode(String.self, forKey: .url)
            let base = try c.decodeIfPresent(String.self, forKey: .base)
            let baseURL = try base.map { b in
                guard let u = URL(string: b) else {
                    throw DecodingError.dataCorruptedError(forKey: .base, in: c, debugDescription: "invalid base URL")
                }
                return u
            }
            guard let url = URL(string: relative, relativeTo: baseURL) else {
                throw DecodingError.dataCorruptedError(forKey: .url, in: c, debugDescription: "invalid URL")
            }
            self = .url(url)
        case .array: self = .array(try c.decode([ArchiveValue].self, forKey: kind))
        case .dictionary: self = .dictionary(try c.decode([String: ArchiveValue].self, forKey: kind))
        case .anyKeyDictionary:
            var pairs = try c.nestedUnkeyedContainer(forKey: kind)
            var d: [ArchiveValue: ArchiveValue] = [:]
            while !pairs.isAtEnd {
                let key = try pairs.decode(ArchiveValue.self)
                guard d.updateValue(try pairs.decode(ArchiveValue.self), forKey: key) == nil else {
                    throw DecodingError.dataCorruptedError(in: pairs, debugDescription: "duplicate key")
                }
            }
            self = .anyKeyDictionary(d)
        case .set: self = .set(Set(try c.decode([ArchiveValue].self, forKey: kind)))
        case .object:
            self = .object(
                ArchiveObject(
                    className: try c.decode(String.self, forKey: .className),
                    fields: try c.decode([String: ArchiveValue].self, forKey: kind)))
        case .shared: self = .shared(ArchiveShared(try c.decode(ArchiveValue.self, forKey: kind)))
        case .base, .className: throw DecodingError.dataCorruptedError(forKey: kind, in: c, debugDescription: "no kind")
        }
    }
}
