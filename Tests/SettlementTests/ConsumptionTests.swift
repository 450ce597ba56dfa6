import AppStore
import AppleSim
import Foundation
import Postgres
import Settlement
import TestSupport
import XCTest

/// Refund requests answered with Send Consumption Information (v2) from our ledger and
/// the web tier's `iap.consumption_info`, against apple-sim over HTTP.
final class ConsumptionTests: XCTestCase {
    /// The web tier's own answer: consent for everything but "c-noconsent", 42 % consumed, a sample shown.
    static let webTierInfo = """
        CREATE OR REPLACE FUNCTION iap.consumption_info(user_id text, transaction_id text)
        RETURNS TABLE (customer_consented boolean, consumption_percentage integer, sample_content_provided boolean)
        LANGUAGE sql STABLE AS $$ SELECT true, 42000, true WHERE $2 <> 'c-noconsent' $$
        """

    private func transaction(_ id: String, token: UUID? = nil) -> JWSTransactionPayload {
        JWSTransactionPayload(transactionId: id, originalTransactionId: id, bundleId: SettlementFixture.bundleID, productId: "coins_100",
                              purchaseDate: Date(), appAccountToken: token?.uuidString, environment: "Production")
    }

    /// Apple's CONSUMPTION_REQUEST for `id`, enqueued; returns the consumption job it schedules.
    private func refundRequest(_ f: SettlementFixture, _ id: String, sentAt: Date = Date()) async throws -> (notification: Int, consumption: Int) {
        let uuid = UUID().uuidString
        let signed = try f.simulator.serverAPI.signingChain.signNotification(
            type: "CONSUMPTION_REQUEST", uuid: uuid, transaction: transaction(id), bundleID: SettlementFixture.bundleID, appAppleID: 4242,
            environment: .production, signedDate: sentAt)
        let job = try await f.client.query("SELECT iap.enqueue_notification($1)", [signed])[0].decode(Int.self, at: 0)
        let notification = try await f.finished(job)
        XCTAssertEqual(notification.outcome, "acknowledged")
        let consumption = try await f.client.query("SELECT job_id FROM iap.consumption_requests WHERE notification_uuid = $1::uuid",
                                                   [uuid.lowercased()])[0].decode(Int.self, at: 0)
        return (job, consumption)
    }

    private func credit(_ f: SettlementFixture, _ id: String, user: String) async throws {
        let token = UUID()
        try await f.order("order-\(id)", user: user, product: "coins_100", token: token)
        let jws = try f.simulator.serverAPI.mintTransaction(transaction(id, token: token))
        let job = try await f.client.query("SELECT iap.enqueue_transaction($1, $2, $3)", [user, "order-\(id)", jws])[0].decode(Int.self, at: 0)
        let credited = try await f.finished(job)
        XCTAssertEqual(credited.outcome, "credited")
    }

    private func sent(_ f: SettlementFixture, _ id: String) -> [ConsumptionRequest] {
        f.simulator.serverAPI.consumptionAnswers.filter { $0.transactionID == id }.map(\.request)
    }

    func testAnswersComeFromTheLedgerAndTheWebTiersFunction() async throws {
        let f = try await SettlementFixture(serverAPI: true, refundPreference: .decline)
        _ = try await f.client.query(Self.webTierInfo)
        // Credited and not refunded: DELIVERED, with the web tier's percentage passed through.
        try await credit(f, "c-credited", user: "cora")
        let delivered = try await f.finished(try await refundRequest(f, "c-credited").consumption)
        XCTAssertEqual(delivered.state, "done")
        XCTAssertEqual(delivered.outcome, "consumption_sent")
        XCTAssertEqual(sent(f, "c-credited"), [ConsumptionRequest(customerConsented: true, consumptionPercentage: 42000,
                                                                  deliveryStatus: .delivered, refundPreference: .decline,
                                                                  sampleContentProvided: true)])
        // Never credited: undelivered, nothing consumed.
        _ = try f.simulator.serverAPI.mintTransaction(transaction("c-never"))
        let never = try await f.finished(try await refundRequest(f, "c-never").consumption)
        XCTAssertEqual(never.outcome, "consumption_sent")
        XCTAssertEqual(sent(f, "c-never").first?.deliveryStatus, .undeliveredOther)
        XCTAssertEqual(sent(f, "c-never").first?.consumptionPercentage, 0)
        // Credited, then refunded: undelivered too.
        try await credit(f, "c-revoked", user: "cora")
        _ = try await f.client.query("UPDATE iap.credits SET revoked_at = now(), revocation_reason = '0' WHERE transaction_id = 'c-revoked'")
        _ = try await f.finished(try await refundRequest(f, "c-revoked").consumption)
        XCTAssertEqual(sent(f, "c-revoked").first?.deliveryStatus, .undeliveredOther)
        XCTAssertEqual(sent(f, "c-revoked").first?.consumptionPercentage, 0)
        // No consent: nothing sent, acknowledged.
        try await credit(f, "c-noconsent", user: "cora")
        let refused = try await f.finished(try await refundRequest(f, "c-noconsent").consumption)
        XCTAssertEqual(refused.state, "done")
        XCTAssertEqual(refused.outcome, "acknowledged")
        XCTAssertTrue(sent(f, "c-noconsent").isEmpty)
        let states = try await f.client.query("SELECT transaction_id, state FROM iap.consumption_requests ORDER BY transaction_id")
            .map { "\(try $0.decode(String.self, at: 0))=\(try $0.decode(String.self, at: 1))" }
        XCTAssertEqual(states, ["c-credited=sent", "c-never=sent", "c-noconsent=no_consent", "c-revoked=sent"])
        await f.stop()
    }

    func testTheDefaultFunctionMeansNoConsentAndNothingIsSent() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        try await credit(f, "c-default", user: "dina")
        let answer = try await f.finished(try await refundRequest(f, "c-default").consumption)
        XCTAssertEqual(answer.outcome, "acknowledged")
        XCTAssertEqual(f.simulator.serverAPI.consumptionAnswers.count, 0)
        await f.stop()
    }

    func testApple5xxIsRetriedAndAClosingWindowRaisesAnAlert() async throws {
        let f = try await SettlementFixture(maxAttempts: 6, serverAPI: true)
        _ = try await f.client.query(Self.webTierInfo)
        try await credit(f, "c-flaky", user: "eli")
        f.simulator.serverAPI.inject(SimAPIFault(status: 503, count: 2, family: .consumption))
        let job = try await refundRequest(f, "c-flaky").consumption
        let flaky = try await f.finished(job)
        XCTAssertEqual(flaky.outcome, "consumption_sent")
        let attempts = try await f.client.query("SELECT attempts FROM iap.jobs WHERE id = $1", [job])[0].decode(Int.self, at: 0)
        XCTAssertEqual(attempts, 3, "two 503s, then sent")
        XCTAssertEqual(sent(f, "c-flaky").count, 1)

        // Apple asked 11h50m ago: the window is about to close, so nothing is sent and a human is told.
        try await credit(f, "c-late", user: "eli")
        let late = try await f.finished(try await refundRequest(f, "c-late", sentAt: Date().addingTimeInterval(-11 * 3600 - 50 * 60)).consumption)
        XCTAssertEqual(late.state, "attention")
        XCTAssertEqual(late.outcome, "consumption_failed")
        XCTAssertTrue(sent(f, "c-late").isEmpty)
        let alerts = try await f.openAlerts("consumption_failed")
        XCTAssertEqual(alerts.map(\.transaction), ["c-late"])
        XCTAssertEqual(alerts.first?.reason, "window_closing")
        await f.stop()
    }
}
