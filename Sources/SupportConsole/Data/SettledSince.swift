import Postgres

/// Of the `attention` jobs left paid_not_credited, how many are settled now: credited since, or
/// closed by support as owed nothing (ClosedUnpaid). The overview says so under its attention count (which comes
/// from the queue's own statistics and keeps them) so the open work it shows is the real one.
struct SettledSince: Sendable, Equatable {
    var credited = 0
    var closedUnpaid = 0
    var total: Int { credited + closedUnpaid }

    static let limit = 10_000
    /// From the flagged jobs' owed transactions (migration 0032), each by the ledger's primary
    /// key; only the jobs whose transactions are all there are then checked in iap.job_queue (a
    /// side row says where to look, the job says what is true). Reads iap.job_queue, not the
    /// iap.jobs view: it needs no column of the job's request.
    static let creditedSQL = """
        SELECT count(*) FROM (SELECT 1 FROM iap.job_queue
            WHERE id = ANY(ARRAY(
                SELECT f.id FROM iap.job_flagged f
                WHERE f.state = 'attention' AND cardinality(f.owed_transaction_ids) > 0
                  AND \(JobSummary.allCredited("f.owed_transaction_ids"))))
              AND state = 'attention' AND outcome = 'paid_not_credited' AND cardinality(transaction_ids) > 0
              AND \(JobSummary.allCredited("transaction_ids"))
            LIMIT $1) AS credited
        """

    /// Two plain statements, not one: each stays cheap to plan (the overview plans every run).
    static func count(_ client: PostgresClient) async throws -> SettledSince {
        async let credited = client.query(creditedSQL, [limit])
        async let closed = client.query(ClosedUnpaid.attentionCountSQL, [limit])
        return SettledSince(credited: try await credited[0].decode(at: 0), closedUnpaid: try await closed[0].decode(at: 0))
    }
}
