import Foundation
import Postgres

/// A payment support credits by hand, as Apple reported it.
struct ManualCreditFacts: Sendable {
    let transactionID: String
    let originalTransactionID: String?
    let userID: String
    let productID: String
    let quantity: Int
    let environment: String
    let purchasedAt: Date?
    let jobID: Int?
}

/// The one exactly-once path for credits by support (`alerts credit`, `support lookup-order`, the
/// console): the same transaction lock and ledger write as the worker, so a payment is credited once
/// whoever gets there first.
struct ManualCredit: Sendable {
    enum Result: Sendable {
        case credited
        /// The payment is in the ledger already (nothing written): who has it.
        case alreadyInLedger(LedgerEntry)
    }

    let store = SettlementStore()

    /// Inside the caller's transaction: checks the order (exists, this user's, this product, open) and credits.
    func credit(_ facts: ManualCreditFacts, orderID: String, creditedBy: String, on connection: PostgresConnection) async throws -> Result {
        try await store.lockTransactions([facts.transactionID], on: connection)
        guard let order = try await store.order(id: orderID, on: connection) else { throw SupportError.orderNotFound(orderID) }
        guard order.userID == facts.userID else { throw SupportError.orderMismatch("order \(orderID) belongs to another user") }
        guard order.productID == facts.productID else {
            throw SupportError.orderMismatch("order \(orderID) is for \(order.productID), the payment was for \(facts.productID)")
        }
        if let existing = try await store.ledgerEntries([facts.transactionID], on: connection)[facts.transactionID] {
            return .alreadyInLedger(existing)
        }
        guard order.status == "open" else { throw SupportError.orderMismatch("order \(orderID) is \(order.status), not open") }
        let request = CreditRequest(
            transactionID: facts.transactionID, originalTransactionID: facts.originalTransactionID, orderID: orderID,
            userID: facts.userID, productID: facts.productID, quantity: facts.quantity, environment: facts.environment,
            purchasedAt: facts.purchasedAt, jobID: facts.jobID, creditedBy: creditedBy)
        guard try await store.credit(request, on: connection) else {
            throw SettlementError("transaction \(facts.transactionID) was credited concurrently; run the command again")
        }
        try await store.notifyCredits(1, on: connection)
        return .credited
    }
}
