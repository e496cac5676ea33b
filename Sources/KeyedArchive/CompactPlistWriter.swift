#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A binary property list (`bplist00`) built bottom up in flat storage, for the NSKeyedArchiver export
/// (NSKeyedExport.swift), whose object graph holds up to `VALUES_MAX` objects: each plist object is one
/// 16-byte node, a scalar's encoding lives in one shared byte buffer and a container's references in one
/// shared reference buffer, so a million tiny objects cost tens of megabytes, not a tree of Swift values.
///
/// Strings, integers and UIDs are stored once however often they are used; dictionary keys are written in
/// UTF-8 order; a container is made after its contents. Objects are numbered in the order they were made, so
/// the same calls give the same bytes. Reference and offset sizes are the smallest that fit, as
/// CoreFoundation writes them.
struct CompactPlistWriter {
    /// An object of the plist: its index in the object table.
    typealias Ref = UInt32

    /// `marker` 0: a scalar, `count` bytes at `start` in `scalarBytes`. Otherwise a container's marker high
    /// nibble and element count, its references at `start` in `references` (keys then values for a dictionary).
    private struct Node {
        var start: Int
        var count: UInt32
        var marker: UInt8
    }

    private var nodes: [Node] = []
    private var scalarBytes: [UInt8] = []
    private var references: [Ref] = []
    private var strings: [ExactString: Ref] = [:]
    private var ints: [Int64: Ref] = [:]
    /// The node of each UID value met so far, `Ref.max` where none was made.
    private var uids: [Ref] = []

    /// The number of objects made so far.
    var count: Int { nodes.count }

    private mutating func newNode(_ node: Node) -> Ref {
        precondition(nodes.count < Int(Ref.max), "plist object count")
        nodes.append(node)
        return Ref(nodes.count - 1)
    }

    /// A scalar object (null, bool, uint, real, date, data, or a string or int to be written once).
    mutating func scalar(_ value: PropertyList) -> Ref {
        switch value {
        case .string(let s): return string(s)
        case .int(let v): return int(v)
        case .uid(let v): return uid(v)
        case .array, .set, .dictionary: preconditionFailure("containers are made by array(_:) and dictionary(_:)")
        default: return encoded(BinaryPlistWriter.encodeScalar(value))
        }
    }

    private mutating func encoded(_ bytes: [UInt8]) -> Ref {
        let start = scalarBytes.count
        scalarBytes.append(contentsOf: bytes)
        return newNode(Node(start: start, count: UInt32(bytes.count), marker: 0))
    }

    mutating func string(_ s: String) -> Ref {
        let key = ExactString(string: s)
        if let ref = strings[key] { return ref }
        let ref = encoded(BinaryPlistWriter.encodeScalar(.string(s)))
        strings[key] = ref
        return ref
    }

    mutating func int(_ v: Int64) -> Ref {
        if let ref = ints[v] { return ref }
        let ref = encoded(BinaryPlistWriter.encodeScalar(.int(v)))
        ints[v] = ref
        return ref
    }

    /// A UID object (`CF$UID`): the NSKeyedArchiver reference to entry `v` of `$objects`.
    mutating func uid(_ v: UInt64) -> Ref {
        precondition(v < UInt64(Ref.max), "UID beyond the object count")
        let i = Int(v)
        if i < uids.count, uids[i] != Ref.max { return uids[i] }
        if i >= uids.count { uids.append(contentsOf: repeatElement(Ref.max, count: i - uids.count + 1)) }
        let ref = encoded(BinaryPlistWriter.encodeScalar(.uid(v)))
        uids[i] = ref
        return ref
    }

    mutating func array(_ items: [Ref]) -> Ref {
        let start = references.count
        references.append(contentsOf: items)
        return newNode(Node(start: start, count: UInt32(items.count), marker: 0xA))
    }

    /// A dictionary of distinct keys, written in UTF-8 order of the keys.
    mutating func dictionary(_ pairs: [(key: String, value: Ref)]) -> Ref {
        let sorted = pairs.sorted { $0.key.utf8Precedes($1.key) }
        var keys: [Ref] = []
        keys.reserveCapacity(sorted.count)
        for p in sorted { keys.append(string(p.key)) }
        let start = references.count
        references.append(contentsOf: keys)
        for p in sorted { references.append(p.value) }
        return newNode(Node(start: start, count: UInt32(sorted.count), marker: 0xD))
    }

    /// The plist whose top object is `top`: every object made so far, then the offset table and trailer.
    func bytes(top: Ref) -> [UInt8] {
        let refSize = BinaryPlistWriter.minimalSize(UInt64(nodes.count), allowed: Array(1...8))
        var tableStart = BinaryPlistReader.magic.count
        for node in nodes { tableStart += size(of: node, refSize: refSize) }
        let offsetSize = BinaryPlistWriter.minimalSize(UInt64(tableStart), allowed: Array(1...8))
        var out = BinaryPlistReader.magic
        out.reserveCapacity(tableStart + nodes.count * offsetSize + 32)
        for node in nodes {
            if node.marker == 0 {
                out.append(contentsOf: scalarBytes[node.start..<node.start + Int(node.count)])
                continue
            }
            out.append(contentsOf: BinaryPlistWriter.header(node.marker, Int(node.count)))
            let n = Int(node.count) * (node.marker == 0xD ? 2 : 1)
            for r in references[node.start..<node.start + n] { Self.appendBigEndian(&out, UInt64(r), refSize) }
        }
        var offset = BinaryPlistReader.magic.count
        for node in nodes {
            Self.appendBigEndian(&out, UInt64(offset), offsetSize)
            offset += size(of: node, refSize: refSize)
        }
        out += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(refSize)]  // 5 unused, sort version
        Self.appendBigEndian(&out, UInt64(nodes.count), 8)
        Self.appendBigEndian(&out, UInt64(top), 8)
        Self.appendBigEndian(&out, UInt64(tableStart), 8)
        return out
    }

    private func size(of node: Node, refSize: Int) -> Int {
        if node.marker == 0 { return Int(node.count) }
        let n = Int(node.count) * (node.marker == 0xD ? 2 : 1)
        return BinaryPlistWriter.header(node.marker, Int(node.count)).count + n * refSize
    }

    private static func appendBigEndian(_ out: inout [UInt8], _ v: UInt64, _ size: Int) {
        for i in 0..<size { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(size - 1 - i)))) }
    }
}
