import Postgres

/// When a paid_not_credited job stops being open work without a credit: support closed its
/// paid_not_credited alert as owed nothing (a refund by Apple, a duplicate) and none is open.
/// The job keeps its state: the queue's words do not change, the console reads what happened
/// since. Checked apart from the job lists' own statement, and only for the jobs that need it:
/// more subqueries in that statement cost every list page its planning time.
enum ClosedUnpaid {
    /// Of the jobs `$1`, those with a paid_not_credited alert and every one of them resolved (alerts_by_job).
    static let jobsSQL = """
        SELECT job_id FROM iap.alerts WHERE job_id = ANY($1::bigint[]) AND kind = 'paid_not_credited'
        GROUP BY job_id HAVING bool_and(state = 'resolved')
        """
    /// The overview's count of attention jobs closed unpaid: the flagged jobs' owed transactions
    /// (migration 0032) not all in the ledger, and their alerts (alerts_by_job) all resolved.
    static let attentionCountSQL = """
        SELECT count(*) FROM (SELECT 1 FROM iap.job_flagged f
            WHERE f.state = 'attention' AND cardinality(f.owed_transaction_ids) > 0
              AND NOT \(JobSummary.allCredited("f.owed_transaction_ids"))
              AND EXISTS (SELECT 1 FROM iap.alerts WHERE alerts.job_id = f.id AND alerts.kind = 'paid_not_credited' AND alerts.state = 'resolved')
              AND NOT EXISTS (SELECT 1 FROM iap.alerts WHERE alerts.job_id = f.id AND alerts.kind = 'paid_not_credited' AND alerts.state = 'open')
            LIMIT $1) AS closed
        """

    /// Marks the jobs closed unpaid; asks only about paid_not_credited jobs not credited since.
    static func mark(_ jobs: [JobSummary], _ client: PostgresClient) async throws -> [JobSummary] {
        let candidates = jobs.filter { $0.outcome == "paid_not_credited" && !$0.creditedSince }.map(\.id)
        guard !candidates.isEmpty else { return jobs }
        let closed = Set(try await client.query(jobsSQL, [candidates]).map { try $0.decode(Int.self, at: 0) })
        return jobs.map { job in
            var job = job
            job.closedUnpaid = closed.contains(job.id)
            return job
        }
    }
}
