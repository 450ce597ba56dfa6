import Observability
import Postgres
import Settlement
import SupportConsole

/// The console's Apple order id lookup over Settlement's `OrderLookupDesk`: the
/// same verification and the same exactly-once credit as `support lookup-order`.
struct ConsoleOrderLookup: AppleOrderLookup {
    let desk: OrderLookupDesk

    /// The lookup when APPLE_BUNDLE_ID and the App Store Server API credentials are set; nil
    /// otherwise (the console then says the lookup is unavailable).
    static func make(_ runtime: Runtime, client: PostgresClient, registry: MetricsRegistry) throws -> ConsoleOrderLookup? {
        let options = runtime.options
        guard let bundleID = options.string(Settings.bundleID) else { return nil }
        guard let api = try SettlementWiring.serverAPIClient(
            options, bundleID: bundleID, observer: AppleRequestMetrics(registry: registry, logger: runtime.logger),
            limiter: PostgresRateLimiter(client: client, limit: SettlementWiring.rateLimit(options))) else { return nil }
        let signedData = try SettlementWiring.signedDataVerifier(options, bundleID: bundleID)
        return ConsoleOrderLookup(desk: OrderLookupDesk(client: client, api: api, signedData: signedData,
                                                        metrics: SettlementMetrics(registry: registry), logger: runtime.logger))
    }

    func lookUp(appleOrderID: String) async throws -> [SupportConsole.LookedUpTransaction] {
        try await desk.lookUp(appleOrderID: appleOrderID).transactions.map { found in
            var creditedOrder: String?, creditedUser: String?, revoked = found.refundedByApple
            if case .credited(let user, let order, let ledgerRevoked) = found.ledger {
                (creditedUser, creditedOrder) = (user, order)
                revoked = revoked || ledgerRevoked
            }
            return SupportConsole.LookedUpTransaction(
                transactionID: found.transactionID, originalTransactionID: found.originalTransactionID, productID: found.productID,
                quantity: found.quantity, purchaseDate: found.purchaseDate, environment: found.environment, revoked: revoked,
                creditedOrderID: creditedOrder, creditedUserID: creditedUser)
        }
    }

    func credit(appleOrderID: String, transactionID: String, userID: String, orderID: String, actor: String,
                alsoInTransaction: @escaping @Sendable (PostgresConnection, String) async throws -> Void) async throws -> String {
        let result = try await desk.credit(appleOrderID: appleOrderID, transactionID: transactionID, userID: userID, orderID: orderID,
                                           actor: actor) { connection, result in try await alsoInTransaction(connection, Self.sentence(result)) }
        return Self.sentence(result)
    }

    private static func sentence(_ result: OrderCreditResult) -> String {
        switch result {
        case .credited(let order): "credited to order \(order)"
        case .alreadyCredited(let order): "already credited to order \(order); nothing changed"
        }
    }
}
