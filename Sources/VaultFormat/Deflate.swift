import CZlib

/// zlib (RFC 1950) streams, one per chunk. Every call site of the C library is here.
enum Deflate {
    /// How much of a chunk is deflated first to judge whether the rest is worth it.
    static let sampleSize = 65_536
    /// A sample must shrink at least this much (compressed/original) for the chunk to be deflated.
    static let sampleRatio = 0.97

    /// The zlib stream of `input` at `level`, or nil when it would not be shorter than the input
    /// (the chunk is then stored). Incompressible chunks are detected from a sample, so random data costs
    /// one 64 KiB deflate per chunk instead of a whole one.
    static func compress(_ input: UnsafeRawBufferPointer, level: Int32) -> [UInt8]? {
        guard input.count > 0, level > 0 else { return nil }
        if input.count > sampleSize * 2 {
            let sample = UnsafeRawBufferPointer(rebasing: input[0..<sampleSize])
            guard let s = deflate(sample, level: level, limit: sampleSize),
                  Double(s.count) < Double(sampleSize) * sampleRatio else { return nil }
        }
        return deflate(input, level: level, limit: input.count - 1)
    }

    /// Deflates `input` into at most `limit` bytes; nil if it does not fit.
    private static func deflate(_ input: UnsafeRawBufferPointer, level: Int32, limit: Int) -> [UInt8]? {
        guard limit > 0 else { return nil }
        var stream = z_stream()
        guard kcar_deflateInit(&stream, level) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: limit)
        let rc: Int32 = out.withUnsafeMutableBufferPointer { o in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(input.count)
            stream.next_out = o.baseAddress
            stream.avail_out = uInt(limit)
            return CZlib.deflate(&stream, Z_FINISH)
        }
        guard rc == Z_STREAM_END else { return nil }
        out.removeSubrange(Int(stream.total_out)...)
        return out
    }

    /// Inflates one zlib stream that must produce exactly `expected` bytes and end exactly at the end of
    /// `input`. Never writes more than `expected` bytes, so a bomb stops there.
    static func inflate(_ input: UnsafeRawBufferPointer, expected: Int) -> [UInt8]? {
        guard expected > 0, input.count > 0 else { return nil }
        var stream = z_stream()
        guard kcar_inflateInit(&stream) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: expected)
        let rc: Int32 = out.withUnsafeMutableBufferPointer { o in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(input.count)
            stream.next_out = o.baseAddress
            stream.avail_out = uInt(expected)
            return CZlib.inflate(&stream, Z_FINISH)
        }
        guard rc == Z_STREAM_END, stream.avail_in == 0, Int(stream.total_out) == expected else { return nil }
        return out
    }
}

extension Deflate {
    /// A whole zlib stream however large it comes out (crafted fixtures only).
    static func compressAlways(_ input: UnsafeRawBufferPointer, level: Int32) -> [UInt8] {
        var stream = z_stream()
        guard kcar_deflateInit(&stream, level) == Z_OK else { return [] }
        defer { deflateEnd(&stream) }
        let limit = Int(deflateBound(&stream, uLong(input.count)))
        var out = [UInt8](repeating: 0, count: limit)
        out.withUnsafeMutableBufferPointer { o in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(input.count)
            stream.next_out = o.baseAddress
            stream.avail_out = uInt(limit)
            _ = CZlib.deflate(&stream, Z_FINISH)
        }
        out.removeSubrange(Int(stream.total_out)...)
        return out
    }
}
