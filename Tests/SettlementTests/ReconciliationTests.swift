import AppStore
import AppleSim
import Foundation
import HTTP
import Observability
import Postgres
@testable import Reconciliation
@testable import Settlement
import TestSupport
import XCTest

/// Reconciliation against a real database and apple-sim's Sales and Trends report over loopback: a product-day
/// where Apple sold more (or we credited more) opens one `reconciliation_gap` alert, re-runs change
/// nothing, and the alert resolves once the ledger matches.
final class ReconciliationTests: XCTestCase {
    func testAGapOpensOneAlertReRunsChangeNothingAndAMatchResolvesIt() async throws {
        let h = try await ReconciliationHarness.start()
        let day = ReportDay(containing: Date().addingTimeInterval(-86_400))
        let noon = day.start.addingTimeInterval(12 * 3600)
        let sold = h.sim.serverAPI.injectUnuploadedSales(productID: "coins_100", count: 5, purchaseDate: noon)
        for id in sold.prefix(3) { try await h.credit(id, product: "coins_100", purchasedAt: noon) }
        try await h.credit("forged-1", product: "coins_500", purchasedAt: noon)                    // Apple never sold it
        try await h.credit("sandbox-1", product: "coins_100", purchasedAt: noon, environment: "Sandbox")  // not in Apple's books
        try await h.credit("other-day", product: "coins_100", purchasedAt: day.end.addingTimeInterval(60))

        let first = try await h.reconciler.reconcile(day)
        XCTAssertTrue(first.available)
        XCTAssertEqual(first.products, [
            ReconciledProduct(productID: "coins_100", appleUnits: 5, appleReturns: 0, credited: 3, revoked: 0),
            ReconciledProduct(productID: "coins_500", appleUnits: 0, appleReturns: 0, credited: 1, revoked: 0),
        ])
        XCTAssertEqual(first.products.map(\.gap), [2, -1])
        XCTAssertEqual(first.alertsRaised, 2)
        let opened = try await h.openGaps()
        XCTAssertEqual(opened, ["coins_100": "2", "coins_500": "-1"])
        XCTAssertEqual(h.logs.lines.filter { $0.contains("reconciliation_gap") }.count, 2)
        XCTAssertEqual(first.json, #"{"day":"\#(day)","available":true,"products":["#
                       + #"{"product_id":"coins_100","apple_units":5,"apple_returns":0,"credited":3,"revoked":0,"gap":2},"#
                       + #"{"product_id":"coins_500","apple_units":0,"apple_returns":0,"credited":1,"revoked":0,"gap":-1}]}"#)

        let again = try await h.reconciler.reconcile(day)
        XCTAssertEqual(again.products, first.products)
        XCTAssertEqual(again.alertsRaised, 0, "a re-run updates the open alert, it does not open another")
        let alertCount = try await h.client.query("SELECT count(*) FROM iap.alerts")[0].decode(Int.self, at: 0)
        XCTAssertEqual(alertCount, 2)

        // The two missing purchases get credited; the forged credit is moved off the day by support.
        for id in sold.suffix(2) { try await h.credit(id, product: "coins_100", purchasedAt: noon) }
        _ = try await h.client.query("UPDATE iap.credits SET purchased_at = $1 WHERE transaction_id = 'forged-1'", [day.start.addingTimeInterval(-60)])
        let clean = try await h.reconciler.reconcile(day)
        XCTAssertEqual(clean.gaps, [])
        XCTAssertEqual(clean.alertsResolved, 2)
        let stillOpen = try await h.openGaps()
        XCTAssertEqual(stillOpen, [:])
        let rows = try await h.client.query("""
            SELECT product_id, apple_units, credited FROM iap.reconciliation_days WHERE day = $1::date ORDER BY product_id
            """, [day.description]).map { "\(try $0.decode(String.self, at: 0))=\(try $0.decode(Int.self, at: 1))/\(try $0.decode(Int.self, at: 2))" }
        XCTAssertEqual(rows, ["coins_100=5/5"], "coins_500 is on neither side of the day any more")
        await h.stop()
    }

    func testRefundsCountOnTheirOwnDayAndAnUnpublishedDayIsNotAvailable() async throws {
        let h = try await ReconciliationHarness.start()
        let day = ReportDay(containing: Date().addingTimeInterval(-86_400))
        let noon = day.start.addingTimeInterval(12 * 3600)
        let ms = Int64(noon.timeIntervalSince1970 * 1000)
        // apple-sim answers verifyReceipt for a purchase refunded the same afternoon.
        let receipt = SimReceipt(bundleID: "com.example.game", transactions: [
            .init(transactionID: "refunded-1", productID: "pro_pack", purchaseDateMs: ms, cancellationDateMs: ms + 3_600_000),
        ]).mint()
        let request = HTTPClientRequest(method: "POST", url: h.sim.productionURL, headers: [("Content-Type", "application/json")],
                                        body: Array(#"{"receipt-data":"\#(receipt)"}"#.utf8))
        let answered = try await h.transport.send(request, timeout: .seconds(5))
        XCTAssertEqual(answered.status, 200)
        try await h.credit("refunded-1", product: "pro_pack", purchasedAt: noon, revokedAt: noon.addingTimeInterval(3600))

        let result = try await h.reconciler.reconcile(day)
        XCTAssertEqual(result.products, [ReconciledProduct(productID: "pro_pack", appleUnits: 1, appleReturns: 1, credited: 1, revoked: 1)])
        XCTAssertEqual(result.alertsRaised, 0)

        let today = try await h.reconciler.reconcile(ReportDay(containing: Date()))
        XCTAssertFalse(today.available)
        XCTAssertEqual(today.json, #"{"day":"\#(ReportDay(containing: Date()))","available":false,"products":[]}"#)
        await h.stop()
    }

    /// Finding a gap's buyers reads the open orders of the product-day through their 0018 index.
    func testTheBuyersOfAGapAreFoundThroughAnIndex() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        _ = try await connection.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id, status, created_at)
            SELECT 'o-' || n, 'u-' || n, 'p' || (n % 7), CASE WHEN n % 10 = 0 THEN 'open' ELSE 'credited' END, now() - n * interval '60 seconds'
            FROM generate_series(1, 40000) AS n
            """)
        try await connection.execute(script: "ANALYZE iap.orders")
        let day = ReportDay(containing: Date().addingTimeInterval(-10 * 86_400))
        let plan = try await connection.pipeline([PostgresStatement(GapBuyers.buyersSQL, ["p3", day.start, day.end, 200]).explained()])[0]
            .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
        XCTAssertTrue(plan.contains("orders_open_by_product_day"), plan)
        XCTAssertFalse(plan.contains("Seq Scan on orders"), plan)
    }

    /// The ledger aggregation reads the two 0018 indexes, not the table, among 40,000 credits over 40 days.
    func testTheLedgerAggregationIsIndexBacked() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        _ = try await connection.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id, status) SELECT 'o-' || n, 'u-' || n, 'p' || (n % 7), 'credited'
            FROM generate_series(1, 40000) AS n
            """)
        _ = try await connection.query("""
            INSERT INTO iap.credits (transaction_id, order_id, user_id, product_id, quantity, environment, purchased_at, revoked_at)
            SELECT 't-' || n, 'o-' || n, 'u-' || n, 'p' || (n % 7), 1, 'Production', now() - n * interval '86 seconds',
                   CASE WHEN n % 50 = 0 THEN now() - n * interval '80 seconds' END
            FROM generate_series(1, 40000) AS n
            """)
        try await connection.execute(script: "ANALYZE iap.credits")
        let day = ReportDay(containing: Date().addingTimeInterval(-10 * 86_400))
        let statement = ReconciliationStore.ledgerStatement(day)
        let plan = try await connection.pipeline([statement.explained()])[0].map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
        XCTAssertTrue(plan.contains("credits_by_purchase"), plan)
        XCTAssertTrue(plan.contains("credits_by_revocation"), plan)
        XCTAssertFalse(plan.contains("Seq Scan"), plan)
        let units = try await connection.pipeline([statement])[0].map { try $0.decode(Int.self, at: 1) }.reduce(0, +)
        XCTAssertGreaterThan(units, 900)
        XCTAssertLessThan(units, 1100)
    }
}

/// The leader's duty: which days it compares, and the metrics it leaves.
final class ReconciliationTaskTests: XCTestCase {
    func testTheLeaderComparesTheFinishedPacificDaysAndExportsTheGap() {
        // 2026-03-09 06:30 UTC is still the 8th in Los Angeles: the finished days are the 6th and 7th.
        let days = ReconciliationTask.finishedDays(before: Date(timeIntervalSince1970: 1_773_037_800), count: 2)
        XCTAssertEqual(days.map(\.description), ["2026-03-06", "2026-03-07"])

        let registry = MetricsRegistry()
        let metrics = ReconciliationMetrics(registry: registry)
        let day = ReportDay("2026-03-07")!
        metrics.record(ReconciliationResult(day: day, available: true, products: [
            ReconciledProduct(productID: "coins_100", appleUnits: 40, appleReturns: 1, credited: 37, revoked: 1),
        ]))
        metrics.record(ReconciliationResult(day: ReportDay("2026-03-06")!, available: false, products: []))
        XCTAssertEqual(metrics.gapUnits.labels("coins_100").value, 3)
        XCTAssertEqual(metrics.lastDay.labels().value, day.start.timeIntervalSince1970, "an older or unpublished day does not move it back")
    }
}
