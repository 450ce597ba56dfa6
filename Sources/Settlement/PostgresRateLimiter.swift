import AppStore
import Foundation
import HTTP
import Postgres

/// The fleet-wide App Store Server API limit (SPEC 9), shared through PostgreSQL: one row per
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

    public func acquire(_ family: AppStoreAPIFamily, maxWait: Duration) async throws -> RateLimitDecision {
        let row = try await client.query(Self.grantSQL, [family.rawValue, limit.perSecond, limit.perHour, maxWait.seconds])[0]
        let wait = Duration.milliseconds(Int64((max(try row.decode(Double.self, at: 1), 0) * 1000).rounded(.up)))
        guard try row.decode(Bool.self, at: 0) else { return .deferred(wait) }
        // The slot is ours: sleeping until it comes keeps the fleet's requests spaced at the rate.
        if wait > .zero { try await Task.sleep(for: wait) }
        return .granted
    }

    public func pause(_ family: AppStoreAPIFamily, for duration: Duration) async throws {
        _ = try await client.query(Self.pauseSQL, [family.rawValue, duration.seconds])
    }
}
