import Foundation
import TestSupport
import VaultFormat
import XCTest

/// An interrupted writer leaves no temporary file (issue 21, point 7): a signal that arrives between the
/// creation of a temporary and its registration for removal is held until the file is registered. Before,
/// SIGINT right after `pack` created `.VAULT.<hex>.tmp.new` left it in a third of runs on a loaded machine.
final class InterruptTests: XCTestCase {
    var dir: String!
    var keyFile: String { CLITests.repo.appendingPathComponent("Fixtures/keys/keyfile.key").path }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcar-int-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/src/svc", withIntermediateDirectories: true)
        for i in 0..<20 { try Data("value \(i)".utf8).write(to: URL(fileURLWithPath: dir + "/src/svc/f\(i)")) }
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// Temporaries of any writer in the test's folder.
    func temporaries() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.contains(".tmp") }
    }

    /// Waits for `p` (killing it after 60 s: a hang is a failure, not a stuck suite).
    func finish(_ p: Process) {
        var waited = 0
        while p.isRunning, waited < 6000 {
            usleep(10_000)
            waited += 1
        }
        if p.isRunning {
            XCTFail("kcar still running after 60 s: killed")
            kill(p.processIdentifier, SIGKILL)
        }
        p.waitUntilExit()
    }

    /// The window itself, held open by the debug seam: pack has created its temporary vault and not yet
    /// registered it when SIGINT (or SIGTERM, SIGHUP) arrives. The process dies of the signal, and neither
    /// the temporary nor the vault is left.
    func testSignalBetweenCreatingAndRegisteringATemporaryLeavesNothing() throws {
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            let marker = dir + "/pause-marker"
            let p = kcarProcess(
                ["pack", "out.kcv", "src", "--key-file", keyFile], cwd: dir,
                env: ["KCAR_DEBUG_PAUSE": "temporary-created:\(marker)"])
            try p.run()
            var waited = 0
            while !FileManager.default.fileExists(atPath: marker), p.isRunning, waited < 6000 {
                usleep(10_000)
                waited += 1
            }
            XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "pack never created its temporary")
            XCTAssertFalse(temporaries().isEmpty, "the temporary exists at the seam")
            kill(p.processIdentifier, sig)
            usleep(50_000)  // the signal is taken while the seam still waits
            try? FileManager.default.removeItem(atPath: marker)
            finish(p)
            XCTAssertEqual(p.terminationReason, .uncaughtSignal, "signal \(sig)")
            XCTAssertEqual(p.terminationStatus, sig)
            XCTAssertEqual(temporaries(), [], "signal \(sig)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.kcv"), "signal \(sig)")
        }
    }

    /// SIGINT at many moments of a whole pack: afterwards no temporary is left, and the vault is either
    /// absent or complete (it lists every file).
    func testSigintAtAnyMomentOfPackLeavesNoTemporary() throws {
        var completed = 0
        for n in 0..<40 {
            try? FileManager.default.removeItem(atPath: dir + "/out.kcv")
            let p = kcarProcess(["pack", "out.kcv", "src", "--key-file", keyFile], cwd: dir)
            try p.run()
            usleep(useconds_t(n * 1_000))
            kill(p.processIdentifier, SIGINT)
            finish(p)
            XCTAssertEqual(temporaries(), [], "SIGINT after \(n) ms")
            if FileManager.default.fileExists(atPath: dir + "/out.kcv") {
                completed += 1
                let r = try runProcess(CLITests.binary, ["list", "out.kcv", "--key-file", keyFile], cwd: dir)
                XCTAssertEqual(r.code, 0, "SIGINT after \(n) ms: \(r.err)")
                XCTAssertEqual(
                    r.out.split(separator: "\n").filter { $0.contains("svc/") }.count, 20,
                    "SIGINT after \(n) ms: \(r.out)")
            }
            for t in temporaries() { try? FileManager.default.removeItem(atPath: dir + "/" + t) }
        }
        print("pack completed before SIGINT in \(completed) of 40 runs")
    }

    /// A staging temporary a killed writer left (`.VAULT.<hex>.tmp.new`, which nobody locks) is removed by the
    /// next write of that vault once it is old enough not to be another writer's, being created right now.
    func testStaleStagingTemporaryIsRemovedByTheNextWrite() throws {
        let stale = dir + "/.out.kcv.0123456789ab.tmp.new"
        let fresh = dir + "/.out.kcv.abcdef012345.tmp.new"
        try Data("left by a killed pack".utf8).write(to: URL(fileURLWithPath: stale))
        try Data("being created".utf8).write(to: URL(fileURLWithPath: fresh))
        var old = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, stale, &old, 0), 0)
        let r = try runProcess(CLITests.binary, ["pack", "out.kcv", "src", "--key-file", keyFile], cwd: dir)
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertEqual(temporaries(), [".out.kcv.abcdef012345.tmp.new"])
    }
}
