/// Any DER input as a flat list of elements in document order, read without recursion (an explicit stack
/// of open constructed elements, at most `DER_DEPTH_MAX` deep), and written back. Reading checks every DER
/// rule kcar knows that does not depend on the schema: minimal lengths, no indefinite length, no high tag
/// numbers, no trailing bytes, universal types primitive except SEQUENCE and SET, and the contents of
/// BOOLEAN, INTEGER, NULL, BIT STRING and OBJECT IDENTIFIER. So ``encode(_:)`` of what ``parse(_:)`` accepts
/// gives back the input byte for byte: the fuzz target `der` and the tests hold it to that.
package struct DERTree: Sendable, Hashable {
    package struct Node: Sendable, Hashable {
        package let tag: UInt8
        /// 1 for the outermost element.
        package let depth: Int
        /// The content of a primitive element; empty for a constructed one (its children follow it).
        package let content: [UInt8]
    }

    package let nodes: [Node]

    /// Reads one outermost element and everything in it.
    package static func parse(_ bytes: [UInt8]) throws -> DERTree {
        guard bytes.count <= DERLimits.inputMax else {
            throw DERError(.sizeLimit, at: 0, "\(bytes.count) bytes, more than \(DERLimits.inputMax)")
        }
        var nodes: [Node] = []
        var top = DERReader(bytes, what: "element")
        // Each open constructed element: a cursor over its content.
        var stack: [DERReader] = []
        let root = try top.readElement()
        try top.finish()
        try push(root, in: top, depth: 1, &nodes, &stack)
        while var cursor = stack.popLast() {
            if cursor.isAtEnd { continue }
            let e = try cursor.readElement()
            stack.append(cursor)
            try push(e, in: cursor, depth: stack.count + 1, &nodes, &stack)
        }
        return DERTree(nodes: nodes)
    }

    private static func push(
        _ e: DERElement, in r: DERReader, depth: Int, _ nodes: inout [Node], _ stack: inout [DERReader]
    ) throws {
        guard depth <= DERLimits.depthMax else {
            throw r.error(.depthLimit, at: e.start, "nesting deeper than \(DERLimits.depthMax)")
        }
        let universal = e.tag & 0xC0 == 0
        if e.isConstructed {
            if universal, e.tag != DERTag.sequence, e.tag != DERTag.set {
                throw r.error(
                    .unexpectedTag, at: e.start, "universal tag 0x\(Hex.encode([e.tag])) cannot be constructed in DER")
            }
            nodes.append(Node(tag: e.tag, depth: depth, content: []))
            stack.append(r.contents(of: e, "element"))
            return
        }
        if universal {
            switch e.tag {
            case DERTag.boolean: _ = try r.checkBoolean(e, "BOOLEAN")
            case DERTag.integer: try r.checkInteger(e, "INTEGER")
            case DERTag.null:
                guard e.contentLength == 0 else { throw r.error(.unexpectedTag, at: e.start, "a NULL with content") }
            case DERTag.bitString: _ = try r.checkBitString(e, "BIT STRING", wholeBytes: false)
            case DERTag.objectIdentifier: try r.checkObjectIdentifier(e, "OBJECT IDENTIFIER")
            default: break
            }
        }
        nodes.append(Node(tag: e.tag, depth: depth, content: r.content(e)))
    }

    /// The DER bytes of the tree: every length in its shortest form.
    package func encode() -> [UInt8] {
        // Content lengths bottom-up: in reverse document order a node's children come before it, and
        // `pending[d]` sums the sizes of the finished nodes at depth d not yet claimed by their parent.
        var lengths = [Int](repeating: 0, count: nodes.count)
        var pending = [Int](repeating: 0, count: DERLimits.depthMax + 2)
        for i in nodes.indices.reversed() {
            let n = nodes[i]
            let length = n.tag & 0x20 != 0 ? pending[n.depth + 1] : n.content.count
            pending[n.depth + 1] = 0
            lengths[i] = length
            pending[n.depth] += 1 + DERTree.lengthBytes(length).count + length
        }
        var out: [UInt8] = []
        out.reserveCapacity(pending[1])
        for (i, n) in nodes.enumerated() {
            out.append(n.tag)
            out += DERTree.lengthBytes(lengths[i])
            out += n.content
        }
        return out
    }

    /// A length in its shortest form.
    static func lengthBytes(_ length: Int) -> [UInt8] {
        if length < 0x80 { return [UInt8(length)] }
        var digits: [UInt8] = []
        var l = length
        while l > 0 {
            digits.insert(UInt8(l & 0xFF), at: 0)
            l >>= 8
        }
        return [0x80 | UInt8(digits.count)] + digits
    }
}
