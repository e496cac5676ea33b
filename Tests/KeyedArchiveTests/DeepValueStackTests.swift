import Foundation
import KeyedArchive
import XCTest

#if canImport(FoundationEssentials)
    import FoundationEssentials
#endif

/// `==`, hashing, printing, writing and freeing a value recurse, bounded by `DEPTH_MAX` counted through shared
/// references (SPEC.md Part 2 §A3): the deepest value an archive can stand for must be safe on a thread with
/// a modest stack, not only on the main thread. Measured in a debug build: 512 levels of arrays, dictionaries
/// and shared boxes need between 1 and 2 MiB for `==`; Linux gives threads 8 MiB unless told otherwise.
final class DeepValueStackTests: XCTestCase {
    func testTheDeepestReadableValueIsSafeOnAFourMebibyteStack() throws {
        var v: ArchiveValue = .int(1)
        for i in 0..<(ArchiveLimits.default.maxDepth - 1) {
            switch i % 3 {
            case 0: v = .array([v])
            case 1: v = .dictionary(["k": v])
            default: v = .shared(ArchiveShared(v))
            }
        }
        let bytes = try ArchiveSerialization.bytes(from: v)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var results: [String] = []
        let thread = Thread {
            do {
                var a: ArchiveValue? = try ArchiveSerialization.value(from: bytes)
                var b: ArchiveValue? = try ArchiveSerialization.value(from: bytes)
                if a == b { results.append("==") }
                if a?.hashValue == b?.hashValue { results.append("hash") }
                if try ArchiveSerialization.bytes(from: a ?? .null, options: .deterministic).count > 0 {
                    results.append("write")
                }
                if "\(a ?? .null)".count > 0 { results.append("print") }
                a = nil
                b = nil
                results.append("freed")
            } catch {
                results.append("error: \(error)")
            }
            done.signal()
        }
        thread.stackSize = 4 << 20
        thread.start()
        done.wait()
        XCTAssertEqual(results, ["==", "hash", "write", "print", "freed"])
    }
}
