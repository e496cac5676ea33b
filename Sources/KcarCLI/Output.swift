import VaultFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Buffered standard output and unbuffered standard error, without Foundation (it would cost start-up time).
final class Output: @unchecked Sendable {
    static let out = Output(fd: 1)
    static let err = Output(fd: 2)
    let fd: Int32
    private var buffer: [UInt8] = []
    init(fd: Int32) { self.fd = fd }

    var isTerminal: Bool { isatty(fd) == 1 }

    func write(_ s: String) {
        buffer.append(contentsOf: s.utf8)
        if fd == 2 || buffer.count > 1 << 16 { flush() }
    }

    func line(_ s: String) { write(s + "\n") }

    /// Writes the bytes of `json` (as ``write(_:)`` does a string's) and empties it.
    func write(_ json: inout JSONBytes) {
        buffer.append(contentsOf: json.bytes)
        json.removeAll()
        if fd == 2 || buffer.count > 1 << 16 { flush() }
    }

    /// Writes `bytes` (UTF-8 text, as ``write(_:)`` does a string's) and empties it.
    func write(bytes: inout [UInt8]) {
        buffer.append(contentsOf: bytes)
        bytes.removeAll(keepingCapacity: true)
        if fd == 2 || buffer.count > 1 << 16 { flush() }
    }

    func writeBytes(_ b: UnsafeRawBufferPointer) throws {
        flush()
        var done = 0
        while done < b.count {
            let n = Glibc.write(fd, b.baseAddress! + done, b.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw CLIError(.io, "cannot write to standard output: \(String(cString: strerror(errno)))")
            }
            done += n
        }
    }

    func flush() {
        var done = 0
        while done < buffer.count {
            let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            done += n
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// JSON text built as UTF-8 bytes in one buffer, as ``JSON`` writes it (the same escapes, `", "` between
/// members and `": "` after a name), without a String per value.
struct JSONBytes {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// The text.
    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends `s`, which is JSON already (a number, `null`, punctuation).
    mutating func raw(_ s: String) { bytes.append(contentsOf: s.utf8) }

    /// Appends `s` as a JSON string (``JSON/string(_:)``).
    mutating func string(_ s: String) {
        let copied = s.utf8.withContiguousStorageIfAvailable { u -> Bool in
            guard u.allSatisfy(JSON.isPlain) else { return false }
            bytes.append(0x22)
            bytes.append(contentsOf: u)
            bytes.append(0x22)
            return true
        }
        if copied != true { raw(JSON.string(s)) }
    }

    /// Appends `a`, `separator` and `b` as one JSON string (escaping is per character, so this is the string of
    /// `a + separator + b`, without making it).
    mutating func string(_ a: String, _ separator: UInt8, _ b: String) {
        bytes.append(0x22)
        body(a)
        bytes.append(separator)
        body(b)
        bytes.append(0x22)
    }

    /// `s` escaped, without its quotes.
    private mutating func body(_ s: String) {
        let copied = s.utf8.withContiguousStorageIfAvailable { u -> Bool in
            guard u.allSatisfy(JSON.isPlain) else { return false }
            bytes.append(contentsOf: u)
            return true
        }
        if copied != true { bytes.append(contentsOf: JSON.string(s).utf8.dropFirst().dropLast()) }
    }

    /// Appends the decimal digits of `v`.
    mutating func integer(_ v: UInt64) { appendDecimal(v, to: &bytes) }

    /// Appends the decimal digits of `v`, after a `-` if it is negative.
    mutating func integer(_ v: Int64) {
        if v < 0 { bytes.append(0x2D) }
        integer(v.magnitude)
    }

    /// Appends `id` as a JSON string of 32 lowercase hex digits (``ItemID/description``).
    mutating func string(_ id: ItemID) {
        bytes.append(0x22)
        id.appendHex(to: &bytes)
        bytes.append(0x22)
    }

    /// Appends the ISO 8601 date of `ns` nanoseconds since 1970 as a JSON string (``iso8601(nanoseconds:)``).
    mutating func date(nanoseconds ns: Int64) {
        let (secs, frac) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
        bytes.append(0x22)
        if !appendISO8601(seconds: secs, nanoseconds: frac, to: &bytes) {
            bytes.append(contentsOf: iso8601(seconds: secs, nanoseconds: frac).utf8)
        }
        bytes.append(0x22)
    }

    /// Appends the separator before a member (none before the first) and its name.
    mutating func member(_ name: String, first: inout Bool) {
        if !first {
            bytes.append(0x2C)
            bytes.append(0x20)
        }
        first = false
        string(name)
        bytes.append(0x3A)
        bytes.append(0x20)
    }

    /// The number of bytes written.
    var count: Int { bytes.count }

    /// Empties the buffer, keeping its memory.
    mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }
}

/// Every message to standard error goes through here, escaped: errors quote paths, group names and other
/// text taken from files, which must not reach the terminal as control sequences.
func warn(_ s: String) { Output.err.line("kcar: \(terminalSafe(s))") }

/// `s` with every character that a terminal would act on instead of showing written visibly: C0 controls
/// (newline, escape, ...), DEL and C1 controls as `\xNN`, and the line and paragraph separators and the
/// bidirectional embedding, override and isolate controls (which reorder what follows them) as `\u{NNNN}`.
/// Used by every human-readable printer for text that comes from a file (group names, classes, attribute
/// values, error messages); JSON output escapes with JSON's own rules instead (`JSON.string`).
func terminalSafe(_ s: String) -> String {
    // Printable ASCII (most text) is checked byte by byte, not scalar by scalar.
    if s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return s }
    guard s.unicodeScalars.contains(where: isTerminalControl) else { return s }
    var out = String.UnicodeScalarView()
    for u in s.unicodeScalars {
        guard isTerminalControl(u) else {
            out.append(u)
            continue
        }
        let hex = String(u.value, radix: 16, uppercase: true)
        let escaped = u.value < 0x100 ? "\\x" + String(repeating: "0", count: 2 - hex.count) + hex : "\\u{" + hex + "}"
        out.append(contentsOf: escaped.unicodeScalars)
    }
    return String(out)
}

/// Whether a terminal acts on `u` instead of showing it: C0 controls, DEL, C1 controls (U+009B is CSI to
/// many terminals), the line and paragraph separators, and the bidirectional embedding, override and
/// isolate controls.
func isTerminalControl(_ u: Unicode.Scalar) -> Bool {
    switch u.value {
    case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
    default: return false
    }
}

/// JSON text, written by hand: strings escaped per RFC 8259, and every character a terminal would act on
/// (``isTerminalControl(_:)``) as `\uXXXX`, so JSON printed to a terminal is as harmless as the human output.
enum JSON {
    /// Whether `b` is copied into a JSON string as it is: printable ASCII but `"` and `\`.
    static func isPlain(_ b: UInt8) -> Bool { b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C }

