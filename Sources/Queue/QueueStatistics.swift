import Postgres

/// Queue depth by state and the age of the oldest waiting job: for `status` and the
/// `iap_jobs{state}` / `iap_queue_oldest_age_seconds` gauges.
public struct QueueSnapshot: Sendable, Equatable {
    public static let states = ["queued", "running", "retrying", "timed_out", "done", "failed", "attention"]
    public var jobsByState: [String: Int]
    /// States given as the planner's estimate rather than counted: finished states past
    /// `QueueStatistics.exactFinishedLimit` jobs.
    public var estimatedStates: Set<String>
    /// Seconds since the oldest `queued` job was created (0 when none).
    public var oldestQueuedAgeSeconds: Double
}

public enum QueueStatistics {
    /// Finished jobs are counted exactly up to this many per state, then estimated.
    public static let exactFinishedLimit = 100_000

    /// One branch per state, each `state = '…'` so that it reads only its own partial index:
    /// the live states are small and counted; done and failed are counted up to the limit
    /// ($1) and come with their index's row estimate for when they reach it.
    static let snapshotSQL = """
        SELECT 'queued', count(*)::bigint, coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8, 0::float8
            FROM iap.job_queue WHERE state = 'queued'
        UNION ALL SELECT 'retrying', count(*)::bigint, 0, 0 FROM iap.job_queue WHERE state = 'retrying'
        UNION ALL SELECT 'running', count(*)::bigint, 0, 0 FROM iap.job_queue WHERE state = 'running'
        UNION ALL SELECT 'timed_out', count(*)::bigint, 0, 0 FROM iap.job_queue WHERE state = 'timed_out'
        UNION ALL SELECT 'attention', count(*)::bigint, 0, 0 FROM iap.job_queue WHERE state = 'attention'
        UNION ALL SELECT 'done', count(*)::bigint, 0, (SELECT reltuples FROM pg_class WHERE oid = 'iap.jobs_done'::regclass)::float8
            FROM (SELECT 1 FROM iap.job_queue WHERE state = 'done' LIMIT $1) AS capped
        UNION ALL SELECT 'failed', count(*)::bigint, 0, (SELECT reltuples FROM pg_class WHERE oid = 'iap.jobs_failed'::regclass)::float8
            FROM (SELECT 1 FROM iap.job_queue WHERE state = 'failed' LIMIT $1) AS capped
        """

    public static func snapshot(_ client: PostgresClient, exactFinishedLimit: Int = exactFinishedLimit) async throws -> QueueSnapshot {
        var byState = Dictionary(uniqueKeysWithValues: QueueSnapshot.states.map { ($0, 0) })
        var estimated: Set<String> = []
        var oldest = 0.0
        for row in try await client.query(snapshotSQL, [exactFinishedLimit]) {
            let state = try row.decode(String.self, at: 0)
            var count = try row.decode(Int.self, at: 1)
            if count >= exactFinishedLimit {
                // reltuples is -1 before the first VACUUM/ANALYZE: then the cap is all we know.
                count = max(count, Int(try row.decode(Double.self, at: 3)))
                estimated.insert(state)
            }
            byState[state] = count
            if state == "queued" { oldest = try row.decode(Double.self, at: 2) }
        }
        return QueueSnapshot(jobsByState: byState, estimatedStates: estimated, oldestQueuedAgeSeconds: oldest)
    }
}
