/// Hostile requests for the credential helpers: git's key=value lines and docker's
/// JSON and server URL on standard input, each refused within CredentialServer.requestMax (1 MiB) or
/// answered in bounded work. docker's protocol makes every failure exit 1, so those cases expect 1.
func credentialCases() -> [HostileCase] {
    let twentyMB = Limits.inputBytes
    func repeated(_ line: String, upTo bytes: Int) -> [UInt8] {
        Array(String(repeating: line, count: max(1, bytes / max(1, line.utf8.count))).utf8)
    }
    let oneMiBLess = (1 << 20) - 64
    return [
        HostileCase(
            name: "credential/git-20MB-no-blank-line",
            attack: "20 MB of key=value lines and no empty line, to kcar credential get",
            make: { _ in }, args: ["credential", "get"], stdin: repeated("wwwauth[]=Basic realm=x\n", upTo: twentyMB),
            exits: [2]),
        HostileCase(
            name: "credential/git-20MB-one-line", attack: "one 20 MB line without a newline, to kcar credential store",
            make: { _ in }, args: ["credential", "store"],
            stdin: [UInt8](repeating: UInt8(ascii: "a"), count: twentyMB), exits: [2]),
        HostileCase(
            name: "credential/git-many-short-lines",
            attack: "1 MiB of one-byte keys git's protocol says to ignore, then a get",
            make: { _ in }, args: ["credential", "get"],
            stdin: Array("protocol=https\nhost=h.example\n".utf8) + repeated("x=\n", upTo: oneMiBLess) + [0x0A],
            exits: [0]),
        HostileCase(
            name: "credential/git-huge-port", attack: "a host whose port has 1000 digits",
            make: { _ in }, args: ["credential", "get"],
            stdin: Array(("protocol=https\nhost=h:" + String(repeating: "9", count: 1000) + "\n\n").utf8), exits: [2]),
        HostileCase(
            name: "credential/git-nul-and-bad-utf8", attack: "NUL bytes and invalid UTF-8 in keys and values",
            make: { _ in }, args: ["credential", "store"],
            stdin: [0x00, 0x3D, 0xFF, 0x0A] + Array("protocol=https\nhost=h\nusername=u\npassword=".utf8) + [
                0xC3, 0x28, 0x00, 0x0A, 0x0A
            ],
            exits: [0, 2]),
        HostileCase(
            name: "credential/docker-deep-json",
            attack: "a ServerURL nested 500,000 arrays deep, to docker-credential store",
            make: { _ in }, args: ["docker-credential", "store"],
            stdin: Array(
                ("{\"ServerURL\":" + String(repeating: "[", count: 500_000) + String(repeating: "]", count: 500_000)
                    + "}").utf8),
            exits: [1]),
        HostileCase(
            name: "credential/docker-20MB-store", attack: "a 20 MB Secret string, to docker-credential store",
            make: { _ in }, args: ["docker-credential", "store"],
            stdin: Array("{\"ServerURL\":\"r.example\",\"Username\":\"u\",\"Secret\":\"".utf8)
                + [UInt8](repeating: 0x61, count: twentyMB - 64)
                + Array("\"}".utf8), exits: [1]),
        HostileCase(
            name: "credential/docker-20MB-url", attack: "a 20 MB server URL, to docker-credential get",
            make: { _ in }, args: ["docker-credential", "get"], stdin: [UInt8](repeating: 0x61, count: twentyMB),
            exits: [1])
    ]
}