    static func string(_ s: String) -> String {
        // Printable ASCII but `"` and `\` (base64, most names) needs no escape: copied, not scalar by scalar
        // (checked over the contiguous bytes of a native string: a million items' strings are listed).
        if s.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(isPlain) }) ?? s.utf8.allSatisfy(isPlain) {
            var out = "\""
            out.reserveCapacity(s.utf8.count + 2)
            out += s
            out += "\""
            return out
        }
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isTerminalControl(u):
                let h = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    static func object(_ pairs: [(String, String)]) -> String {
        var out = "{"
        out.reserveCapacity(pairs.reduce(2) { $0 + $1.0.utf8.count + $1.1.utf8.count + 6 })
        for (i, p) in pairs.enumerated() {
            if i > 0 { out += ", " }
            out += string(p.0)
            out += ": "
            out += p.1
        }
        return out + "}"
    }

    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",\n ") + "]" }

    /// Prints what `out.line(array(items.map(element)))` prints, one element at a time: the JSON of a large
    /// index is never held whole (15 items of 256 data attributes, a 304 KB vault, made 335 MB of it).
    static func printArray<S: Sequence>(_ items: S, to out: Output = .out, _ element: (S.Element) -> String) {
        printArray(to: out) { emit in items.forEach { emit(element($0)) } }
    }

    /// ``printArray(_:to:_:)`` of the elements `elements` hands to its argument, each written as it comes (a
    /// stream of items need not be held).
    static func printArray(to out: Output = .out, _ elements: ((String) -> Void) throws -> Void) rethrows {
        out.write("[")
        var first = true
        try elements { element in
            out.write((first ? "" : ",\n ") + element)
            first = false
        }
        out.write("]\n")
    }
}

/// ISO 8601 in UTC with nanoseconds when present: 2026-01-01T00:00:00Z, 2026-01-01T00:00:00.5Z.
func iso8601(nanoseconds ns: Int64) -> String {
    let (secs, frac) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
    return iso8601(seconds: secs, nanoseconds: frac)
}

