import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Reconciliation
import Settlement

/// The demo's reconciliation story: Apple sold paul a gems_500 yesterday that never reached
/// us (no upload, no notification). Reconciling yesterday against Apple's sales report finds the gap,
/// pulls paul's Get Transaction History (he bought before, so one of his transactions is known), the
/// worker credits the missing purchase, and the day then reconciles clean.
struct DemoReconciliationStory {
    let client: PostgresClient
    let logger: Logger

    func run(_ simulator: AppleSimulator, api: AppStoreServerAPIClient, waitForCredit: (String) async throws -> Bool) async throws -> [String] {
        let server = simulator.serverAPI
        let token = UUID().uuidString.lowercased()
        let yesterday = ReportDay(containing: ReportDay(containing: Date()).start.addingTimeInterval(-1))
        let noon = yesterday.start.addingTimeInterval(12 * 3600)
        // paul's earlier purchase, credited the usual way.
        _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id, created_at) VALUES ('order-paul-0', 'paul', 'gems_100', $1)",
                                   [noon.addingTimeInterval(-86_400)])
        server.register(JWSTransactionPayload(transactionId: "4000010", originalTransactionId: "4000010", bundleId: DemoTour.bundleID,
                                              productId: "gems_100", purchaseDate: noon.addingTimeInterval(-86_400), appAccountToken: token,
                                              environment: "Production"))
        _ = try await client.query("SELECT iap.enqueue_transaction_id('paul', 'order-paul-0', '4000010')")
        _ = try await waitForCredit("4000010")
        // Yesterday's order, paid at Apple, never uploaded.
        _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id, created_at) VALUES ('order-paul-1', 'paul', 'gems_500', $1)",
                                   [noon])
        let missing = server.injectUnuploadedSales(productID: "gems_500", count: 1, purchaseDate: noon, appAccountToken: token,
                                                   bundleID: DemoTour.bundleID)[0]

        let reports = try SalesReportClient(configuration: AppStoreConnectConfiguration(
            baseURL: simulator.baseURL, issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, vendorNumber: "85000001",
            privateKey: server.apiPrivateKey, requestTimeout: .seconds(5)))
        let reconciler = Reconciler(client: client, reports: reports,
                                    alerts: AlertRecorder(logger: logger, metrics: SettlementMetrics(registry: MetricsRegistry()), webhook: nil),
                                    logger: logger, recovery: GapRecovery(client: client, api: api, logger: logger))
        let found = try await reconciler.reconcile(yesterday)
        let gap = found.products.first { $0.productID == "gems_500" }?.gap ?? 0
        let credited = try await waitForCredit(missing)
        let after = try await reconciler.reconcile(yesterday)
        let clean = after.products.first { $0.productID == "gems_500" }?.gap == 0
        let ok = gap == 1 && found.recovered["gems_500"]?.enqueued == 1 && credited && clean
        return [ok ? "ok" : "MISMATCH", "Apple's sales report for \(yesterday) shows a gems_500 nobody uploaded", "paul",
                "gap \(gap) → history pulled → \(credited ? "credited" : "not credited") → \(clean ? "day reconciles" : "gap remains")"]
    }
}
