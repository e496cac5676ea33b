// swift-tools-version:6.0
// A program that uses kcar's codec library, outside kcar's package: it depends on kcar by path, as a user's
// package would, and does what a service and a deploy tool do with vault files through the public API only
// (VaultFormat): load keys, create a vault in the current format, write and replace items in one commit with
// dates stamped, look items up by key and by indexed attribute, share one vault between 64 tasks, handle
// each error, and use history, restore, merge and upgrade. `make consumer` in kcar's folder builds it and runs
// it in an empty environment; it exits 1, naming the step, when anything is not as documented.
import PackageDescription

let package = Package(
    name: "LibraryConsumer",
    // `name:` because a path dependency is known by its folder's name otherwise (a clone need not be `kcar`).
    dependencies: [.package(name: "kcar", path: "../..")],
    targets: [
        .executableTarget(
            name: "library-consumer", dependencies: [.product(name: "VaultFormat", package: "kcar")])
    ],
    swiftLanguageModes: [.v6]
)
