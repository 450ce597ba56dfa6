import Foundation
import Synchronization

/// Lets at most `limit` lines of one kind through per `window`, so a server that repeats a
/// warning on every connection cannot flood the log. The first line after a window that
/// dropped some says how many (`suppressed`).
public final class LogRateLimiter: Sendable {
    private struct State {
        var windowStart: UInt64 = 0
        var passed = 0
        var suppressed = 0
    }

    private let limit: Int
    private let windowNanoseconds: UInt64
    private let state = Mutex(State())

    public init(limit: Int = 20, window: Double = 60) {
        self.limit = max(1, limit)
        windowNanoseconds = UInt64(max(0.001, window) * 1e9)
    }

    /// nil: drop this line; otherwise how many were dropped since the last one let through.
    public func admit(now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int? {
        state.withLock { state in
            if now &- state.windowStart >= windowNanoseconds {
                state.windowStart = now
                state.passed = 0
            }
            guard state.passed < limit else {
                state.suppressed += 1
                return nil
            }
            state.passed += 1
            defer { state.suppressed = 0 }
            return state.suppressed
        }
    }
}
