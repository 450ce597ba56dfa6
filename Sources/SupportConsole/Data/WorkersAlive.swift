import Foundation
import Postgres

/// Which workers are alive, from what they already write (no heartbeat table of their own):
/// the holders of unexpired claims' lease rows (the workers of running jobs), the holder of an unexpired
/// leadership lease (`iap.leader`, renewed every few seconds by the leader), and the worker
/// processes' lease sessions connected to the database (a `work` process with a pool of two or more keeps one, named
/// `receipt-worker-work-leader`; through a pooler this count may be missing, never too high).
struct WorkersAlive: Sendable {
    let names: [String]
    let leader: String?
    let connected: Int
    /// When none is alive: the last leader and when its lease ran out (the leader renews it every
    /// few seconds while any worker runs), so a calm-looking overview says the fleet is down.
    var lastSeen: (leader: String, until: Date)? = nil

    /// Through the lease rows of claims still being worked on (migration 0029: one per claim),
    /// each checked against its jobs' own lease.
    static let leasingSQL = """
        SELECT DISTINCT leased_by FROM iap.job_queue
        WHERE id = ANY(ARRAY(SELECT unnest(job_ids) FROM iap.job_leases WHERE expires_at > now()))
          AND state = 'running' AND lease_expires_at > now() LIMIT 100
        """
    static let leaderSQL = "SELECT leader_id FROM iap.leader WHERE expires_at > now() ORDER BY name LIMIT 10"
    /// A few rows at most (one per leadership name), expired ones kept until the next election.
    static let lastLeaderSQL = "SELECT leader_id, expires_at FROM iap.leader ORDER BY expires_at DESC LIMIT 1"
    static let connectedSQL = """
        SELECT count(*)::bigint FROM pg_stat_activity WHERE application_name = 'receipt-worker-work-leader' AND datname = current_database()
        """

    static func load(_ client: PostgresClient) async throws -> WorkersAlive {
        var names: [String] = []
        let leaders = try await client.query(Self.leaderSQL).map { try $0.decode(String.self, at: 0) }
        for name in try await client.query(Self.leasingSQL).map({ try $0.decode(String.self, at: 0) }) + leaders where !names.contains(name) {
            names.append(name)
        }
        let connected = try await client.query(Self.connectedSQL)[0].decode(Int.self, at: 0)
        var alive = WorkersAlive(names: names.sorted(), leader: leaders.first, connected: connected)
        if alive.count == 0, let last = try await client.query(Self.lastLeaderSQL).first {
            alive.lastSeen = (try last.decode(String.self, at: 0), try last.decode(Date.self, at: 1))
        }
        return alive
    }

    /// Processes that hold no lease and run no job still count when their session is connected.
    var count: Int { max(names.count, connected) }
}
