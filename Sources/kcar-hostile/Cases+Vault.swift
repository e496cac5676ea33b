/// Hostile inputs for the vault area (issue 9). Each case is one crafted file and the command handed it.
func vaultCases() -> [HostileCase] {
    []
}
