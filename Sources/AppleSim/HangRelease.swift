import Synchronization

/// Parks "hung" requests and lets them all go at shutdown, so a drain is not held up by requests
/// that were never going to be answered. Waiting costs a continuation, not a thread.
final class HangRelease: Sendable {
    private struct State {
        var released = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var cancelledEarly: Set<Int> = []
    }

    private let state = Mutex(State())

    /// Returns after `limit`, at `releaseAll()`, or when the calling task is cancelled.
    func hang(upTo limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: limit) }
            group.addTask { await self.waitForRelease() }
            await group.next()
            group.cancelAll()
        }
    }

    func releaseAll() {
        let waiters = state.withLock { s in
            s.released = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    private func waitForRelease() async {
        let id = state.withLock { s in s.nextID += 1; return s.nextID }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s in
                    if s.released || s.cancelledEarly.remove(id) != nil { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                if let w = s.waiters.removeValue(forKey: id) { return w }
                if !s.released { s.cancelledEarly.insert(id) }  // cancellation won the race with registration
                return nil
            }
            waiter?.resume()
        }
    }
}
