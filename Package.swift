// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "kcar",
    products: [
        .library(name: "VaultFormat", targets: ["VaultFormat"]),
        .library(name: "KeyedArchive", targets: ["KeyedArchive"]),
        .library(name: "KcarKeychain", targets: ["KcarKeychain"]),
        .executable(name: "kcar", targets: ["kcar"]),
        // The Secret Service daemon that `kcar secret-service` execs: only it links libsystemd and libcrypto.
        .executable(name: "kcar-secret-service", targets: ["kcar-secret-service"])
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libdeflate writes the zlib format about twice as fast as zlib; readers need zlib only.
        .systemLibrary(name: "CDeflate", pkgConfig: "libdeflate", providers: [.apt(["libdeflate-dev"])]),
        // OpenSSL's libcrypto: the MODP group, HKDF and AES-CBC of the Secret Service's encrypted session (SPEC K10).
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // sd-bus from libsystemd: the Secret Service's D-Bus connection (SPEC K10).
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // Linux system calls Swift's Glibc does not declare (renameat2's exchange): a header, no library.
        .systemLibrary(name: "CLinux"),
        .target(name: "VaultFormat", dependencies: ["CSodium", "CZlib", "CDeflate", "CLinux"]),
        .target(name: "KeyedArchive"),
        .target(name: "KcarKeychain", dependencies: ["VaultFormat", "KeyedArchive"]),
        .target(name: "KcarCLI", dependencies: ["VaultFormat", "KeyedArchive", "KcarKeychain"]),
        // The Secret Service over a keychain (SPEC K10, issue 25): sessions, bus, collections and items.
        .target(name: "SecretService", dependencies: ["CCrypto", "CSystemd", "VaultFormat", "KcarKeychain"]),
        .executableTarget(name: "kcar", dependencies: ["KcarCLI"]),
        .executableTarget(name: "kcar-secret-service", dependencies: ["SecretService", "KcarKeychain", "KcarCLI"]),
        // Test support, in no product (the benchmarks are a package of their own: Benchmarks/).
        // Vaults and archives built byte by byte, any rule broken at will: for tests, fixtures and kcar-hostile only.
        .target(name: "Crafting", dependencies: ["VaultFormat", "KeyedArchive"]),
        // The seeded recipes of Fixtures/ (golden, malformed and hostile vaults) and helpers the tests share.
        .target(name: "TestSupport", dependencies: ["VaultFormat", "Crafting"]),
        // Writes Fixtures/ and the SPEC's test vector from the recipes (make fixtures).
        .executableTarget(name: "kcar-fixtures", dependencies: ["TestSupport", "VaultFormat"]),
        // The README's examples and the seeds' first calls as a whole process, for KeychainTests (issue 12).
        .executableTarget(name: "kcar-keychain-examples", dependencies: ["KcarKeychain"]),
        // The writer that the crash tests kill and the concurrency tests run beside others (KcarCLITests).
        .executableTarget(name: "kcar-stress", dependencies: ["VaultFormat", "TestSupport"]),
        // Crafts hostile inputs and checks that each kcar command refuses them within named limits (issue 9).
        .executableTarget(
            name: "kcar-hostile", dependencies: ["VaultFormat", "KeyedArchive", "Crafting", "TestSupport"]),
        .testTarget(name: "VaultFormatTests", dependencies: ["VaultFormat", "Crafting", "TestSupport"]),
        .testTarget(name: "KcarCLITests", dependencies: ["KcarCLI", "VaultFormat", "Crafting", "TestSupport"]),
        .testTarget(name: "KeyedArchiveTests", dependencies: ["KeyedArchive", "Crafting", "TestSupport"]),
        .testTarget(name: "SecretServiceTests", dependencies: ["SecretService", "VaultFormat", "TestSupport"]),
        .testTarget(
            name: "KeychainTests", dependencies: ["KcarKeychain", "VaultFormat", "KeyedArchive", "TestSupport"])
    ],
    swiftLanguageModes: [.v6]
)
