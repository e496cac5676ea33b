import Foundation

@testable import VaultFormat

/// The failed automatic compactions reported to ``Vault/reportingCompactionFailures(to:_:)``: path and error.
final class CompactionReports: @unchecked Sendable {
    var reports: [(String, VaultError)] = []
}

/// Runs `body` while every write to a temporary file fails (no space left), so that compactions of either
/// format version fail, with their reports collected; both are undone afterwards (`body` may end the faults
/// sooner by setting `File.faults` to nil).
func withFailingCompactions(_ body: (CompactionReports) throws -> Void) throws {
    let seen = CompactionReports()
    File.faults = { p, op in p.hasSuffix(".tmp") && op != .sync ? .error(ENOSPC) : nil }
    defer { File.faults = nil }
    try Vault.reportingCompactionFailures(to: { seen.reports.append(($0, $1)) }) { try body(seen) }
}
