import Foundation
import XCTest

/// The Swift examples of the guides compile as written: each ```swift block of "The keychain" (docs/keychain.md)
/// and "The library" (docs/library.md) is type-checked by swiftc against the modules this build made, with only
/// what the text leaves to the reader declared after it (`data`, `profile`, `keyFileBytes()`).
final class ReadmeTests: XCTestCase {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The ```swift blocks of the section titled `section` of `page` (README.md or a page of docs/).
    func swiftBlocks(section: String, page: String) throws -> [String] {
        let text = try String(contentsOf: ReadmeTests.repo.appendingPathComponent(page), encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: "## \(section)") else {
            XCTFail("no section \(section) in \(page)")
            return []
        }
        let end = lines[(start + 1)...].firstIndex { $0.hasPrefix("## ") } ?? lines.count
        var blocks: [String] = []
        var current: [String]?
        for line in lines[start..<end] {
            if line == "```swift" {
                current = []
            } else if line == "```", let c = current {
                blocks.append(c.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    func typecheck(_ source: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let modules = ReadmeTests.repo.appendingPathComponent(".build/debug/Modules").path
        guard FileManager.default.fileExists(atPath: modules + "/KcarKeychain.swiftmodule") else {
            throw XCTSkip("no debug build")
        }
        let path = NSTemporaryDirectory() + "kcar-readme-\(UUID().uuidString).swift"
        try source.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var args = ["swiftc", "-typecheck", "-swift-version", "6", "-I", modules]
        for c in ["CSodium", "CZlib", "CDeflate", "CLinux"] {
            args += [
                "-Xcc",
                "-fmodule-map-file=" + ReadmeTests.repo.appendingPathComponent("Sources/\(c)/module.modulemap").path
            ]
        }
        p.arguments = args + [path]
        let err = Pipe()
        p.standardError = err
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, text, file: file, line: line)
        XCTAssertFalse(text.contains("warning:"), text, file: file, line: line)
    }

    func testKeychainExampleCompiles() throws {
        let blocks = try swiftBlocks(section: "The keychain", page: "docs/keychain.md")
        XCTAssertEqual(blocks.count, 1)
        try typecheck(
            blocks.joined(separator: "\n") + """

                struct Profile: Codable {}
                let profile = Profile()
                let data = Data("s3cr3t".utf8)
                """)
    }

    func testVaultFormatExampleCompiles() throws {
        let blocks = try swiftBlocks(section: "The library", page: "docs/library.md")
        XCTAssertEqual(blocks.count, 3)
        // The shared vault's block awaits: it runs in an async function.
        try typecheck(
            blocks.joined(separator: "\n").replacing("let shared", with: "func serve() async throws {\nlet shared")
                + "\n}\nfunc keyFileBytes() throws -> [UInt8] { [UInt8](repeating: 7, count: 32) }\n")
    }

    /// The ```swift blocks of a DocC article, but a package manifest's.
    func articleBlocks(_ path: String) throws -> [String] {
        let text = try String(contentsOf: ReadmeTests.repo.appendingPathComponent(path), encoding: .utf8)
        var blocks: [String] = []
        var current: [String]?
        for line in text.components(separatedBy: "\n") {
            if line == "```swift" {
                current = []
            } else if line == "```", let c = current {
                if c.first != "// Package.swift" { blocks.append(c.joined(separator: "\n")) }
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// The getting-started article of each library's DocC catalog (`make docs`) compiles as written.
    func testDocCArticlesCompile() throws {
        let vault = try articleBlocks("Sources/VaultFormat/VaultFormat.docc/GettingStarted.md")
        XCTAssertEqual(vault.count, 4)
        try typecheck(
            vault.joined(separator: "\n")
                + "\nfunc keyFileBytes() throws -> [UInt8] { [UInt8](repeating: 7, count: 32) }\n")
        let startup = try articleBlocks("Sources/VaultFormat/VaultFormat.docc/ReadingASecretAtStartup.md")
        XCTAssertEqual(startup.count, 3)
        try typecheck(startup.joined(separator: "\n"))
        let deploy = try articleBlocks("Sources/VaultFormat/VaultFormat.docc/WritingAVaultFromADeployTool.md")
        XCTAssertEqual(deploy.count, 2)
        try typecheck(deploy.joined(separator: "\n"))
        let archive = try articleBlocks("Sources/KeyedArchive/KeyedArchive.docc/GettingStarted.md")
        XCTAssertEqual(archive.count, 3)
        try typecheck(archive.joined(separator: "\n") + "\nfunc loadLegacyPlist() throws -> [UInt8] { [] }\n")
        let keychain = try articleBlocks("Sources/KcarKeychain/KcarKeychain.docc/GettingStarted.md")
        XCTAssertEqual(keychain.count, 2)
        try typecheck(keychain.joined(separator: "\n"))
    }

    func testAsyncExampleCompiles() throws {
        let blocks = try swiftBlocks(
            section: "Swift: blocking calls, async variants and batch reads", page: "docs/keychain.md")
        XCTAssertEqual(blocks.count, 1)
        try typecheck(blocks.joined(separator: "\n"))
    }
}
