import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Queue
@testable import Settlement
import StoreKitCrypto
import XCTest

/// A REFUND processed before its credit exists (as after an asynchronous failover that lost the
/// credit) is kept, and the credit is revoked once it lands: announced once, by its key.
final class RefundBeforeCreditTests: XCTestCase {
    private let term = LeaderTerm.held(until: .now + .seconds(3600))

    func testARefundThatComesFirstRevokesTheCreditWhenItLands() async throws {
        let f = try await SettlementFixture()
        let applier = RefundApplier(client: f.client, interval: 10, metrics: f.metrics, logger: Logger(sink: f.logs))
        try await f.order("rb-1", user: "ann", product: "coins_100")

        let refund = try await f.finished(try await notify(f, "REFUND", "rb-t1", refunded: true))
        XCTAssertEqual(refund.outcome, "acknowledged")
        XCTAssertTrue(refund.lastError?.contains("kept") == true, refund.lastError ?? "")
        try await applier.run(term: term)
        let waitingBefore = try await waiting(f)
        XCTAssertEqual(waitingBefore, ["rb-t1"], "nothing to revoke yet: the refund waits")

        let credit = try await f.finished(try await f.enqueue(user: "ann", order: "rb-1", receipt: receipt(f, "rb-t1")))
        XCTAssertEqual(credit.outcome, "credited")
        try await applier.run(term: term)
        let row = try await f.client.query("SELECT revoked_at IS NOT NULL, revocation_reason FROM iap.credits WHERE transaction_id = 'rb-t1'")[0]
        XCTAssertEqual(try row.decode(Bool.self, at: 0), true, "the credit that landed after its refund is revoked")
        XCTAssertEqual(try row.decode(String?.self, at: 1), "1")
        let waitingAfter = try await waiting(f)
        XCTAssertEqual(waitingAfter, [])

        try await applier.run(term: term)
        let lines = f.logs.lines.filter { $0.contains("event=credit_revoked") }
        XCTAssertEqual(lines.count, 1, "\(lines)")
        XCTAssertTrue(lines.first?.contains("announcement_key=credit_revoked:rb-t1") == true, "\(lines)")
        await f.stop()
    }

    /// Refunds of transactions that are never credited stay waiting; a thousand of them, first in
    /// any order, do not keep a later refund from being applied once its credit lands.
    func testRefundsThatNeverGetACreditDoNotBlockTheOthers() async throws {
        let f = try await SettlementFixture()
        let applier = RefundApplier(client: f.client, interval: 10, metrics: f.metrics, logger: Logger(sink: f.logs))
        _ = try await f.client.query("""
            INSERT INTO iap.refunds_before_credit (transaction_id, revocation_reason)
            SELECT 'never-' || lpad(n::text, 4, '0'), '0' FROM generate_series(1, 1000) AS n
            """)
        try await f.order("rb-3", user: "cy", product: "coins_100")
        _ = try await f.finished(try await notify(f, "REFUND", "rb-t3", refunded: true))
        let credit = try await f.finished(try await f.enqueue(user: "cy", order: "rb-3", receipt: receipt(f, "rb-t3")))
        XCTAssertEqual(credit.outcome, "credited")
        try await applier.run(term: term)
        let revoked = try await f.client.query("SELECT revoked_at IS NOT NULL FROM iap.credits WHERE transaction_id = 'rb-t3'")[0]
        XCTAssertEqual(try revoked.decode(Bool.self, at: 0), true)
        let stillWaiting = try await waiting(f).count
        XCTAssertEqual(stillWaiting, 1000)
        await f.stop()
    }

    func testARefundReversedBeforeTheCreditRevokesNothing() async throws {
        let f = try await SettlementFixture()
        let applier = RefundApplier(client: f.client, interval: 10, metrics: f.metrics, logger: Logger(sink: f.logs))
        try await f.order("rb-2", user: "bo", product: "coins_100")
        _ = try await f.finished(try await notify(f, "REFUND", "rb-t2", refunded: true))
        let kept = try await waiting(f)
        XCTAssertEqual(kept, ["rb-t2"])
        let reversal = try await f.finished(try await notify(f, "REFUND_REVERSED", "rb-t2", refunded: false))
        XCTAssertEqual(reversal.outcome, "acknowledged")
        let dropped = try await waiting(f)
        XCTAssertEqual(dropped, [], "the reversal drops the kept refund")

        let credit = try await f.finished(try await f.enqueue(user: "bo", order: "rb-2", receipt: receipt(f, "rb-t2")))
        XCTAssertEqual(credit.outcome, "credited")
        try await applier.run(term: term)
        let revoked = try await f.client.query("SELECT revoked_at IS NOT NULL FROM iap.credits WHERE transaction_id = 'rb-t2'")[0]
        XCTAssertEqual(try revoked.decode(Bool.self, at: 0), false)
        XCTAssertFalse(f.logs.lines.contains { $0.contains("event=credit_revoked") })
        await f.stop()
    }

    private func receipt(_ f: SettlementFixture, _ transactionID: String) -> String {
        f.receipt([.init(transactionID: transactionID, productID: "coins_100", purchaseDateMs: SimReceipt.nowMilliseconds())])
    }

    private func notify(_ f: SettlementFixture, _ type: String, _ transactionID: String, refunded: Bool) async throws -> Int {
        let payload = JWSTransactionPayload(transactionId: transactionID, originalTransactionId: transactionID, bundleId: SettlementFixture.bundleID,
                                            productId: "coins_100", quantity: 1, purchaseDate: Date(), signedDate: Date(),
                                            revocationDate: refunded ? Date() : nil, revocationReason: refunded ? "1" : nil,
                                            appAccountToken: nil, environment: "Production")
        let signed = try f.simulator.serverAPI.signingChain.signNotification(type: type, uuid: UUID().uuidString, transaction: payload,
                                                                             bundleID: SettlementFixture.bundleID, appAppleID: 4242,
                                                                             environment: .production)
        return try await f.client.query("SELECT iap.enqueue_notification($1)", [signed])[0].decode(Int.self, at: 0)
    }

    private func waiting(_ f: SettlementFixture) async throws -> [String] {
        try await f.client.query("SELECT transaction_id FROM iap.refunds_before_credit WHERE applied_at IS NULL ORDER BY 1").map { try $0.decode(at: 0) }
    }
}
