// Runs the ported code (the seeds, Apple's samples, KeychainAccess's, Valet's and keychain-swift's calls and
// kcar's additions) against the default keychain of the environment it is given, and prints one line per
// check. Exit 0 when every check passed, 1 otherwise. `ported-app again` is the second launch: the device
// UUID stored by the first must still be there (data that outlives the app's process).
import Foundation
import SeedPorts
import WrapperPorts

nonisolated(unsafe) var failures = 0

/// One line on standard output, written at once (also into a pipe, so a crash loses nothing printed before).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func report(_ group: String, _ results: [String: Bool]) {
    for (name, ok) in results.sorted(by: { $0.key < $1.key }) {
        say("\(ok ? "ok  " : "FAIL") \(group): \(name)")
        if !ok { failures += 1 }
    }
}

func check(_ group: String, _ body: () throws -> [String: Bool]) {
    do { report(group, try body()) } catch {
        say("FAIL \(group): threw \(error)")
        failures += 1
    }
}

if CommandLine.arguments.dropFirst().first == "again" {
    check("seed 003 device UUID") { ["kept across launches": ArchivingKeychain.load("UUID") as? String != nil] }
    exit(failures == 0 ? 0 : 1)
}

// keychain-swift's clear() removes every generic password of the app, so it runs before the seeds store the
// device UUID that the second launch looks for.
check("KeychainAccess") { try KeychainAccessUsage.run() }
check("Valet") { try ValetUsage.run() }
check("keychain-swift") { KeychainSwiftUsage.run() }
check("seed 000 KeychainManager", SeedChecks.keychainManager)
check("seeds 001-004 NSKeyedArchiver helpers", SeedChecks.archivingHelpers)
check("Apple: adding a password", SeedChecks.addingAPassword)
check("Apple: KeychainItemWrapper", SeedChecks.keychainItemWrapper)

// Top-level code runs on the main actor: awaited here, not waited for with a semaphore (which would block
// the very thread the task needs).
do {
    report("kcar async and batch", try await KcarAPIUsage.run())
} catch {
    say("FAIL kcar async and batch: threw \(error)")
    failures += 1
}

say(failures == 0 ? "all checks passed" : "\(failures) checks failed")
exit(failures == 0 ? 0 : 1)
