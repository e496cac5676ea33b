import Synchronization

/// A task that ticks every 20 ms until stopped: how a test sees that the cooperative pool still runs tasks
/// while blocking calls wait (an idle second gives about 50 ticks; a pool whose threads all wait, 1 or 2).
package final class Heartbeat: Sendable {
    private final class Ticks: Sendable {
        let count = Atomic<Int>(0)
    }

    private let ticks: Ticks
    private let task: Task<Void, Never>

    package init() {
        let ticks = Ticks()
        self.ticks = ticks
        task = Task {
            while !Task.isCancelled {
                ticks.count.add(1, ordering: .relaxed)
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// The ticks so far.
    package var count: Int { ticks.count.load(ordering: .relaxed) }

    /// Stops the ticking.
    package func stop() { task.cancel() }
}
