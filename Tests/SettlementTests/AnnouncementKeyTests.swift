import Foundation
import Observability
import Postgres
import Queue
import Settlement
import TestSupport
import XCTest

/// Every announcement carries `announcement_key`, made of the fact it announces (Apple's
/// transaction id, the job, the product-day) and never of a row id, so a receiver deduplicates
/// across a failover that made the fact again under new ids.
final class AnnouncementKeyTests: XCTestCase {
    func testAlertKeysNameTheFactNotTheRow() {
        XCTAssertEqual(NewAlert(kind: .paidNotCredited, transactionID: "2000000001", jobID: 7, reason: "no_open_order").announcementKey,
                       "paid_not_credited:2000000001")
        XCTAssertEqual(NewAlert(kind: .receiptReplay, transactionID: "2000000001", jobID: 8, reason: "other_user").announcementKey,
                       "receipt_replay:2000000001")
        XCTAssertEqual(NewAlert(kind: .configError, jobID: 9, reason: "apple_status_21004").announcementKey, "config_error:job:9")
        XCTAssertEqual(NewAlert(kind: .reconciliationGap, productID: "coins", reason: "short",
                                details: ["product": "coins", "day": "2026-11-20"]).announcementKey,
                       "reconciliation_gap:coins:2026-11-20")
    }

    /// The log line and the re-emission of an alert carry the key it was first announced with.
    func testAReEmittedAlertKeepsItsKey() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        let logs = CapturingLogSink()
        let recorder = AlertRecorder(logger: Logger(sink: logs), metrics: SettlementMetrics(registry: MetricsRegistry()), webhook: nil)
        let alerts = [
            NewAlert(kind: .paidNotCredited, transactionID: "2000000002", userID: "u", productID: "coins", reason: "no_open_order"),
            NewAlert(kind: .reconciliationGap, productID: "coins", reason: "short", details: ["product": "coins", "day": "2026-11-20"]),
        ]
        let raised: [(NewAlert, Int)] = try await client.transaction { connection in
            var raised: [(NewAlert, Int)] = []
            for alert in alerts {
                let id = try await recorder.raise(alert, on: connection)
                raised.append((alert, try XCTUnwrap(id)))
            }
            return raised
        }
        for (alert, id) in raised { recorder.announce(alert, id: id, repeated: false) }
        _ = try await client.query("UPDATE iap.alerts SET last_notified_at = now() - interval '1 hour'")
        try await AlertReemitter(client: client, interval: 1, repeatAfter: 60, alerts: recorder).run(term: LeaderTerm.held(until: .now + .seconds(60)))

        let keys = logs.lines.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("announcement_key=") }.map { String($0.dropFirst("announcement_key=".count)) }
        }
        XCTAssertEqual(keys.sorted(), ["paid_not_credited:2000000002", "paid_not_credited:2000000002",
                                       "reconciliation_gap:coins:2026-11-20", "reconciliation_gap:coins:2026-11-20"], "\(logs.lines)")
        XCTAssertEqual(logs.lines.filter { $0.contains("repeat=true") }.count, 2)
        await client.close()
    }
}
