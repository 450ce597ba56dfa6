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

    /// One branch per state, each from the side table that holds it (migration 0029: kept in
    /// the job's own transaction by the table's triggers, so counted as they are; a running job
    /// is checked against its lease, as a claim's lease row outlives its finished jobs); done
    /// (no side table: the bulk of the table) and failed are counted up to the limit ($1) and
    /// come with a row estimate for when they reach it. Done is not counted at all once the
    /// table's estimate is past twice the limit: the count would only reach the limit, after
    /// reading that many rows on every sample.
    static let snapshotSQL = """
        SELECT 'queued', count(*)::bigint,
               coalesce(extract(epoch FROM now() - (SELECT created_at FROM iap.job_queue
                                                    WHERE id = (SELECT min(id) FROM iap.job_ready WHERE state = 'queued'))), 0)::float8, 0::float8
            FROM iap.job_ready WHERE state = 'queued'
        UNION ALL SELECT 'retrying', count(*)::bigint, 0, 0 FROM iap.job_ready WHERE state = 'retrying'
        UNION ALL SELECT 'running', count(*)::bigint, 0, 0 FROM iap.job_queue
            WHERE id = ANY(ARRAY(SELECT unnest(job_ids) FROM iap.job_leases)) AND state = 'running'
        UNION ALL SELECT 'timed_out', count(*)::bigint, 0, 0 FROM iap.job_parked
        UNION ALL SELECT 'attention', count(*)::bigint, 0, 0 FROM iap.job_flagged WHERE state = 'attention'
        UNION ALL SELECT 'done', CASE WHEN t.n > 2 * $1 THEN $1::bigint
                                      ELSE (SELECT count(*) FROM (SELECT 1 FROM iap.job_queue WHERE state = 'done' LIMIT $1) AS capped) END,
                         0, t.n
            FROM (SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'iap.job_queue'::regclass) AS t
        UNION ALL SELECT 'failed', count(*)::bigint, 0, (SELECT reltuples FROM pg_class WHERE oid = 'iap.job_flagged'::regclass)::float8
            FROM (SELECT 1 FROM iap.job_flagged WHERE state = 'failed' LIMIT $1) AS capped
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
        // The done estimate is the table's: what the other states do not account for.
        if estimated.contains("done") {
            let others = byState.filter { $0.key != "done" }.values.reduce(0, +)
            byState["done"] = max(exactFinishedLimit, (byState["done"] ?? 0) - others)
        }
        return QueueSnapshot(jobsByState: byState, estimatedStates: estimated, oldestQueuedAgeSeconds: oldest)
    }
}
