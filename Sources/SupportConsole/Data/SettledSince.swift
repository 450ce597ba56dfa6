import Postgres

/// Of the `attention` jobs left paid_not_credited, how many are settled now: credited since, or
/// closed by support as owed nothing (ClosedUnpaid). The overview says so under its attention count (which comes
/// from the queue's own statistics and keeps them) so the open work it shows is the real one.
struct SettledSince: Sendable, Equatable {
    var credited = 0
    var closedUnpaid = 0
    var total: Int { credited + closedUnpaid }

    static let limit = 10_000
    /// The flagged attention jobs that owe transactions (migration 0032: a few thousand at most,
    /// each an open case), found once by a cheap test; then each job in iap.job_queue (a side row
    /// says where to look, the job says what is true): its transactions by the ledger's primary
    /// key, its alerts by alerts_by_job. Testing the side rows themselves was estimated dear
    /// enough for PostgreSQL to JIT-compile the statement, which cost the overview 30–50 ms for
    /// a statement that runs in 2. Reads iap.job_queue, not the iap.jobs view: it needs no column
    /// of the job's request.
    static let countSQL = """
        WITH owing AS MATERIALIZED (
            SELECT id FROM iap.job_flagged WHERE state = 'attention' AND cardinality(owed_transaction_ids) > 0 LIMIT $1)
        SELECT (SELECT count(*) FROM iap.job_queue
                WHERE id = ANY(ARRAY(SELECT id FROM owing)) AND state = 'attention' AND outcome = 'paid_not_credited'
                  AND cardinality(transaction_ids) > 0 AND \(JobSummary.allCredited("transaction_ids"))),
               (SELECT count(*) FROM iap.job_queue
                WHERE id = ANY(ARRAY(SELECT id FROM owing)) AND state = 'attention' AND outcome = 'paid_not_credited'
                  AND cardinality(transaction_ids) > 0 AND NOT \(JobSummary.allCredited("transaction_ids"))
                  AND \(ClosedUnpaid.alertsClosed("job_queue.id")))
        """

    /// Both counts in one round trip: the overview's other statements share the same few pooled connections.
    static func count(_ client: PostgresClient) async throws -> SettledSince {
        let row = try await client.query(countSQL, [limit])[0]
        return SettledSince(credited: try row.decode(at: 0), closedUnpaid: try row.decode(at: 1))
    }
}
