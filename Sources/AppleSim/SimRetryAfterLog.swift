import AppStore
import Foundation
import HTTP

/// What happened after each 429 apple-sim answered: the requests that still arrived before its
/// Retry-After instant (a client that honours Retry-After for the whole fleet sends none) and the
/// time from the 429 to the next request (about the Retry-After when the fleet waits it out).
public struct SimRetryAfterLog: Sendable {
    public struct Report: Sendable, Equatable {
        public let answeredAt: Date
        public let resumeAt: Date
        public var requestsDuringRetryAfter = 0
        /// Seconds from the 429 to the next request that arrived; nil while none has.
        public var nextRequestAfter: TimeInterval?
    }

    public private(set) var reports: [Report] = []

    mutating func arrived(at now: Date) {
        for index in reports.indices where now > reports[index].answeredAt {
            if now < reports[index].resumeAt { reports[index].requestsDuringRetryAfter += 1 }
            if reports[index].nextRequestAfter == nil { reports[index].nextRequestAfter = now.timeIntervalSince(reports[index].answeredAt) }
        }
    }

    /// `retryAfter` as apple-sim sent it: Apple's epoch milliseconds, or seconds.
    mutating func answered429(at now: Date, retryAfter: String?) {
        let seconds = AppStoreServerAPIErrorCodes.retryAfter(retryAfter, now: now)?.seconds ?? 0
        reports.append(Report(answeredAt: now, resumeAt: now.addingTimeInterval(seconds)))
    }

    var json: [String: Any] {
        [
            "rate_limited": reports.count,
            "requests_during_retry_after": reports.map(\.requestsDuringRetryAfter).reduce(0, +),
            "seconds_to_next_request": reports.compactMap(\.nextRequestAfter),
        ]
    }
}
