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
    static let lockTransactionsSQL = """
        SELECT count(pg_advisory_xact_lock(hashtextextended(t, 0))) FROM (SELECT DISTINCT t FROM unnest($1::text[]) AS t ORDER BY t) AS ids
        """

    /// Serialises everyone settling the same Apple transactions (two jobs carrying one
    /// re-sent receipt, or support crediting by hand) until this transaction ends. Sorted,
    /// so two holders never wait for each other in opposite orders.
    func lockTransactions(_ transactionIDs: [String], on connection: PostgresConnection) async throws {
        _ = try await connection.query(Self.lockTransactionsSQL, [transactionIDs])
    }

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
        WHERE user_id = $1 AND product_id = $2 AND status = 'open' AND order_id <> ALL($3::text[])
        ORDER BY created_at, order_id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
        """
    /// The batch's job orders, locked in one statement (in order_id order, as every batch does).
    static let ordersByIDSQL = """
        SELECT order_id, user_id, product_id, status FROM iap.orders WHERE order_id = ANY($1::text[]) ORDER BY order_id FOR UPDATE
        """

    func order(id: String, on connection: PostgresConnection) async throws -> OrderRow? {
        try await connection.query(Self.orderByIDSQL, [id]).first.map(Self.decodeOrder)
    }

    func order(appAccountToken: UUID, on connection: PostgresConnection) async throws -> OrderRow? {
        try await connection.query(Self.orderByTokenSQL, [appAccountToken]).first.map(Self.decodeOrder)
    }

    /// `excluding`: orders already given a payment earlier in this transaction.
    func oldestOpenOrder(userID: String, productID: String, excluding: [String],
                         on connection: PostgresConnection) async throws -> OrderRow? {
        try await connection.query(Self.oldestOpenOrderSQL, [userID, productID, excluding]).first.map(Self.decodeOrder)
    }

    func orders(ids: [String], on connection: PostgresConnection) async throws -> [String: OrderRow] {
        guard !ids.isEmpty else { return [:] }
        var orders: [String: OrderRow] = [:]
        for row in try await connection.query(Self.ordersByIDSQL, [Array(Set(ids))]) {
            let order = try Self.decodeOrder(row)
            orders[order.orderID] = order
        }
        return orders
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

    static let insertCreditsSQL = """
        INSERT INTO iap.credits (transaction_id, original_transaction_id, order_id, user_id, product_id, quantity,
                                 environment, purchased_at, job_id, credited_by)
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[],
                             $8::timestamptz[], $9::bigint[], $10::text[])
        ON CONFLICT (transaction_id) DO NOTHING
        """
    /// Orders by primary key first, their status tested after: with `status = 'open'` in the
    /// scan's WHERE the planner may read every open order (abandoned purchases included)
    /// through orders_open_by_user_product and hash-join them.
    static let markOrdersCreditedSQL = """
        WITH target AS MATERIALIZED (
            SELECT o.order_id, o.status, u.transaction_id
            FROM iap.orders AS o JOIN unnest($1::text[], $2::text[]) AS u(order_id, transaction_id) ON o.order_id = u.order_id
            FOR UPDATE OF o
        )
        UPDATE iap.orders AS o SET status = 'credited', credited_at = now(), transaction_id = t.transaction_id
        FROM target AS t
        WHERE o.order_id = t.order_id AND t.status = 'open'
        """

    /// A batch's credits in two statements. Under the batch's transaction locks and order
    /// locks every row must land; anything else rolls the batch back (and it is retried).
    func credit(batch credits: [CreditRequest], on connection: PostgresConnection) async throws {
        guard !credits.isEmpty else { return }
        let inserted = try await connection.query(Self.insertCreditsSQL, [
            credits.map(\.transactionID), credits.map(\.originalTransactionID), credits.map(\.orderID), credits.map(\.userID),
            credits.map(\.productID), credits.map(\.quantity), credits.map(\.environment), credits.map(\.purchasedAt),
            credits.map { $0.jobID }, credits.map(\.creditedBy),
        ]).affectedRows
        let paid = try await connection.query(Self.markOrdersCreditedSQL, [credits.map(\.orderID), credits.map(\.transactionID)]).affectedRows
        guard inserted == credits.count, paid == credits.count else {
            throw SettlementError("batch credit wrote \(inserted) ledger rows and \(paid) orders for \(credits.count) payments")
        }
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
