/// Hostile inputs for the plist area (issue 9). Each case is one crafted file and the command handed it.
func plistCases() -> [HostileCase] {
    []
}
