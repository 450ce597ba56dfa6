import AppStore
import AppleSim
import Foundation
import HTTP
import Ingest
import Observability
import Postgres
import StoreKitCrypto
import TestSupport
import XCTest

/// StoreKit 2: signed transactions from the app, and Apple's server notifications posted
/// to the ingest API — verified against the simulator's chain, credited, revoked, restored.
final class StoreKitFlowTests: XCTestCase {
    var chain: SimSigningChain!

    func transaction(_ id: String, product: String = "coins_100", token: UUID?, bundle: String = SettlementFixture.bundleID,
                     revoked: Bool = false, environment: String = "Production") -> JWSTransactionPayload {
        JWSTransactionPayload(transactionId: id, originalTransactionId: id, bundleId: bundle, productId: product, quantity: 1,
                              purchaseDate: Date(), signedDate: Date(), revocationDate: revoked ? Date() : nil,
                              revocationReason: revoked ? "1" : nil, appAccountToken: token?.uuidString, environment: environment)
    }

    func testSignedTransactionsFromTheApp() async throws { try await DatabaseRoute.each(checkSignedTransactionsFromTheApp) }

    private func checkSignedTransactionsFromTheApp() async throws {
        let f = try await SettlementFixture()
        chain = f.simulator.serverAPI.signingChain
        let token = UUID()
        try await f.order("sk-1", user: "kim", product: "coins_100", token: token)
        try await f.order("sk-2", user: "kim", product: "coins_100")
        func enqueue(_ jws: String, order: String? = nil) async throws -> Int {
            try await f.client.query("SELECT iap.enqueue_transaction($1, $2, $3)", ["kim", order, jws])[0].decode(Int.self, at: 0)
        }
        let valid = try chain.signTransaction(transaction("sk-t1", token: token))
        let credited = try await f.finished(try await enqueue(valid))
        XCTAssertEqual(credited.outcome, "credited")
        let ledger = try await f.ledger()
        XCTAssertEqual(ledger["sk-t1"], "sk-1", "matched through appAccountToken")

        var parts = try chain.signTransaction(transaction("sk-t2", token: nil)).split(separator: ".").map(String.init)
        parts[1] = JWSBase64URL.encode(Array(#"{"transactionId":"sk-t2","productId":"coins_100","bundleId":"com.example.game","environment":"Production","quantity":99}"#.utf8))
        let tampered = try await f.finished(try await enqueue(parts.joined(separator: "."), order: "sk-2"))
        XCTAssertEqual(tampered.outcome, "invalid_signature")
        XCTAssertEqual(tampered.state, "failed")
        XCTAssertTrue(tampered.lastError?.hasPrefix("signature_invalid") == true, tampered.lastError ?? "")

        let wrongBundle = try await f.finished(try await enqueue(try chain.signTransaction(transaction("sk-t3", token: nil, bundle: "com.other")), order: "sk-2"))
        XCTAssertEqual(wrongBundle.outcome, "wrong_bundle")
        let sandbox = try await f.finished(try await enqueue(try chain.signTransaction(transaction("sk-t4", token: nil, environment: "Sandbox")), order: "sk-2"))
        XCTAssertEqual(sandbox.outcome, "wrong_environment")
        let refunded = try await f.finished(try await enqueue(try chain.signTransaction(transaction("sk-t5", token: nil, revoked: true)), order: "sk-2"))
        XCTAssertEqual(refunded.outcome, "refunded")
        let untrusted = try SimSigningChain()
        let foreign = try await f.finished(try await enqueue(try untrusted.signTransaction(transaction("sk-t6", token: nil)), order: "sk-2"))
        XCTAssertEqual(foreign.outcome, "invalid_signature")
        XCTAssertTrue(foreign.lastError?.hasPrefix("chain_invalid") == true, foreign.lastError ?? "")
        let status = try await f.orderStatus("sk-2")
        XCTAssertEqual(status, "open")
        await f.stop()
    }

    func testNotificationsOverHTTPChargeRefundRestoreAndDuplicates() async throws { try await DatabaseRoute.each(checkNotificationsOverHTTPChargeRefundRestoreAndDuplicates) }

    private func checkNotificationsOverHTTPChargeRefundRestoreAndDuplicates() async throws {
        let f = try await SettlementFixture()
        chain = f.simulator.serverAPI.signingChain
        let ingest = try IngestServer(configuration: try IngestServer.Configuration(listen: "127.0.0.1:0", token: "tok-123456"),
                                      database: f.client, metrics: MetricsRegistry(), logger: Logger(sink: CapturingLogSink()))
        let port = try ingest.start()
        let http = try SocketHTTPTransport()
        func post(_ signedPayload: String) async throws -> Int {
            let body = try JSONSerialization.data(withJSONObject: ["signedPayload": signedPayload])
            let response = try await http.send(HTTPClientRequest(method: "POST", url: URL(string: "http://127.0.0.1:\(port)/v1/notifications")!,
                                                                 headers: [("Content-Type", "application/json")], body: Array(body)),
                                               timeout: .seconds(10))
            XCTAssertEqual(response.status, 200)
            let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            return try XCTUnwrap(json?["job_id"] as? Int)
        }
        func notify(_ type: String, _ payload: JWSTransactionPayload, uuid: String = UUID().uuidString) throws -> String {
            try chain.signNotification(type: type, uuid: uuid, transaction: payload, bundleID: SettlementFixture.bundleID,
                                       appAppleID: 4242, environment: .production)
        }
        let token = UUID()
        try await f.order("n-1", user: "lee", product: "coins_100", token: token)
        let paid = transaction("n-t1", token: token)

        // The app never uploaded anything: Apple's ONE_TIME_CHARGE credits the open order.
        let chargeUUID = UUID().uuidString
        let charge = try await f.finished(try await post(try notify("ONE_TIME_CHARGE", paid, uuid: chargeUUID)))
        XCTAssertEqual(charge.outcome, "credited")
        let afterCharge = try await f.ledger()
        XCTAssertEqual(afterCharge["n-t1"], "n-1")
        // Apple re-sends it, re-signed (a different payload, the same notificationUUID): nothing changes.
        let again = try await f.finished(try await post(try notify("ONE_TIME_CHARGE", paid, uuid: chargeUUID)))
        XCTAssertEqual(again.outcome, "acknowledged")

        // REFUND revokes the credit; delivered twice, it revokes once.
        let refundUUID = UUID().uuidString
        var refundedPayload = paid
        refundedPayload.revocationDate = Date()
        refundedPayload.revocationReason = "1"
        let refund = try await f.finished(try await post(try notify("REFUND", refundedPayload, uuid: refundUUID)))
        XCTAssertEqual(refund.outcome, "revoked")
        let revoked = try await f.client.query("SELECT revoked_at IS NOT NULL, revocation_reason FROM iap.credits WHERE transaction_id = 'n-t1'")[0]
        XCTAssertEqual(try revoked.decode(Bool.self, at: 0), true)
        XCTAssertEqual(try revoked.decode(String?.self, at: 1), "1")
        let refundAgain = try await f.finished(try await post(try notify("REFUND", refundedPayload, uuid: refundUUID)))
        XCTAssertEqual(refundAgain.outcome, "acknowledged")
        // The line is written after the COMMIT that the job's state is read from: waited for.
        let revokedLogged = try await eventually { f.logs.lines.contains { $0.contains("event=credit_revoked") && $0.contains("transaction_id=n-t1") } }
        XCTAssertTrue(revokedLogged)
        XCTAssertEqual(f.logs.lines.filter { $0.contains("event=credit_revoked") }.count, 1)

        // REFUND_REVERSED restores it.
        let restore = try await f.finished(try await post(try notify("REFUND_REVERSED", paid)))
        XCTAssertEqual(restore.outcome, "restored")
        let restored = try await f.client.query("SELECT revoked_at IS NULL FROM iap.credits WHERE transaction_id = 'n-t1'")[0].decode(Bool.self, at: 0)
        XCTAssertTrue(restored)

        // A charge whose buyer cannot be known: paid_not_credited, never dropped.
        let orphan = try await f.finished(try await post(try notify("ONE_TIME_CHARGE", transaction("n-t2", token: nil))))
        XCTAssertEqual(orphan.outcome, "paid_not_credited")
        XCTAssertEqual(orphan.state, "attention")
        // TEST and CONSUMPTION_REQUEST are acknowledged.
        let test = try await f.finished(try await post(try chain.signNotification(type: "TEST", transaction: nil, bundleID: SettlementFixture.bundleID,
                                                                                appAppleID: 4242, environment: .production)))
        XCTAssertEqual(test.outcome, "acknowledged")
        let consumption = try await f.finished(try await post(try notify("CONSUMPTION_REQUEST", paid)))
        XCTAssertEqual(consumption.outcome, "acknowledged")
        let consumptionLogged = try await eventually { f.logs.lines.contains { $0.contains("event=consumption_request") } }
        XCTAssertTrue(consumptionLogged)
        // A forged notification is rejected with its reason.
        let forged = try await f.finished(try await post(try SimSigningChain().signNotification(
            type: "ONE_TIME_CHARGE", transaction: transaction("n-t3", token: token), bundleID: SettlementFixture.bundleID,
            appAppleID: 4242, environment: .production)))
        XCTAssertEqual(forged.outcome, "invalid_signature")
        let ledger = try await f.ledger()
        XCTAssertEqual(ledger.count, 1)
        await http.shutdown()
        await ingest.shutdown(grace: .seconds(1))
        await f.stop()
    }

    func testTransactionIDJobsThroughTheServerAPI() async throws { try await DatabaseRoute.each(checkTransactionIDJobsThroughTheServerAPI) }

    private func checkTransactionIDJobsThroughTheServerAPI() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        let token = UUID()
        try await f.order("api-1", user: "max", product: "coins_100", token: token)
        f.simulator.serverAPI.register(transaction("api-t1", token: token))
        func enqueue(_ id: String) async throws -> Int {
            try await f.client.query("SELECT iap.enqueue_job('transaction_id', $1, NULL, NULL, $2)", ["max", id])[0].decode(Int.self, at: 0)
        }
        let credited = try await f.finished(try await enqueue("api-t1"))
        XCTAssertEqual(credited.outcome, "credited", credited.lastError ?? "")
        let ledger = try await f.ledger()
        XCTAssertEqual(ledger["api-t1"], "api-1")
        let unknown = try await f.finished(try await enqueue("999999"))
        XCTAssertEqual(unknown.outcome, "no_purchase", unknown.lastError ?? "")
        // With credentials, a signed transaction from the app is confirmed with Apple: Apple's
        // copy (here: refunded since) is the one settled.
        try await f.order("api-2", user: "max", product: "coins_100")
        f.simulator.serverAPI.register(transaction("api-t2", token: nil, revoked: true))
        let appCopy = try f.simulator.serverAPI.signingChain.signTransaction(transaction("api-t2", token: nil))
        let confirmed = try await f.finished(try await f.client.query("SELECT iap.enqueue_transaction($1, $2, $3)", ["max", "api-2", appCopy])[0]
            .decode(Int.self, at: 0))
        XCTAssertEqual(confirmed.outcome, "refunded")
        await f.stop()

        // Without credentials a transaction_id job cannot be verified: a human must configure them.
        let bare = try await SettlementFixture()
        let job = try await bare.client.query("SELECT iap.enqueue_job('transaction_id', 'max', NULL, NULL, '42')")[0].decode(Int.self, at: 0)
        let finished = try await bare.finished(job)
        XCTAssertEqual(finished.outcome, "config_error")
        XCTAssertEqual(finished.state, "attention")
        await bare.stop()
    }

    func testProductionNotificationWithoutAppIDIsAConfigError() async throws { try await DatabaseRoute.each(checkProductionNotificationWithoutAppIDIsAConfigError) }

    private func checkProductionNotificationWithoutAppIDIsAConfigError() async throws {
        let f = try await SettlementFixture(appAppleID: nil)
        let signed = try f.simulator.serverAPI.signingChain.signNotification(
            type: "TEST", transaction: nil, bundleID: SettlementFixture.bundleID, appAppleID: 4242, environment: .production)
        let job = try await f.client.query("SELECT iap.enqueue_notification($1)", [signed])[0].decode(Int.self, at: 0)
        let finished = try await f.finished(job)
        XCTAssertEqual(finished.outcome, "config_error")
        XCTAssertEqual(finished.state, "attention")
        XCTAssertTrue(finished.lastError?.contains("APPLE_APP_ID") == true, finished.lastError ?? "")
        await f.stop()
    }
}
