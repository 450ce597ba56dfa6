import Foundation
import Synchronization

/// The App Store Server API endpoints this worker calls, grouped as the fleet limit counts them:
/// one budget per family (SPEC 9). The raw value is the metric label and the limiter row key.
public enum AppStoreAPIFamily: String, Sendable, CaseIterable {
    case transactionInfo = "transaction_info"
    case notificationHistory = "notification_history"
    case consumption = "consumption"
    case orderLookup = "order_lookup"
}

/// What the fleet limiter said about one request.
public enum RateLimitDecision: Sendable, Equatable {
    /// Send now (any wait for the reserved slot has already been slept).
    case granted
    /// No slot within the caller's wait budget: come back after this long.
    case deferred(Duration)
}

/// One rate limit shared by every process that calls Apple (SPEC 9): a grant per request, and a
/// fleet-wide pause when Apple answers 429. Implementations: `InMemoryRateLimiter` (one process,
/// unit tests) and the PostgreSQL one in Settlement (the fleet).
public protocol AppStoreRateLimiter: Sendable {
    /// Reserves the next slot for `family`; waits for it when it is at most `maxWait` away.
    func acquire(_ family: AppStoreAPIFamily, maxWait: Duration) async throws -> RateLimitDecision
    /// Apple said 429: nobody sends to `family` for `duration`.
    func pause(_ family: AppStoreAPIFamily, for duration: Duration) async throws
}

/// No limit at all: the default of a client that was given none.
public struct UnlimitedRateLimiter: AppStoreRateLimiter {
    public init() {}
    public func acquire(_ family: AppStoreAPIFamily, maxWait: Duration) async throws -> RateLimitDecision { .granted }
    public func pause(_ family: AppStoreAPIFamily, for duration: Duration) async throws {}
}

/// The limit as numbers: requests per second, and per hour.
public struct AppStoreRateLimit: Sendable, Equatable {
    public var perSecond: Double
    public var perHour: Int

    public init(perSecond: Double = 20, perHour: Int = 50_000) {
        self.perSecond = perSecond
        self.perHour = perHour
    }
}

/// The fleet algorithm in one process (the SQL function `iap.appstore_api_grant` is the same
/// schedule): each grant reserves the slot `1 / perSecond` after the previous one, never before a
/// pause ends, and an hour window (starting at its first grant) that used its budget pushes the
/// slot to the window's end.
public final class InMemoryRateLimiter: AppStoreRateLimiter {
    private struct Bucket {
        var nextSlot: ContinuousClock.Instant?
        var pausedUntil: ContinuousClock.Instant?
        var hourStarted: ContinuousClock.Instant?
        var hourUsed = 0
    }

    private let limit: AppStoreRateLimit
    private let buckets: Mutex<[AppStoreAPIFamily: Bucket]>

    public init(limit: AppStoreRateLimit) {
        self.limit = limit
        buckets = Mutex([:])
    }

    public func acquire(_ family: AppStoreAPIFamily, maxWait: Duration) async throws -> RateLimitDecision {
        let now = ContinuousClock.now
        let rate: Double = max(limit.perSecond, 0.001)
        let interval: Duration = .milliseconds(Int64((1000 / rate).rounded()))
        let hour: Duration = .seconds(3600)
        let perHour = limit.perHour
        // Whether a slot was reserved, and how far away it is.
        let (reserved, wait) = buckets.withLock { (all: inout [AppStoreAPIFamily: Bucket]) -> (Bool, Duration) in
            var bucket = all[family] ?? Bucket()
            let next: ContinuousClock.Instant = bucket.nextSlot ?? now
            let resume: ContinuousClock.Instant = bucket.pausedUntil ?? now
            var slot: ContinuousClock.Instant = max(max(next, now), resume)
            if let started = bucket.hourStarted, slot < started + hour, bucket.hourUsed >= perHour {
                slot = started + hour
            }
            guard slot - now <= maxWait else { return (false, slot - now) }
            if let started = bucket.hourStarted, slot < started + hour {
                bucket.hourUsed += 1
            } else {
                bucket.hourStarted = slot
                bucket.hourUsed = 1
            }
            bucket.nextSlot = slot + interval
            all[family] = bucket
            return (true, slot - now)
        }
        guard reserved else { return .deferred(wait) }
        if wait > .zero { try await Task.sleep(for: wait) }
        return .granted
    }

    public func pause(_ family: AppStoreAPIFamily, for duration: Duration) async throws {
        let until = ContinuousClock.now + duration
        buckets.withLock { (all: inout [AppStoreAPIFamily: Bucket]) in
            var bucket = all[family] ?? Bucket()
            bucket.pausedUntil = max(bucket.pausedUntil ?? until, until)
            all[family] = bucket
        }
    }
}
