/// Hostile inputs for the cli area (issue 9). Each case is one crafted file and the command handed it.
func cliCases() -> [HostileCase] {
    [
        HostileCase(name: "cli/not-a-vault", attack: "1 MB of zeros handed to list as a vault, with a key file",
                    make: {
                        try writeFile($0 + "/v.kcv", [UInt8](repeating: 0, count: 1_000_000))
                        try writeFile($0 + "/k.key", [UInt8](repeating: 7, count: 32))
                    },
                    args: ["list", "v.kcv", "--key-file", "k.key"], exits: [4]),
    ]
}
