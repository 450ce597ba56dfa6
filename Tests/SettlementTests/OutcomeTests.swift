import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Settlement
import XCTest

/// Every outcome of a kind=receipt job, end to end (real Postgres, apple-sim over HTTP).
final class OutcomeTests: XCTestCase {
    typealias T = SimReceipt.Transaction

    func testEveryReceiptOutcome() async throws { try await DatabaseRoute.each(checkEveryReceiptOutcome) }

    private func checkEveryReceiptOutcome() async throws {
        let f = try await SettlementFixture()
        // The web tier's orders.
        try await f.order("o-alice", user: "alice", product: "coins_100")
        try await f.order("o-bob-coins", user: "bob", product: "coins_100")
        try await f.order("o-bob-gems", user: "bob", product: "gems_50")
        try await f.order("o-carol-old", user: "carol", product: "coins_100")
        try await f.order("o-carol-new", user: "carol", product: "coins_100")
        let token = UUID()
        try await f.order("o-dan-other", user: "dan", product: "coins_100")
        try await f.order("o-dan-token", user: "dan", product: "coins_100", token: token)
        try await f.order("o-erin", user: "erin", product: "coins_100")
        try await f.order("o-mallory", user: "mallory", product: "coins_100")
        try await f.order("o-victim", user: "victim", product: "coins_100")

        struct Case {
            let name: String
            let user: String
            let order: String?
            let receipt: String
            let state: String
            let outcome: String
        }
        let alice = f.receipt([T(transactionID: "t-alice", productID: "coins_100")])
        let cases = [
            Case(name: "valid", user: "alice", order: "o-alice", receipt: alice, state: "done", outcome: "credited"),
            Case(name: "merged payment", user: "bob", order: "o-bob-coins",
                 receipt: f.receipt([T(transactionID: "t-bob-1", productID: "coins_100"), T(transactionID: "t-bob-2", productID: "gems_50")]),
                 state: "done", outcome: "credited"),
            Case(name: "lost order id", user: "carol", order: nil,
                 receipt: f.receipt([T(transactionID: "t-carol", productID: "coins_100")]), state: "done", outcome: "credited"),
            Case(name: "app account token", user: "dan", order: nil,
                 receipt: f.receipt([T(transactionID: "t-dan", productID: "coins_100", appAccountToken: token.uuidString)]),
                 state: "done", outcome: "credited"),
            Case(name: "sandbox disallowed", user: "erin", order: "o-erin",
                 receipt: f.receipt([T(transactionID: "t-erin", productID: "coins_100")], environment: .sandbox),
                 state: "failed", outcome: "sandbox_rejected"),
            Case(name: "21004", user: "erin", order: "o-erin",
                 receipt: f.receipt([T(transactionID: "t-erin-2", productID: "coins_100")], status: 21004),
                 state: "attention", outcome: "config_error"),
            Case(name: "refunded", user: "erin", order: "o-erin",
                 receipt: f.receipt([T(transactionID: "t-erin-3", productID: "coins_100", cancellationDateMs: SimReceipt.nowMilliseconds(),
                                       cancellationReason: "1")]), state: "failed", outcome: "refunded"),
            Case(name: "wrong bundle", user: "erin", order: "o-erin",
                 receipt: f.receipt([T(transactionID: "t-erin-4", productID: "coins_100")], bundle: "com.other.app"),
                 state: "failed", outcome: "wrong_bundle"),
            Case(name: "21010", user: "erin", order: "o-erin",
                 receipt: f.receipt([T(transactionID: "t-erin-5", productID: "coins_100")], status: 21010),
                 state: "failed", outcome: "invalid_receipt"),
            Case(name: "garbage (21002 for a whole round)", user: "erin", order: "o-erin",
                 receipt: Data("garbage".utf8).base64EncodedString(), state: "failed", outcome: "invalid_receipt"),
            Case(name: "empty in_app", user: "erin", order: "o-erin", receipt: f.receipt([]), state: "failed", outcome: "no_purchase"),
            Case(name: "paid, no order", user: "frank", order: nil,
                 receipt: f.receipt([T(transactionID: "t-frank", productID: "coins_100")]), state: "attention", outcome: "paid_not_credited"),
            Case(name: "order of another user", user: "mallory", order: "o-victim",
                 receipt: f.receipt([T(transactionID: "t-mallory", productID: "coins_100")]), state: "attention", outcome: "paid_not_credited"),
        ]
        for item in cases {
            let job = try await f.enqueue(user: item.user, order: item.order, receipt: item.receipt)
            let finished = try await f.finished(job)
            XCTAssertEqual(finished.state, item.state, "\(item.name): \(finished.lastError ?? "")")
            XCTAssertEqual(finished.outcome, item.outcome, "\(item.name): \(finished.lastError ?? "")")
        }
        let ledger = try await f.ledger()
        XCTAssertEqual(ledger["t-alice"], "o-alice")
        XCTAssertEqual(ledger["t-bob-1"], "o-bob-coins", "merged payment: each transaction to its own order")
        XCTAssertEqual(ledger["t-bob-2"], "o-bob-gems")
        XCTAssertEqual(ledger["t-carol"], "o-carol-old", "the user's oldest open order for the product")
        XCTAssertEqual(ledger["t-dan"], "o-dan-token", "the order carrying the appAccountToken")
        XCTAssertNil(ledger["t-erin-3"], "refunded entries are never credited")
        XCTAssertNil(ledger["t-frank"])
        XCTAssertEqual(ledger.count, 5)
        let orderStatus = try await f.orderStatus("o-carol-new")
        XCTAssertEqual(orderStatus, "open")
        let paidNotCredited = try await f.openAlerts("paid_not_credited")
        XCTAssertEqual(paidNotCredited.map(\.transaction), ["t-frank", "t-mallory"])
        XCTAssertEqual(paidNotCredited.map(\.reason), ["no_open_order", "order_of_another_user"])
        let configErrors = try await f.openAlerts("config_error")
        XCTAssertEqual(configErrors.count, 1)

        // Re-submitted by the same buyer against a new order: idempotent success, one ledger row.
        try await f.order("o-alice-2", user: "alice", product: "coins_100")
        let again = try await f.finished(try await f.enqueue(user: "alice", order: "o-alice-2", receipt: alice))
        XCTAssertEqual(again.outcome, "already_credited")
        XCTAssertEqual(again.state, "done")
        let aliceNewOrder = try await f.orderStatus("o-alice-2")
        XCTAssertEqual(aliceNewOrder, "open", "a replayed receipt credits no new order")
        // Re-sent by another account (刷单): replayed and an alert.
        try await f.order("o-eve", user: "eve", product: "coins_100")
        let replay = try await f.finished(try await f.enqueue(user: "eve", order: "o-eve", receipt: alice))
        XCTAssertEqual(replay.outcome, "replayed")
        XCTAssertEqual(replay.state, "failed")
        let replays = try await f.openAlerts("receipt_replay")
        XCTAssertEqual(replays.map(\.transaction), ["t-alice"])
        let finalLedger = try await f.ledger()
        XCTAssertEqual(finalLedger.count, 5)

        // Logs: the alert events at error level, and no secret or receipt anywhere.
        let lines = f.logs.lines
        XCTAssertTrue(lines.contains { $0.contains("level=error event=paid_not_credited") && $0.contains("transaction_id=t-frank") })
        XCTAssertTrue(lines.contains { $0.contains("level=error event=receipt_replay") })
        XCTAssertTrue(lines.contains { $0.contains("level=error event=config_error") })
        XCTAssertFalse(lines.contains { $0.contains("shh-secret") || $0.contains(alice) })
        let metrics = f.registry.render()
        XCTAssertTrue(metrics.contains("iap_credits_total 5"), metrics)
        XCTAssertTrue(metrics.contains(#"iap_alerts_total{kind="paid_not_credited"} 2"#))
        await f.stop()
    }

    func testSandboxAllowedCreditsWithSandboxEnvironment() async throws { try await DatabaseRoute.each(checkSandboxAllowedCreditsWithSandboxEnvironment) }

    private func checkSandboxAllowedCreditsWithSandboxEnvironment() async throws {
        let f = try await SettlementFixture(allowSandbox: true)
        try await f.order("o1", user: "u1", product: "coins_100")
        let job = try await f.enqueue(user: "u1", order: "o1",
                                      receipt: f.receipt([T(transactionID: "s-1", productID: "coins_100")], environment: .sandbox))
        let finished = try await f.finished(job)
        XCTAssertEqual(finished.outcome, "credited")
        let environment = try await f.client.query("SELECT environment FROM iap.credits WHERE transaction_id = 's-1'")[0].decode(String.self, at: 0)
        XCTAssertEqual(environment, "Sandbox")
        await f.stop()
    }

    func testSupportCreditsPaidNotCreditedExactlyOnce() async throws { try await DatabaseRoute.each(checkSupportCreditsPaidNotCreditedExactlyOnce) }

    private func checkSupportCreditsPaidNotCreditedExactlyOnce() async throws {
        let f = try await SettlementFixture()
        let job = try await f.enqueue(user: "grace", order: nil, receipt: f.receipt([T(transactionID: "t-grace", productID: "gems_50", quantity: 3)]))
        let finished = try await f.finished(job)
        XCTAssertEqual(finished.outcome, "paid_not_credited")
        let desk = SupportDesk(client: f.client, metrics: SettlementMetrics(registry: MetricsRegistry()), logger: Logger(sink: CapturingLogSink()))
        let open = try await desk.list(openOnly: true)
        XCTAssertEqual(open.count, 1)
        let alert = try XCTUnwrap(open.first)
        // The order support creates afterwards; a wrong one is refused.
        try await f.order("o-grace", user: "grace", product: "gems_50")
        try await f.order("o-other", user: "someone", product: "gems_50")
        do {
            _ = try await desk.credit(alertID: alert.id, orderID: "o-other", actor: "tess")
            XCTFail("crediting another user's order must be refused")
        } catch let error as SupportError {
            XCTAssertTrue(error.description.contains("another user"))
        }
        let result = try await desk.credit(alertID: alert.id, orderID: "o-grace", actor: "tess")
        XCTAssertEqual(result, .credited)
        do {
            _ = try await desk.credit(alertID: alert.id, orderID: "o-grace", actor: "tess")
            XCTFail("a resolved alert cannot be credited twice")
        } catch let error as SupportError {
            XCTAssertEqual(error, .alertNotOpen(alert.id))
        }
        let row = try await f.client.query("SELECT order_id, quantity, credited_by FROM iap.credits WHERE transaction_id = 't-grace'")
        XCTAssertEqual(row.count, 1)
        XCTAssertEqual(try row[0].decode(String.self, at: 0), "o-grace")
        XCTAssertEqual(try row[0].decode(Int.self, at: 1), 3, "quantity from Apple, not from the client")
        XCTAssertEqual(try row[0].decode(String.self, at: 2), "tess")
        let status = try await f.orderStatus("o-grace")
        XCTAssertEqual(status, "credited")
        let stillOpen = try await desk.list(openOnly: true)
        XCTAssertTrue(stillOpen.isEmpty)
        // The same payment arriving again later is already in the ledger: no double credit.
        try await f.order("o-grace-2", user: "grace", product: "gems_50")
        let again = try await f.finished(try await f.enqueue(user: "grace", order: "o-grace-2",
                                                              receipt: f.receipt([T(transactionID: "t-grace", productID: "gems_50", quantity: 3)])))
        XCTAssertEqual(again.outcome, "already_credited")
        await f.stop()
    }

    func testConcurrentJobsForOneTransactionCreditOnce() async throws { try await DatabaseRoute.each(checkConcurrentJobsForOneTransactionCreditOnce) }

    private func checkConcurrentJobsForOneTransactionCreditOnce() async throws {
        let f = try await SettlementFixture()
        for index in 0..<6 { try await f.order("o-\(index)", user: "zed", product: "coins_100") }
        let receipt = f.receipt([T(transactionID: "t-zed", productID: "coins_100")])
        var jobs: [Int] = []
        for index in 0..<6 { jobs.append(try await f.enqueue(user: "zed", order: "o-\(index)", receipt: receipt)) }
        var outcomes: [String] = []
        for job in jobs { outcomes.append(try await f.finished(job).outcome) }
        XCTAssertEqual(outcomes.filter { $0 == "credited" }.count, 1, "\(outcomes)")
        XCTAssertEqual(outcomes.filter { $0 == "already_credited" }.count, 5, "\(outcomes)")
        let ledger = try await f.ledger()
        XCTAssertEqual(ledger.count, 1)
        await f.stop()
    }
}
