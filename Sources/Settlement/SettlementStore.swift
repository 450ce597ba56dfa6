import Foundation
import Postgres

/// A ledger row as read back.
struct LedgerEntry: Sendable {
    let transactionID: String
    let userID: String
    let orderID: String
}

/// An order as locked for crediting.
struct OrderRow: Sendable {
    let orderID: String
    let userID: String
    let productID: String
    let status: String
}

/// Every SQL statement of settlement, one typed method each. All run on the connection
/// of the caller's transaction.
struct SettlementStore: Sendable {
    static let ledgerSQL = "SELECT transaction_id, user_id, order_id FROM iap.credits WHERE transaction_id = ANY($1::text[])"

    func ledgerEntries(_ transactionIDs: [String], on connection: PostgresConnection) async throws -> [String: LedgerEntry] {
        guard !transactionIDs.isEmpty else { return [:] }
        var entries: [String: LedgerEntry] = [:]
        for row in try await connection.query(Self.ledgerSQL, [transactionIDs]) {
            let entry = LedgerEntry(transactionID: try row.decode(at: 0), userID: try row.decode(at: 1), orderID: try row.decode(at: 2))
            entries[entry.transactionID] = entry
        }
        return entries
    }

    static let orderByIDSQL = "SELECT order_id, user_id, product_id, status FROM iap.orders WHERE order_id = $1 FOR UPDATE"
    static let orderByTokenSQL = "SELECT order_id, user_id, product_id, status FROM iap.orders WHERE app_account_token = $1 FOR UPDATE"
    /// SKIP LOCKED: a concurrent job crediting another payment takes the next open order
    /// instead of waiting and then finding this one gone.
    static let oldestOpenOrderSQL = """
        SELECT order_id, user_id, product_id, status FROM iap.orders
        WHERE user_id = $1 AND product_id = $2 AND status = 'open'
        ORDER BY created_at, order_id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
        """

    func order(id: String, on connection: PostgresConnection) async throws -> OrderRow? {
        try await connection.query(Self.orderByIDSQL, [id]).first.map(Self.decodeOrder)
    }

    func order(appAccountToken: UUID, on connection: PostgresConnection) async throws -> OrderRow? {
        try await connection.query(Self.orderByTokenSQL, [appAccountToken]).first.map(Self.decodeOrder)
    }

    func oldestOpenOrder(userID: String, productID: String, on connection: PostgresConnection) async throws -> OrderRow? {
        try await connection.query(Self.oldestOpenOrderSQL, [userID, productID]).first.map(Self.decodeOrder)
    }

    private static func decodeOrder(_ row: PostgresRow) throws -> OrderRow {
        OrderRow(orderID: try row.decode(at: 0), userID: try row.decode(at: 1), productID: try row.decode(at: 2), status: try row.decode(at: 3))
    }

    /// The ledger row and the order in one round trip; the order changes only if the row
    /// was new (the primary key on transaction_id decides).
    static let creditSQL = """
        WITH ledger AS (
            INSERT INTO iap.credits (transaction_id, original_transaction_id, order_id, user_id, product_id, quantity,
                                     environment, purchased_at, job_id, credited_by)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (transaction_id) DO NOTHING
            RETURNING transaction_id
        ), paid AS (
            UPDATE iap.orders SET status = 'credited', credited_at = now(), transaction_id = $1
            WHERE order_id = $3 AND status = 'open' AND EXISTS (SELECT 1 FROM ledger)
            RETURNING order_id
        )
        SELECT (SELECT count(*) FROM ledger), (SELECT count(*) FROM paid)
        """

    /// The exactly-once write: the ledger row (primary key on transaction_id) and the order.
    /// Returns false when the transaction was already in the ledger (nothing written).
    func credit(_ credit: CreditRequest, on connection: PostgresConnection) async throws -> Bool {
        let row = try await connection.query(Self.creditSQL, [
            credit.transactionID, credit.originalTransactionID, credit.orderID, credit.userID, credit.productID,
            credit.quantity, credit.environment, credit.purchasedAt, credit.jobID.map(Int64.init), credit.creditedBy,
        ])[0]
        guard try row.decode(Int.self, at: 0) == 1 else { return false }
        guard try row.decode(Int.self, at: 1) == 1 else {
            // The order was locked and open a moment ago in this transaction; anything else is a bug.
            throw SettlementError("order \(credit.orderID) could not be marked credited")
        }
        return true
    }

    static let notifyCreditsSQL = "SELECT pg_notify('iap_credits', $1)"

    func notifyCredits(_ count: Int, on connection: PostgresConnection) async throws {
        _ = try await connection.query(Self.notifyCreditsSQL, [String(count)])
    }
}

/// One ledger row to write.
struct CreditRequest: Sendable {
    let transactionID: String
    let originalTransactionID: String?
    let orderID: String
    let userID: String
    let productID: String
    let quantity: Int
    let environment: String
    let purchasedAt: Date?
    let jobID: Int?
    let creditedBy: String
}

struct SettlementError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
