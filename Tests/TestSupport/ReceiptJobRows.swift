import Postgres

extension PostgresConnection {
    /// Queues `count` receipt jobs for user `u-N`, order `o-N` (N from 1), payload `cA==`, through
    /// the `iap.jobs` view: the plan tests' tables.
    public func insertReceiptJobs(_ count: Int) async throws {
        _ = try await query("""
            INSERT INTO iap.jobs (kind, user_id, order_id, payload, dedup_key)
            SELECT 'receipt', 'u-' || n, 'o-' || n, 'cA==', iap.job_dedup_key('receipt', 'u-' || n, 'o-' || n, 'cA==')
            FROM generate_series(1, $1::int) AS n
            """, [count])
    }
}
