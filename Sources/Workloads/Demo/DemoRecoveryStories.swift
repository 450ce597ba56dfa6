import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Queue
import Settlement

/// The demo's money-that-would-be-lost stories: a notification Apple never delivered,
/// recovered from Get Notification History; a refund request answered with and without the buyer's
/// consent; a support lookup by Apple order id that credits; a purchase only Apple's sales report shows. Its own apple-sim and worker, with the
/// App Store Server API (behind the fleet limit) configured.
struct DemoRecoveryStories {
    let logger: Logger
    let client: PostgresClient
    let url: String

    /// The demo's stand-in for the web tier's `iap.consumption_info`: nora agreed to share her consumption, omar did not.
    static let demoConsumptionInfo = """
        CREATE OR REPLACE FUNCTION iap.consumption_info(user_id text, transaction_id text)
        RETURNS TABLE (customer_consented boolean, consumption_percentage integer, sample_content_provided boolean)
        LANGUAGE sql STABLE AS $$ SELECT true, 25000, false WHERE $1 = 'nora' $$
        """
    static let defaultConsumptionInfo = """
        CREATE OR REPLACE FUNCTION iap.consumption_info(user_id text, transaction_id text)
        RETURNS TABLE (customer_consented boolean, consumption_percentage integer, sample_content_provided boolean)
        LANGUAGE sql STABLE AS $$ SELECT false, NULL::integer, false $$
        """

    func run() async throws -> Bool {
        let simulator = AppleSimulator()
        _ = try simulator.start()
        let logger = logger.withMinimumLevel(.error)
        let metrics = SettlementMetrics(registry: MetricsRegistry())
        let (api, signedData) = try Self.serverAPI(simulator, client: client)
        let handler = AppleJobHandler(
            receipts: try AppleReceiptClient(configuration: ReceiptVerifierConfiguration(
                productionURL: simulator.productionURL, sandboxURL: simulator.sandboxURL, sharedSecret: nil, allowSandbox: false,
                bundleID: DemoTour.bundleID)),
            signedData: signedData, serverAPI: api,
            consumption: ConsumptionResponder(client: client, api: api, refundPreference: .decline, metrics: metrics),
            maxAttempts: 4, alerts: AlertRecorder(logger: logger, metrics: metrics, webhook: nil), metrics: metrics, logger: logger)
        var configuration = QueueConfiguration()
        configuration.pollInterval = 0.2
        let worker = QueueWorker(store: QueueStore(client: client), handler: handler, configuration: configuration, logger: logger,
                                 metrics: QueueMetrics(registry: MetricsRegistry()), listenerConninfo: url)
        let running = Task { await worker.run() }
        _ = try await client.query(Self.demoConsumptionInfo)
        var rows: [[String]] = []
        var failure: Error?
        do {
            rows.append(try await missedNotification(simulator, api: api, metrics: metrics))
            rows.append(contentsOf: try await refundRequests(simulator))
            rows.append(try await orderLookup(simulator, desk: OrderLookupDesk(client: client, api: api, signedData: signedData,
                                                                             metrics: metrics, logger: logger)))
            rows.append(try await DemoReconciliationStory(client: client, logger: logger)
                .run(simulator, api: api, waitForCredit: { try await waitFor(Self.creditedSQL, $0) }))
        } catch {
            failure = error
        }
        worker.shutdown()
        await running.value
        await simulator.shutdown()
        _ = try await client.query(Self.defaultConsumptionInfo)  // the shipped "no consent" again
        if let failure { throw failure }
        Console.print("\nMoney that would otherwise be lost (App Store Server API, fleet limit 20/s)\n"
                      + TextTable.render(header: ["check", "story", "user", "result"], rows: rows))
        return rows.allSatisfy { $0[0] == "ok" }
    }

    /// Apple charged olga, posted the notification, and our endpoint was down: only history has it.
    private func missedNotification(_ simulator: AppleSimulator, api: AppStoreServerAPIClient, metrics: SettlementMetrics) async throws -> [String] {
        let token = UUID()
        try await order("order-olga-1", user: "olga", token: token)
        let signed = try simulator.serverAPI.signingChain.signNotification(
            type: "ONE_TIME_CHARGE", transaction: payload("4000001", token: token), bundleID: DemoTour.bundleID,
            appAppleID: DemoTour.appAppleID, environment: .production)
        simulator.serverAPI.recordNotification(signed, sentAt: Date().addingTimeInterval(-7200), delivered: false)
        let counts = try await NotificationHistoryPuller(client: client, api: api, metrics: metrics, logger: logger)
            .backfill(since: 86_400)
        let credited = try await waitFor(Self.creditedSQL, "4000001")
        return [credited ? "ok" : "MISMATCH", "notification never delivered, found in history (\(counts.enqueued) enqueued)", "olga",
                credited ? "credited" : "not credited"]
    }

