import Postgres

/// How many `attention` jobs were paid_not_credited but are in the ledger now: the overview says
/// so under its attention count (which comes from the queue's own statistics and keeps them).
enum CreditedSince {
    static let limit = 10_000
    /// From the flagged jobs' owed transactions (migration 0032), each by the ledger's primary
    /// key; only the jobs whose transactions are all there are then checked in iap.job_queue
    /// (a side row says where to look, the job says what is true). Reads iap.job_queue, not the
    /// iap.jobs view: it needs no column of the job's request.
    static let countSQL = """
        SELECT count(*) FROM (SELECT 1 FROM iap.job_queue
            WHERE id = ANY(ARRAY(
                SELECT f.id FROM iap.job_flagged f
                WHERE f.state = 'attention' AND cardinality(f.owed_transaction_ids) > 0 AND NOT EXISTS (
                    SELECT 1 FROM unnest(f.owed_transaction_ids) AS owed(transaction_id)
                    WHERE NOT EXISTS (SELECT 1 FROM iap.credits WHERE credits.transaction_id = owed.transaction_id))))
              AND state = 'attention' AND outcome = 'paid_not_credited' AND cardinality(transaction_ids) > 0 AND NOT EXISTS (
                SELECT 1 FROM unnest(transaction_ids) AS job_transaction(transaction_id)
                WHERE NOT EXISTS (SELECT 1 FROM iap.credits WHERE credits.transaction_id = job_transaction.transaction_id))
            LIMIT $1) AS credited
        """

    static func count(_ client: PostgresClient) async throws -> Int {
        try await client.query(countSQL, [limit])[0].decode(Int.self, at: 0)
    }
}
