/// Hostile inputs for the keychain area (issue 9). Each case is one crafted file and the command handed it.
func keychainCases() -> [HostileCase] {
    []
}
