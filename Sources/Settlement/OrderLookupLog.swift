import Foundation
import Postgres

/// Every Apple order id lookup, found or failed, from the console or `support lookup-order`:
/// a row in `iap.apple_order_lookups` (so the console's find box can answer an Apple order id
/// later) and its audit row, committed together. The one writer of both for lookups.
public struct OrderLookupLog: Sendable {
    let client: PostgresClient
    let audit: AuditLog

    public init(client: PostgresClient, audit: AuditLog) {
        self.client = client
        self.audit = audit
    }

    static let insertSQL = """
        INSERT INTO iap.apple_order_lookups (apple_order_id, user_id, transaction_ids, result, reason, actor)
        VALUES ($1, $2, $3::text[], $4, $5, $6)
        """

    /// Apple answered: its transactions, and the buyer when our ledger already names exactly one.
    public func found(appleOrderID: String, transactionIDs: [String], userID: String?, actor: String) async throws {
        let details = ["transactions": String(transactionIDs.count)]
        try await client.transaction { connection in
            _ = try await connection.query(Self.insertSQL, [appleOrderID, userID, transactionIDs, "found", String?.none, actor])
            try await audit.insert(on: connection, actor: actor, action: "lookup", target: Self.target(appleOrderID), details: details)
        }
        audit.logLine(actor: actor, action: "lookup", target: Self.target(appleOrderID), details: details)
    }

    /// Apple could not be asked, refused, or did not know the id: who asked about which order, and why not.
    public func failed(appleOrderID: String, reason: String, actor: String) async throws {
        let details = ["result": "failed", "reason": reason]
        try await client.transaction { connection in
            _ = try await connection.query(Self.insertSQL, [appleOrderID, String?.none, [String](), "failed", reason, actor])
            try await audit.insert(on: connection, actor: actor, action: "lookup", target: Self.target(appleOrderID), details: details)
        }
        audit.logLine(actor: actor, action: "lookup", target: Self.target(appleOrderID), details: details)
    }

    /// Inside a lookup credit's transaction (OrderLookupDesk.credit, whoever asks: the console, the
    /// CLI, the demo): the order id is now tied to the buyer it was credited to, and the find box
    /// and the buyer's story name it.
    public static func credited(on connection: PostgresConnection, appleOrderID: String, transactionID: String, userID: String,
                                actor: String) async throws {
        _ = try await connection.query(Self.insertSQL, [appleOrderID, userID, [transactionID], "found", String?.none, actor])
    }

    public static func target(_ appleOrderID: String) -> String { "apple_order:\(appleOrderID)" }

    /// The buyer a lookup names: the one user our ledger credited its transactions to, if exactly one.
    public static func knownUser(_ users: [String?]) -> String? {
        let named = Set(users.compactMap { $0 })
        return named.count == 1 ? named.first : nil
    }
}
