import Foundation
import Synchronization

/// A dedicated OS thread that runs one connection's blocking libpq calls, so the
/// Swift cooperative pool is never blocked on the network.
final class ConnectionThread: Sendable {
    private struct State {
        var work: [@Sendable () -> Void] = []
        var stopped = false
    }
    private let state = Mutex(State())
    private let condition = NSCondition()

    init(name: String) {
        let thread = Thread { [self] in self.loop() }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs `body` on the connection thread and suspends the caller until it returns.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            let accepted = submit {
                continuation.resume(with: Result { try body() })
            }
            if !accepted {
                continuation.resume(throwing: PostgresError(kind: .connectionLost, message: "connection is closed"))
            }
        }
    }

    /// Stops the thread after the work already queued has run.
    func stop() {
        condition.lock()
        state.withLock { $0.stopped = true }
        condition.signal()
        condition.unlock()
    }

    /// Signalled after the lock is let go: a thread woken while the submitter still held it would
    /// block on the lock at once and switch back, several context switches per statement. No
    /// wake-up is lost: the work was added under the lock, and the thread checks for work under
    /// it before each wait.
    private func submit(_ item: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        let accepted = state.withLock { state -> Bool in
            if state.stopped { return false }
            state.work.append(item)
            return true
        }
        condition.unlock()
        if accepted { condition.signal() }
        return accepted
    }

    private func loop() {
        while true {
            condition.lock()
            var batch: [@Sendable () -> Void] = []
            var stopped = false
            while true {
                (batch, stopped) = state.withLock { state in
                    defer { state.work.removeAll(keepingCapacity: true) }
                    return (state.work, state.stopped)
                }
                if !batch.isEmpty || stopped { break }
                condition.wait()
            }
            condition.unlock()
            for item in batch { item() }
            if stopped && batch.isEmpty { return }
        }
    }
}
