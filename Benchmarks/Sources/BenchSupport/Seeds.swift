/// SplitMix64, the seeded generator of the benchmarks' inputs: the same as TestSupport's in kcar's test
/// support (which a package of its own cannot import), so that a seed makes the inputs it always made.
public struct SplitMix64: RandomNumberGenerator {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// The key file of kcar's fixtures (TestSupport's `Recipes.keyFile`), under which `kcar-bench solid` writes.
public let fixtureKeyFile: [UInt8] = Array(0x20...0x3F)
