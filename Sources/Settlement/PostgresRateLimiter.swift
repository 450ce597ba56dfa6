import AppStore
import Foundation
import HTTP
import Postgres

/// The fleet-wide App Store Server API limit, shared through PostgreSQL: one row per
/// endpoint family in `iap.appstore_api_limits`, one statement per grant (`iap.appstore_api_grant`,
/// migration 0009), a 429 pause written for every process to see.
public struct PostgresRateLimiter: AppStoreRateLimiter {
    let client: PostgresClient
    let limit: AppStoreRateLimit

    public init(client: PostgresClient, limit: AppStoreRateLimit) {
        self.client = client
        self.limit = limit
    }

    static let grantSQL = "SELECT granted, wait_seconds FROM iap.appstore_api_grant($1, $2, $3, $4)"
    static let pauseSQL = "SELECT iap.appstore_api_pause($1, $2)"
    static let remainingPauseSQL = """
        SELECT extract(epoch FROM paused_until - clock_timestamp())::float8 FROM iap.appstore_api_limits
        WHERE family = $1 AND paused_until > clock_timestamp()
        """

    public func reserve(_ family: AppStoreAPIFamily, maxWait: Duration) async throws -> RateLimitReservation {
        let row = try await client.query(Self.grantSQL, [family.rawValue, limit.perSecond, limit.perHour, maxWait.seconds])[0]
        let wait = Self.duration(try row.decode(Double.self, at: 1))
        return try row.decode(Bool.self, at: 0) ? .reserved(after: wait) : .refused(nearest: wait)
    }

    public func pause(_ family: AppStoreAPIFamily, for duration: Duration) async throws {
        _ = try await client.query(Self.pauseSQL, [family.rawValue, duration.seconds])
    }

    public func remainingPause(_ family: AppStoreAPIFamily) async throws -> Duration? {
        try await client.query(Self.remainingPauseSQL, [family.rawValue]).first.map { Self.duration(try $0.decode(Double.self, at: 0)) }
    }

    private static func duration(_ seconds: Double) -> Duration {
        .milliseconds(Int64((max(seconds, 0) * 1000).rounded(.up)))
    }
}
