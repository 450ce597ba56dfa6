import Foundation
import Synchronization

/// The App Store Server API endpoints this worker calls, grouped as the fleet limit counts them:
/// one budget per family. The raw value is the metric label and the limiter row key.
public enum AppStoreAPIFamily: String, Sendable, CaseIterable {
    case transactionInfo = "transaction_info"
    case notificationHistory = "notification_history"
    case consumption = "consumption"
    case orderLookup = "order_lookup"
    case transactionHistory = "transaction_history"
}

/// What the fleet limiter said about one request.
public enum RateLimitDecision: Sendable, Equatable {
    /// Send now (the wait for the reserved slot is over and no pause began meanwhile).
    case granted
    /// No slot within the caller's wait budget: come back after this long.
    case deferred(Duration)
}

/// A slot the limiter set aside, or why there is none.
public enum RateLimitReservation: Sendable, Equatable {
    /// The slot comes after this wait (zero: now).
    case reserved(after: Duration)
    /// No slot within the wait budget: the nearest is this far away.
    case refused(nearest: Duration)
}

/// One rate limit shared by every process that calls Apple: a slot per request, and a
/// fleet-wide pause when Apple answers 429. Implementations: `InMemoryRateLimiter` (one process,
/// unit tests) and the PostgreSQL one in Settlement (the fleet). Callers use `acquire`.
public protocol AppStoreRateLimiter: Sendable {
    /// Sets aside the next slot for `family` if it is at most `maxWait` away (it never falls inside a pause).
    func reserve(_ family: AppStoreAPIFamily, maxWait: Duration) async throws -> RateLimitReservation
    /// Apple said 429: nobody sends to `family` for `duration`.
    func pause(_ family: AppStoreAPIFamily, for duration: Duration) async throws
    /// What is left of the fleet's pause of `family` (nil or zero: none).
    func remainingPause(_ family: AppStoreAPIFamily) async throws -> Duration?
}

extension AppStoreRateLimiter {
    /// The one place where a granted slot meets the fleet-wide pause. A slot reserved before a 429
    /// may come due during Apple's Retry-After; so after waiting for it the request looks at the
    /// pause again, and if one began meanwhile the slot is void and a new one (after the pause) is
    /// reserved, within the same wait budget. A slot due now needs no second look: its reservation
    /// already saw the pause.
    public func acquire(_ family: AppStoreAPIFamily, maxWait: Duration) async throws -> RateLimitDecision {
        let deadline = ContinuousClock.now + maxWait
        while true {
            switch try await reserve(family, maxWait: max(deadline - ContinuousClock.now, .zero)) {
            case .refused(let nearest):
                return .deferred(nearest)
            case .reserved(let wait):
                guard wait > .zero else { return .granted }
                try await Task.sleep(for: wait)
                guard let paused = try await remainingPause(family), paused > .zero else { return .granted }
            }
        }
    }
}

/// No limit at all: the default of a client that was given none.
public struct UnlimitedRateLimiter: AppStoreRateLimiter {
    public init() {}
    public func reserve(_ family: AppStoreAPIFamily, maxWait: Duration) async throws -> RateLimitReservation { .reserved(after: .zero) }
    public func pause(_ family: AppStoreAPIFamily, for duration: Duration) async throws {}
    public func remainingPause(_ family: AppStoreAPIFamily) async throws -> Duration? { nil }
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

    public func reserve(_ family: AppStoreAPIFamily, maxWait: Duration) async throws -> RateLimitReservation {
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
        return reserved ? .reserved(after: wait) : .refused(nearest: wait)
    }

    public func pause(_ family: AppStoreAPIFamily, for duration: Duration) async throws {
        let until = ContinuousClock.now + duration
        buckets.withLock { (all: inout [AppStoreAPIFamily: Bucket]) in
            var bucket = all[family] ?? Bucket()
            bucket.pausedUntil = max(bucket.pausedUntil ?? until, until)
            all[family] = bucket
        }
    }

    public func remainingPause(_ family: AppStoreAPIFamily) async throws -> Duration? {
        let now = ContinuousClock.now
        return buckets.withLock { $0[family]?.pausedUntil }.map { $0 - now }
    }
}
