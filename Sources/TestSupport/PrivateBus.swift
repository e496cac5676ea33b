import Foundation

/// A private session bus for one test: `dbus-daemon --session` in the foreground, on a socket of its own,
/// stopped by ``stop()`` or when released. Throws if dbus-daemon cannot start.
package final class PrivateBus {
    /// The bus's address, for `DBUS_SESSION_BUS_ADDRESS`.
    package let address: String
    private let process: Process

    package static let daemon = "/usr/bin/dbus-daemon"

    /// `environment` is added to the daemon's own (which the services it starts on demand inherit, and whose
    /// `XDG_DATA_HOME` names where it looks for their activation files).
    package init(environment: [String: String] = [:]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: PrivateBus.daemon)
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        p.arguments = ["--session", "--nofork", "--print-address=1", "--nosyslog"]
        let out = Pipe()
        p.standardOutput = out
        // Not the test's own output: a daemon left behind by a crashed test would hold it open.
        p.standardError = FileHandle.nullDevice
        try p.run()
        var text = ""
        while !text.contains("\n") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first, line.hasPrefix("unix:") else {
            p.terminate()
            throw PrivateBusError(message: "dbus-daemon did not start: \(text)")
        }
        address = String(line)
        process = p
    }

    package func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { stop() }
}

package struct PrivateBusError: Error, CustomStringConvertible {
    package let message: String
    package var description: String { message }
}
