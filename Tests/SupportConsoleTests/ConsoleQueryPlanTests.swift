import Foundation
import Postgres
@testable import Queue
@testable import Settlement
@testable import SupportConsole
import TestSupport
import XCTest

/// Every page's SQL, explained: none may scan the two tables behind the iap.jobs view
/// (iap.job_queue, iap.job_requests; migration 0024), iap.credits or iap.orders sequentially.
///
/// Method: a few thousand rows are loaded and ANALYZEd, then each statement is explained with
/// `enable_seqscan = off` in that session. With sequential scans priced out, the planner still
/// picks one only where no index can answer the query, so a "Seq Scan on iap.job_queue" in the plan
/// means a page's query has no index behind it — what this test exists to catch — and not
/// that the table is small. (`bench console` times the same queries at 1,000,000 jobs.)
final class ConsoleQueryPlanTests: XCTestCase {
    func testNoPageQueryScansJobsOrCreditsSequentially() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query("""
            INSERT INTO iap.jobs (kind, user_id, order_id, payload, dedup_key, state, outcome, finished_at, transaction_ids)
            SELECT 'receipt', 'user-' || (i % 500), 'order-' || i, 'payload-' || i, sha256(('k' || i)::bytea),
                   CASE WHEN i % 50 = 0 THEN 'attention' ELSE 'done' END,
                   CASE WHEN i % 50 = 0 THEN 'paid_not_credited' ELSE 'credited' END, now() - (i || ' seconds')::interval,
                   ARRAY[(1000000 + i)::text]
            FROM generate_series(1, 5000) AS i
            """)
        _ = try await client.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id, status) SELECT 'order-' || i, 'user-' || (i % 500), 'coins', 'credited'
            FROM generate_series(1, 5000) AS i
            """)
        _ = try await client.query("""
            INSERT INTO iap.credits (transaction_id, order_id, user_id, product_id, quantity, environment, job_id)
            SELECT (1000000 + i)::text, 'order-' || i, 'user-' || (i % 500), 'coins', 1, 'Production', i FROM generate_series(1, 5000) AS i
            """)
        try await client.withConnection { connection in
            try await connection.execute(script: "ANALYZE iap.job_queue; ANALYZE iap.job_requests; ANALYZE iap.credits; ANALYZE iap.orders; ANALYZE iap.alerts")
        }
        let text = "user-7"
        var statements: [(name: String, sql: String, binds: [any PostgresEncodable])] = [
            ("overview: jobs by state", QueueStatistics.snapshotSQL, [ConsoleApp.exactFinishedLimit]),
            ("overview: open alerts", AlertStatistics.openByKindSQL, []),
            ("overview: last hour", ThroughputStore.windowSQL, ["1 hour", "minute"]),
            ("overview: last day", ThroughputStore.windowSQL, ["1 day", "hour"]),
            ("job", JobDetails.jobSQL, [42]),
            ("job: ledger", JobDetails.ledgerSQL, [["1000042"], 42]),
            ("job: alerts", JobDetails.alertsSQL, [42]),
            ("user: orders", UserActivityStore.ordersSQL, [text, 100]),
            ("user: ledger", UserActivityStore.ledgerSQL, [text, 100]),
            ("user: alerts", UserActivityStore.alertsSQL, [text, 100]),
            ("user: jobs", UserActivityStore.jobsSQL, [text, 101, Int.max]),
            ("alerts: open orders to credit", OpenOrders.sql, [[text, "user-8"], ["coins", "coins"]]),
            ("overview: attention credited or closed since", SettledSince.countSQL, [SettledSince.limit]),
            ("jobs: closed unpaid", ClosedUnpaid.jobsSQL, [[42, 43]]),
            ("find: job", ConsoleFind.jobSQL, [42]),
            ("find: user", ConsoleFind.userSQL, [text]),
            ("find: orders", ConsoleFind.ordersSQL, ["order-9"]),
            ("find: ledger", ConsoleFind.ledgerSQL, ["1000042"]),
            ("find: alerts", ConsoleFind.alertsSQL, ["1000042"]),
            ("find: jobs by order", ConsoleFind.jobsByOrderSQL, ["order-9"]),
            ("alerts", AlertBoard.pageSQL, ["open", Int.max, 51, String?.none]),
            ("alerts of one kind", AlertBoard.pageSQL, ["open", Int.max, 51, "paid_not_credited"]),
            ("audit", AuditLog.pageSQL, [Int.max, 101]),
            ("alert credit: lock", SupportDesk.lockAlertSQL, [1]),
            ("user: Apple order lookups", UserActivityStore.lookupsSQL, [text, 100]),
            ("find: Apple order lookups", ConsoleFind.appleOrderSQL, ["MK5TTTVWJH"]),
            ("find: a user id in another case", ConsoleFind.usersAnyCaseSQL, ["User-7"]),
            ("find: Apple order's ledger rows", ConsoleFind.ledgerByTransactionsSQL, [["1000042", "1000043"]]),
            ("overview: workers leasing jobs", WorkersAlive.leasingSQL, []),
            ("overview: leader lease", WorkersAlive.leaderSQL, []),
            ("overview: last leader seen", WorkersAlive.lastLeaderSQL, []),
            ("form result: take", FlashStore.takeSQL, ["token", "csrf"]),
        ]
        for criteria in [JobSearchCriteria(), JobSearchCriteria(text: text), JobSearchCriteria(text: "1000042"),
                         JobSearchCriteria(text: "42", state: "done"), JobSearchCriteria(state: "attention", outcome: "paid_not_credited"),
                         JobSearchCriteria(kind: "receipt", before: 100), JobSearchCriteria(text: "order-9", outcome: "credited", before: 10)] {
            let (sql, binds) = JobSearch.sql(criteria)
            statements.append(("jobs search \(criteria)", sql, binds))
        }
        try await client.withConnection { connection in
            _ = try await connection.query("SET enable_seqscan = off")
            // The control: a query no index can answer still shows its scan, so the check below can fail.
            let control = try await connection.query("EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM iap.jobs WHERE last_error = $1", ["x"])
                .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
            let partial = Set(try await connection.query("SELECT indexname FROM pg_indexes WHERE schemaname = 'iap' AND indexdef LIKE '% WHERE %'")
                .map { try $0.decode(String.self, at: 0) })
            XCTAssertFalse(Self.unindexedScans(control, partialIndexes: partial).isEmpty, control)
            for statement in statements {
                let plan = try await connection.query("EXPLAIN (VERBOSE, COSTS OFF) " + statement.sql, statement.binds)
                    .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
                var scans = Self.unindexedScans(plan, partialIndexes: partial)
                // Done jobs have no side table (migration 0029): the overview counts them with a scan
                // that stops at the exact-count limit, and past it shows the table's estimate.
                if statement.name == "overview: jobs by state", plan.contains("Limit"), scans.count == 1, scans[0].contains("Seq Scan on iap.job_queue") {
                    scans = []
                }
                XCTAssertEqual(scans, [], "\(statement.name) scans a whole table:\n\(plan)")
            }
        }
        await client.close()
    }

    static let tables = ["iap.job_queue", "iap.job_requests", "iap.credits", "iap.orders", "iap.apple_order_lookups", "iap.console_form_results"]

    /// The plan's nodes that read one of `tables` whole: a sequential scan, or (since the view
    /// joins two tables, the planner may walk a whole index instead) a scan of an index that is
    /// not partial, with no Index Cond, unless a Limit stops it early (no Sort, Hash or Aggregate
    /// in between, which would read it to the end first).
    static func unindexedScans(_ plan: String, partialIndexes: Set<String>) -> [String] {
        var found: [String] = []
        var node: (line: String, cond: Bool)? = nil
        var ancestors: [(indent: Int, text: String)] = []
        func close() {
            if let node, !node.cond { found.append(node.line) }
            node = nil
        }
        for line in plan.split(separator: "\n").map(String.init) {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("->") || !line.hasPrefix(" ") else {
                if text.hasPrefix("Index Cond:") { node?.cond = true }
                continue
            }
            close()
            let indent = line.count - line.drop { $0 == " " }.count
            while let last = ancestors.last, last.indent >= indent { ancestors.removeLast() }
            defer { ancestors.append((indent, text)) }
            guard tables.contains(where: { text.contains(" on \($0) ") || text.hasSuffix(" on \($0)") }) else { continue }
            if text.contains("Seq Scan") { found.append(text); continue }
            guard text.contains("Index Scan") || text.contains("Index Only Scan") else { continue }
            let index = text.components(separatedBy: " using ").dropFirst().first?.components(separatedBy: " ").first ?? ""
            let stopper = ancestors.reversed().first { ancestor in
                ["Limit", "Sort", "Hash", "Aggregate"].contains { ancestor.text.contains($0) }
            }
            if !partialIndexes.contains(index) && stopper?.text.contains("Limit") != true { node = (text, false) }
        }
        close()
        return found
    }
}

/// The Reconciliation page's three statements over two years of days, 20 products a day and their gap
/// alerts among many others: each reads an index (no sequential scan with sequential scans priced out).
extension ConsoleQueryPlanTests {
    func testTheReconciliationPageReadsThroughIndexes() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query("""
            INSERT INTO iap.reconciliation_checks (day, status) SELECT '2025-01-01'::date + n, 'clean' FROM generate_series(0, 729) AS n
            """)
        _ = try await client.query("""
            INSERT INTO iap.reconciliation_days (day, product_id, apple_units, apple_returns, credited, revoked)
            SELECT '2025-01-01'::date + n, 'p' || p, 10, 0, 10, 0 FROM generate_series(0, 729) AS n, generate_series(1, 20) AS p
            """)
        _ = try await client.query("""
            INSERT INTO iap.alerts (kind, product_id, reason, details, state)
            SELECT CASE WHEN n % 20 = 0 THEN 'reconciliation_gap' ELSE 'paid_not_credited' END, 'p' || (n % 20), 'r',
                   jsonb_build_object('day', ('2025-01-01'::date + n % 730)::text), 'resolved'
            FROM generate_series(1, 20000) AS n
            """)
        try await client.withConnection { connection in
            try await connection.execute(script: "ANALYZE iap.reconciliation_checks; ANALYZE iap.reconciliation_days; ANALYZE iap.alerts")
            _ = try await connection.query("SET enable_seqscan = off")
            let days = (0..<14).map { "2026-12-\(String(format: "%02d", 31 - $0))" }
            let statements: [(String, String, [any PostgresEncodable], String)] = [
                ("days", ReconciliationBoard.daysSQL, ["2026-06-01", 15], "reconciliation_checks_pkey"),
                ("products", ReconciliationBoard.productsSQL, ["2026-05-18", "2026-05-31", ReconciliationBoard.productLimit], "reconciliation_days_pkey"),
                ("alerts", ReconciliationBoard.alertsSQL, [days, ReconciliationBoard.productLimit], "alerts_reconciliation_gap_by_day"),
            ]
            for (name, sql, binds, index) in statements {
                let plan = try await connection.query("EXPLAIN (VERBOSE, COSTS OFF) " + sql, binds)
                    .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
                XCTAssertFalse(plan.contains("Seq Scan"), "\(name):\n\(plan)")
                XCTAssertTrue(plan.contains(index), "\(name) reads \(index):\n\(plan)")
            }
        }
        await client.close()
    }
}
