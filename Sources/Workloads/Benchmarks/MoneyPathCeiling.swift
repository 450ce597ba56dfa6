import Foundation
import HTTP
import Postgres

/// What PostgreSQL allows for the money path's writes: the same work per receipt as the
/// worker's (a SKIP LOCKED claim; a lease-fenced ledger row `ON CONFLICT DO NOTHING`; the
/// order to `credited`; the job to `done`/`credited`; one NOTIFY per batch), as set-based SQL
/// over `batch` receipts per statement, with no Apple and no Swift in between.
struct MoneyPathCeiling: Sendable {
    let client: PostgresClient
    let batch: Int
    let lanes = 2

    static let claimSQL = """
        WITH picked AS (
            DELETE FROM iap.job_ready
            WHERE id = ANY(ARRAY(SELECT id FROM iap.job_ready WHERE run_at <= now() ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED))
            RETURNING id
        )
        UPDATE iap.job_queue AS j SET state = 'running', attempts = j.attempts + 1, leased_by = $2,
            lease_expires_at = now() + interval '60 seconds'
        WHERE j.id = ANY(ARRAY(SELECT id FROM picked)) AND j.state IN ('queued', 'retrying')
        RETURNING j.id
        """

    /// The bench's receipts pay order `TAG-oN` with transaction `TAG-N`.
    static let creditSQL = """
        WITH mine AS (
            SELECT j.id, r.user_id, r.order_id, replace(r.order_id, '-o', '-') AS transaction_id
            FROM iap.job_queue AS j JOIN iap.job_requests AS r ON r.id = j.id
            WHERE j.id = ANY($1::bigint[]) AND j.leased_by = $2 AND j.lease_expires_at > now()
            FOR UPDATE OF j
        ), ledger AS (
            INSERT INTO iap.credits (transaction_id, original_transaction_id, order_id, user_id, product_id, quantity,
                                     environment, purchased_at, job_id)
            SELECT transaction_id, transaction_id, order_id, user_id, 'coins_100', 1, 'Production', now(), id FROM mine
            ON CONFLICT (transaction_id) DO NOTHING
            RETURNING transaction_id, order_id
        ), orders AS (
            UPDATE iap.orders AS o SET status = 'credited', credited_at = now(), transaction_id = ledger.transaction_id
            FROM ledger WHERE o.order_id = ledger.order_id
        )
        UPDATE iap.job_queue AS j SET state = 'done', outcome = 'credited', finished_at = now(), leased_by = NULL, lease_expires_at = NULL
        FROM mine WHERE j.id = mine.id
        """

    /// Drains every runnable job; returns receipts per second.
    func drain(expected: Int) async throws -> Double {
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    let worker = "raw-money-\(lane)"
                    while true {
                        let ids = try await client.query(Self.claimSQL, [batch, worker]).map { try $0.decode(Int.self, at: 0) }
                        if ids.isEmpty { return }
                        try await client.transaction { tx in
                            _ = try await tx.query(Self.creditSQL, [ids, worker])
                            _ = try await tx.query("SELECT pg_notify('iap_credits', '')")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        return Double(expected) / (ContinuousClock.now - started).seconds
    }
}
