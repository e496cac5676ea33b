import KcarKeychain
import KeyedArchive
import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// The JSON item file of `extract --items`, `pack --items` and `import --items` (SPEC.md §K7).
enum ItemFile {
    struct Entry: Sendable {
        let itemClass: ItemClass
        let attributes: Attributes
        let value: [UInt8]
    }

    static let maxBytes = 1 << 30

    /// Writes an item file as the values are read: the document's head, then each item as
    /// its value streams in, base64-encoded chunk by chunk, so memory holds one output buffer whatever the
    /// number and size of the items. The buffer (decrypted values) is wiped after every flush.
    final class Writer {
        private let sink: (UnsafeRawBufferPointer) throws -> Void
        private var buffer: [UInt8] = []
        private var carry: [UInt8] = []
        private var count = 0
        static let bufferBytes = 1 << 16

        init(group: String, sink: @escaping (UnsafeRawBufferPointer) throws -> Void) throws {
            self.sink = sink
            buffer.reserveCapacity(Writer.bufferBytes + 64)
            try text("{\"format\": \"kcar-items\", \"version\": 1, \"group\": \(JSON.string(group)),\n \"items\": [")
        }

        deinit { wipe(&buffer) }

        private func text(_ s: String) throws {
            buffer.append(contentsOf: s.utf8)
            if buffer.count >= Writer.bufferBytes { try flush() }
        }

        private func flush() throws {
            try buffer.withUnsafeBytes { try sink($0) }
            wipe(&buffer)
            buffer.removeAll(keepingCapacity: true)
        }

        /// Starts an item: its JSON as `list --json` prints it, up to the value.
        func begin(_ item: Item) throws {
            var head = ItemJSON.object(id: item.id, class: item.itemClass, attributes: item.attributes, size: item.size)
            head.removeLast()  // the closing brace: the value follows
            try text((count == 0 ? "" : ",\n ") + head + ", \"value\": \"")
            count += 1
        }

        /// Appends value bytes, base64 (standard, padded) across chunk boundaries.
        func value(_ chunk: UnsafeRawBufferPointer) throws {
            var i = 0
            while !carry.isEmpty, carry.count < 3, i < chunk.count {
                carry.append(chunk[i])
                i += 1
            }
            if carry.count == 3 {
                Base64.append(carry[0], carry[1], carry[2], count: 3, to: &buffer)
                wipe(&carry)
                carry.removeAll()
            }
            while i + 3 <= chunk.count {
                Base64.append(chunk[i], chunk[i + 1], chunk[i + 2], count: 3, to: &buffer)
                i += 3
                if buffer.count >= Writer.bufferBytes { try flush() }
            }
            while i < chunk.count {
                carry.append(chunk[i])
                i += 1
            }
        }

        /// Ends the item's value and object.
        func end() throws {
            if !carry.isEmpty {
                Base64.append(carry[0], carry.count > 1 ? carry[1] : 0, 0, count: carry.count, to: &buffer)
                wipe(&carry)
                carry.removeAll()
            }
            try text("\"}")
        }

        /// Closes the document and flushes it.
        func finish() throws {
            try text("]}\n")
            try flush()
        }
    }

    /// `ITEMFILE_BYTES_MAX`: the largest item file read (SPEC.md §K7), checked before a regular file is read
    /// and counted as any input is read. The reader streams: it holds the item being parsed, not the file.
    static let bytesMax = 1 << 30
    /// `ITEMFILE_ITEMS_MAX`: items in one item file, a vault's `ITEMS_MAX`. A reader hands each item on as it
    /// is parsed; an import adds them in bulk, out of memory as it goes (``GroupTransaction/addInBulk``).
    static let itemsMax = Limits.itemsMax
    /// `PACK_ITEMS_MAX`: items `pack --items` takes from one file. It makes a new vault whose transaction holds
    /// every item until the commit (about 1.5 KB each): this bounds it.
    static let packItemsMax = 100_000
    /// `ITEMFILE_NESTING_MAX`: how deeply the members an item-file reader skips (ones it does not know) may nest.
    static let nestingMax = 64

