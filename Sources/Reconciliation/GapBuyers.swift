import AppStore
import Foundation
import Postgres
import Queue

/// The buyers behind a product-day gap we can name, each with one transaction id of theirs (Get
/// Transaction History finds a customer through any of their transactions): users with an open alert
/// on the product since the day began, and users whose order for the product, placed that day, is still open.
struct GapBuyers: Sendable {
    struct Buyer: Sendable, Equatable {
        var userID: String
        var knownTransactionID: String
    }

    static let buyersSQL = """
        WITH buyers AS (
            SELECT user_id FROM iap.alerts
            WHERE state = 'open' AND product_id = $1 AND user_id IS NOT NULL AND first_seen_at >= $2
            UNION
            SELECT user_id FROM iap.orders
            WHERE status = 'open' AND product_id = $1 AND created_at >= $2 AND created_at < $3
        )
        SELECT b.user_id, coalesce(
            (SELECT a.transaction_id FROM iap.alerts a
             WHERE a.user_id = b.user_id AND a.transaction_id IS NOT NULL ORDER BY a.id DESC LIMIT 1),
            (SELECT c.transaction_id FROM iap.credits c
             WHERE c.user_id = b.user_id AND c.environment = 'Production' ORDER BY c.credited_at DESC LIMIT 1))
        FROM buyers b
        ORDER BY random()
        LIMIT $4
        """

    /// At most `limit` buyers, drawn at random so that repeated bounded runs reach every one. Buyers with
    /// no transaction we know of cannot be looked up: they are counted, not returned.
    func find(product: String, day: ReportDay, limit: Int, client: PostgresClient) async throws -> (buyers: [Buyer], unreachable: Int) {
        var buyers: [Buyer] = []
        var unreachable = 0
        for row in try await client.query(Self.buyersSQL, [product, day.start, day.end, limit]) {
            if let transaction = try row.decode(String?.self, at: 1) {
                buyers.append(Buyer(userID: try row.decode(String.self, at: 0), knownTransactionID: transaction))
            } else {
                unreachable += 1
            }
        }
        return (buyers, unreachable)
    }

    /// Of `transactionIDs`, those the ledger has not credited, enqueued as `transaction_id` jobs for the
    /// user (the one exactly-once path credits them or raises paid_not_credited). Returns how many new jobs.
    static let enqueueMissingSQL = """
        SELECT count(iap.enqueue_transaction_id($1, NULL, t))::bigint
        FROM unnest($2::text[]) AS t
        WHERE NOT EXISTS (SELECT 1 FROM iap.credits c WHERE c.transaction_id = t)
        """

    func enqueueMissing(userID: String, transactionIDs: [String], client: PostgresClient, term: LeaderTerm?) async throws -> Int {
        guard !transactionIDs.isEmpty else { return 0 }
        let binds: [any PostgresEncodable] = [userID, transactionIDs]
        let rows = if let term { try await term.query(client, Self.enqueueMissingSQL, binds) }
                   else { try await client.query(Self.enqueueMissingSQL, binds) }
        return try rows[0].decode(Int.self, at: 0)
    }
}
