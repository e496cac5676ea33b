import CDeflate
import CZlib
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// zlib (RFC 1950) streams, one per chunk, through libdeflate (whole-buffer, two to three times zlib's speed
/// at the same level and ratio) or zlib itself. Every call site of the two C libraries is here.
package enum Deflate {
    /// How much of a chunk is sampled to judge whether deflating it is worth it.
    static let sampleSize = 65_536
    /// Order-0 entropy (bits per byte) above which a sample is taken for incompressible: random, encrypted
    /// and already-compressed data sit above 7.9; text, code and JSON below 6.5.
    static let entropyLimit = 7.9

    /// Levels accepted by writers: 0 (store) to 12 (libdeflate's slowest).
    static let levels: ClosedRange<Int32> = 0...12

    /// Compressors are costly to make (they hold their hash tables): a pool per level, shared by threads.
    private static let pool = Mutex<[Int32: [UnsafeSendable<OpaquePointer>]]>([:])

    private static func withCompressor<R>(level: Int32, _ body: (OpaquePointer) -> R) -> R {
        let reused = pool.withLock { $0[level]?.popLast() }
        guard let c = reused?.value ?? libdeflate_alloc_compressor(level) else {
            fatalError("libdeflate: out of memory")
        }
        defer { pool.withLock { $0[level, default: []].append(UnsafeSendable(c)) } }
        return body(c)
    }

    /// Compresses `input` into `output` (at most `output.count` bytes, which must be less than the input);
    /// returns the length, or nil when the stream would not fit (the chunk is then stored). Incompressible
    /// chunks are recognised from the byte entropy of a sample, so random data costs a histogram, not a deflate.
    static func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, level: Int32)
        -> Int?
    {
        guard input.count > 0, level > 0, output.count > 0 else { return nil }
        if input.count >= 4096, entropy(UnsafeRawBufferPointer(rebasing: input.prefix(sampleSize))) > entropyLimit {
            return nil
        }
        return withCompressor(level: level) { c in
            let n = libdeflate_zlib_compress(c, input.baseAddress, input.count, output.baseAddress, output.count)
            return n > 0 ? n : nil
        }
    }

    /// Order-0 entropy of `bytes`, in bits per byte.
    static func entropy(_ bytes: UnsafeRawBufferPointer) -> Double {
        var counts = [Int](repeating: 0, count: 256)
        for b in bytes { counts[Int(b)] += 1 }
        let n = Double(bytes.count)
        var h = 0.0
        for c in counts where c > 0 {
            let p = Double(c) / n
            h -= p * log2(p)
        }
        return h
    }

    /// Which inflater reads: libdeflate (faster) or zlib. Both accept exactly the same streams; the tests
    /// read every fixture with zlib too, to prove a zlib-only reader suffices (SPEC.md §2).
    package enum Inflater: Sendable { case libdeflate, zlib }
    private static let inflaterSetting = Mutex<Inflater>(.libdeflate)
    package static var inflater: Inflater {
        get { inflaterSetting.withLock { $0 } }
        set { inflaterSetting.withLock { $0 = newValue } }
    }
    private static let decompressors = Mutex<[UnsafeSendable<OpaquePointer>]>([])

    /// Inflates one zlib stream that must produce exactly `expected` bytes and end exactly at the end of
    /// `input`. Never writes more than `expected` bytes, so a bomb stops there.
    static func inflate(_ input: UnsafeRawBufferPointer, expected: Int) -> [UInt8]? {
        guard expected > 0, input.count > 0 else { return nil }
        if inflater == .zlib { return zlibInflate(input, expected: expected) }
        guard let d = decompressors.withLock({ $0.popLast()?.value }) ?? libdeflate_alloc_decompressor() else {
            return nil
        }
        defer { decompressors.withLock { $0.append(UnsafeSendable(d)) } }
        var consumed = 0
        var produced = 0
        var rc = LIBDEFLATE_BAD_DATA
        // Not zeroed first: every byte is written when the stream is whole, and the array is dropped when not.
        let out = [UInt8](unsafeUninitializedCapacity: expected) { buffer, initialized in
            rc = libdeflate_zlib_decompress_ex(
                d, input.baseAddress, input.count, buffer.baseAddress, expected, &consumed, &produced)
            initialized = rc == LIBDEFLATE_SUCCESS && produced == expected ? expected : 0
        }
        guard rc == LIBDEFLATE_SUCCESS, consumed == input.count, produced == expected else { return nil }
        return out
    }

    static func zlibInflate(_ input: UnsafeRawBufferPointer, expected: Int) -> [UInt8]? {
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

    /// A whole zlib stream however large it comes out (crafted fixtures only).
    package static func compressAlways(_ input: UnsafeRawBufferPointer, level: Int32) -> [UInt8] {
        withCompressor(level: level) { c in
            let bound = libdeflate_zlib_compress_bound(c, input.count)
            var out = [UInt8](repeating: 0, count: bound)
            let n = out.withUnsafeMutableBytes {
                libdeflate_zlib_compress(c, input.baseAddress, input.count, $0.baseAddress, bound)
            }
            return Array(out[0..<n])
        }
    }
}
