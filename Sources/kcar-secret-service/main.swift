import KcarCLI
import KcarKeychain
import SecretService

#if canImport(Glibc)
    import Glibc
#endif

// The daemon of `kcar secret-service` (SPEC.md §K10), a program of its own so that only it loads libsystemd
// and OpenSSL's libcrypto (with the six libraries libsystemd brings): every other kcar command starts without
// them, about 2.4 ms sooner (issue 24). `kcar secret-service` checks the options, then execs this program
// (same process: the `--background` pipe and the systemd unit's pid carry over) with them in this form:
//
//     kcar-secret-service --keychain DIR [--groups A,B] --lock-timeout SECONDS [--replace]
//
// Descriptor 3 is the `--background` pipe when KCAR_SECRET_SERVICE_READY_FD=3: `1` once it owns the name,
// or `0` and why it stopped. Exit codes are kcar's: 7 the name is taken, 8 no bus, 2 a malformed call.

/// Prints `kcar: secret-service: TEXT` on standard error.
func say(_ text: String) {
    let line = Array("kcar: secret-service: \(text)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

let ready: Int32? = getenv("KCAR_SECRET_SERVICE_READY_FD").flatMap { String(cString: $0) == "3" ? 3 : nil }
unsetenv("KCAR_SECRET_SERVICE_READY_FD")

/// Tells the `--background` parent how the start went (once), and closes the pipe.
func tell(_ text: String) {
    guard let ready else { return }
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(ready, $0.baseAddress, $0.count) }
    close(ready)
}

func stop(_ code: ExitCode, _ text: String) -> Never {
    tell("0secret-service: \(text)")
    say(text)
    exit(code.rawValue)
}

var keychain: String?
var groups: String?
var lockTimeout: Double?
var replace = false
var rest = CommandLine.arguments.dropFirst()
while let option = rest.popFirst() {
    switch option {
    case "--keychain": keychain = rest.popFirst()
    case "--groups": groups = rest.popFirst()
    case "--lock-timeout": lockTimeout = rest.popFirst().flatMap(Double.init)
    case "--replace": replace = true
    default: stop(.usage, "run it as kcar secret-service (not \(option.prefix(64)))")
    }
}
guard let keychain, let lockTimeout else { stop(.usage, "run it as kcar secret-service") }

let daemon: SecretServiceDaemon
let store: KeychainStore
do {
    store = try KeychainStore(
        directory: KeychainDirectory(path: keychain), accessGroups: try groups.map(KeychainStore.parseGroupList),
        lockTimeout: lockTimeout, program: "kcar")
    let collections = KeychainCollections(store: store)
    collections.warn = say
    daemon = try SecretServiceDaemon(replace: replace, objects: ServiceObjects(collections: collections))
} catch let error as SecretServiceError {
    stop(error.name == SecretServiceError.nameTaken ? .exists : .io, error.message)
} catch {
    stop(.io, "\(error)")
}
say("serving org.freedesktop.secrets from \(store.directory.path)")
tell("1")
do {
    try daemon.run { false }
} catch {
    say(error.message)
    exit(ExitCode.io.rawValue)
}
if daemon.replaced { say("another program took org.freedesktop.secrets; stopping") }
exit(0)