/// ISO 8601 in UTC of `seconds` since 1970 plus a fraction in nanoseconds (which may be negative): the
/// fraction's digits without trailing zeros, or exactly `fractionDigits` of them (columns of one width).
func iso8601(seconds secs: Int64, nanoseconds frac: Int64, fractionDigits: Int? = nil) -> String {
    var b: [UInt8] = []
    b.reserveCapacity(32)
    if appendISO8601(seconds: secs, nanoseconds: frac, fractionDigits: fractionDigits, to: &b) {
        return String(decoding: b, as: UTF8.self)
    }
    let (year, month, day, r, f) = civil(seconds: secs, nanoseconds: frac)
    func p(_ v: Int64, _ w: Int) -> String {
        let t = String(v)
        return String(repeating: "0", count: max(0, w - t.count)) + t
    }
    var out = "\(p(year, 4))-\(p(month, 2))-\(p(day, 2))T\(p(r / 3600, 2)):\(p(r % 3600 / 60, 2)):\(p(r % 60, 2))"
    if f > 0 {
        var frac = p(f, 9)
        while frac.hasSuffix("0") { frac.removeLast() }
        out += "." + frac
    }
    return out + "Z"
}

/// Appends ``iso8601(seconds:nanoseconds:fractionDigits:)`` to `b` for the years 0000-9999 (every date a file
/// of kcar's makes), digit by digit into a buffer on the stack: `list --json` and `kcar git textconv` print a date
/// or two per item, and a String per date was a fifth of their time. False, and nothing appended, for another year.
func appendISO8601(seconds secs: Int64, nanoseconds frac: Int64, fractionDigits: Int? = nil, to b: inout [UInt8])
    -> Bool
{
    let (year, month, day, r, f) = civil(seconds: secs, nanoseconds: frac)
    guard (0...9999).contains(year) else { return false }
    // At most 30 bytes: 2026-01-01T00:00:00.123456789Z.
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { out in
        var n = 0
        func put(_ v: Int64, _ w: Int, _ then: UInt8?) {
            var x = v
            for i in stride(from: w - 1, through: 0, by: -1) {
                out[n + i] = 48 + UInt8(x % 10)
                x /= 10
            }
            n += w
            if let then {
                out[n] = then
                n += 1
            }
        }
        put(year, 4, 45)
        put(month, 2, 45)
        put(day, 2, 84)
        put(r / 3600, 2, 58)
        put(r % 3600 / 60, 2, 58)
        put(r % 60, 2, nil)
        if let digits = fractionDigits, digits > 0 {
            out[n] = 46
            n += 1
            var scale: Int64 = 1
            for _ in digits..<9 { scale *= 10 }
            put(f / scale, digits, nil)
        } else if f > 0 {
            out[n] = 46
            n += 1
            put(f, 9, nil)
            while out[n - 1] == 48 { n -= 1 }
        }
        out[n] = 90
        b.append(contentsOf: UnsafeBufferPointer(rebasing: out[..<(n + 1)]))
    }
    return true
}

/// Appends the decimal digits of `v` to `b`.
func appendDecimal(_ v: UInt64, to b: inout [UInt8]) {
    guard v >= 10 else { return b.append(48 + UInt8(v)) }
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
        var i = 20
        var n = v
        while n > 0 {
            i -= 1
            digits[i] = 48 + UInt8(n % 10)
            n /= 10
        }
        b.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i...]))
    }
}

/// The number of decimal digits of `v` (`String(v).count`).
func decimalDigits(_ v: UInt64) -> Int {
    var n = 1
    var x = v
    while x >= 10 {
        x /= 10
        n += 1
    }
    return n
}

/// The civil date (year, month, day), the second of the day and the fraction in [0, 1e9) of `secs` seconds
/// since 1970 plus `frac` nanoseconds (Howard Hinnant's algorithm).
private func civil(seconds secs: Int64, nanoseconds frac: Int64) -> (Int64, Int64, Int64, Int64, Int64) {
    var s = secs
    var f = frac
    if f < 0 {
        s -= 1
        f += 1_000_000_000
    }
    let (days, rem) = s.quotientAndRemainder(dividingBy: 86_400)
    var d = days
    var r = rem
    if r < 0 {
        d -= 1
        r += 86_400
    }
    let z = d + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    return (year, month, day, r, f)
}

/// A progress line on standard error, shown only on a terminal and only for long work.
final class Progress {
    let total: UInt64
    let label: String
    private var done: UInt64 = 0
    private var lastShown: UInt64 = 0
    private let enabled: Bool
    static let threshold: UInt64 = 64 << 20

    init(label: String, total: UInt64) {
        self.total = total
        self.label = label
        enabled = total >= Progress.threshold && Output.err.isTerminal
    }

    func advance(_ n: UInt64) {
        done += n
        guard enabled, done - lastShown >= total / 100 || done == total else { return }
        lastShown = done
        let pct = total == 0 ? 100 : Int(min(done, total) * 100 / total)  // a file may grow while it is read
        let bar = String(repeating: "#", count: pct / 4) + String(repeating: ".", count: 25 - pct / 4)
        Output.err.write("\r\(label) [\(bar)] \(pct)% \(done >> 20)/\(total >> 20) MiB")
    }

