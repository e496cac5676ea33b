import Foundation
import TestSupport
import XCTest

/// The built `kcar` as the tests of one class run it, configured once: in `dir`, with `env` added to the
/// environment (`KCAR_PASSPHRASE` removed unless set), `arguments` after every command's own, optionally under
/// `timeout -s KILL`. Calling it runs one command and checks its exit code against `expect` (nil: unchecked),
/// naming the command and its output on failure, as swift-argument-parser's `AssertExecuteCommand` does. A test class declares `var kcar: KcarRunner { KcarRunner(dir: dir, ...) }`.
struct KcarRunner {
    var dir: String
    var env: [String: String] = [:]
    var arguments: [String] = []
    var timeout: Int?

    /// Runs `kcar args` (then ``arguments``), with `env` added for this call and `prefix` before it (a
    /// program that runs kcar: `setsid -w`, `setpriv` for another user).
    @discardableResult
    func callAsFunction(
        _ args: [String], stdin: Data? = nil, env extra: [String: String] = [:], prefix: [String] = [],
        expect: Int32? = 0, file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProcessResult {
        let r = try runProcess(
            CLITests.binary, args + arguments, stdin: stdin, env: env.merging(extra) { $1 }, cwd: dir,
            prefix: (timeout.map { ["/usr/bin/timeout", "-s", "KILL", String($0)] } ?? []) + prefix)
        if let code = expect {
            XCTAssertEqual(r.code, code, "kcar \(args.joined(separator: " ")): \(r.output)", file: file, line: line)
        }
        return r
    }

    /// The same with standard input given as text.
    @discardableResult
    func callAsFunction(
        _ args: [String], stdin: String, env extra: [String: String] = [:], prefix: [String] = [],
        expect: Int32? = 0, file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProcessResult {
        try callAsFunction(
            args, stdin: Data(stdin.utf8), env: extra, prefix: prefix, expect: expect, file: file, line: line)
    }
}

/// Runs `kcar args` in `dir` with `KCAR_PASSPHRASE` removed unless `env` sets it.
func runKcar(_ args: [String], in dir: String, stdin: Data? = nil, env: [String: String] = [:]) throws -> ProcessResult
{
    try runProcess(CLITests.binary, args, stdin: stdin, env: env, cwd: dir)
}

extension XCTestCase {
    /// A tmpfs of `size` at `path`, unmounted when the test ends (also when it fails); skips the test when
    /// mounting is not permitted.
    func scratchMount(at path: String, size: String) throws -> ScratchMount {
        guard let m = ScratchMount.mount(at: path, size: size) else {
            throw XCTSkip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
        }
        addTeardownBlock { m.unmount() }
        return m
    }
}

/// Every regular file below `root` (relative path -> bytes), found without following links.
func regularFiles(_ root: String) -> [String: [UInt8]] {
    var out: [String: [UInt8]] = [:]
    guard let e = FileManager.default.enumerator(atPath: root) else { return out }
    while let rel = e.nextObject() as? String {
        let attrs = try? FileManager.default.attributesOfItem(atPath: root + "/" + rel)
        if attrs?[.type] as? FileAttributeType == .typeRegular {
            out[rel] = Array((try? Data(contentsOf: URL(fileURLWithPath: root + "/" + rel))) ?? Data())
        }
    }
    return out
}

/// The same, keyed by the names' bytes (Swift strings would merge NFC and NFD spellings of one name).
func regularFilesByBytes(_ root: String) -> [[UInt8]: [UInt8]] {
    var out: [[UInt8]: [UInt8]] = [:]
    guard let e = FileManager.default.enumerator(atPath: root) else { return out }
    while let rel = e.nextObject() as? String {
        let attrs = try? FileManager.default.attributesOfItem(atPath: root + "/" + rel)
        if attrs?[.type] as? FileAttributeType == .typeRegular {
            out[Array(rel.utf8)] = Array((try? Data(contentsOf: URL(fileURLWithPath: root + "/" + rel))) ?? Data())
        }
    }
    return out
}

/// Runs `command` on a pseudo-terminal (its standard input, output and error, and /dev/tty), driven by
/// Python's pty module: each answer is typed once its prompt has been shown and kcar has turned echo off
/// (kcar flushes input typed before that, so answering on the prompt alone races). The whole run is limited
/// to 60 s (the child is killed, exit 124), so a test never hangs. Returns the exit status and everything the
/// terminal showed (output and error together, with the terminal's CRLF line ends).
func runOnTerminal(
    _ command: [String], answers: [(prompt: String, reply: String)] = [], env: [String: String],
    cwd: String
) throws -> ProcessResult {
    let driver = """
        import os, pty, signal, sys, termios, time
        n = int(sys.argv[1])
        answers = [(sys.argv[2 + 2 * i].encode(), sys.argv[3 + 2 * i].encode()) for i in range(n)]
        command = sys.argv[2 + 2 * n:]
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(command[0], command)
        def give_up(*_):
            os.kill(pid, signal.SIGKILL)
            sys.stdout.write("drive-terminal: timed out\\n")
            sys.exit(124)
        signal.signal(signal.SIGALRM, give_up)
        signal.alarm(60)
        out = b""
        def read_until(word):
            global out
            while word is None or word not in out:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    return
                if not chunk:
                    return
                out += chunk
        for prompt, reply in answers:
            read_until(prompt)
            while termios.tcgetattr(fd)[3] & termios.ECHO:
                time.sleep(0.01)
            os.write(fd, reply + b"\\n")
        read_until(None)
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(out.decode(errors="replace"))
        sys.exit(os.waitstatus_to_exitcode(status))
        """
    let path = cwd + "/drive-terminal.py"
    try driver.write(toFile: path, atomically: true, encoding: .utf8)
    let pairs = answers.flatMap { [$0.prompt, $0.reply] }
    return try runProcess(
        "/usr/bin/env", ["python3", path, String(answers.count)] + pairs + [CLITests.binary] + command, env: env,
        cwd: cwd)
}

extension KeychainCLITests {
    /// `kcar args` on a terminal, with this test's keychain.
    func onTerminal(_ args: [String], answers: [(prompt: String, reply: String)] = []) throws -> ProcessResult {
        try runOnTerminal(
            args, answers: answers,
            env: ["KCAR_KEYCHAIN": kc, "KCAR_ACCESS_GROUPS": "", "XDG_STATE_HOME": dir + "/state"],
            cwd: dir)
    }
}
