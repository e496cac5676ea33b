#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reads a `bplist00` property list, totally: every offset, count, reference and field size is checked
/// (overflow-safe) before it is used, objects are resolved with an explicit stack (nesting costs heap, never
/// call stack), a container that contains itself is a ``ArchiveError/Code/cycle``, and the tree the shared
/// objects stand for is bounded by the limits.
///
/// Layout: `bplist00`, objects, an offset table (`numObjects` big-endian offsets of `offsetIntSize` bytes),
/// and a 32-byte trailer (6 unused, sort version, `offsetIntSize`, `objectRefSize`, `numObjects`, `topObject`,
/// `offsetTableOffset`, the last three 8-byte big-endian).
struct BinaryPlistReader {
    static let magic = Array("bplist00".utf8)
    static let trailerSize = 32

    private let bytes: [UInt8]
    private let limits: ArchiveLimits
    private var offsetIntSize = 0
    private var refSize = 0
    private var count = 0
    private var tableStart = 0

    /// Per object: 0 unseen, 1 open (on the stack), 2 done.
    private var state: [UInt8] = []
    private var done: [PropertyList?] = []
    /// The size of each finished object's tree once shared objects are expanded, and its height.
    private var expanded: [Int] = []
    private var height: [Int] = []
    /// The first object index met at each offset: every later index at the same offset is the same object,
    /// read once (an offset table may point a million indices at one string).
    private var firstAtOffset: [Int: Int] = [:]
    /// Bytes of the object area the distinct objects read so far span: at most the area's size, since objects
    /// of a property list do not overlap (so the objects built are bounded by the input, not its references).
    private var spanned = 0
    /// References read from the distinct containers visited: each is at least one value of the expanded
    /// tree, so more than `maxExpandedValues` of them fail `finish` later anyway; counted as they are read,
    /// before their lists are built (a 20 MB plist of two 9.9M-entry arrays took 570 MiB before failing).
    private var refsRead = 0
    /// Bytes of dictionary keys at every use (`STRING_USES_MAX`): one key object may serve many dictionaries,
    /// and each hashes all of it.
    private var keyUses = 0

