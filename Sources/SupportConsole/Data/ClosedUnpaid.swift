import Postgres

/// When a paid_not_credited job stops being open work without a credit: support closed its
/// paid_not_credited alert as owed nothing (a refund by Apple, a duplicate) and none is open.
/// The job keeps its state: the queue's words do not change, the console reads what happened
/// since. Checked apart from the job lists' own statement, and only for the jobs that need it:
/// more subqueries in that statement cost every list page its planning time.
enum ClosedUnpaid {
    /// True when the job `jobID` (an SQL expression) has a paid_not_credited alert and none of
    /// them is open; both through alerts_by_job.
    static func alertsClosed(_ jobID: String) -> String {
        """
        EXISTS (SELECT 1 FROM iap.alerts WHERE alerts.job_id = \(jobID) AND alerts.kind = 'paid_not_credited' AND alerts.state = 'resolved')
        AND NOT EXISTS (SELECT 1 FROM iap.alerts WHERE alerts.job_id = \(jobID) AND alerts.kind = 'paid_not_credited' AND alerts.state = 'open')
        """
    }

    /// Of the jobs `$1`, those whose paid_not_credited alerts support closed.
    static let jobsSQL = "SELECT id FROM unnest($1::bigint[]) AS job(id) WHERE \(alertsClosed("job.id"))"

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
