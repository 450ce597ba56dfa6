import Postgres

/// Queue depth by state and the age of the oldest waiting job: for `status` and the
/// `iap_jobs{state}` / `iap_queue_oldest_age_seconds` gauges.
public struct QueueSnapshot: Sendable, Equatable {
    public static let states = ["queued", "running", "retrying", "timed_out", "done", "failed", "attention"]
    public var jobsByState: [String: Int]
    /// Seconds since the oldest `queued` job was created (0 when none).
    public var oldestQueuedAgeSeconds: Double
}

public enum QueueStatistics {
    static let snapshotSQL = """
        SELECT state, count(*)::bigint,
               coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8
        FROM iap.jobs GROUP BY state
        """

    public static func snapshot(_ client: PostgresClient) async throws -> QueueSnapshot {
        var byState = Dictionary(uniqueKeysWithValues: QueueSnapshot.states.map { ($0, 0) })
        var oldest = 0.0
        for row in try await client.query(snapshotSQL) {
            let state = try row.decode(String.self, at: 0)
            byState[state] = try row.decode(Int.self, at: 1)
            if state == "queued" { oldest = try row.decode(Double.self, at: 2) }
        }
        return QueueSnapshot(jobsByState: byState, oldestQueuedAgeSeconds: oldest)
    }
}