    init(bytes: [UInt8], limits: ArchiveLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// A container met but not finished: its kind, its references (keys then values for a dictionary) and the
    /// next one to resolve.
    private struct Frame {
        let object: Int
        let marker: UInt8
        let refs: [Int]
        var next = 0
    }

    mutating func read() throws -> PropertyList {
        try limits.checkSize(bytes.count)
        guard bytes.starts(with: Self.magic) else { throw ArchiveError(.notAPropertyList, at: 0, "no bplist00 magic") }
        let rawTop = try readTrailer()
        state = [UInt8](repeating: 0, count: count)
        done = [PropertyList?](repeating: nil, count: count)
        expanded = [Int](repeating: 0, count: count)
        height = [Int](repeating: 0, count: count)

        var stack: [Frame] = []
        let top = try canonical(rawTop)
        if let frame = try visit(top, depth: 1) { stack.append(frame) }
        while let last = stack.indices.last {
            if stack[last].next < stack[last].refs.count {
                let child = stack[last].refs[stack[last].next]
                stack[last].next += 1
                switch state[child] {
                case 2: continue
                case 1: throw ArchiveError(.cycle, at: try offset(of: child), "object \(child) contains itself")
                default:
                    if let frame = try visit(child, depth: stack.count + 1) { stack.append(frame) }
                }
            } else {
                let frame = stack.removeLast()
                try finish(frame)
            }
        }
        guard let root = done[top] else { throw ArchiveError(.invalidPlistTrailer, "top object unresolved") }
        return root
    }

    // MARK: Trailer and offsets

    private mutating func readTrailer() throws -> Int {
        let minimum = Self.magic.count + 1 + Self.trailerSize
        guard bytes.count >= minimum else { throw ArchiveError(.truncated, at: bytes.count, "shorter than a bplist") }
        let t = bytes.count - Self.trailerSize
        offsetIntSize = Int(bytes[t + 6])
        refSize = Int(bytes[t + 7])
        let rawCount = be(t + 8, 8)
        let rawTop = be(t + 16, 8)
        let rawTable = be(t + 24, 8)
        guard (1...8).contains(offsetIntSize), (1...8).contains(refSize) else {
            throw ArchiveError(
                .invalidPlistTrailer, at: t + 6, "offset size \(offsetIntSize), reference size \(refSize)")
        }
        guard rawCount >= 1 else { throw ArchiveError(.invalidPlistTrailer, at: t + 8, "no objects") }
        guard rawCount <= UInt64(limits.maxValues) else {
            throw ArchiveError(.valueLimit, at: t + 8, "\(rawCount) objects, more than \(limits.maxValues)")
        }
        count = Int(rawCount)  // at most maxValues, an Int
        guard rawTop < rawCount else {
            throw ArchiveError(.invalidPlistTrailer, at: t + 16, "top object \(rawTop) of \(rawCount)")
        }
        // The table follows the objects and ends at the trailer: count * offsetIntSize bytes exactly.
        let (tableSize, o1) = count.multipliedReportingOverflow(by: offsetIntSize)
        guard !o1, rawTable >= UInt64(Self.magic.count + 1), rawTable <= UInt64(t), tableSize == t - Int(rawTable)
        else {
            throw ArchiveError(.invalidPlistTrailer, at: t + 24, "offset table at \(rawTable) for \(count) offsets")
        }
        tableStart = Int(rawTable)
        // As CoreFoundation: the sizes must be able to address every object and the whole object area.
        if refSize < 8, UInt64(count) >> (8 * refSize) != 0 {
            throw ArchiveError(.invalidPlistTrailer, at: t + 7, "\(refSize)-byte references for \(count) objects")
        }
        if offsetIntSize < 8, UInt64(tableStart) >> (8 * offsetIntSize) != 0 {
            throw ArchiveError(
                .invalidPlistTrailer, at: t + 6, "\(offsetIntSize)-byte offsets for a \(tableStart)-byte area")
        }
        return Int(rawTop)
    }

    /// Big-endian unsigned of `size` (1...8) bytes at `at`; the caller has checked the range.
    private func be(_ at: Int, _ size: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in at..<at + size { v = v << 8 | UInt64(bytes[i]) }
        return v
    }

    /// The index of the object `index` stands for: the first index whose offset is the same.
    private mutating func canonical(_ index: Int) throws -> Int {
        let at = try offset(of: index)
        if let first = firstAtOffset[at] { return first }
        firstAtOffset[at] = index
        return index
    }

    /// Counts `n` more bytes spanned by distinct objects; objects that overlap are an invalid offset.
    private mutating func span(_ n: Int, object index: Int, at start: Int) throws {
        spanned += n  // each at most the object area: no overflow
        guard spanned <= tableStart - Self.magic.count else {
            throw ArchiveError(.invalidPlistOffset, at: start, "object \(index) overlaps another object")
        }
    }

    /// The offset of object `index`: inside the object area.
    private func offset(of index: Int) throws -> Int {
        let raw = be(tableStart + index * offsetIntSize, offsetIntSize)  // index < count: inside the table
        guard raw >= UInt64(Self.magic.count), raw < UInt64(tableStart) else {
            throw ArchiveError(.invalidPlistOffset, at: tableStart + index * offsetIntSize, "object \(index) at \(raw)")
        }
        return Int(raw)
    }

    // MARK: Objects

    /// Reads object `index`: a scalar is finished at once (nil); a container returns its frame.
    private mutating func visit(_ index: Int, depth: Int) throws -> Frame? {
        guard depth <= limits.maxDepth else {
            throw ArchiveError(.depthLimit, at: try offset(of: index), "deeper than \(limits.maxDepth)")
        }
        let start = try offset(of: index)
        let marker = bytes[start]
        let high = marker >> 4
        var p = start + 1
        switch high {
        case 0xA, 0xC, 0xD:
            let n = try readCount(marker, &p)
            let refCount = high == 0xD ? n.multipliedReportingOverflow(by: 2) : (partialValue: n, overflow: false)
            guard !refCount.overflow, refCount.partialValue <= (tableStart - p) / refSize else {
                throw ArchiveError(.countExceedsInput, at: start, "\(n) entries in \(tableStart - p) bytes")
            }
            try span(p - start + refCount.partialValue * refSize, object: index, at: start)
            refsRead += refCount.partialValue  // each at most the object area: no overflow
            guard refsRead <= limits.maxExpandedValues else {
                throw ArchiveError(
                    .expansionLimit, at: start, "more than \(limits.maxExpandedValues) values once expanded")
            }
            var refs: [Int] = []
            refs.reserveCapacity(refCount.partialValue)
            for _ in 0..<refCount.partialValue {
                let raw = be(p, refSize)
                guard raw < UInt64(count) else {
                    throw ArchiveError(.badReference, at: p, "object \(raw) of \(count)")
                }
                refs.append(try canonical(Int(raw)))
                p += refSize
            }
            state[index] = 1
            return Frame(object: index, marker: marker, refs: refs)
        default:
            let value = try readScalar(marker, at: start, after: &p)
            try span(p - start, object: index, at: start)
            done[index] = value
            expanded[index] = 1
            height[index] = 1
            state[index] = 2
            return nil
        }
    }

    /// Builds a finished container from its children, within the expansion and depth limits.
    private mutating func finish(_ frame: Frame) throws {
        var size = 1
        var h = 0
        for r in frame.refs {
            size += expanded[r]  // each at most maxExpandedValues: no overflow
            guard size <= limits.maxExpandedValues else {
                throw ArchiveError(
                    .expansionLimit, at: try offset(of: frame.object),
                    "more than \(limits.maxExpandedValues) values once expanded")
            }
            h = max(h, height[r])
        }
        guard h + 1 <= limits.maxDepth else {
            throw ArchiveError(.depthLimit, at: try offset(of: frame.object), "deeper than \(limits.maxDepth)")
        }
        let value: PropertyList
        switch frame.marker >> 4 {
        case 0xD:
            let n = frame.refs.count / 2
            var d: [String: PropertyList] = [:]
            d.reserveCapacity(n)
            for i in 0..<n {
                guard case .string(let key)? = done[frame.refs[i]] else {
                    throw ArchiveError(.nonStringKey, at: try offset(of: frame.object), "key \(i) is not a string")
                }
                try limits.addStringUse(key.utf8.count, to: &keyUses, at: try offset(of: frame.object))
                guard d.updateValue(done[frame.refs[n + i]] ?? .null, forKey: key) == nil else {
                    throw ArchiveError(.duplicateKey, at: try offset(of: frame.object), "key \(i) repeated")
                }
            }
            value = .dictionary(d)
        case 0xC: value = .set(frame.refs.map { done[$0] ?? .null })
        default: value = .array(frame.refs.map { done[$0] ?? .null })
        }
        done[frame.object] = value
        expanded[frame.object] = size
        height[frame.object] = h + 1
        state[frame.object] = 2
    }

    /// The element count of a marker: its low nibble, or (nibble 0xF) an int object that follows.
    private func readCount(_ marker: UInt8, _ p: inout Int) throws -> Int {
        let nibble = marker & 0x0F
        guard nibble == 0x0F else { return Int(nibble) }
        guard p < tableStart else { throw ArchiveError(.truncated, at: p, "count") }
        let intMarker = bytes[p]
        guard intMarker >> 4 == 0x1, intMarker & 0x0F <= 3 else {
            throw ArchiveError(.unknownTag, at: p, "count marker 0x\(String(intMarker, radix: 16))")
        }
        let size = 1 << Int(intMarker & 0x0F)
        guard size <= tableStart - p - 1 else { throw ArchiveError(.truncated, at: p, "count") }
        let raw = be(p + 1, size)
        // An 8-byte count is signed in CoreFoundation: a negative one is as wrong as a huge one.
        guard raw <= UInt64(limits.maxExpandedValues), raw <= UInt64(tableStart) else {
            throw ArchiveError(.countExceedsInput, at: p, "count \(raw)")
        }
        p += 1 + size
        return Int(raw)
    }

    private func readScalar(_ marker: UInt8, at start: Int, after p: inout Int) throws -> PropertyList {
        let end = tableStart
        // On return, `p` is past the payload too: the object's whole extent is `p - start`.
        var payload = 0
        defer { p += payload }
        func need(_ n: Int) throws {
            guard n <= end - p else { throw ArchiveError(.truncated, at: start, "object needs \(n) bytes") }
            payload = n
        }
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x00: return .null
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            default:
                // 0x0F (fill) is padding, not a value: no writer points an object reference at it.
                throw ArchiveError(.unknownTag, at: start, "marker 0x\(String(marker, radix: 16))")
            }
        case 0x1:
            let nibble = marker & 0x0F
            switch nibble {
            case 0, 1, 2:
                let size = 1 << Int(nibble)
                try need(size)
                return .int(Int64(be(p, size)))  // at most 32 bits: fits
            case 3:
                try need(8)
                return .int(Int64(bitPattern: be(p, 8)))
            case 4:
                try need(16)
                guard be(p, 8) == 0 else {
                    throw ArchiveError(.invalidValue, at: start, "16-byte integer beyond 64 bits")
                }
                return .uint(be(p + 8, 8))
            default: throw ArchiveError(.unknownTag, at: start, "integer marker 0x\(String(marker, radix: 16))")
            }
        case 0x2:
            switch marker {
            case 0x22:
                try need(4)
                return .real(Double(Float(bitPattern: UInt32(be(p, 4)))))
            case 0x23:
                try need(8)
                return .real(Double(bitPattern: be(p, 8)))
            default: throw ArchiveError(.unknownTag, at: start, "real marker 0x\(String(marker, radix: 16))")
            }
        case 0x3:
            guard marker == 0x33 else { throw ArchiveError(.unknownTag, at: start, "date marker") }
            try need(8)
            return .date(Double(bitPattern: be(p, 8)))
        case 0x4:
            let n = try readCount(marker, &p)
            guard n <= limits.maxDataLength else {
                throw ArchiveError(.lengthLimit, at: start, "data of \(n) bytes, more than \(limits.maxDataLength)")
            }
            try need(n)
            return .data(Data(bytes[p..<p + n]))
        case 0x5:
            let n = try readCount(marker, &p)
            guard n <= limits.maxStringLength else {
                throw ArchiveError(.lengthLimit, at: start, "string of \(n) bytes, more than \(limits.maxStringLength)")
            }
            try need(n)
            let slice = bytes[p..<p + n]
            guard slice.allSatisfy({ $0 < 0x80 }) else {
                throw ArchiveError(.invalidString, at: start, "non-ASCII byte in an ASCII string")
            }
            return .string(String(decoding: slice, as: UTF8.self))
        case 0x6:
            let n = try readCount(marker, &p)
            guard n <= limits.maxStringLength / 2 else {
                throw ArchiveError(.lengthLimit, at: start, "string of \(n) UTF-16 units, too long")
            }
            try need(2 * n)
            let base = p
            let units = (0..<n).lazy.map {
                UInt16(self.bytes[base + 2 * $0]) << 8 | UInt16(self.bytes[base + 2 * $0 + 1])
            }
            guard let s = String(validating: units, as: UTF16.self) else {
                throw ArchiveError(.invalidString, at: start, "unpaired surrogate in a UTF-16 string")
            }
            guard s.utf8.count <= limits.maxStringLength else {
                throw ArchiveError(.lengthLimit, at: start, "string longer than \(limits.maxStringLength) bytes")
            }
            try limits.checkNonStarterRun(s, at: start, "string")
            return .string(s)
        case 0x8:
            let size = Int(marker & 0x0F) + 1
            guard size <= 8 else { throw ArchiveError(.unknownTag, at: start, "UID of \(size) bytes") }
            try need(size)
            return .uid(be(p, size))
        default:
            throw ArchiveError(.unknownTag, at: start, "marker 0x\(String(marker, radix: 16))")
        }
    }
}

extension PropertyList {
    /// Reads a binary property list (`bplist00`). Throws ``ArchiveError`` on anything malformed, cyclic or
    /// beyond `limits`: objects (``ArchiveLimits/maxValues``), nesting (``ArchiveLimits/maxDepth``), the tree
    /// its shared objects stand for (``ArchiveLimits/maxExpandedValues``), strings and data.
    public init(binary bytes: [UInt8], limits: ArchiveLimits = .default) throws {
        var reader = BinaryPlistReader(bytes: bytes, limits: limits)
        self = try reader.read()
    }
}
