import KeyedArchive

/// Builds hostile archives and property lists byte by byte, with full control over every field: for tests and
/// the hostile-input harness (`kcar-hostile`) only. Writers of real archives use ``ArchiveSerialization`` and
/// ``NSKeyedArchive``.
package enum ArchiveCrafting {
    /// A kcar archive header (SPEC.md Part 2 §A2), sorted or not.
    package static func header(sorted: Bool) -> [UInt8] {
        ArchiveFormat.magic + [ArchiveSerialization.formatVersion, sorted ? 1 : 0]
    }

    /// A minimal LEB128 varint.
    package static func varint(_ value: Int) -> [UInt8] {
        var out: [UInt8] = []
        var v = UInt64(value)
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
        return out
    }

    /// `[d0, d1, ..., d(n-1)]`: d0 a shared definition of null, each later d(i) a shared definition of
    /// `levels` nested arrays around one reference to d(i-1). Every item is within `levels` + 3 levels of the
    /// root, but d(i) stands for a value (`levels` + 1) i + 2 levels deep: the chain of shared definitions that
    /// overflowed the stack when the value was printed, compared or freed.
    package static func sharedChain(_ n: Int, levels: Int = 1, then tail: [UInt8] = []) -> [UInt8] {
        var out = header(sorted: false) + [ArchiveFormat.Tag.array] + varint(n + (tail.isEmpty ? 0 : 1))
        out += [ArchiveFormat.Tag.shared, ArchiveFormat.Tag.null]
        for i in 1..<max(n, 1) {
            out += [ArchiveFormat.Tag.shared]
            for _ in 0..<levels { out += [ArchiveFormat.Tag.array, 1] }
            out += [ArchiveFormat.Tag.sharedRef] + varint(i - 1)
        }
        return out + tail
    }

    /// A sorted archive `[d, {[d, 1], [d, 2], ..., [d, n]}]`: d one shared data value of `dataBytes` bytes
    /// that every element of the set references, so that each element's sort key holds all of d. The
    /// elements are in canonical order (by their ints' varint bytes).
    package static func sharedDataInSet(dataBytes: Int, elements n: Int) -> [UInt8] {
        var out = header(sorted: true) + [ArchiveFormat.Tag.array, 2, ArchiveFormat.Tag.shared, ArchiveFormat.Tag.data]
        out += varint(dataBytes) + [UInt8](repeating: 0x41, count: dataBytes)
        out += [ArchiveFormat.Tag.set] + varint(n)
        for int in (1...n).map({ varint(2 * $0) }).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            out += [ArchiveFormat.Tag.array, 2, ArchiveFormat.Tag.sharedRef, 0, ArchiveFormat.Tag.int] + int
        }
        return out
    }

    /// `[d, d, ..., d]`: one shared data value of `dataBytes` bytes, defined once and referenced `uses - 1`
    /// times: a small archive whose JSON (base64 at every use) is large.
    package static func sharedDataUses(dataBytes: Int, uses: Int) -> [UInt8] {
        var out = header(sorted: false) + [ArchiveFormat.Tag.array] + varint(uses)
        out +=
            [ArchiveFormat.Tag.shared, ArchiveFormat.Tag.data] + varint(dataBytes)
            + [UInt8](repeating: 0x41, count: dataBytes)
        for _ in 1..<uses { out += [ArchiveFormat.Tag.sharedRef, 0] }
        return out
    }

    /// `n` combining marks, U+0301 (class 230) and U+0316 (class 220) in turn: the run canonical ordering
    /// must sort, at a cost of its length squared.
    package static func combiningMarks(_ n: Int) -> String {
        String(String.UnicodeScalarView((0..<n).map { $0 % 2 == 0 ? "\u{301}" : "\u{316}" }))
    }

    /// An archive whose root is a dictionary of one key: `base` followed by `marks` combining marks.
    package static func combiningKey(base: String = "a", marks: Int) -> [UInt8] {
        let key = Array((base + combiningMarks(marks)).utf8)
        return header(sorted: false) + [ArchiveFormat.Tag.dictionary, 1, 0] + varint(key.count) + key + [
            ArchiveFormat.Tag.null
        ]
    }

    /// `[{k: null}, {k: null}, ...]`: `dictionaries` dictionaries sharing one key `k` of `keyBytes` bytes,
    /// written once and referenced: each dictionary hashes all of it.
    package static func sharedKey(keyBytes: Int, dictionaries n: Int) -> [UInt8] {
        var out = header(sorted: false) + [ArchiveFormat.Tag.array] + varint(n)
        out += [ArchiveFormat.Tag.dictionary, 1, 0] + varint(keyBytes) + [UInt8](repeating: 0x6B, count: keyBytes) + [0]
        for _ in 1..<n { out += [ArchiveFormat.Tag.dictionary, 1, 1, ArchiveFormat.Tag.null] }
        return out
    }

    /// An array of `n` empty arrays: 2 bytes of archive per value, each an object of its own in an
    /// NSKeyedArchiver export.
    package static func emptyArrays(_ n: Int) -> [UInt8] {
        var out = header(sorted: false) + [ArchiveFormat.Tag.array] + varint(n)
        for _ in 0..<n { out += [ArchiveFormat.Tag.array, 0] }
        return out
    }

    /// `levels` sets, each the one element of the next, around an array of `values` small ints: inserting each
    /// set into the next hashes everything inside it again.
    package static func nestedSets(levels: Int, values: Int) -> [UInt8] {
        var out = header(sorted: false)
        for _ in 0..<levels { out += [ArchiveFormat.Tag.set, 1] }
        out += [ArchiveFormat.Tag.array] + varint(values)
        for i in 0..<values { out += [ArchiveFormat.Tag.int, UInt8(2 * (i % 60))] }
        return out
    }

    /// `{true, {true, ... {true}}}`: `levels` sets, each holding true and the next one, around `{true}`. Each
    /// level's elements are in canonical order (`02` before `10 ...`). Ordered from scratch at every level, a
    /// set nested in a set element is ordered again for each sort key around it: 23 levels are 67,108,788
    /// bytes of sort keys (just within `SORT_KEYS_MAX`) for 78 bytes of archive, and took 25 million sort keys
    /// to write (30 s of CPU) before each set's order was worked out once.
    package static func setChain(levels: Int, sorted: Bool = false) -> [UInt8] {
        header(sorted: sorted) + setChainItem(levels: levels)
    }

    /// `[c, c, ..., c]`: `copies` set chains of `levels` levels (``setChain(levels:sorted:)``) in an array.
    package static func setChains(levels: Int, copies: Int) -> [UInt8] {
        header(sorted: false) + [ArchiveFormat.Tag.array] + varint(copies)
            + [[UInt8]](repeating: setChainItem(levels: levels), count: copies).flatMap { $0 }
    }

    private static func setChainItem(levels: Int) -> [UInt8] {
        [[UInt8]](repeating: [ArchiveFormat.Tag.set, 2, ArchiveFormat.Tag.true], count: levels).flatMap { $0 }
            + [ArchiveFormat.Tag.set, 1, ArchiveFormat.Tag.true]
    }

    /// A `bplist00` array of `dictionaries` dictionaries whose one key is the same string object of
    /// `keyBytes` bytes.
    package static func sharedKeyPlist(keyBytes: Int, dictionaries n: Int) -> [UInt8] {
        let key = marker(0x5, count: keyBytes) + [UInt8](repeating: 0x6B, count: keyBytes)
        let dictionary: [UInt8] = [0xD1] + bigEndian(0, 4) + bigEndian(1, 4)  // key object 0, value object 1
        var array = marker(0xA, count: n)
        for i in 0..<n { array += bigEndian(2 + i, 4) }
        return binaryPlist(
            objects: [key, [0x09]] + [[UInt8]](repeating: dictionary, count: n) + [array],
            table: Array(0..<(n + 3)), top: n + 2, refSize: 4)
    }

    /// A `bplist00` from its object bytes: `objects` are laid out in order after the magic, `table` gives the
    /// object (by position in `objects`) each offset-table entry points at (several entries may point at one),
    /// and `top` is the offset-table index of the top object. Offsets take 4 bytes, references `refSize`.
    package static func binaryPlist(objects: [[UInt8]], table: [Int], top: Int, refSize: Int) -> [UInt8] {
        var out = Array("bplist00".utf8)
        var starts: [Int] = []
        for o in objects {
            starts.append(out.count)
            out += o
        }
        let tableStart = out.count
        for t in table { out += bigEndian(starts[t], 4) }
        out += [0, 0, 0, 0, 0, 0, 4, UInt8(refSize)]  // 5 unused bytes, the sort version, the sizes
        out += bigEndian(table.count, 8) + bigEndian(top, 8) + bigEndian(tableStart, 8)
        return out
    }

    /// `value` as `size` big-endian bytes.
    package static func bigEndian(_ value: Int, _ size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * (size - 1 - $0))) }
    }

    /// A plist marker with its count: the low nibble, or 0xF and an int object that follows.
    package static func marker(_ high: UInt8, count: Int) -> [UInt8] {
        count < 15 ? [high << 4 | UInt8(count)] : [high << 4 | 0x0F, 0x12] + bigEndian(count, 4)
    }

    /// A `bplist00` whose offset table points `aliases` entries at one data object of `dataBytes` bytes, and
    /// whose top array references every one of them: one object, read as `aliases` objects by a reader that
    /// decodes each offset-table entry on its own.
    package static func aliasedPlist(dataBytes: Int, aliases: Int) -> [UInt8] {
        let data = marker(0x4, count: dataBytes) + [UInt8](repeating: 0x5A, count: dataBytes)
        var array = marker(0xA, count: aliases)
        for i in 0..<aliases { array += bigEndian(i, 4) }
        return binaryPlist(
            objects: [data, array], table: [Int](repeating: 0, count: aliases) + [1], top: aliases, refSize: 4)
    }

    /// A `bplist00` of `count` data objects that overlap: each starts 6 bytes after the previous one and runs
    /// to the end of the same region, and the top array references them all (built in full, they would add
    /// up to `count`² × 3 bytes).
    package static func overlappingPlist(count: Int) -> [UInt8] {
        let region = 6 * count
        var data: [UInt8] = []
        for k in 0..<count { data += [0x4F, 0x12] + bigEndian(region - 6 * k - 6, 4) }
        var array = marker(0xA, count: count)
        for i in 0..<count { array += bigEndian(i, 4) }
        var out = binaryPlist(objects: [data, array], table: [0, 1], top: 1, refSize: 4)
        // Rewrite the offset table: entry k at the k-th header, entry `count` at the array.
        let tableStart = 8 + data.count + array.count
        var table: [UInt8] = []
        for k in 0..<count { table += bigEndian(8 + 6 * k, 4) }
        table += bigEndian(tableStart - array.count, 4)
        out.replaceSubrange(
            tableStart..<out.count,
            with: table + [0, 0, 0, 0, 0, 0, 4, 4] + bigEndian(count + 1, 8)
                + bigEndian(count, 8) + bigEndian(tableStart, 8))
        return out
    }
    /// An NSKeyedArchiver `bplist00` whose `$objects` are `$null`, an NSArray of `uids` UIDs all naming the
    /// NSNumber 5, that number, the NSArray class, and `arrays - 1` more such arrays (one-byte references:
    /// a UID costs one byte of input, and the value imported holds the number once per UID).
    package static func uidArraysArchive(arrays: Int, uids: Int) -> [UInt8] {
        func string(_ s: String) -> [UInt8] { marker(0x5, count: s.utf8.count) + Array(s.utf8) }
        func container(_ high: UInt8, _ refs: [Int]) -> [UInt8] {
            marker(high, count: high == 0xD ? refs.count / 2 : refs.count) + refs.map { UInt8(truncatingIfNeeded: $0) }
        }
        var objects: [[UInt8]] = [
            string("$archiver"), string("NSKeyedArchiver"), string("$version"), [0x12] + bigEndian(100_000, 4),  // 0-3
            string("$top"), container(0xD, [6, 7]), string("root"), [0x80, 1], string("$objects"), [],  // 4-9
            string("$null"), string("NS.objects"), string("$class"), [0x80, 3], [0x80, 2], [0x10, 5],  // 10-15
            // 16-20
            string("$classname"), string("NSArray"), string("$classes"), container(0xA, [17, 20]), string("NSObject"),
            container(0xD, [16, 18, 17, 19])  // 21: the class
        ]
        let uidList = marker(0xA, count: uids) + [UInt8](repeating: 14, count: uids)  // every UID 2
        var arrayObjects: [Int] = []
        for _ in 0..<arrays {
            objects.append(uidList)
            objects.append(container(0xD, [11, 12, objects.count - 1, 13]))
            arrayObjects.append(objects.count - 1)
        }
        objects[9] = container(0xA, [10, arrayObjects[0], 15, 21] + arrayObjects.dropFirst())
        objects.append(container(0xD, [0, 2, 4, 8, 1, 3, 5, 9]))
        return binaryPlist(objects: objects, table: Array(objects.indices), top: objects.count - 1, refSize: 1)
    }
}
