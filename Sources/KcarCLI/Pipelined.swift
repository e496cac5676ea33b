import Dispatch
import Synchronization

/// Two stages on two cores: `produce` runs on another thread and hands values to `emit`; `consume` gets them
/// here, in order, in batches of `batch`, at most `inFlight` batches behind (what a stream of a million items
/// holds is `batch * inFlight` values, not the stream). `list` reads and decodes a vault's items on one core
/// while it writes them on the other.
///
/// `produce` stops when `emit` returns false (`consume` threw, and nothing more is wanted). An error of
/// `produce` is thrown here after the batches it emitted before it were consumed; an error of `consume` is
/// thrown once `produce` has stopped. Nothing runs on the other thread after this returns.
///
/// A consumed batch goes back to the producer, which empties it on its own thread before it fills it again:
/// values are freed by the thread that made them. (Freed here, their memory went back to the producer's malloc
/// arena under the lock the producer takes for its own allocations: `list` of a million items waited on that
/// lock, 5,200-5,800 context switches a run against about 1,000 now, and 7 % more CPU time.)
func pipelined<T: Sendable>(
    batch: Int = 1024, inFlight: Int = 2, produce: (_ emit: (T) -> Bool) throws -> Void,
    consume: ([T]) throws -> Void
) throws {
    let channel = PipeChannel<T>(max(1, inFlight))
    let done = DispatchSemaphore(value: 0)
    try withoutActuallyEscaping(produce) { produce in
        // The closure runs on the other thread only until `done` is signalled, which is waited for below; the
        // thread lets go of it before (withoutActuallyEscaping checks that nothing holds it when it returns).
        let job = Job(produce)
        DispatchQueue.global().async {
            var pending = channel.emptyBatch(batch)
            let result = Result {
                try job.run! { value in
                    guard !channel.stopped.load(ordering: .relaxed) else { return false }
                    pending.values.append(value)
                    if pending.values.count == batch {
                        channel.put(.values(pending))
                        pending = channel.emptyBatch(batch)
                    }
                    return true
                }
            }
            if !pending.values.isEmpty, !channel.stopped.load(ordering: .relaxed) { channel.put(.values(pending)) }
            job.run = nil
            if case .failure(let error) = result { channel.put(.end(error)) } else { channel.put(.end(nil)) }
            done.signal()
        }
        defer { done.wait() }
        var failure: Error?
        while true {
            switch channel.take() {
            case .values(let spent):
                defer { channel.giveBack(spent) }
                guard failure == nil else { continue }
                do { try consume(spent.values) } catch {
                    failure = error
                    channel.stopped.store(true, ordering: .relaxed)
                }
            case .end(let error):
                if let failure { throw failure }
                if let error { throw error }
                return
            }
        }
    }
}

/// What ``pipelined(batch:inFlight:produce:consume:)``'s producer hands over: a batch, or its end.
private enum Handed<T: Sendable>: Sendable {
    case values(Batch<T>)
    case end(Error?)
}

/// A batch of values, handed to the consumer and back. Only one thread uses it at a time: the producer until
/// it is put in the channel, the consumer until it is given back (the channel's lock orders the two).
private final class Batch<T: Sendable>: @unchecked Sendable {
    var values: [T] = []
}

/// The batches in flight, the batches consumed, and the flag that stops the producer.
private final class PipeChannel<T: Sendable>: @unchecked Sendable {
    let queue = Mutex<[Handed<T>]>([])
    let spent = Mutex<[Batch<T>]>([])
    let stopped = Atomic<Bool>(false)
    let free: DispatchSemaphore
    let ready = DispatchSemaphore(value: 0)
    init(_ slots: Int) { free = DispatchSemaphore(value: slots) }

    /// A batch to fill, on the producer's thread: a consumed one emptied here (its values freed by the thread
    /// that made them, its storage kept), or a new one.
    func emptyBatch(_ capacity: Int) -> Batch<T> {
        guard let b = spent.withLock({ $0.popLast() }) else {
            let b = Batch<T>()
            b.values.reserveCapacity(capacity)
            return b
        }
        b.values.removeAll(keepingCapacity: true)
        return b
    }

    /// Hands a consumed batch back to the producer.
    func giveBack(_ b: Batch<T>) { spent.withLock { $0.append(b) } }

    /// Waits for a free slot, then hands `h` over.
    func put(_ h: Handed<T>) {
        free.wait()
        queue.withLock { $0.append(h) }
        ready.signal()
    }

    /// Waits for the next batch or end.
    func take() -> Handed<T> {
        ready.wait()
        let h = queue.withLock { $0.removeFirst() }
        free.signal()
        return h
    }
}

/// The producer handed to another thread by a caller that waits for that thread to let go of it.
private final class Job<T>: @unchecked Sendable {
    var run: ((_ emit: (T) -> Bool) throws -> Void)?
    init(_ run: @escaping (_ emit: (T) -> Bool) throws -> Void) { self.run = run }
}
