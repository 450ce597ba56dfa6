import AppleSim
import Postgres

/// Purchases as the web tier leaves them: `count` open orders (`TAG-oN` of user `TAG-uN`),
/// and an apple-sim receipt paying each, enqueued when the benchmark (or drill) is ready.
public struct PaidReceipts: Sendable {
    public let tag: String
    public let receipts: [String]

    /// Creates the orders (and ANALYZEs them: a live table's statistics would already know
    /// them, while plans made from an empty table's would not) and mints the receipts.
    public static func prepare(_ client: PostgresClient, tag: String, count: Int, bundleID: String) async throws -> PaidReceipts {
        _ = try await client.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id)
            SELECT $1 || '-o' || n, $1 || '-u' || n, 'coins_100' FROM generate_series(1, $2) AS n
            """, [tag, count])
        _ = try await client.query("ANALYZE iap.orders")
        let receipts = (1...count).map {
            SimReceipt(bundleID: bundleID, transactions: [.init(transactionID: "\(tag)-\($0)", productID: "coins_100")]).mint()
        }
        return PaidReceipts(tag: tag, receipts: receipts)
    }

    /// One statement, as a web tier's batch would.
    public func enqueue(_ client: PostgresClient) async throws {
        let count = receipts.count
        _ = try await client.query("""
            SELECT count(iap.enqueue_receipt(u, o, r)) FROM unnest($1::text[], $2::text[], $3::text[]) AS x(u, o, r)
            """, [(1...count).map { "\(tag)-u\($0)" }, (1...count).map { "\(tag)-o\($0)" }, receipts])
    }
}
