import Foundation
import Postgres

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

    /// Inside the caller's transaction: checks the order (exists, this user's, this product, open) and
    /// writes `request`, the payment as Apple reported it, to that order.
    func credit(_ request: CreditRequest, on connection: PostgresConnection) async throws -> Result {
        let orderID = request.orderID
        let read = try await store.readBatch(transactionIDs: [request.transactionID], orderIDs: [orderID], on: connection)
        guard let order = read.orders[orderID] else { throw SupportError.orderNotFound(orderID) }
        guard order.userID == request.userID else { throw SupportError.orderMismatch("order \(orderID) belongs to another user") }
        guard order.productID == request.productID else {
            throw SupportError.orderMismatch("order \(orderID) is for \(order.productID), the payment was for \(request.productID)")
        }
        if let existing = read.ledger[request.transactionID] { return .alreadyInLedger(existing) }
        guard order.status == "open" else { throw SupportError.orderMismatch("order \(orderID) is \(order.status), not open") }
        // Under the transaction lock and the order lock the write cannot miss (the statement checks).
        _ = try await connection.pipeline([store.creditStatement([request]), store.notifyCreditsStatement(1)].compactMap { $0 })
        return .credited
    }
}
