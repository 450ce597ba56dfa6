import Postgres
import SupportConsole

/// `bench console`'s data: jobs spread over 30 days of retention, a ledger, alerts (most
/// resolved), all written set-based with generate_series, then VACUUM ANALYZE so the planner
/// sees the table as a long-running system would.
public struct ConsoleWorkload: Sendable {
    public let jobs: Int
    public let ledgerRows: Int
    public let alerts: Int
    /// About ten jobs per buyer.
    public var users: Int { max(jobs / 10, 1) }

    public init(jobs: Int = 1_000_000, ledgerRows: Int = 200_000, alerts: Int = 50_000) {
        self.jobs = jobs
        self.ledgerRows = min(ledgerRows, jobs)
        self.alerts = min(alerts, jobs)
    }

    // Every parameter is a whole number, cast where it is used so the planner need not guess.
    /// Job i belongs to user-(i % users); every (jobs / ledgerRows)-th job credited a transaction
    /// (3000000000 + i) to order-i; alerts sit on the jobs in between, the newest 1,000 open.
    /// Both tables of a job (migration 0024) from one generated source, not row by row through
    /// the iap.jobs view's trigger.
    static let jobsSQL = """
        WITH source AS (
            SELECT i AS id, 'receipt' AS kind, 'user-' || (i % $2::int) AS user_id, 'order-' || i AS order_id, 'coins_100' AS product_id,
                   'bench-payload-' || i AS payload, sha256(('bench-' || i)::text::bytea) AS dedup_key,
                   s.state, s.outcome, CASE WHEN i % 7 = 0 THEN 2 ELSE 1 END AS attempts, 0 AS apple_status,
                   CASE WHEN s.state = 'failed' THEN 'status 21010' END AS last_error,
                   CASE WHEN i % $3::int = 0 THEN ARRAY[(3000000000 + i)::text] ELSE '{}' END AS transaction_ids,
                   t.at AS created_at, t.at AS run_at,
                   CASE WHEN s.state IN ('queued', 'retrying') THEN NULL ELSE t.at + interval '4 seconds' END AS finished_at
            FROM generate_series(1, $1::int) AS i
            CROSS JOIN LATERAL (SELECT now() - interval '30 days' * ($1::int - i)::float8 / $1::int AS at) AS t
            CROSS JOIN LATERAL (SELECT CASE
                WHEN i > $1::int - 200 THEN 'queued' WHEN i % 500 = 1 THEN 'attention' WHEN i % 20 = 3 THEN 'failed' ELSE 'done' END AS state,
                CASE WHEN i > $1::int - 200 THEN NULL WHEN i % 500 = 1 THEN 'paid_not_credited' WHEN i % 20 = 3 THEN 'invalid_receipt'
                     WHEN i % $3::int = 0 THEN 'credited' ELSE 'already_credited' END AS outcome) AS s
        ), requests AS (
            INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key, created_at)
            SELECT id, kind, user_id, order_id, product_id, payload, dedup_key, created_at FROM source
        )
        INSERT INTO iap.job_queue (id, kind, state, outcome, attempts, apple_status, last_error, transaction_ids, created_at, run_at, finished_at)
        SELECT id, kind, state, outcome, attempts, apple_status, last_error, transaction_ids, created_at, run_at, finished_at FROM source
        """
    /// The side rows of the jobs written straight into the table (`iap.place_jobs`, migration 0039).
    static let placeSQL = "SELECT iap.place_jobs(ARRAY(SELECT id FROM iap.job_queue WHERE state <> 'done'))"
    /// The log of finished jobs the overview's charts read (migration 0028), as completions of
    /// 100 jobs would have written it (a busy worker's are larger, so fewer rows).
    static let finishesSQL = """
        INSERT INTO iap.job_finishes (finished_at, state, outcome, jobs, retried)
        SELECT max(finished_at), state, outcome, count(*), count(*) FILTER (WHERE attempts > 1)
        FROM iap.job_queue WHERE state IN ('done', 'failed', 'attention')
        GROUP BY id / 100, state, outcome
        """
    static let ordersSQL = """
        INSERT INTO iap.orders (order_id, user_id, product_id, status, created_at, credited_at, transaction_id)
        SELECT 'order-' || i, 'user-' || (i % $2::int), 'coins_100', CASE WHEN i % $3::int = 0 THEN 'credited' ELSE 'open' END,
               now() - interval '30 days' * ($1::int - i)::float8 / $1::int, NULL, NULL
        FROM generate_series($3::int, $1::int, $3::int) AS i
        """
    static let creditsSQL = """
        INSERT INTO iap.credits (transaction_id, order_id, user_id, product_id, quantity, environment, purchased_at, credited_at, job_id)
        SELECT (3000000000 + i)::text, 'order-' || i, 'user-' || (i % $2::int), 'coins_100', 1, 'Production',
               now() - interval '30 days' * ($1::int - i)::float8 / $1::int, now() - interval '30 days' * ($1::int - i)::float8 / $1::int, i
        FROM generate_series($3::int, $1::int, $3::int) AS i
        """
    static let alertsSQL = """
        INSERT INTO iap.alerts (kind, transaction_id, job_id, user_id, product_id, reason, details, state, first_seen_at, resolved_at, resolution)
        SELECT 'paid_not_credited', (4000000000 + i)::text, i, 'user-' || (i % $2::int), 'coins_100', 'no_open_order', '{}',
               CASE WHEN n > $3::int - 1000 THEN 'open' ELSE 'resolved' END, now() - interval '30 days' * ($1::int - i)::float8 / $1::int,
               CASE WHEN n > $3::int - 1000 THEN NULL ELSE now() END, CASE WHEN n > $3::int - 1000 THEN NULL ELSE 'credited by support' END
        FROM generate_series(1, $3::int) AS n CROSS JOIN LATERAL (SELECT 1 + (n - 1) * ($1::int / $3::int) AS i) AS pick
        """

    public func fill(_ client: PostgresClient) async throws {
        let step = max(jobs / max(ledgerRows, 1), 1)
        _ = try await client.query(Self.jobsSQL, [jobs, users, step])
        _ = try await client.query(Self.placeSQL)
        _ = try await client.query("SELECT setval(pg_get_serial_sequence('iap.job_queue', 'id'), $1)", [jobs])
        _ = try await client.query(Self.finishesSQL)
        _ = try await client.query(Self.ordersSQL, [jobs, users, step])
        _ = try await client.query(Self.creditsSQL, [jobs, users, step])
        _ = try await client.query(Self.alertsSQL, [jobs, users, alerts])
        try await ReconciliationWorkload().fill(client)
        try await client.withConnection { try await $0.execute(script: "VACUUM ANALYZE iap.job_queue, iap.job_requests, iap.job_finishes, iap.job_ready, iap.job_parked, iap.job_flagged, iap.orders, iap.credits, iap.alerts, iap.reconciliation_days, iap.reconciliation_checks") }
    }

    /// A transaction id in the ledger, for the i-th sample.
    func creditedTransaction(_ sample: Int) -> String {
        let step = max(jobs / max(ledgerRows, 1), 1)
        return String(3_000_000_000 + step * (1 + (sample * 7_919) % max(ledgerRows, 1)))
    }
}
