import Foundation
import Observability
import Postgres
@testable import Settlement
import TestSupport
import XCTest

/// stuck_verification: every unfinished job older than STUCK_AFTER_SECONDS, whatever
/// its state, once; and the leader's minute check reads the unfinished jobs only, not the table.
final class StuckDetectorTests: XCTestCase {
    func testOldUnfinishedJobsInEveryStateAreAlertedOnceAndFinishedOnesNever() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query("""
            INSERT INTO iap.jobs (kind, user_id, order_id, payload, state, outcome, leased_by, lease_expires_at, created_at, finished_at)
            SELECT 'receipt', 'stuck-u-' || n, 'stuck-o-' || n, 'cA==' || n, s,
                   CASE s WHEN 'done' THEN 'credited' WHEN 'failed' THEN 'invalid_receipt' WHEN 'attention' THEN 'paid_not_credited' END,
                   CASE s WHEN 'running' THEN 'w' END, CASE s WHEN 'running' THEN now() + interval '1 minute' END,
                   now() - CASE WHEN n % 2 = 0 THEN interval '2 days' ELSE interval '1 hour' END,
                   CASE WHEN s IN ('done', 'failed', 'attention') THEN now() END
            FROM generate_series(1, 14) AS n,
                 LATERAL (SELECT (ARRAY['queued', 'retrying', 'running', 'timed_out', 'done', 'failed', 'attention'])[(n - 1) / 2 + 1] AS s) AS states
            """)
        let detector = StuckDetector(client: client, interval: 60, stuckAfter: 86_400,
                                     alerts: AlertRecorder(logger: Logger(sink: CapturingLogSink()),
                                                           metrics: SettlementMetrics(registry: MetricsRegistry()), webhook: nil))
        try await detector.run(term: .held(until: .now + .seconds(60)))
        try await detector.run(term: .held(until: .now + .seconds(60)))
        let alerted = try await client.query("""
            SELECT a.reason FROM iap.alerts a JOIN iap.jobs j ON j.id = a.job_id
            WHERE a.kind = 'stuck_verification' ORDER BY a.reason
            """).map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(alerted, ["unfinished_queued", "unfinished_retrying", "unfinished_running", "unfinished_timed_out"],
                       "the old one of each unfinished state, once; no young job, no finished one")
        await client.close()
    }

    func testTheCheckReadsTheSideTablesNotTheTable() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query("""
            INSERT INTO iap.jobs (kind, user_id, order_id, payload, state, outcome, created_at, finished_at)
            SELECT 'receipt', 'plan-u-' || n, 'plan-o-' || n, 'cA==' || n, 'done', 'credited', now() - interval '3 days', now()
            FROM generate_series(1, 30000) AS n
            """)
        _ = try await client.query("ANALYZE iap.job_queue")
        let plan = try await client.withConnection { connection in
            try await connection.execute(script: "PREPARE stuck (float8) AS \(StuckDetector.stuckJobsSQL)")
            return try await connection.query("EXPLAIN EXECUTE stuck(86400)").map { try $0.decode(String.self, at: 0) }
        }.joined(separator: "\n")
        XCTAssertFalse(plan.contains("Seq Scan on job_queue"), plan)
        for table in ["job_ready", "job_leases", "job_parked"] { XCTAssertTrue(plan.contains(table), plan) }
        await client.close()
    }
}
