import FixtureRecipes
import Foundation
import XCTest

/// One run of the built `kcar` (the fault, extraction and secrets tests; CLITests has its own).
struct KcarRun {
    let code: Int32
    let out: Data
    let err: String
    var output: String { String(decoding: out, as: UTF8.self) + err }
}

/// Runs `kcar args` in `dir` with `KCAR_PASSPHRASE` removed unless `env` sets it.
func runKcar(_ args: [String], in dir: String, stdin: Data? = nil, env: [String: String] = [:]) throws -> KcarRun {
    let r = try runProcess(CLITests.binary, args, stdin: stdin, env: env, cwd: dir)
    return KcarRun(code: r.code, out: r.data, err: r.err)
}

extension XCTestCase {
    /// A tmpfs of `size` at `path`, unmounted when the test ends (also when it fails); skips the test when
    /// mounting is not permitted.
    func scratchMount(at path: String, size: String) throws -> ScratchMount {
        guard let m = ScratchMount.mount(at: path, size: size) else {
            throw XCTSkip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
        }
        addTeardownBlock { m.unmount() }
        return m
    }
}

/// Every regular file below `root` (relative path -> bytes), found without following links.
func regularFiles(_ root: String) -> [String: [UInt8]] {
    var out: [String: [UInt8]] = [:]
    guard let e = FileManager.default.enumerator(atPath: root) else { return out }
    while let rel = e.nextObject() as? String {
        let attrs = try? FileManager.default.attributesOfItem(atPath: root + "/" + rel)
        if attrs?[.type] as? FileAttributeType == .typeRegular {
            out[rel] = Array((try? Data(contentsOf: URL(fileURLWithPath: root + "/" + rel))) ?? Data())
        }
    }
    return out
}

/// The same, keyed by the names' bytes (Swift strings would merge NFC and NFD spellings of one name).
func regularFilesByBytes(_ root: String) -> [[UInt8]: [UInt8]] {
    var out: [[UInt8]: [UInt8]] = [:]
    guard let e = FileManager.default.enumerator(atPath: root) else { return out }
    while let rel = e.nextObject() as? String {
        let attrs = try? FileManager.default.attributesOfItem(atPath: root + "/" + rel)
        if attrs?[.type] as? FileAttributeType == .typeRegular {
            out[Array(rel.utf8)] = Array((try? Data(contentsOf: URL(fileURLWithPath: root + "/" + rel))) ?? Data())
        }
    }
    return out
}
