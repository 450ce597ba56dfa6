import Foundation
import Synchronization

/// Runs scrypt on a few threads of its own. A hash takes a good fraction of a second of CPU and
/// tens of MiB: on Swift's cooperative pool (one thread per core), a burst of sign-ins would hold
/// every thread that serves pages. Here a burst queues for its turn; past `maxWaiting` it is
/// turned away. The threads end when this object goes.
public final class PasswordHashing: Sendable {
    private final class Queue: Sendable {
        struct State {
            var jobs: [@Sendable () -> Void] = []
            var stopped = false
        }
        let state = Mutex(State())
        let ready = DispatchSemaphore(value: 0)

        /// A hashing thread's life: the next job, or the end once stopped and drained.
        func serve() {
            while true {
                ready.wait()
                guard let job = state.withLock({ $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }) else { return }
                job()
            }
        }
    }

    private let queue = Queue()
    private let threads: Int
    private let maxWaiting: Int

    public init(threads: Int = 2, maxWaiting: Int = 64) {
        self.threads = threads
        self.maxWaiting = maxWaiting
        for index in 0..<threads {
            // Named from inside: on Linux a name set before start is lost, and at most 15 characters are kept.
            Thread { [queue] in
                Thread.current.name = "pw-hashing-\(index)"
                queue.serve()
            }.start()
        }
    }

    deinit {
        queue.state.withLock { $0.stopped = true }
        for _ in 0..<threads { queue.ready.signal() }
    }

    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = queue.state.withLock { state in
                guard !state.stopped, state.jobs.count < maxWaiting else { return false }
                state.jobs.append { continuation.resume(returning: work()) }
                return true
            }
            if accepted { queue.ready.signal() } else { continuation.resume(throwing: PasswordHashingBusy()) }
        }
    }
}

/// Too many sign-ins waiting for the hashing threads: answered 503, try again shortly.
public struct PasswordHashingBusy: Error, CustomStringConvertible {
    public var description: String { "too many sign-ins at once; try again in a moment" }
}
