#if canImport(Glibc)
    import Glibc
#endif

/// Test-only seam (debug builds; release builds compile it to nothing): lets a test act at a precise point of
/// a running command, from outside the process, without timing. With `KCAR_DEBUG_PAUSE=POINT:MARKER`, the
/// command creates the file MARKER when it reaches POINT and waits (up to 60 s) until the test removes it:
/// the test swaps files between pack's listing and reading (`pack-listed`), or signals a writer that has a
/// temporary file open (`pack-writing`, `extract-writing`), or one that has just created a temporary file and not yet
/// registered it for removal on a signal (`temporary-created`).
package enum DebugSeam {
    package static func pause(_ point: String) {
        #if DEBUG
            guard let raw = getenv("KCAR_DEBUG_PAUSE") else { return }
            let spec = String(cString: raw)
            guard let colon = spec.firstIndex(of: ":"), spec[..<colon] == point else { return }
            let marker = String(spec[spec.index(after: colon)...])
            let fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return }
            close(fd)
            var waited = 0
            while access(marker, F_OK) == 0, waited < 6000 {
                usleep(10_000)
                waited += 1
            }
        #endif
    }

    /// `KCAR_DEBUG_SPILL_EVERY=N` (debug builds only): an import in bulk spills every N changes instead of
    /// every 65,536, so that a test of a few items crosses runs.
    package static var spillEvery: Int? {
        #if DEBUG
            guard let raw = getenv("KCAR_DEBUG_SPILL_EVERY") else { return nil }
            return Int(String(cString: raw)).flatMap { $0 > 0 ? $0 : nil }
        #else
            return nil
        #endif
    }
}
