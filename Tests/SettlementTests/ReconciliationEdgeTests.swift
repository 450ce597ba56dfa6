import AppStore
import AppleSim
import Foundation
import HTTP
import Observability
import Postgres
import Queue
@testable import Reconciliation
@testable import Settlement
import TestSupport
import XCTest

/// Reconciliation's edges: a day Apple has no report for (no sales, or not yet published), returns that
/// disagree with our revocations, and a shortfall whose buyers nobody can name.
final class ReconciliationEdgeTests: XCTestCase {
    /// Past 8 a.m. Pacific the next day whatever the clock says: its report is due.
    private let pastDay = ReportDay(containing: Date().addingTimeInterval(-3 * 86_400))

    func testADayWithNoSalesIsReconciledAndACreditOnItIsAGap() async throws {
        let h = try await ReconciliationHarness.start()
        let noon = pastDay.start.addingTimeInterval(12 * 3600)
        let empty = try await h.reconciler.reconcile(pastDay)
        XCTAssertTrue(empty.available, "no report past its publication time: a day with no sales")
        XCTAssertTrue(empty.noSales)
        XCTAssertEqual(empty.products, [])
        let emptyOutcome = try await h.outcome(pastDay)
        XCTAssertEqual(emptyOutcome, "clean/true")

        try await h.credit("forged-1", product: "coins_100", purchasedAt: noon)
        let credited = try await h.reconciler.reconcile(pastDay)
        XCTAssertEqual(credited.products, [ReconciledProduct(productID: "coins_100", appleUnits: 0, appleReturns: 0, credited: 1, revoked: 0)])
        XCTAssertEqual(credited.alertsRaised, 1)
        let reason = try await h.client.query("SELECT reason FROM iap.alerts WHERE kind = 'reconciliation_gap'")[0].decode(String.self, at: 0)
        XCTAssertEqual(reason, "the ledger credited 1 unit(s) of coins_100 on \(pastDay) but Apple sold none")
        let creditedOutcome = try await h.outcome(pastDay)
        XCTAssertEqual(creditedOutcome, "gap/true")

        _ = try await h.client.query("UPDATE iap.credits SET purchased_at = $1", [pastDay.start.addingTimeInterval(-60)])
        let clean = try await h.reconciler.reconcile(pastDay)
        XCTAssertEqual(clean.alertsResolved, 1)
        let cleanOutcome = try await h.outcome(pastDay)
        XCTAssertEqual(cleanOutcome, "clean/true")
        await h.stop()
    }

    /// A reconciliation run whose leader's term ended in the database (another process leads now)
    /// writes nothing: no gap alert, no day outcome.
    func testAReconciliationOfAnEndedTermChangesNothing() async throws {
        let h = try await ReconciliationHarness.start()
        try await h.credit("forged-2", product: "coins_100", purchasedAt: pastDay.start.addingTimeInterval(3600))
        let term = try await TakenOverTerm.make(h.client)
        do {
            _ = try await h.reconciler.reconcile(pastDay, term: term)
            XCTFail("a reconciliation ran under an ended term")
        } catch {
            XCTAssertTrue(error is LeaseEnded, "\(error)")
        }
        let gaps = try await h.openGaps()
        XCTAssertEqual(gaps, [:])
        let outcome = try await h.outcome(pastDay)
        XCTAssertNil(outcome)
        await h.stop()
    }

    func testAnUnpublishedDayIsNotAvailableAndTheNextRunReconcilesIt() async throws {
        let h = try await ReconciliationHarness.start()
        let noon = pastDay.start.addingTimeInterval(12 * 3600)
        h.sim.serverAPI.injectUnuploadedSales(productID: "coins_100", count: 2, purchaseDate: noon)
        h.sim.serverAPI.salesBook.reportDelay = 10 * 86_400
        let early = try await h.reconciler.reconcile(pastDay)
        XCTAssertFalse(early.available, "Apple says the report is not available yet: retried later, not a day without sales")
        let earlyOutcome = try await h.outcome(pastDay)
        XCTAssertEqual(earlyOutcome, "not_available/false")
        let openEarly = try await h.openGaps()
        XCTAssertEqual(openEarly, [:])

        h.sim.serverAPI.salesBook.reportDelay = 0
        let published = try await h.reconciler.reconcile(pastDay)
        XCTAssertEqual(published.products.map(\.gap), [2])
        let publishedOutcome = try await h.outcome(pastDay)
        XCTAssertEqual(publishedOutcome, "gap/false")
        await h.stop()
    }

