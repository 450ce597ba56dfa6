import Foundation
import Postgres
import enum Settlement.SupportError
import struct Settlement.OrderLookupLog
import SupportConsole
import Synchronization

/// Stands in for Apple's Look Up Order ID (Settlement's `OrderLookupDesk` in production): two transactions for any
/// order id, and credits recorded so tests can see what the console asked for. A credit is refused
/// as the ledger's own path refuses it (ManualCredit): an order that does not exist, or another buyer's.
final class FakeOrderLookup: AppleOrderLookup {
    let credits = Mutex<[String]>([])
    /// The harness's database, where the console's audit row is written in a transaction of its own.
    let database = Mutex<PostgresClient?>(nil)

    func lookUp(appleOrderID: String) async throws -> [LookedUpTransaction] {
        let credited = credits.withLock { $0 }
        return ["2000000000000099", "2000000000000098"].map { id in
            LookedUpTransaction(transactionID: id, originalTransactionID: id, productID: "coins_100", quantity: 1,
                                purchaseDate: Date(timeIntervalSince1970: 1_790_000_000), environment: "Production",
                                revoked: id.hasSuffix("98"), creditedOrderID: credited.contains(id) ? "order-alice-1" : nil,
                                creditedUserID: credited.contains(id) ? "alice" : nil)
        }
    }

    func credit(appleOrderID: String, transactionID: String, userID: String, orderID: String, actor: String,
                alsoInTransaction: @escaping @Sendable (PostgresConnection, String) async throws -> Void) async throws -> String {
        let sentence = "credited \(transactionID) to order \(orderID)"
        if let client = database.withLock({ $0 }) {
            let owners = try await client.query("SELECT user_id FROM iap.orders WHERE order_id = $1", [orderID])
            guard let owner = owners.first else { throw SupportError.orderNotFound(orderID) }
            guard try owner.decode(String.self, at: 0) == userID else { throw SupportError.orderMismatch("order \(orderID) belongs to another user") }
            try await client.transaction { connection in
                // As OrderLookupDesk.credit does: the Apple order id is tied to the buyer with the credit.
                try await OrderLookupLog.credited(on: connection, appleOrderID: appleOrderID, transactionID: transactionID,
                                                  userID: userID, actor: actor)
                try await alsoInTransaction(connection, sentence)
            }
        }
        credits.withLock { $0.append(transactionID) }
        return sentence
    }
}
