import Foundation
import Postgres

/// A job page: the job (never its payload), the ledger rows and alerts it touched.
public struct JobDetail: Sendable {
    public let job: JobSummary
    public let transactionIDs: [String]
    public let runAt: Date
    public let leasedBy: String?
    public let leaseExpiresAt: Date?
    public let sweeps: Int
    public let ledger: [LedgerRow]
    public let alerts: [AlertRow]
}

struct JobDetails: Sendable {
    let client: PostgresClient

    static let jobSQL = """
        SELECT \(JobSummary.columns), transaction_ids, run_at, leased_by, lease_expires_at, sweeps
        FROM iap.jobs WHERE id = $1
        """
    /// Its own transactions by primary key, plus rows credited by it under another job's listing.
    static let ledgerSQL = "SELECT \(LedgerRow.columns) FROM iap.credits WHERE transaction_id = ANY($1) OR job_id = $2 ORDER BY credited_at"
    static let alertsSQL = "SELECT \(AlertRow.columns) FROM iap.alerts WHERE job_id = $1 ORDER BY id"

    func load(_ id: Int) async throws -> JobDetail? {
        guard let row = try await client.query(Self.jobSQL, [id]).first else { return nil }
        guard let job = try await ClosedUnpaid.mark([try JobSummary.decode(row)], client).first else { return nil }
        let first = JobSummary.columnCount
        let transactions: [String] = try row.decode(at: first)
        return JobDetail(
            job: job, transactionIDs: transactions, runAt: try row.decode(at: first + 1), leasedBy: try row.decode(at: first + 2),
            leaseExpiresAt: try row.decode(at: first + 3), sweeps: try row.decode(at: first + 4),
            ledger: try await client.query(Self.ledgerSQL, [transactions, id]).map(LedgerRow.decode),
            alerts: try await client.query(Self.alertsSQL, [id]).map(AlertRow.decode))
    }
}
