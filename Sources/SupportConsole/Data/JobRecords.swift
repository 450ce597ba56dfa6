import Foundation
import Postgres

/// A job as the console shows it: everything but its payload (the receipt or JWS is never read).
public struct JobSummary: Sendable {
    public let id: Int
    public let kind: String
    public let userID: String?
    public let orderID: String?
    public let productID: String?
    public let state: String
    public let outcome: String?
    public let attempts: Int
    public let appleStatus: Int?
    public let lastError: String?
    public let createdAt: Date
    public let finishedAt: Date?
    /// Left paid_not_credited, but every one of its transactions is in the ledger now (credited
    /// from the console or the CLI, or by a later job): no longer broken, so not shown in red.
    public let creditedSince: Bool
    /// Left paid_not_credited and not all credited, but support closed its alert as owed nothing
    /// (a refund by Apple, a duplicate): not open work either, so not shown in red. Set by
    /// ClosedUnpaid.mark after loading.
    public internal(set) var closedUnpaid = false

    /// Credited or closed since: the buyer is owed nothing more through this job.
    public var settledSince: Bool { creditedSince || closedUnpaid }

    /// The columns `decode` reads, in order; never `payload`. The last is `creditedSince`: each of
    /// the job's transactions looked up in the ledger by primary key, only for paid_not_credited
    /// (false, not NULL, for a job with no outcome yet).
    static let columns = """
        id, kind, user_id, order_id, product_id, state, outcome, attempts, apple_status, last_error, created_at, finished_at, \
        CASE WHEN outcome = 'paid_not_credited' AND cardinality(transaction_ids) > 0
             THEN \(allCredited("transaction_ids")) ELSE false END AS credited_since
        """
    /// How many columns come before any a caller appends.
    static let columnCount = 13

    /// True when every transaction in the text[] `column` is in the ledger (by its primary key).
    static func allCredited(_ column: String) -> String {
        """
        NOT EXISTS (SELECT 1 FROM unnest(\(column)) AS owed(transaction_id)
            WHERE NOT EXISTS (SELECT 1 FROM iap.credits WHERE credits.transaction_id = owed.transaction_id))
        """
    }

    static func decode(_ row: PostgresRow) throws -> JobSummary {
        JobSummary(id: try row.decode(at: 0), kind: try row.decode(at: 1), userID: try row.decode(at: 2), orderID: try row.decode(at: 3),
                          productID: try row.decode(at: 4), state: try row.decode(at: 5), outcome: try row.decode(at: 6),
                          attempts: try row.decode(at: 7), appleStatus: try row.decode(at: 8), lastError: try row.decode(at: 9),
                          createdAt: try row.decode(at: 10), finishedAt: try row.decode(at: 11), creditedSince: try row.decode(at: 12))
    }
}

/// One ledger row (`iap.credits`); a set `revokedAt` is a refund.
public struct LedgerRow: Sendable {
    public let transactionID: String
    public let orderID: String
    public let userID: String
    public let productID: String
    public let quantity: Int
    public let environment: String
    public let creditedAt: Date
    public let jobID: Int?
    public let creditedBy: String
    public let revokedAt: Date?
    public let revocationReason: String?

    static let columns = "transaction_id, order_id, user_id, product_id, quantity, environment, credited_at, job_id, credited_by, revoked_at, revocation_reason"

    static func decode(_ row: PostgresRow) throws -> LedgerRow {
        LedgerRow(transactionID: try row.decode(at: 0), orderID: try row.decode(at: 1), userID: try row.decode(at: 2),
                  productID: try row.decode(at: 3), quantity: try row.decode(at: 4), environment: try row.decode(at: 5),
                  creditedAt: try row.decode(at: 6), jobID: try row.decode(at: 7), creditedBy: try row.decode(at: 8),
                  revokedAt: try row.decode(at: 9), revocationReason: try row.decode(at: 10))
    }
}

/// One alert row.
public struct AlertRow: Sendable {
    public let id: Int
    public let kind: String
    public let transactionID: String?
    public let jobID: Int?
    public let userID: String?
    public let orderID: String?
    public let productID: String?
    public let reason: String
    public let state: String
    public let firstSeenAt: Date
    public let resolution: String?
    public let resolvedAt: Date?

    public var isCreditable: Bool { state == "open" && kind == "paid_not_credited" && transactionID != nil }

    static let columns = "id, kind, transaction_id, job_id, user_id, order_id, product_id, reason, state, first_seen_at, resolution, resolved_at"

    static func decode(_ row: PostgresRow) throws -> AlertRow {
        AlertRow(id: try row.decode(at: 0), kind: try row.decode(at: 1), transactionID: try row.decode(at: 2), jobID: try row.decode(at: 3),
                 userID: try row.decode(at: 4), orderID: try row.decode(at: 5), productID: try row.decode(at: 6),
                 reason: try row.decode(at: 7), state: try row.decode(at: 8), firstSeenAt: try row.decode(at: 9),
                 resolution: try row.decode(at: 10), resolvedAt: try row.decode(at: 11))
    }
}

/// One order of a buyer (`iap.orders`).
public struct OrderRow: Sendable {
    public let orderID: String
    public let productID: String
    public let quantity: Int
    public let status: String
    public let createdAt: Date
    public let creditedAt: Date?
    public let transactionID: String?

    static func decode(_ row: PostgresRow) throws -> OrderRow {
        OrderRow(orderID: try row.decode(at: 0), productID: try row.decode(at: 1), quantity: try row.decode(at: 2),
                 status: try row.decode(at: 3), createdAt: try row.decode(at: 4), creditedAt: try row.decode(at: 5),
                 transactionID: try row.decode(at: 6))
    }
}

/// One Apple order id lookup (`iap.apple_order_lookups`), from the console or `support lookup-order`.
public struct OrderLookupRow: Sendable {
    public let appleOrderID: String
    public let userID: String?
    public let transactionIDs: [String]
    public let found: Bool
    public let reason: String?
    public let actor: String
    public let at: Date

    static let columns = "apple_order_id, user_id, transaction_ids, result = 'found', reason, actor, at"

    static func decode(_ row: PostgresRow) throws -> OrderLookupRow {
        OrderLookupRow(appleOrderID: try row.decode(at: 0), userID: try row.decode(at: 1), transactionIDs: try row.decode(at: 2),
                       found: try row.decode(at: 3), reason: try row.decode(at: 4), actor: try row.decode(at: 5), at: try row.decode(at: 6))
    }
}
