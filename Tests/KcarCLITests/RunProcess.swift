import Foundation

/// The result of running a program: exit status, standard output and error.
struct ProcessResult {
    let code: Int32
    /// Standard output as text (invalid UTF-8 replaced); ``data`` holds its bytes.
    let out: String
    let err: String
    let data: Data
    /// Standard output and error together, as a terminal would show them one after the other.
    var output: String { out + err }
}

/// Runs `executable` with `args` in `cwd`, feeding `stdin`; KCAR_PASSPHRASE is removed from the environment
/// unless `env` sets it.
func runProcess(
    _ executable: String, _ args: [String], stdin: Data? = nil, env: [String: String] = [:],
    cwd: String, prefix: [String] = []
) throws -> ProcessResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: prefix.first ?? executable)
    p.arguments = prefix.isEmpty ? args : Array(prefix.dropFirst()) + [executable] + args
    p.currentDirectoryURL = URL(fileURLWithPath: cwd)
    var environment = ProcessInfo.processInfo.environment
    environment["KCAR_PASSPHRASE"] = nil
    for (k, v) in env { environment[k] = v }
    p.environment = environment
    let out = Pipe()
    let err = Pipe()
    let input = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = input
    try p.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    input.fileHandleForWriting.closeFile()
    // Read both pipes at once: a child that fills one while we wait on the other would never finish.
    let box = ErrorBox()
    let done = DispatchSemaphore(value: 0)
    Thread {
        box.data = err.fileHandleForReading.readDataToEndOfFile()
        done.signal()
    }.start()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    done.wait()
    let e = box.data
    p.waitUntilExit()
    return ProcessResult(
        code: p.terminationStatus, out: String(decoding: o, as: UTF8.self), err: String(decoding: e, as: UTF8.self),
        data: o)
}

/// Standard error, read on another thread (handed over through the semaphore).
private final class ErrorBox: @unchecked Sendable {
    var data = Data()
}

/// The built `kcar` as a process not yet started, in `cwd`, with KCAR_PASSPHRASE removed and `env` added,
/// its standard streams at /dev/null (a caller may set them before `run()`).
func kcarProcess(_ args: [String], cwd: String, env extra: [String: String] = [:]) -> Process {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: CLITests.binary)
    p.arguments = args
    p.currentDirectoryURL = URL(fileURLWithPath: cwd)
    var env = ProcessInfo.processInfo.environment
    env["KCAR_PASSPHRASE"] = nil
    for (k, v) in extra { env[k] = v }
    p.environment = env
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    p.standardInput = FileHandle.nullDevice
    return p
}
