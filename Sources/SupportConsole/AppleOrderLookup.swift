import Foundation
import Postgres

/// One transaction Apple returned for an order id, already verified, as the console shows it.
public struct LookedUpTransaction: Sendable, Equatable, Codable {
    public let transactionID: String
    public let originalTransactionID: String?
    public let productID: String
    public let quantity: Int
    public let purchaseDate: Date?
    public let environment: String
    public let revoked: Bool
    /// Set when the ledger already holds this transaction.
    public let creditedOrderID: String?
    public let creditedUserID: String?

    public init(transactionID: String, originalTransactionID: String?, productID: String, quantity: Int, purchaseDate: Date?,
                environment: String, revoked: Bool, creditedOrderID: String?, creditedUserID: String?) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.environment = environment
        self.revoked = revoked
        self.creditedOrderID = creditedOrderID
        self.creditedUserID = creditedUserID
    }
}

/// Look Up Order ID and its credit action, which live in Settlement. The
/// console depends on this seam only; without an implementation the page says lookup is unavailable.
public protocol AppleOrderLookup: Sendable {
    func lookUp(appleOrderID: String) async throws -> [LookedUpTransaction]
    /// Credits one looked-up transaction to `orderID` through the exactly-once ledger path; returns
    /// what happened in a sentence for support ("credited", "already credited to order …", …).
    /// `alsoInTransaction` (the audit row) runs in the credit's transaction with that sentence.
    func credit(appleOrderID: String, transactionID: String, userID: String, orderID: String, actor: String,
                alsoInTransaction: @escaping @Sendable (PostgresConnection, String) async throws -> Void) async throws -> String
}
