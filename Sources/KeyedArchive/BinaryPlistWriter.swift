#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Writes a `bplist00` property list with an explicit work list (no recursion). Strings, integers and UIDs
/// are written once however often they occur; dictionary keys are written in UTF-8 order, so the same tree
/// gives the same bytes. Reference and offset sizes are the smallest that fit, as CoreFoundation writes them.
struct BinaryPlistWriter {
    private enum Node {
        case scalar([UInt8])
        /// Marker high nibble, element count, references (keys then values for a dictionary).
        case container(UInt8, Int, [Int])
    }

    private enum Unique: Hashable {
        case string(ExactString)
        case int(Int64)
        case uid(UInt64)
    }

    private var nodes: [Node] = []
    private var unique: [Unique: Int] = [:]
    private var pending: [(index: Int, value: PropertyList)] = []

    static func bytes(of root: PropertyList) -> [UInt8] {
        var w = BinaryPlistWriter()
        let top = w.add(root)
        while let (index, value) = w.pending.popLast() {
            switch value {
            case .array(let items): w.nodes[index] = .container(0xA, items.count, items.map { w.add($0) })
            case .set(let items): w.nodes[index] = .container(0xC, items.count, items.map { w.add($0) })
            case .dictionary(let d):
                let keys = d.keys.sorted { $0.utf8Precedes($1) }
                let refs = keys.map { w.add(.string($0)) } + keys.map { w.add(d[$0] ?? .null) }
                w.nodes[index] = .container(0xD, keys.count, refs)
            default: break
            }
        }
        return w.serialize(top: top)
    }

    /// The index of `value`'s object: a scalar is encoded now, a container is reserved and queued.
    private mutating func add(_ value: PropertyList) -> Int {
        let key: Unique? =
            switch value {
            case .string(let s): .string(ExactString(string: s))
            case .int(let v): .int(v)
            case .uid(let v): .uid(v)
            default: nil
            }
        if let key, let index = unique[key] { return index }
        let index = nodes.count
        switch value {
        case .array, .set, .dictionary:
            nodes.append(.container(0, 0, []))
            pending.append((index, value))
        default:
            nodes.append(.scalar(Self.encodeScalar(value)))
        }
        if let key { unique[key] = index }
        return index
    }

    static func encodeScalar(_ value: PropertyList) -> [UInt8] {
        switch value {
        case .null: return [0x00]
        case .bool(let b): return [b ? 0x09 : 0x08]
        case .int(let v): return encodeInt(v)
        case .uint(let v): return [0x14] + [UInt8](repeating: 0, count: 8) + bigEndian(v, 8)
        case .real(let d): return [0x23] + bigEndian(d.bitPattern, 8)
        case .date(let d): return [0x33] + bigEndian(d.bitPattern, 8)
        case .data(let d): return header(0x4, d.count) + [UInt8](d)
        case .string(let s):
            if s.utf8.allSatisfy({ $0 < 0x80 }) { return header(0x5, s.utf8.count) + Array(s.utf8) }
            var out = header(0x6, s.utf16.count)
            for unit in s.utf16 { out += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
            return out
        case .uid(let v):
            let size = minimalSize(v, allowed: [1, 2, 4, 8])
            return [0x80 | UInt8(size - 1)] + bigEndian(v, size)
        case .array, .set, .dictionary: return []  // containers are nodes of their own
        }
    }

    private static func encodeInt(_ v: Int64) -> [UInt8] {
        guard v >= 0 else { return [0x13] + bigEndian(UInt64(bitPattern: v), 8) }
        let size = minimalSize(UInt64(v), allowed: [1, 2, 4, 8])
        return [0x10 | UInt8(size.trailingZeroBitCount)] + bigEndian(UInt64(v), size)
    }

    /// A marker with its count: in the low nibble below 15, else 0xF and an int object.
    static func header(_ high: UInt8, _ count: Int) -> [UInt8] {
        count < 15 ? [high << 4 | UInt8(count)] : [high << 4 | 0x0F] + encodeInt(Int64(count))
    }

    static func minimalSize(_ v: UInt64, allowed: [Int]) -> Int {
        allowed.first { $0 == 8 || v >> (8 * UInt64($0)) == 0 } ?? 8
    }

    private static func bigEndian(_ v: UInt64, _ size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64(size - 1 - $0))) }
    }

    private func serialize(top: Int) -> [UInt8] {
        let refSize = Self.minimalSize(UInt64(nodes.count), allowed: Array(1...8))
        var out = BinaryPlistReader.magic
        var offsets: [Int] = []
        offsets.reserveCapacity(nodes.count)
        for node in nodes {
            offsets.append(out.count)
            switch node {
            case .scalar(let b): out += b
            case .container(let high, let count, let refs):
                out += Self.header(high, count)
                for r in refs { out += Self.bigEndian(UInt64(r), refSize) }
            }
        }
        let tableStart = out.count
        let offsetSize = Self.minimalSize(UInt64(tableStart), allowed: Array(1...8))
        for o in offsets { out += Self.bigEndian(UInt64(o), offsetSize) }
        out += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(refSize)]  // 5 unused, sort version
        out +=
            Self.bigEndian(UInt64(nodes.count), 8) + Self.bigEndian(UInt64(top), 8)
            + Self.bigEndian(UInt64(tableStart), 8)
        return out
    }
}

extension PropertyList {
    /// This property list as a binary plist (`bplist00`).
    public func binaryBytes() -> [UInt8] { BinaryPlistWriter.bytes(of: self) }
}
