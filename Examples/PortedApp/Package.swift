// swift-tools-version:6.0
// An app ported from iOS, outside kcar's package: it depends on kcar by path, as a user's package would, and
// holds the seeds' code, Apple's samples and the usual wrapper libraries' calls with only their imports
// changed (issue 12, "Tests"). `make ported` in kcar's folder builds it and runs it in an empty environment.
//
// Two modules, as in an app: Apple's sample declares its own `KeychainError`, which in the module that
// uses Valet's spellings would hide the `KeychainError` they catch.
import PackageDescription

let package = Package(
    name: "PortedApp",
    // `name:` because a path dependency is known by its folder's name otherwise (a clone need not be `kcar`).
    dependencies: [.package(name: "kcar", path: "../..")],
    targets: [
        .target(name: "SeedPorts", dependencies: [.product(name: "KcarKeychain", package: "kcar")]),
        .target(name: "WrapperPorts", dependencies: [.product(name: "KcarKeychain", package: "kcar")]),
        .executableTarget(name: "ported-app", dependencies: ["SeedPorts", "WrapperPorts"]),
    ],
    swiftLanguageModes: [.v6]
)
