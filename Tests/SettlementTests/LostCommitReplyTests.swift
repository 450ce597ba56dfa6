import EmbeddedPostgres
import Foundation
import Observability
import Postgres
import Queue
import Settlement
import TestSupport
import XCTest

/// Support's credit is told "done" exactly when it committed: a COMMIT whose reply is lost is
/// resolved through its witness on a fresh session, never reported as a failure that a retry
/// would then find "not open".
final class LostCommitReplyTests: XCTestCase {
    private struct Setup {
        let admin: PostgresClient
        let proxy: FaultProxy
        let desk: SupportDesk
        let logs: CapturingLogSink
        let alertID: Int
    }

    /// An open order and a paid_not_credited alert to credit to it; the desk talks through a
    /// proxy whose link the test can freeze, and a credit's COMMIT takes 0.6 s, so a link frozen
    /// during it loses the reply of a COMMIT that the server carries out.
    private func makeSetup() async throws -> Setup {
        let url = try await TestDatabase.fresh()
        let admin = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await admin.query("INSERT INTO iap.orders (order_id, user_id, product_id, status) VALUES ('order-1', 'user-1', 'coins', 'open')")
        let alertID = try await admin.query("""
            INSERT INTO iap.alerts (kind, transaction_id, user_id, product_id, reason, details)
            VALUES ('paid_not_credited', '2000000100', 'user-1', 'coins', 'no_open_order', '{"quantity": "1", "environment": "Production"}')
            RETURNING id
            """)[0].decode(Int.self, at: 0)
        // A deferred trigger runs at COMMIT: the COMMIT itself takes 0.6 s on the server.
        _ = try await admin.query("""
            CREATE FUNCTION public.slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.6); RETURN NULL; END $$
            """)
        _ = try await admin.query("""
            CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON iap.credits DEFERRABLE INITIALLY DEFERRED
            FOR EACH ROW EXECUTE FUNCTION public.slow_commit()
            """)
        let proxy = try FaultProxy(targetPort: try XCTUnwrap(URLComponents(string: url)?.port))
        var configuration = PostgresConfiguration(conninfo: proxy.url(replacingIn: url), applicationName: "lost-reply-test")
        configuration.callTimeout = 1.5
        configuration.connectTimeout = 2
        configuration.idleInTransactionTimeout = 1
        let logs = CapturingLogSink()
        let desk = SupportDesk(client: PostgresClient(configuration: configuration, maxConnections: 2),
                               metrics: SettlementMetrics(registry: MetricsRegistry()), logger: Logger(sink: logs))
        return Setup(admin: admin, proxy: proxy, desk: desk, logs: logs, alertID: alertID)
    }

    private func ledgerRows(_ setup: Setup) async throws -> Int {
        try await setup.admin.query("SELECT count(*) FROM iap.credits WHERE transaction_id = '2000000100'")[0].decode(Int.self, at: 0)
    }

    private func alertState(_ setup: Setup) async throws -> String {
        try await setup.admin.query("SELECT state FROM iap.alerts WHERE id = $1", [setup.alertID])[0].decode(at: 0)
    }

    func testACreditWhoseCommitReplyIsLostIsReportedDone() async throws {
        let setup = try await makeSetup()
        defer { setup.proxy.stop() }
        let proxy = setup.proxy
        let result = try await setup.desk.credit(alertID: setup.alertID, orderID: "order-1", actor: "anna") { _, _ in
            // The COMMIT goes out right after this and takes 0.6 s: the link freezes meanwhile.
            Task {
                try? await Task.sleep(for: .milliseconds(150))
                proxy.freezeOpenConnections()
            }
        }
        XCTAssertEqual(result, ManualCreditResult.credited)
        let ledger = try await ledgerRows(setup)
        let state = try await alertState(setup)
        XCTAssertEqual(ledger, 1)
        XCTAssertEqual(state, "resolved")
        XCTAssertEqual(setup.logs.lines.filter { $0.contains("event=credited_by_support") }.count, 1, "\(setup.logs.lines)")
        await setup.admin.close()
    }

    func testACreditWhoseCommitNeverArrivedIsReportedFailedAndCanBeRetried() async throws {
        let setup = try await makeSetup()
        defer { setup.proxy.stop() }
        let proxy = setup.proxy
        do {
            _ = try await setup.desk.credit(alertID: setup.alertID, orderID: "order-1", actor: "anna") { _, _ in
                proxy.freezeOpenConnections() // before the COMMIT leaves: the server never sees it
            }
            XCTFail("a credit that never committed was reported done")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isConnectionLost, "\(error)")
        }
        let ledger = try await ledgerRows(setup)
        let state = try await alertState(setup)
        XCTAssertEqual(ledger, 0)
        XCTAssertEqual(state, "open")
        XCTAssertEqual(setup.logs.lines.filter { $0.contains("event=credited_by_support") }.count, 0)
        // The abandoned transaction can never commit now: the retry credits once.
        let retried = try await setup.desk.credit(alertID: setup.alertID, orderID: "order-1", actor: "anna")
        XCTAssertEqual(retried, ManualCreditResult.credited)
        let after = try await ledgerRows(setup)
        XCTAssertEqual(after, 1)
        await setup.admin.close()
    }
}
