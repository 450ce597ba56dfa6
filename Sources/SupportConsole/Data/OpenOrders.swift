import Foundation
import Postgres

/// The open orders a paid_not_credited alert could be credited to: the buyer's, for the alert's
/// product. Support chooses among them instead of typing an order id by hand.
struct OpenOrders: Sendable {
    struct Key: Hashable, Sendable { let userID: String; let productID: String }
    struct Order: Sendable { let orderID: String; let createdAt: Date }

    let byKey: [Key: [Order]]
    static let none = OpenOrders(byKey: [:])

    func orders(for alert: AlertRow) -> [Order] {
        guard let user = alert.userID, let product = alert.productID else { return [] }
        return byKey[Key(userID: user, productID: product)] ?? []
    }

    /// Up to 20 per buyer and product, newest first, each pair on orders_open_by_user_product.
    static let sql = """
        SELECT open.order_id, pair.user_id, pair.product_id, open.created_at
        FROM unnest($1::text[], $2::text[]) AS pair(user_id, product_id)
        CROSS JOIN LATERAL (SELECT order_id, created_at FROM iap.orders
                            WHERE status = 'open' AND user_id = pair.user_id AND product_id = pair.product_id
                            ORDER BY created_at DESC LIMIT 20) AS open
        """

    static func load(_ client: PostgresClient, for alerts: [AlertRow]) async throws -> OpenOrders {
        let keys = Array(Set(alerts.filter(\.isCreditable).compactMap { alert in
            alert.userID.flatMap { user in alert.productID.map { Key(userID: user, productID: $0) } }
        }))
        guard !keys.isEmpty else { return .none }
        var byKey: [Key: [Order]] = [:]
        for row in try await client.query(sql, [keys.map(\.userID), keys.map(\.productID)]) {
            let key = Key(userID: try row.decode(at: 1), productID: try row.decode(at: 2))
            byKey[key, default: []].append(Order(orderID: try row.decode(at: 0), createdAt: try row.decode(at: 3)))
        }
        return OpenOrders(byKey: byKey)
    }
}
