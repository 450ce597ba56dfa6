import Foundation
import Postgres

/// The statements of the leadership lease in `iap.leader`. Each is one call on one
/// connection, never retried inside the call: the renewal loop retries soon by itself, and a
/// second try inside would spend the time the lease has left.
public struct LeaderLeaseStore: Sendable {
    let client: PostgresClient
    public init(client: PostgresClient) { self.client = client }

    /// The lease's own session: never queued behind completions, and each call (and each host's
    /// connect) bounded by a third of the TTL, so a renewal that hangs still leaves time for
    /// another before the lease ends. One connection, opened lazily, replaced when it breaks.
    public static func dedicatedClient(_ configuration: PostgresConfiguration, ttl: Double) -> PostgresClient {
        var leaseConfiguration = configuration
        leaseConfiguration.applicationName = configuration.applicationName + "-leader"
        leaseConfiguration.callTimeout = min(configuration.callTimeout, ttl / 3)
        leaseConfiguration.connectTimeout = min(configuration.connectTimeout, ttl / 3)
        return PostgresClient(configuration: leaseConfiguration, maxConnections: 1)
    }

    /// Takes the lease when it is absent or expired, or renews it when `leaderID` holds it;
    /// one statement either way. Returns a row only to the holder.
    static let acquireSQL = """
        INSERT INTO iap.leader AS held (name, leader_id, elected_at, expires_at)
        VALUES ($1, $2, now(), now() + make_interval(secs => $3))
        ON CONFLICT (name) DO UPDATE
        SET leader_id = EXCLUDED.leader_id,
            elected_at = CASE WHEN held.leader_id = EXCLUDED.leader_id THEN held.elected_at ELSE now() END,
            expires_at = EXCLUDED.expires_at
        WHERE held.leader_id = EXCLUDED.leader_id OR held.expires_at <= now()
        RETURNING held.elected_at::text
        """

    /// The term `leaderID` holds for `ttl` seconds from the server's now; nil when another holds it.
    public func acquireOrRenew(name: String, leaderID: String, ttl: Double) async throws -> LeaderFence? {
        try await once(Self.acquireSQL, [name, leaderID, ttl]).first.map {
            LeaderFence(name: name, leaderID: leaderID, electedAt: try $0.decode(String.self, at: 0))
        }
    }

    static let resignSQL = "DELETE FROM iap.leader WHERE name = $1 AND leader_id = $2"

    /// Gives the lease up at once (clean shutdown), so the next leader need not wait out the TTL.
    public func resign(name: String, leaderID: String) async throws {
        _ = try await once(Self.resignSQL, [name, leaderID])
    }

    static let holderSQL = "SELECT leader_id FROM iap.leader WHERE name = $1 AND expires_at > now()"

    /// Who holds an unexpired lease now, if anyone (status and tests).
    public func holder(name: String) async throws -> String? {
        try await once(Self.holderSQL, [name]).first?.decode(String?.self, at: 0)
    }

    /// One statement, one attempt (`PostgresClient.query` would retry once on a lost connection).
    private func once(_ sql: String, _ binds: [any PostgresEncodable]) async throws -> PostgresRows {
        try await client.withConnection { try await $0.query(sql, binds) }
    }
}
