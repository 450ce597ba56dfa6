import Foundation
import Postgres

/// The statements of the leadership lease in `iap.leader` (SPEC 8).
public struct LeaderLeaseStore: Sendable {
    let client: PostgresClient
    public init(client: PostgresClient) { self.client = client }

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
        RETURNING held.elected_at
        """

    /// True when `leaderID` holds the lease for `ttl` seconds from the server's now.
    public func acquireOrRenew(name: String, leaderID: String, ttl: Double) async throws -> Bool {
        try await !client.query(Self.acquireSQL, [name, leaderID, ttl]).isEmpty
    }

    static let resignSQL = "DELETE FROM iap.leader WHERE name = $1 AND leader_id = $2"

    /// Gives the lease up at once (clean shutdown), so the next leader need not wait out the TTL.
    public func resign(name: String, leaderID: String) async throws {
        _ = try await client.query(Self.resignSQL, [name, leaderID])
    }

    static let holderSQL = "SELECT leader_id FROM iap.leader WHERE name = $1 AND expires_at > now()"

    /// Who holds an unexpired lease now, if anyone (status and tests).
    public func holder(name: String) async throws -> String? {
        try await client.query(Self.holderSQL, [name]).first?.decode(String?.self, at: 0)
    }
}