    func finish() {
        if enabled { Output.err.write("\r\u{1B}[K") }
    }
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (RFC 3339 in UTC, up to 9 fraction digits) into nanoseconds
/// since 1970; nil if malformed or out of range.
func parseISO8601(_ text: String) -> Int64? {
    let u = Array(text.utf8)
    func num(_ from: Int, _ count: Int) -> Int64? {
        guard from + count <= u.count else { return nil }
        var v: Int64 = 0
        for b in u[from..<from + count] {
            guard b >= 48, b <= 57 else { return nil }
            v = v * 10 + Int64(b - 48)
        }
        return v
    }
    guard u.count >= 20, u[4] == 45, u[7] == 45, u[10] == 84 || u[10] == 116, u[13] == 58, u[16] == 58,
        let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), let h = num(11, 2), let mi = num(14, 2),
        let s = num(17, 2),
        (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 60
    else { return nil }
    var i = 19
    var frac: Int64 = 0
    if u[i] == 46 {
        i += 1
        var digits = 0
        while i < u.count, u[i] >= 48, u[i] <= 57 {
            guard digits < 9 else { return nil }
            frac = frac * 10 + Int64(u[i] - 48)
            digits += 1
            i += 1
        }
        guard digits > 0 else { return nil }
        for _ in digits..<9 { frac *= 10 }
    }
    guard i == u.count - 1, u[i] == 90 || u[i] == 122 else { return nil }
    // Days since 1970 from the civil date (Howard Hinnant's algorithm).
    let yy = mo <= 2 ? y - 1 : y
    let era = (yy >= 0 ? yy : yy - 399) / 400
    let yoe = yy - era * 400
    let doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    let days = era * 146_097 + doe - 719_468
    let secs = days * 86_400 + h * 3600 + mi * 60 + s
    let (ns, overflow) = secs.multipliedReportingOverflow(by: 1_000_000_000)
    guard !overflow else { return nil }
    let (total, o2) = ns.addingReportingOverflow(frac)
    return o2 ? nil : total
}

/// A table for people (scripts take `--json`): a header line, then one line per row, each column as wide as
/// its widest cell. A column may have a cap: a longer cell is cut and ends with `…`, so one long name does
/// not push every other column out of line. Cells are made terminal-safe before they are measured. Widths
/// count Unicode scalars, so a wide (CJK) character counts as one column.
struct Table {
    struct Column {
        let title: String
        var cap: Int? = nil
        var rightAligned = false
    }

    let columns: [Column]
    private(set) var rows: [[String]] = []

    init(_ columns: [Column]) { self.columns = columns }

    mutating func add(_ cells: [String]) { rows.append(cells.map(terminalSafe)) }

    /// `text` cut to `width` scalars, its last one `…` if it was longer.
    static func cut(_ text: String, _ width: Int) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > width, width >= 1 else { return text }
        var out = String.UnicodeScalarView(scalars.prefix(width - 1))
        out.append("…")
        return String(out)
    }

    /// The lines of the table, the header first; the last column is not padded.
    func lines() -> [String] {
        let capped = rows.map { row in row.enumerated().map { i, c in columns[i].cap.map { Table.cut(c, $0) } ?? c } }
        let widths = columns.enumerated().map { i, col in
            capped.reduce(col.title.unicodeScalars.count) { max($0, $1[i].unicodeScalars.count) }
        }
        return [Table.line(columns.map(\.title), widths, columns)] + capped.map { Table.line($0, widths, columns) }
    }

    /// One line of cells in columns of these widths (a longer cell is not cut here; it pushes the rest).
    /// A printer that streams many rows (list) fixes the widths first and prints each line as it goes.
    static func line(_ cells: [String], _ widths: [Int], _ columns: [Column]) -> String {
        var out = ""
        for (i, cell) in cells.enumerated() {
            let pad = String(repeating: " ", count: max(0, widths[i] - cell.unicodeScalars.count))
            let last = i == cells.count - 1
            out += columns[i].rightAligned ? pad + cell : cell + (last ? "" : pad)
            if !last { out += "  " }
        }
        return out
    }

    func print(to out: Output = .out) {
        for l in lines() { out.line(l) }
    }
}

/// A date for a table: ISO 8601 in UTC to the second (`2026-12-02T05:45:57Z`); JSON keeps the nanoseconds.
func tableDate(nanoseconds ns: Int64) -> String {
    let (secs, frac) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
    return iso8601(seconds: frac < 0 ? secs - 1 : secs, nanoseconds: 0)
}

/// "1 item", "2 items".
func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
