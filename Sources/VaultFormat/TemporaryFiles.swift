import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The temporary files this process is writing (a vault being rewritten, an extracted file not yet in place),
/// so that SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE remove them before the process dies: an interrupted
/// `pack` or `extract` leaves no decrypted or half-written file behind. A file a killed process (SIGKILL, a
/// crash) leaves is found by its writer's next run through its lock (`flock`, which dies with the process).
///
/// The handler is async-signal-safe: it reads precomputed C strings from preallocated slots and calls only
/// `unlinkat`, `signal` and `raise`. A registration copies the name into a free slot, then publishes it by
/// setting the slot's bit; removing a registration clears the bit first.
package enum TemporaryFiles {
    /// At most this many temporary files are registered at once (a writer has one or two); beyond it a file
    /// is still removed on failure and by the next run, only not by a signal.
    package static let slotsMax = 64
    /// Bytes of a registered name, NUL included; a longer one is not registered (same fallback as above).
    package static let nameMax = 4096

    nonisolated(unsafe) private static let names = UnsafeMutablePointer<CChar>.allocate(capacity: slotsMax * nameMax)
    nonisolated(unsafe) private static let folders = UnsafeMutablePointer<Int32>.allocate(capacity: slotsMax)
    /// Counts the registrations of each slot, so a token used twice cannot clear a later registration.
    nonisolated(unsafe) private static let uses: UnsafeMutablePointer<Int> = {
        let p = UnsafeMutablePointer<Int>.allocate(capacity: slotsMax)
        p.initialize(repeating: 0, count: slotsMax)
        return p
    }()
    /// Bit i: slot i holds a name the handler must remove. `claimed` marks slots being filled or in use.
    private static let armed = Atomic<UInt64>(0)
    private static let claimed = Atomic<UInt64>(0)

    /// The signals that remove registered files before the process ends as the signal would end it.
    package static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE]

    /// Installs the handler for ``signals`` (once, first thing in the process). Signals the process was
    /// started ignoring (`nohup`, a shell's background job) stay ignored.
    package static func installHandlers() {
        _ = armed.load(ordering: .relaxed)
        _ = claimed.load(ordering: .relaxed)
        _ = held.load(ordering: .relaxed)
        _ = creatingNow.load(ordering: .relaxed)
        _ = names
        _ = folders
        _ = uses
        for s in signals {
            // SIG_IGN is the handler value 1 (a macro Swift does not import).
            if let previous = signal(s, onSignal), unsafeBitCast(previous, to: Int.self) == 1 {
                signal(s, previous)
            }
        }
    }

    /// Registers `name`, relative to the open folder `folder` (or `AT_FDCWD`); returns a token for
    /// ``unregister(_:)``, or nil when no slot is free or the name is too long.
    @discardableResult
    package static func register(_ name: String, in folder: Int32 = AT_FDCWD) -> Int? {
        let bytes = Array(name.utf8)
        guard bytes.count < nameMax, !bytes.contains(0) else { return nil }
        while true {
            let used = claimed.load(ordering: .acquiring)
            guard used != UInt64.max else { return nil }
            let slot = (~used).trailingZeroBitCount
            guard slot < slotsMax else { return nil }
            let bit = UInt64(1) << UInt64(slot)
            guard
                claimed.compareExchange(expected: used, desired: used | bit, ordering: .acquiringAndReleasing).exchanged
            else { continue }
            let p = names + slot * nameMax
            bytes.withUnsafeBytes { b in
                for i in 0..<b.count { p[i] = CChar(bitPattern: b[i]) }
            }
            p[bytes.count] = 0
            folders[slot] = folder
            uses[slot] &+= 1
            armed.bitwiseOr(bit, ordering: .releasing)
            return slot | (uses[slot] & (Int.max >> 8)) << 8
        }
    }

    /// Forgets a registration (the file was renamed into place or removed).
    package static func unregister(_ token: Int?) {
        guard let token, token >= 0 else { return }
        let slot = token & 0xFF
        guard slot < slotsMax, token >> 8 == uses[slot] & (Int.max >> 8) else { return }
        let bit = UInt64(1) << UInt64(slot)
        armed.bitwiseAnd(~bit, ordering: .acquiringAndReleasing)
        claimed.bitwiseAnd(~bit, ordering: .releasing)
    }

    /// Signals that arrived inside ``creating(_:)``, held until it ends (one bit per signal number).
    private static let held = Atomic<UInt64>(0)
    /// Sections of ``creating(_:)`` running now, on any thread.
    private static let creatingNow = Atomic<Int>(0)

    /// Runs `body`, which creates a file and registers it, with the signals of ``signals`` held until it
    /// returns: one that arrives in between (on any thread) is acted on once the file is registered, so that
    /// no moment exists at which the file is on disk and unknown to the handler (without it, an interrupted
    /// `pack` left `.VAULT.<hex>.tmp.new` in a third of runs). Blocking the signals with `pthread_sigmask`
    /// would not do: it blocks them for one thread, and another thread of the process then takes them.
    package static func creating<T>(_ body: () throws -> T) rethrows -> T {
        creatingNow.wrappingAdd(1, ordering: .sequentiallyConsistent)
        defer {
            creatingNow.wrappingSubtract(1, ordering: .sequentiallyConsistent)
            actOnHeld()
        }
        return try body()
    }

    /// Acts on a signal held by ``creating(_:)`` once no section runs. Whichever of the handler and the
    /// section's end takes a held signal's bit acts on it, so it is neither lost nor acted on twice.
    private static func actOnHeld() {
        guard creatingNow.load(ordering: .sequentiallyConsistent) == 0 else { return }
        let bits = held.exchange(0, ordering: .sequentiallyConsistent)
        guard bits != 0 else { return }
        die(Int32(bits.trailingZeroBitCount))
    }

    /// Removes every registered file (the signal handler's work, also usable before an `exit`).
    package static func removeAll() {
        let live = armed.load(ordering: .acquiring)
        for slot in 0..<slotsMax where live & (UInt64(1) << UInt64(slot)) != 0 {
            unlinkat(folders[slot], names + slot * nameMax, 0)
        }
    }

    private static let onSignal: @convention(c) (Int32) -> Void = { sig in
        // Held first, then the sections counted: a section that ends after this reads the bit.
        TemporaryFiles.held.bitwiseOr(UInt64(1) << UInt64(sig & 63), ordering: .sequentiallyConsistent)
        TemporaryFiles.actOnHeld()
    }

    /// Removes the registered files and ends the process as `sig` would have.
    private static func die(_ sig: Int32) {
        removeAll()
        signal(sig, SIG_DFL)
        raise(sig)
    }
}