    /// nora and omar ask Apple for refunds of coins they received; only nora consented to share her consumption.
    private func refundRequests(_ simulator: AppleSimulator) async throws -> [[String]] {
        var rows: [[String]] = []
        for (user, id) in [("nora", "4000002"), ("omar", "4000003")] {
            let token = UUID()
            try await order("order-\(user)-1", user: user, token: token)
            let jws = try simulator.serverAPI.mintTransaction(payload(id, token: token))
            _ = try await client.query("SELECT iap.enqueue_transaction($1, $2, $3)", [user, "order-\(user)-1", jws])
            _ = try await waitFor(Self.creditedSQL, id)
            let request = try simulator.serverAPI.signingChain.signNotification(
                type: "CONSUMPTION_REQUEST", transaction: payload(id, token: token), bundleID: DemoTour.bundleID,
                appAppleID: DemoTour.appAppleID, environment: .production)
            _ = try await client.query("SELECT iap.enqueue_notification($1)", [request])
            _ = try await waitFor(Self.answeredSQL, id)
            let state = try await client.query("SELECT state FROM iap.consumption_requests WHERE transaction_id = $1", [id])
                .first?.decode(String.self, at: 0) ?? "-"
            let sent = simulator.serverAPI.consumptionAnswers.first { $0.transactionID == id }
            let expected = user == "nora" ? "sent" : "no_consent"
            let result = sent.map { "sent \($0.request.deliveryStatus.rawValue), \($0.request.consumptionPercentage ?? 0) milliunits, "
                                    + "\($0.request.refundPreference?.rawValue ?? "no preference")" } ?? "nothing sent (no consent)"
            rows.append([state == expected ? "ok" : "MISMATCH", "refund request answered (\(user == "nora" ? "consent" : "no consent"))",
                         user, result])
        }
        return rows
    }

    /// pia wrote to support with the order id from Apple's e-mailed receipt.
    private func orderLookup(_ simulator: AppleSimulator, desk: OrderLookupDesk) async throws -> [String] {
        try await order("order-pia-1", user: "pia", token: nil)
        simulator.serverAPI.registerOrder("MQ7DEMO123", transactions: [payload("4000004", token: nil)])
        let found = try await desk.lookUp(appleOrderID: "MQ7DEMO123")
        let result = try await desk.credit(appleOrderID: "MQ7DEMO123", transactionID: found.transactions[0].transactionID,
                                           userID: "pia", orderID: "order-pia-1", actor: "demo")
        let again = try await desk.credit(appleOrderID: "MQ7DEMO123", transactionID: found.transactions[0].transactionID,
                                          userID: "pia", orderID: "order-pia-1", actor: "demo")
        let ok = result == .credited(orderID: "order-pia-1") && again == .alreadyCredited(orderID: "order-pia-1")
        return [ok ? "ok" : "MISMATCH", "support lookup by Apple order id MQ7DEMO123", "pia", "credited once (asked twice)"]
    }

    /// The App Store Server API client and the signed-data verifier for one apple-sim, as a worker
    /// configured with APPSTORE_* would have them (also the demo console's order lookup).
    static func serverAPI(_ simulator: AppleSimulator, client: PostgresClient) throws -> (AppStoreServerAPIClient, StoreKitSignedDataVerifier) {
        let api = try AppStoreServerAPIClient(
            configuration: AppStoreServerAPIConfiguration(
                productionURL: simulator.baseURL, sandboxURL: simulator.baseURL.appendingPathComponent("sandbox"),
                issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, bundleID: DemoTour.bundleID,
                privateKey: simulator.serverAPI.apiPrivateKey),
            limiter: PostgresRateLimiter(client: client, limit: AppStoreRateLimit()))
        let signedData = try StoreKitSignedDataVerifier(
            configuration: StoreKitVerifierConfiguration(bundleID: DemoTour.bundleID, appAppleID: DemoTour.appAppleID),
            trustedRoots: [simulator.serverAPI.signingChain.root])
        return (api, signedData)
    }

    private func payload(_ id: String, token: UUID?) -> JWSTransactionPayload {
        JWSTransactionPayload(transactionId: id, originalTransactionId: id, bundleId: DemoTour.bundleID, productId: "coins_100",
                              purchaseDate: Date(), appAccountToken: token?.uuidString, environment: "Production")
    }

    private func order(_ id: String, user: String, token: UUID?) async throws {
        _ = try await client.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id, app_account_token) VALUES ($1, $2, 'coins_100', $3) ON CONFLICT DO NOTHING
            """, [id, user, token])
    }

    static let creditedSQL = "SELECT count(*) FROM iap.credits WHERE transaction_id = $1"
    static let answeredSQL = """
        SELECT count(*) FROM iap.jobs j JOIN iap.consumption_requests r ON r.job_id = j.id
        WHERE r.transaction_id = $1 AND j.state IN ('done', 'failed', 'attention')
        """

    /// Polls a count of the transaction's rows until it is positive (30 s at most).
    private func waitFor(_ countSQL: String, _ transactionID: String) async throws -> Bool {
        for _ in 0..<300 {
            if try await client.query(countSQL, [transactionID])[0].decode(Int.self, at: 0) > 0 { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }
}
