/// SplitMix64: a small seeded generator for test values and benchmarks (never for secrets).
package struct SplitMix64: RandomNumberGenerator {
    package var state: UInt64
    package init(state: UInt64) { self.state = state }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    package mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// FNV-1a over the sorted (account, value) pairs of a vault's state: what `kcar-stress` prints and the crash
/// test recomputes on the vault it finds.
package func stateDigest(_ state: [String: [UInt8]]) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    func mix(_ b: UInt8) {
        h ^= UInt64(b)
        h = h &* 0x100_0000_01b3
    }
    for k in state.keys.sorted() {
        for b in k.utf8 { mix(b) }
        mix(0)
        for b in state[k]! { mix(b) }
        mix(0xFF)
    }
    return h
}