    func testReturnsApplesBooksShowAndTheLedgerDidNotRevokeKeepTheDayOpen() async throws {
        let h = try await ReconciliationHarness.start()
        let noon = pastDay.start.addingTimeInterval(12 * 3600)
        let sold = h.sim.serverAPI.injectUnuploadedSales(productID: "pro_pack", count: 2, purchaseDate: noon)
        for id in sold { try await h.credit(id, product: "pro_pack", purchasedAt: noon) }
        // Apple refunded the first that evening; the refund notification never reached us.
        h.sim.serverAPI.salesBook.record(transactionID: sold[0], productID: "pro_pack", quantity: 1, purchaseDate: noon,
                                         refundDate: noon.addingTimeInterval(3600))

        let first = try await h.reconciler.reconcile(pastDay)
        XCTAssertEqual(first.products, [ReconciledProduct(productID: "pro_pack", appleUnits: 2, appleReturns: 1, credited: 2, revoked: 0)])
        XCTAssertEqual(first.products[0].gap, 0)
        XCTAssertEqual(first.alertsRaised, 1, "the units agree, the returns do not")
        let details = try await h.client.query("""
            SELECT details ->> 'apple_returns', details ->> 'revoked', details ->> 'returns_difference', reason
            FROM iap.alerts WHERE kind = 'reconciliation_gap' AND state = 'open'
            """)[0]
        XCTAssertEqual(try details.decode(String.self, at: 0), "1")
        XCTAssertEqual(try details.decode(String.self, at: 1), "0")
        XCTAssertEqual(try details.decode(String.self, at: 2), "1")
        XCTAssertEqual(try details.decode(String.self, at: 3), "Apple counted 1 return(s) of pro_pack on \(pastDay); the ledger revoked 0")

        _ = try await h.client.query("UPDATE iap.credits SET revoked_at = $2 WHERE transaction_id = $1", [sold[0], noon.addingTimeInterval(3700)])
        let matched = try await h.reconciler.reconcile(pastDay)
        XCTAssertEqual(matched.gaps, [])
        XCTAssertEqual(matched.alertsResolved, 1)
        let outcome = try await h.outcome(pastDay)
        XCTAssertEqual(outcome, "clean/false")
        await h.stop()
    }

    /// Apple sold 3 units no client uploaded, by buyers with no open order or alert: the alert says nobody was found,
    /// and the one notification Apple failed to deliver that day is pulled from Get Notification History.
    func testAShortfallWhoseBuyersCannotBeFoundSaysSoInTheAlert() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        let sim = f.simulator.serverAPI
        let transport = try SocketHTTPTransport()
        let reports = try SalesReportClient.against(f.simulator, transport: transport)
        let logger = Logger(minimumLevel: .debug, sink: f.logs)
        let reconciler = Reconciler(client: f.client, reports: reports, alerts: AlertRecorder(logger: logger, metrics: f.metrics, webhook: nil),
                                    logger: logger, recovery: GapRecovery(
                                        client: f.client, api: try XCTUnwrap(f.api), logger: logger,
                                        notifications: NotificationHistoryPuller(client: f.client, api: try XCTUnwrap(f.api), metrics: f.metrics, logger: logger)))
        let noon = pastDay.start.addingTimeInterval(12 * 3600)
        let sold = sim.injectUnuploadedSales(productID: "coins_100", count: 3, purchaseDate: noon)
        let transaction = JWSTransactionPayload(transactionId: sold[0], originalTransactionId: sold[0], bundleId: SettlementFixture.bundleID,
                                                productId: "coins_100", purchaseDate: noon, environment: "Production")
        let undelivered = try sim.signingChain.signNotification(type: "ONE_TIME_CHARGE", uuid: UUID().uuidString, transaction: transaction,
                                                               bundleID: SettlementFixture.bundleID, appAppleID: 4242, environment: .production,
                                                               signedDate: noon)
        sim.recordNotification(undelivered, sentAt: noon.addingTimeInterval(5), delivered: false)

        let result = try await reconciler.reconcile(pastDay)
        XCTAssertEqual(result.recovered["coins_100"], GapRecovery.Counts())
        XCTAssertEqual(result.notificationsEnqueued, 1)
        let notificationJobs = try await f.client.query("SELECT count(*) FROM iap.jobs WHERE kind = 'notification'")[0].decode(Int.self, at: 0)
        XCTAssertEqual(notificationJobs, 1)
        let details = try await f.client.query("""
            SELECT details ->> 'buyers_found', details ->> 'transactions_enqueued', details ->> 'difference'
            FROM iap.alerts WHERE kind = 'reconciliation_gap' AND state = 'open'
            """)[0]
        XCTAssertEqual(try details.decode(String.self, at: 0), "0")
        XCTAssertEqual(try details.decode(String.self, at: 1), "0")
        XCTAssertEqual(try details.decode(String.self, at: 2), "3")
        await transport.shutdown()
        await f.stop()
    }
}
