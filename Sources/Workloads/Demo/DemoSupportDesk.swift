import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Settlement

/// What the demo leaves for the support console to act on: frank's paid_not_credited alert gets
/// the open order he should have had, and an apple-sim stays up with an Apple order (quinn's,
/// never uploaded by the app) that the console's lookup finds and can credit.
public struct DemoSupportDesk: Sendable {
    public static let appleOrderID = "MQ7DEMO789"
    public let lookup: OrderLookupDesk
    let simulator: AppleSimulator

    public static func start(client: PostgresClient, logger: Logger) async throws -> DemoSupportDesk {
        _ = try await client.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id) VALUES ('order-frank-1', 'frank', 'coins_100'),
                ('order-quinn-1', 'quinn', 'coins_100') ON CONFLICT DO NOTHING
            """)
        let simulator = AppleSimulator()
        _ = try simulator.start()
        simulator.serverAPI.registerOrder(appleOrderID, transactions: [JWSTransactionPayload(
            transactionId: "4000009", originalTransactionId: "4000009", bundleId: DemoTour.bundleID, productId: "coins_100",
            purchaseDate: Date(), appAccountToken: nil, environment: "Production")])
        let (api, signedData) = try DemoRecoveryStories.serverAPI(simulator, client: client)
        let desk = OrderLookupDesk(client: client, api: api, signedData: signedData,
                                   metrics: SettlementMetrics(registry: MetricsRegistry()), logger: logger.withMinimumLevel(.error))
        return DemoSupportDesk(lookup: desk, simulator: simulator)
    }

    public func shutdown() async { await simulator.shutdown() }
}
