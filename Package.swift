// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "kcar",
    products: [
        .library(name: "VaultFormat", targets: ["VaultFormat"]),
        .library(name: "KeyedArchive", targets: ["KeyedArchive"]),
        .library(name: "KcarKeychain", targets: ["KcarKeychain"]),
        .executable(name: "kcar", targets: ["kcar"]),
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libdeflate writes the zlib format about twice as fast as zlib; readers need zlib only.
        .systemLibrary(name: "CDeflate", pkgConfig: "libdeflate", providers: [.apt(["libdeflate-dev"])]),
        .target(name: "VaultFormat", dependencies: ["CSodium", "CZlib", "CDeflate"]),
        .target(name: "KeyedArchive"),
        .target(name: "KcarKeychain", dependencies: ["VaultFormat", "KeyedArchive"]),
        .target(name: "KcarCLI", dependencies: ["VaultFormat", "KeyedArchive", "KcarKeychain"]),
        .executableTarget(name: "kcar", dependencies: ["KcarCLI"]),
        // Vaults and archives built byte by byte, any rule broken at will: for tests, fixtures and kcar-hostile only.
        .target(name: "Crafting", dependencies: ["VaultFormat", "KeyedArchive"]),
        .target(name: "FixtureRecipes", dependencies: ["VaultFormat", "Crafting"]),
        .executableTarget(name: "kcar-fixtures", dependencies: ["FixtureRecipes", "VaultFormat"]),
        .executableTarget(name: "kcar-bench", dependencies: ["VaultFormat", "FixtureRecipes"]),
        .executableTarget(name: "kcar-scale-bench", dependencies: ["VaultFormat", "FixtureRecipes"]),
        .executableTarget(name: "kcar-archive-bench", dependencies: ["KeyedArchive", "FixtureRecipes"]),
        .executableTarget(name: "kcar-keychain-bench", dependencies: ["KcarKeychain", "VaultFormat", "FixtureRecipes"]),
        // The README's examples and the seeds' first calls as a whole process, for KeychainTests (issue 12).
        .executableTarget(name: "kcar-first-try", dependencies: ["KcarKeychain"]),
        .executableTarget(name: "kcar-stress", dependencies: ["VaultFormat", "FixtureRecipes"]),
        // Crafts hostile inputs and checks that each kcar command refuses them within named limits (issue 9).
        .executableTarget(name: "kcar-hostile", dependencies: ["VaultFormat", "KeyedArchive", "Crafting", "FixtureRecipes"]),
        .testTarget(name: "VaultFormatTests", dependencies: ["VaultFormat", "Crafting", "FixtureRecipes"]),
        .testTarget(name: "KcarCLITests", dependencies: ["KcarCLI", "VaultFormat", "Crafting", "FixtureRecipes"]),
        .testTarget(name: "KeyedArchiveTests", dependencies: ["KeyedArchive", "Crafting", "FixtureRecipes"]),
        .testTarget(name: "KeychainTests", dependencies: ["KcarKeychain", "VaultFormat", "KeyedArchive", "FixtureRecipes"]),
    ],
    swiftLanguageModes: [.v6]
)
