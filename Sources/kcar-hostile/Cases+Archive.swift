/// Hostile inputs for the archive area (issue 9). Each case is one crafted file and the command handed it.
func archiveCases() -> [HostileCase] {
    []
}
