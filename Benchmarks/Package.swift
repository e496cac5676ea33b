// swift-tools-version:6.0
// kcar's benchmarks, a package of their own (as swift-nio's Benchmarks/): it depends on kcar by path, so that
// neither kcar's own build and tests nor a package that depends on kcar compiles them. The Makefile's bench
// targets and scripts/bench build them here: swift build -c release --package-path Benchmarks.
import PackageDescription

// kcar-bench and kcar-scale-bench time the version 2 engine (PagedVault, IndexSchema), which kcar declares
// `package`, not public. They are compiled as members of kcar's package: SwiftPM's own -package-name (this
// package's) is off (packageAccess: false) and kcar's is given instead, spelt as SwiftPM spells a path
// dependency's identity: the folder's name (less `.git`), lowercased, anything but a letter, digit or `_`
// (and a leading digit) made `_`. Should SwiftPM spell it otherwise, those two fail to build, loudly.
let kcarFolder = Context.packageDirectory.split(separator: "/").dropLast().last.map(String.init) ?? "kcar"
let kcarPackageName: String = {
    var name = Array((kcarFolder.hasSuffix(".git") ? String(kcarFolder.dropLast(4)) : kcarFolder).lowercased())
    for i in name.indices where !(name[i] == "_" || name[i].isLetter || name[i].isNumber) { name[i] = "_" }
    for i in name.indices { if name[i].isNumber { name[i] = "_" } else { break } }
    return String(name)
}()
let kcarEngine: [SwiftSetting] = [.unsafeFlags(["-package-name", kcarPackageName])]

let package = Package(
    name: "Benchmarks",
    dependencies: [.package(name: "kcar", path: "..")],
    targets: [
        // Timing, `name value unit` lines and temporary folders for the benchmark binaries; their seeded inputs.
        .target(name: "BenchSupport"),
        // In-process timings of VaultFormat for scripts/bench/bench.sh (key derivation, items, append, solid).
        .executableTarget(
            name: "kcar-bench", dependencies: ["BenchSupport", .product(name: "VaultFormat", package: "kcar")],
            packageAccess: false, swiftSettings: kcarEngine),
        // Issue 10's scale table and issue 11's merge: version 1 against version 2 at 1k to 1M items.
        .executableTarget(
            name: "kcar-scale-bench", dependencies: ["BenchSupport", .product(name: "VaultFormat", package: "kcar")],
            packageAccess: false, swiftSettings: kcarEngine),
        // KeyedArchive against Foundation's coders and NSKeyedArchiver (issue 3).
        .executableTarget(
            name: "kcar-archive-bench", dependencies: ["BenchSupport", .product(name: "KeyedArchive", package: "kcar")]),
        // In-process timings of the keychain for scripts/bench/keychain-bench.sh.
        .executableTarget(
            name: "kcar-keychain-bench",
            dependencies: [
                "BenchSupport", .product(name: "KcarKeychain", package: "kcar"),
                .product(name: "VaultFormat", package: "kcar")
            ])
    ],
    swiftLanguageModes: [.v6]
)
