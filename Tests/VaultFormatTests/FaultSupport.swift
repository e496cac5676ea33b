import Foundation
import TestSupport
import VaultFormat
import XCTest

/// What the fault tests compare a vault against: its bytes and its items' values.
struct VaultSnapshot {
    let bytes: [UInt8]
    let values: [String: [UInt8]]
    let generation: UInt64
}

extension VaultTestCase {
    func snapshot(_ path: String) throws -> VaultSnapshot {
        let vault = try Vault.open(path: path, secret: secret)
        var values: [String: [UInt8]] = [:]
        for item in vault.items { values["\(item.service ?? "")/\(item.account ?? "")"] = try vault.read(item) }
        return VaultSnapshot(
            bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path))), values: values,
            generation: vault.generation)
    }

    /// The vault at `path` is byte for byte the one snapshotted, opens, verifies and holds the same values.
    func assertIntact(
        _ path: String, _ s: VaultSnapshot, _ message: String = "", file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            XCTAssertTrue(
                bytes == s.bytes, "\(message): \(path) changed (\(s.bytes.count) -> \(bytes.count) bytes)", file: file,
                line: line)
            let now = try snapshot(path)
            XCTAssertTrue(now.values == s.values, "\(message): items differ", file: file, line: line)
            XCTAssertEqual(now.generation, s.generation, message, file: file, line: line)
            let report = try Vault.open(path: path, secret: secret).verify()
            XCTAssertTrue(report.isIntact, "\(message): \(report.problems)", file: file, line: line)
        } catch {
            XCTFail("\(message): \(path) does not open: \(error)", file: file, line: line)
        }
    }

    /// Names in `folder` other than `expected` (temporary files left behind, partial output).
    func leftovers(_ folder: String, expected: Set<String>) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { !expected.contains($0) }
            .sorted()
    }

    /// A tmpfs of `size` at `dir/name`, unmounted when the test ends (also when it fails); skips the test when
    /// mounting is not permitted.
    func scratchMount(_ size: String, name: String = "mnt") throws -> ScratchMount {
        guard let m = ScratchMount.mount(at: dir + "/" + name, size: size) else {
            throw XCTSkip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
        }
        addTeardownBlock { m.unmount() }
        return m
    }

    func expectError(
        _ code: VaultError.Code, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> Void
    ) -> VaultError? {
        do {
            try body()
            XCTFail("\(message): no error, expected \(code)", file: file, line: line)
        } catch let e as VaultError {
            XCTAssertEqual(e.code, code, "\(message): \(e)", file: file, line: line)
            return e
        } catch {
            XCTFail("\(message): \(error), expected \(code)", file: file, line: line)
        }
        return nil
    }
}