    /// Reads and checks an item file (SPEC.md §K7) in one streaming pass, handing each item to `each` as soon
    /// as it is parsed: every class, attribute and value well formed, attribute names and string values
    /// Stream-Safe (so that comparing them under canonical equivalence is linear), within the item file's
    /// limits and the vault's (attributes per item, name and value sizes). An error in the file is thrown
    /// after `each` may have taken the items before it: a caller that adds all or none does so in one
    /// transaction, which the error ends. Once `each` throws, no further item is handed to it, but the rest
    /// of the file is still read and checked: an invalid file is reported as such (exit 4), whatever an item
    /// before its fault did (a duplicate, say), as when the file was checked whole before any item was
    /// added; then `each`'s error is thrown. Returns the number of items.
    @discardableResult
    static func read(_ path: String, itemsMax: Int, each: (Entry) throws -> Void) throws -> Int {
        let fd: Int32
        if path == "-" {
            fd = 0
        } else {
            fd = try SecretInput.openInput(path, what: "item file", allowPipe: false)
            var st = stat()
            guard fstat(fd, &st) == 0 else {
                close(fd)
                throw CLIError(.io, "cannot stat \(path)")
            }
            guard st.st_size <= bytesMax else {
                close(fd)
                throw CLIError(
                    .damaged, "\(path): \(st.st_size) bytes, more than an item file's \(bytesMax)-byte limit")
            }
        }
        defer { if fd != 0 { close(fd) } }
        var parser = Parser(fd: fd, path: path, itemsMax: itemsMax)
        defer { parser.wipeBuffer() }
        var refused: Error?
        do {
            let count = try parser.document { e in
                guard refused == nil else { return }
                do { try each(e) } catch { refused = error }
            }
            if let refused { throw refused }
            return count
        } catch let e as Parser.Failure {
            throw CLIError(.damaged, "\(path) is not a kcar item file: \(e.message) (at byte \(e.offset))")
        }
    }

    /// A JSON reader made for the item file's shape: one pass over the bytes as
    /// they are read, no tree of JSON values, each value decoded straight into its entry. Members it does not
    /// know are skipped without recursion. JSON per RFC 8259: strings with their escapes (surrogate pairs
    /// joined, lone ones refused, raw control characters refused, UTF-8 validated); whitespace; nothing after
    /// the document. The buffer holds the item being parsed and what was read ahead of it: bytes before an
    /// item are wiped and dropped when it starts (values are secrets), so memory follows the largest item.
    struct Parser {
        struct Failure: Error {
            let message: String
            let offset: Int
        }

        private(set) var b: [UInt8]
        var i = 0
        /// Bytes of the input dropped before `b[0]` (for the offsets errors give).
        private var dropped = 0
        private let fd: Int32
        private let path: String
        private var atEnd: Bool
        /// Items the document may hold: `ITEMFILE_ITEMS_MAX`, or a command's own bound.
        let itemsMax: Int
        static let readBytes = 1 << 16

        /// A parser of bytes already in memory (the fuzzer's).
        init(_ bytes: [UInt8], itemsMax: Int = ItemFile.itemsMax) {
            b = bytes
            fd = -1
            path = ""
            atEnd = true
            self.itemsMax = itemsMax
        }

        /// A parser of what `fd` reads (the file `path`, or standard input for `-`), at most `ITEMFILE_BYTES_MAX`.
        init(fd: Int32, path: String, itemsMax: Int) {
            b = []
            self.fd = fd
            self.path = path
            atEnd = false
            self.itemsMax = itemsMax
        }

        /// Whether byte `j` exists, reading more of the input until it does or the input ends.
        mutating func has(_ j: Int) throws -> Bool {
            while j >= b.count, !atEnd { try readMore() }
            return j < b.count
        }

