/// A change of a delta chain as the overlay holds it: a put's entry boxed, so that each of the overlay's slots is
/// two words whichever change it holds. A chain of 780,000 removes held a slot the size of an inline entry
/// (80 bytes) for each, at twice that while the dictionary grew: 475 MiB for every reader of a 4 MiB chain.
enum OverlayChange {
    indirect case put(LeafEntry)
    case remove([UInt8])

    init(_ change: TreeWriter.Change) {
        switch change {
        case .put(let e): self = .put(e)
        case .remove(let k): self = .remove(k)
        }
    }

    var change: TreeWriter.Change {
        switch self {
        case .put(let e): .put(e)
        case .remove(let k): .remove(k)
        }
    }
}
