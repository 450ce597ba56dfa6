import Postgres

/// Of the `attention` jobs left paid_not_credited, how many are settled now: credited since, or
/// closed by support as owed nothing. The overview says so under its attention count (which comes
/// from the queue's own statistics and keeps them) so the open work it shows is the real one.
struct SettledSince: Sendable, Equatable {
    var credited = 0
    var closedUnpaid = 0
    var total: Int { credited + closedUnpaid }

    static let limit = 10_000
    /// The flagged attention jobs that owe transactions (migration 0032: a few thousand at most,
    /// each an open case), then each job checked in iap.job_queue: its transactions by the
    /// ledger's primary key and alerts_by_transaction (a side row says where to look, the job says
    /// what is true). The settled test is not repeated on the side rows: its estimated cost per
    /// row, multiplied by their estimated count, put the statement over PostgreSQL's JIT threshold
    /// and compiling it cost the overview 50 ms. Reads iap.job_queue, not the iap.jobs view: it
    /// needs no column of the job's request.
    static let countSQL = """
        SELECT count(*) FILTER (WHERE credited), count(*) FILTER (WHERE NOT credited) FROM (
            SELECT \(OwedPayments.allCredited("transaction_ids")) AS credited FROM iap.job_queue
            WHERE id = ANY(ARRAY(
                SELECT f.id FROM iap.job_flagged f WHERE f.state = 'attention' AND cardinality(f.owed_transaction_ids) > 0))
              AND state = 'attention' AND outcome = 'paid_not_credited' AND cardinality(transaction_ids) > 0
              AND \(OwedPayments.allSettled("transaction_ids"))
            LIMIT $1) AS settled
        """

    static func count(_ client: PostgresClient) async throws -> SettledSince {
        let row = try await client.query(countSQL, [limit])[0]
        return SettledSince(credited: try row.decode(at: 0), closedUnpaid: try row.decode(at: 1))
    }
}