        private mutating func readMore() throws {
            guard fd >= 0 else {
                atEnd = true
                return
            }
            // Grown by hand, so that the bytes read so far (values) are wiped from the buffer given up, not
            // left in freed memory as an array's own growth would.
            if b.capacity - b.count < Parser.readBytes {
                var grown: [UInt8] = []
                grown.reserveCapacity(max(b.capacity * 2, b.count + Parser.readBytes))
                grown.append(contentsOf: b)
                swap(&grown, &b)
                wipe(&grown)
            }
            let start = b.count
            b.append(contentsOf: repeatElement(0, count: Parser.readBytes))
            var n = 0
            while true {
                n = b.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + start, Parser.readBytes) }
                if n < 0, errno == EINTR { continue }
                break
            }
            b.removeLast(Parser.readBytes - max(n, 0))
            guard n >= 0 else {
                throw CLIError(
                    .io, "cannot read \(path == "-" ? "standard input" : path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { atEnd = true }
            guard dropped + b.count <= ItemFile.bytesMax else {
                throw CLIError(
                    .damaged,
                    path == "-"
                        ? "the item file on standard input: more than the \(ItemFile.bytesMax)-byte limit"
                        : "\(path): more than an item file's \(ItemFile.bytesMax)-byte limit")
            }
        }

        /// Drops the bytes before `i` (wiped first), once they are many: called between items, when no
        /// position into the buffer is held.
        mutating func dropParsed() {
            guard i >= Parser.readBytes * 4, i * 2 >= b.count else { return }
            var kept = Array(b[i...])
            swap(&kept, &b)
            wipe(&kept)
            dropped += i
            i = 0
        }

        mutating func wipeBuffer() { wipe(&b) }

        func fail(_ m: String) -> Failure { Failure(message: m, offset: dropped + i) }

        mutating func space() throws {
            while try has(i), b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        }

        mutating func expect(_ c: UInt8) throws {
            try space()
            guard try has(i), b[i] == c else { throw fail("expected '\(Character(Unicode.Scalar(c)))'") }
            i += 1
        }

        /// After `{` or `[` (`close` its closing byte): false at the close (consumed), true before a member.
        mutating func more(_ close: UInt8, first: Bool) throws -> Bool {
            try space()
            guard try has(i) else { throw fail("unexpected end") }
            if b[i] == close {
                i += 1
                return false
            }
            if !first {
                guard b[i] == 0x2C else { throw fail("expected ',' or '\(Character(Unicode.Scalar(close)))'") }
                i += 1
            }
            return true
        }

        mutating func peek() throws -> UInt8 {
            try space()
            guard try has(i) else { throw fail("unexpected end") }
            return b[i]
        }

        /// The next member's key of an object whose `{` was read (`first` true until a member was read), or
        /// nil at its `}`.
        mutating func nextMember(_ first: inout Bool) throws -> String? {
            guard try more(0x7D, first: first) else { return nil }
            first = false
            return try key()
        }

        mutating func key() throws -> String {
            let k = try string()
            try expect(0x3A)
            return k
        }

        mutating func string() throws -> String {
            try expect(0x22)
            var out: [UInt8] = []
            var runStart = i
            func hex4(_ at: Int) throws -> UInt32 {
                guard try has(at + 3) else { throw fail("truncated \\u escape") }
                var v: UInt32 = 0
                for c in b[at..<at + 4] {
                    guard let d = hexDigit(c) else { throw fail("bad \\u escape") }
                    v = v << 4 | UInt32(d)
                }
                return v
            }
            while true {
                guard try has(i) else { throw fail("unterminated string") }
                let c = b[i]
                if c == 0x22 { break }
                if c < 0x20 { throw fail("raw control character in a string") }
                if c != 0x5C {
                    i += 1
                    continue
                }
                out.append(contentsOf: b[runStart..<i])
                guard try has(i + 1) else { throw fail("unterminated string") }
                let e = b[i + 1]
                i += 2
                switch e {
                case 0x22, 0x5C, 0x2F: out.append(e)
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x6E: out.append(0x0A)
                case 0x72: out.append(0x0D)
                case 0x74: out.append(0x09)
                case 0x75:
                    var v = try hex4(i)
                    i += 4
                    if (0xD800..<0xDC00).contains(v) {
                        guard try has(i + 1), b[i] == 0x5C, b[i + 1] == 0x75 else { throw fail("lone surrogate") }
                        let lo = try hex4(i + 2)
                        guard (0xDC00..<0xE000).contains(lo) else { throw fail("lone surrogate") }
                        i += 6
                        v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(v) {
                        throw fail("lone surrogate")
                    }
                    guard let scalar = Unicode.Scalar(v) else { throw fail("bad \\u escape") }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                default: throw fail("bad escape")
                }
                runStart = i
            }
            out.append(contentsOf: b[runStart..<i])
            i += 1
            guard let s = String(validating: out, as: UTF8.self) else { throw fail("a string is not UTF-8") }
            return s
        }

        /// An integer in the signed 64-bit range; a fraction or exponent is refused.
        mutating func integer() throws -> Int64 {
            try space()
            let negative = try has(i) && b[i] == 0x2D
            if negative { i += 1 }
            let start = i
            var v: Int64 = 0
            while try has(i), (0x30...0x39).contains(b[i]) {
                let d = Int64(b[i] - 0x30)
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let (n, o2) = negative ? m.subtractingReportingOverflow(d) : m.addingReportingOverflow(d)
                guard !o1, !o2 else { throw fail("an integer outside the signed 64-bit range") }
                v = n
                i += 1
            }
            guard i > start, b[start] != 0x30 || i == start + 1 else { throw fail("malformed number") }
            if try has(i), b[i] == 0x2E || b[i] == 0x65 || b[i] == 0x45 {
                throw fail("a number that is not an integer")
            }
            return v
        }

        mutating func literal(_ word: String) throws {
            let w = Array(word.utf8)
            guard try has(i + w.count - 1), b[i..<i + w.count].elementsEqual(w) else { throw fail("unexpected value") }
            i += w.count
        }

        /// Skips a number (RFC 8259 §6: fractions and exponents are fine in a member that is skipped).
        mutating func skipNumber() throws {
            func digits() throws -> Int {
                let start = i
                while try has(i), (0x30...0x39).contains(b[i]) { i += 1 }
                return i - start
            }
            if try has(i), b[i] == 0x2D { i += 1 }
            let first = try has(i) ? b[i] : 0
            let n = try digits()
            guard n > 0, first != 0x30 || n == 1 else { throw fail("malformed number") }
            if try has(i), b[i] == 0x2E {
                i += 1
                guard try digits() > 0 else { throw fail("malformed number") }
            }
            if try has(i), b[i] == 0x65 || b[i] == 0x45 {
                i += 1
                if try has(i), b[i] == 0x2B || b[i] == 0x2D { i += 1 }
                guard try digits() > 0 else { throw fail("malformed number") }
            }
        }

        /// Skips any JSON value, iteratively: a stack of the open containers (true for an object), not recursion.
        mutating func skipValue() throws {
            var open: [Bool] = []
            while true {
                let c = try peek()
                if c == 0x7B || c == 0x5B {
                    i += 1
                    let object = c == 0x7B
                    if try more(object ? 0x7D : 0x5D, first: true) {
                        guard open.count < ItemFile.nestingMax else {
                            throw fail("nested more than \(ItemFile.nestingMax) deep")
                        }
                        open.append(object)
                        if object { _ = try key() }
                        continue
                    }
                } else {
                    switch c {
                    case 0x22: _ = try string()
                    case 0x74: try literal("true")
                    case 0x66: try literal("false")
                    case 0x6E: try literal("null")
                    default: try skipNumber()
                    }
                }
                // A value ended: close the containers it ended, or go on to the next member of the innermost.
                while let object = open.last {
                    if try more(object ? 0x7D : 0x5D, first: false) {
                        if object { _ = try key() }
                        break
                    }
                    open.removeLast()
                }
                if open.isEmpty { return }
            }
        }

        /// The document: each item is handed to `each` as it is parsed; returns their number.
        mutating func document(_ each: (Entry) throws -> Void) throws -> Int {
            var format: String?
            var version: Int64?
            var count: Int?
            try expect(0x7B)
            var first = true
            while let k = try nextMember(&first) {
                switch k {
                case "format" where format == nil: format = try string()
                case "version" where version == nil: version = try integer()
                case "items" where count == nil:
                    // Another format, when it is already known, is refused before any of its items is taken.
                    if format.map({ $0 != "kcar-items" }) ?? false || version.map({ $0 != 1 }) ?? false {
                        try checkFormat(format, version)
                    }
                    count = try items(each)
                default: try skipValue()
                }
            }
            try space()
            guard try !has(i) else { throw fail("bytes after the document") }
            guard let format, let version, let count else { throw fail("format, version and items are required") }
            try checkFormat(format, version)
            return count
        }

        func checkFormat(_ format: String?, _ version: Int64?) throws {
            guard format == "kcar-items", version == 1 else {
                throw fail(
                    "format \(terminalSafe(format ?? "(none)")) version \(version.map(String.init) ?? "(none)"); expected kcar-items version 1"
                )
            }
        }

        mutating func items(_ each: (Entry) throws -> Void) throws -> Int {
            var count = 0
            try expect(0x5B)
            var first = true
            while try more(0x5D, first: first) {
                first = false
                guard count < itemsMax else { throw fail("more than \(itemsMax) items") }
                try each(try item(count))
                count += 1
                dropParsed()
            }
            return count
        }

        func safe(_ s: String, _ what: String) throws -> String {
            guard StreamSafe.isStreamSafe(s) else {
                throw fail(
                    "\(what): a run of more than \(StreamSafe.maxNonStarterRun) combining marks (not Stream-Safe)")
            }
            return s
        }

        mutating func item(_ n: Int) throws -> Entry {
            var cls: String?
            var value: [UInt8]?
            var attributes: Attributes?
            try expect(0x7B)
            var first = true
            while let k = try nextMember(&first) {
                switch k {
                case "class" where cls == nil: cls = try safe(try string(), "item \(n): class")
                case "value" where value == nil:
                    guard let v = Base64.decode(Array(try string().utf8)) else {
                        throw fail("item \(n): value is not base64")
                    }
                    value = v
                case "attributes" where attributes == nil: attributes = try self.attributes(n)
                default: try skipValue()
                }
            }
            guard let cls, let value else { throw fail("item \(n): class and value are required") }
            return Entry(itemClass: ItemClass(rawValue: cls), attributes: attributes ?? Attributes(), value: value)
        }

        mutating func attributes(_ n: Int) throws -> Attributes {
            var a = Attributes()
            try expect(0x7B)
            var first = true
            while let key = try nextMember(&first) {
                let name = try safe(key, "item \(n): an attribute name")
                guard name.utf8.count <= Limits.attrNameMax else {
                    throw fail("item \(n): an attribute name over \(Limits.attrNameMax) bytes")
                }
                let v = try attributeValue(n, name)
                guard a[name] == nil else { continue }  // a member given twice: the first stands (SPEC.md §K7)
                guard a.count < Limits.attrsMax else {
                    throw fail("item \(n): more than \(Limits.attrsMax) attributes")
                }
                a[name] = v
            }
            return a
        }

        mutating func attributeValue(_ n: Int, _ name: String) throws -> AttributeValue {
            let at = "item \(n): \(terminalSafe(name))"
            switch try peek() {
            case 0x22:
                let s = try safe(try string(), at)
                guard s.utf8.count <= Limits.attrValueMax else {
                    throw fail("\(at): a value over \(Limits.attrValueMax) bytes")
                }
                return .string(s)
            case 0x74:
                try literal("true")
                return .bool(true)
            case 0x66:
                try literal("false")
                return .bool(false)
            case 0x7B:
                i += 1
                guard try more(0x7D, first: true) else {
                    throw fail("\(at): expected {\"$date\": ...} or {\"$data\": ...}")
                }
                let k = try key()
                let text = try string()
                guard try !more(0x7D, first: false) else {
                    throw fail("\(at): expected {\"$date\": ...} or {\"$data\": ...}")
                }
                switch k {
                case "$date":
                    guard let ns = parseISO8601(text) else { throw fail("\(at): bad date \(terminalSafe(text))") }
                    return .date(nanoseconds: ns)
                case "$data":
                    guard let d = Base64.decode(Array(text.utf8)) else { throw fail("\(at): bad base64") }
                    guard d.count <= Limits.attrValueMax else {
                        throw fail("\(at): a value over \(Limits.attrValueMax) bytes")
                    }
                    return .data(d)
                default: throw fail("\(at): expected {\"$date\": ...} or {\"$data\": ...}")
                }
            default:
                return .integer(try integer())
            }
        }
    }
}

func hexDigit(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: return c - 0x30
    case 0x41...0x46: return c - 0x37
    case 0x61...0x66: return c - 0x57
    default: return nil
    }
}
