import Foundation
import SupportConsole
import Synchronization

/// Stands in for Apple's Look Up Order ID (issue 12 brings the real one): two transactions for any
/// order id, and credits recorded so tests can see what the console asked for.
final class FakeOrderLookup: AppleOrderLookup {
    let credits = Mutex<[String]>([])

    func lookUp(appleOrderID: String) async throws -> [LookedUpTransaction] {
        let credited = credits.withLock { $0 }
        return ["2000000000000099", "2000000000000098"].map { id in
            LookedUpTransaction(transactionID: id, originalTransactionID: id, productID: "coins_100", quantity: 1,
                                purchaseDate: Date(timeIntervalSince1970: 1_790_000_000), environment: "Production",
                                revoked: id.hasSuffix("98"), creditedOrderID: credited.contains(id) ? "order-alice-1" : nil,
                                creditedUserID: credited.contains(id) ? "alice" : nil)
        }
    }

    func credit(appleOrderID: String, transactionID: String, userID: String, orderID: String, actor: String) async throws -> String {
        credits.withLock { $0.append(transactionID) }
        return "credited \(transactionID) to order \(orderID)"
    }
}
