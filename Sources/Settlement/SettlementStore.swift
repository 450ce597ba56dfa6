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
        -- receipt-worker: transaction locks
        """

    static let ledgerSQL = """
        SELECT transaction_id, user_id, order_id FROM iap.credits WHERE transaction_id = ANY($1::text[])
        -- receipt-worker: ledger read
        """

    /// What a settlement batch reads first, in one round trip: the batch's Apple transactions
    /// locked (two jobs carrying one re-sent receipt, or support crediting by hand, are
    /// serialised until this transaction ends; sorted, so two holders never wait for each
    /// other in opposite orders), then their ledger rows (read after the lock, by a statement
    /// of its own: its snapshot sees what the previous holder committed), then the jobs'
    /// orders, locked.
    func readBatch(transactionIDs: [String], orderIDs: [String],
                   on connection: PostgresConnection) async throws -> (ledger: [String: LedgerEntry], orders: [String: OrderRow]) {
        var statements: [PostgresStatement] = []
        if !transactionIDs.isEmpty {
            statements += [PostgresStatement(Self.lockTransactionsSQL, [transactionIDs]), PostgresStatement(Self.ledgerSQL, [transactionIDs])]
        }
        if !orderIDs.isEmpty { statements.append(PostgresStatement(Self.ordersByIDSQL, [Array(Set(orderIDs))])) }
        guard !statements.isEmpty else { return ([:], [:]) }
        let results = try await connection.pipeline(statements)
        var ledger: [String: LedgerEntry] = [:]
        if !transactionIDs.isEmpty {
            for row in results[1] {
                let entry = LedgerEntry(transactionID: try row.decode(at: 0), userID: try row.decode(at: 1), orderID: try row.decode(at: 2))
                ledger[entry.transactionID] = entry
            }
        }
        var orders: [String: OrderRow] = [:]
        if !orderIDs.isEmpty {
            for row in results[results.count - 1] {
                let order = try Self.decodeOrder(row)
                orders[order.orderID] = order
            }
        }
        return (ledger, orders)
    }

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
        -- receipt-worker: job orders
        """

    func order(appAccountToken: UUID, on connection: PostgresConnection) async throws -> OrderRow? {
        try await connection.query(Self.orderByTokenSQL, [appAccountToken]).first.map(Self.decodeOrder)
    }

    /// `excluding`: orders already given a payment earlier in this transaction.
    func oldestOpenOrder(userID: String, productID: String, excluding: [String],
                         on connection: PostgresConnection) async throws -> OrderRow? {
        try await connection.query(Self.oldestOpenOrderSQL, [userID, productID, excluding]).first.map(Self.decodeOrder)
    }

    private static func decodeOrder(_ row: PostgresRow) throws -> OrderRow {
        OrderRow(orderID: try row.decode(at: 0), userID: try row.decode(at: 1), productID: try row.decode(at: 2), status: try row.decode(at: 3))
    }

    /// A batch's credits in one statement: the ledger rows (`ON CONFLICT DO NOTHING` on the
    /// transaction id) and their orders to `credited`. Under the batch's transaction locks and
    /// order locks every row must land; the statement fails otherwise (`iap.expect_rows`), and
    /// with it the transaction, which is retried. Orders are found by primary key from the new
    /// ledger rows and their status tested after: with `status = 'open'` as a scan condition
    /// the planner may read every open order (abandoned purchases included) through
    /// orders_open_by_user_product and hash-join them.
    static let creditBatchSQL = """
        WITH ledger AS (
            INSERT INTO iap.credits (transaction_id, original_transaction_id, order_id, user_id, product_id, quantity,
                                     environment, purchased_at, job_id, credited_by)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[],
                                 $8::timestamptz[], $9::bigint[], $10::text[])
            ON CONFLICT (transaction_id) DO NOTHING
            RETURNING transaction_id, order_id
        ), target AS MATERIALIZED (
            SELECT o.order_id, o.status, l.transaction_id
            FROM iap.orders AS o JOIN ledger AS l ON o.order_id = l.order_id
        ), paid AS (
            UPDATE iap.orders AS o SET status = 'credited', credited_at = now(), transaction_id = t.transaction_id
            FROM target AS t
            WHERE o.order_id = t.order_id AND t.status = 'open'
            RETURNING o.order_id
        )
        SELECT iap.expect_rows('batch credit (ledger rows, orders)', cardinality($1::text[]),
                               (SELECT count(*) FROM ledger), (SELECT count(*) FROM paid))
        -- receipt-worker: batch credit
        """

    /// The statement that writes `credits`; nil when there are none.
    func creditStatement(_ credits: [CreditRequest]) -> PostgresStatement? {
        guard !credits.isEmpty else { return nil }
        return PostgresStatement(Self.creditBatchSQL, [
            credits.map(\.transactionID), credits.map(\.originalTransactionID), credits.map(\.orderID), credits.map(\.userID),
            credits.map(\.productID), credits.map(\.quantity), credits.map(\.environment), credits.map(\.purchasedAt),
            credits.map { $0.jobID }, credits.map(\.creditedBy),
        ])
    }

    /// Writes a batch's credits now (see `creditBatchSQL`).
    func credit(batch credits: [CreditRequest], on connection: PostgresConnection) async throws {
        guard let statement = creditStatement(credits) else { return }
        _ = try await connection.pipeline([statement])
    }

    static let notifyCreditsSQL = "SELECT pg_notify('iap_credits', $1)"

    /// One NOTIFY per batch: listeners re-read the ledger anyway.
    func notifyCreditsStatement(_ count: Int) -> PostgresStatement {
        PostgresStatement(Self.notifyCreditsSQL, [String(count)])
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
