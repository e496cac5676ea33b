#if canImport(Glibc)
    import Glibc
#endif

/// The bounds of the version clock (SPEC.md Part 4, V5.1): what a writer reads as now, how far ahead of it a
/// version taken from another copy may be, and the clock no version reaches.
package enum HybridClock {
    /// `CLOCK_AHEAD_MAX`: one day, in hlc units (milliseconds in the upper 48 bits).
    package static let aheadMax: UInt64 = 86_400_000 << 16
    /// `CLOCK_NOW_MAX`: a local clock past 2^47 − 1 milliseconds (the year 6429) reads as it, so now < 2^63.
    package static let nowMaxMilliseconds: UInt64 = (1 << 47) - 1
    /// `CLOCK_CEILING`: no version is given at or above it (room for the versions of one commit).
    package static let ceiling: UInt64 = UInt64.max - (1 << 32)

    /// The real-time clock in milliseconds since 1970, at most ``nowMaxMilliseconds``.
    package static func nowMilliseconds() -> UInt64 {
        var tv = timespec()
        clock_gettime(CLOCK_REALTIME, &tv)
        return min(UInt64(max(0, tv.tv_sec)) * 1000 + UInt64(max(0, tv.tv_nsec)) / 1_000_000, nowMaxMilliseconds)
    }

    /// The real-time clock in nanoseconds since 1970: what a date attribute holds (`cdat`, `mdat`). A clock
    /// past what 64 bits of nanoseconds hold (the year 2262) reads as their greatest value.
    package static func nowNanoseconds() -> Int64 {
        var tv = timespec()
        clock_gettime(CLOCK_REALTIME, &tv)
        let (seconds, o1) = Int64(tv.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
        let (ns, o2) = seconds.addingReportingOverflow(Int64(tv.tv_nsec))
        if o1 || o2 { return tv.tv_sec < 0 ? .min : .max }
        return ns
    }

    /// Now as an hlc (V5).
    package static func now() -> UInt64 { nowMilliseconds() << 16 }

    /// The greatest hlc a merge, sync or join takes when now is `now` (V5.1 rule 2).
    package static func limit(now: UInt64) -> UInt64 { now + aheadMax }

    /// How far `hlc` runs ahead of `now`, in words ("3 days", "5,000 years").
    package static func ahead(_ hlc: UInt64, of now: UInt64) -> String {
        let span = hlc > now ? hlc - now : 0
        let days = span / aheadMax + (span % aheadMax >= aheadMax / 2 ? 1 : 0)
        if days >= 730 { return "\(days / 365) years" }
        return days == 1 ? "1 day" : "\(days) days"
    }

    /// The refusal of V5.1 rule 2: `side` (already naming its file) holds `what` at `hlc`, past the limit.
    package static func refusal(_ side: MergeSide, _ path: String, _ what: String, hlc: UInt64, now: UInt64)
        -> VaultError
    {
        VaultError(
            .clockAhead, side: side, path: path,
            ": \(what) is dated \(ahead(hlc, of: now)) ahead of this machine's clock; more than a day "
                + "is refused (its changes would win every conflict until then, and every copy that took them would count from "
                + "there). If this machine's clock is behind, set it right; otherwise rewind that copy on a machine whose clock is "
                + "right (`kcar compact --rewind-clock`) and merge the result")
    }
}
