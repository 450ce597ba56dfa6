import AppStore
import Foundation
import Observability
import Postgres
import Queue

/// One transaction of an Apple order, verified, with what our ledger says of it.
public struct LookedUpTransaction: Sendable, Equatable {
    public let transactionID: String
    public let originalTransactionID: String
    public let productID: String
    public let quantity: Int
    public let purchaseDate: Date?
    /// Apple's spelling: Production, Sandbox.
    public let environment: String
    /// Apple says it was refunded (revoked): never credited.
    public let refundedByApple: Bool
    public let ledger: LedgerState

    /// The buyer our ledger credited it to, if any.
    public var creditedUserID: String? {
        if case .credited(let user, _, _) = ledger { return user }
        return nil
    }
}

/// Where a transaction stands in `iap.credits`.
public enum LedgerState: Sendable, Equatable {
    case notCredited
    /// Credited to this user's order; `revoked` when a refund took it back.
    case credited(userID: String, orderID: String, revoked: Bool)
}

public struct OrderLookupResult: Sendable, Equatable {
    public let appleOrderID: String
    public let transactions: [LookedUpTransaction]
}

public enum OrderCreditResult: Sendable, Equatable {
    case credited(orderID: String)
    /// Already in the ledger for this user: nothing changed.
    case alreadyCredited(orderID: String)
}

/// Why a lookup or a credit by Apple order id did not happen; each says what support can do.
public enum OrderLookupError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidOrderID(String)
    case appleUnavailable(String)
    case unverifiable(String)
    case transactionNotInOrder(transactionID: String, appleOrderID: String)
    case refundedByApple(String)
    case creditedToAnotherUser(transactionID: String, userID: String, orderID: String)

    public var description: String {
        switch self {
        case .invalidOrderID(let id):
            "Apple does not know order id \(id): check it against the buyer's e-mailed receipt from Apple (letters and digits, like MK5TTTVWJH)"
        case .appleUnavailable(let why): "Apple could not be asked now (\(why)); try again in a minute"
        case .unverifiable(let why): "a transaction Apple returned did not verify (\(why)); nothing was credited"
        case .transactionNotInOrder(let transaction, let order): "transaction \(transaction) is not part of Apple order \(order)"
        case .refundedByApple(let transaction): "transaction \(transaction) was refunded by Apple; it is not credited"
        case .creditedToAnotherUser(let transaction, let user, let order):
            "transaction \(transaction) is already credited to user \(user) (order \(order)); nothing was changed"
        }
    }
}

/// For `support lookup-order` and the console: a buyer's Apple order id (from Apple's
/// e-mailed receipt) → Look Up Order ID → each signed transaction verified like any other →
/// shown with its ledger state, and credited on request through the same exactly-once path as `alerts credit`.
public struct OrderLookupDesk: Sendable {
    let client: PostgresClient
    let api: AppStoreServerAPIClient
    let signedData: StoreKitSignedDataVerifier
    let metrics: SettlementMetrics
    let logger: Logger

    public init(client: PostgresClient, api: AppStoreServerAPIClient, signedData: StoreKitSignedDataVerifier,
                metrics: SettlementMetrics, logger: Logger) {
        self.client = client
        self.api = api
        self.signedData = signedData
        self.metrics = metrics
        self.logger = logger
    }

    static let ledgerSQL = """
        SELECT transaction_id, user_id, order_id, revoked_at IS NOT NULL FROM iap.credits WHERE transaction_id = ANY($1::text[])
        """

    public func lookUp(appleOrderID: String) async throws -> OrderLookupResult {
        let order: OrderLookupResponse
        switch await api.lookUpOrderID(appleOrderID) {
        case .success(let response): order = response
        case .failure(let error) where error.reason == "invalid_order_id" || error.kind == .rejected:
            throw OrderLookupError.invalidOrderID(appleOrderID)
        case .failure(let error): throw OrderLookupError.appleUnavailable(error.reason)
        }
        guard order.status == OrderLookupResponse.valid else { throw OrderLookupError.invalidOrderID(appleOrderID) }
        var verified: [AppleTransaction] = []
        for jws in order.signedTransactions {
            do {
                verified.append(try signedData.verifyTransaction(jws).transaction)
            } catch {
                throw OrderLookupError.unverifiable(error.description)
            }
        }
        var ledger: [String: LedgerState] = [:]
        for row in try await client.query(Self.ledgerSQL, [verified.map(\.transactionID)]) {
            ledger[try row.decode(at: 0)] = .credited(userID: try row.decode(at: 1), orderID: try row.decode(at: 2), revoked: try row.decode(at: 3))
        }
        logger.notice("order_looked_up", ["apple_order_id": .string(appleOrderID), "transactions": .int(verified.count)])
        return OrderLookupResult(appleOrderID: appleOrderID, transactions: verified.map { transaction in
            LookedUpTransaction(transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID,
                                productID: transaction.productID, quantity: transaction.quantity, purchaseDate: transaction.purchaseDate,
                                environment: transaction.environment.rawValue, refundedByApple: transaction.isRevoked,
                                ledger: ledger[transaction.transactionID] ?? .notCredited)
        })
    }

    static let resolveAlertsSQL = """
        UPDATE iap.alerts SET state = 'resolved', resolved_at = now(), resolution = $2
        WHERE kind = 'paid_not_credited' AND transaction_id = $1 AND state = 'open'
        """

    /// Credits one transaction of the order to `orderID` (which must be `userID`'s, for the same product,
    /// and open). Apple is asked again, so only a transaction Apple says is in the order is credited.
    /// `actor` (the support person) is named by the ledger row and logged with the credit; the
    /// lookups log ties the Apple order id to the buyer in the same transaction.
    public func credit(appleOrderID: String, transactionID: String, userID: String, orderID: String, actor: String,
                       alsoInTransaction: AlsoInTransaction<OrderCreditResult>? = nil) async throws -> OrderCreditResult {
        let found = try await lookUp(appleOrderID: appleOrderID)
        guard let transaction = found.transactions.first(where: { $0.transactionID == transactionID }) else {
            throw OrderLookupError.transactionNotInOrder(transactionID: transactionID, appleOrderID: appleOrderID)
        }
        guard !transaction.refundedByApple else { throw OrderLookupError.refundedByApple(transactionID) }
        let request = CreditRequest(
            transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID, orderID: orderID,
            userID: userID, productID: transaction.productID, quantity: transaction.quantity, environment: transaction.environment,
            purchasedAt: transaction.purchaseDate, jobID: nil, creditedBy: actor)
        let result: OrderCreditResult = try await WitnessedTransaction(client: client).run { connection in
            let result: OrderCreditResult
            switch try await ManualCredit().credit(request, on: connection) {
            case .alreadyInLedger(let entry) where entry.userID == userID:
                result = .alreadyCredited(orderID: entry.orderID)
            case .alreadyInLedger(let entry):
                throw OrderLookupError.creditedToAnotherUser(transactionID: transactionID, userID: entry.userID, orderID: entry.orderID)
            case .credited:
                _ = try await connection.query(Self.resolveAlertsSQL, [transactionID, "credited to order \(orderID) by \(actor) (Apple order \(appleOrderID))"])
                result = .credited(orderID: orderID)
            }
            try await OrderLookupLog.credited(on: connection, appleOrderID: appleOrderID, transactionID: transactionID,
                                              userID: userID, actor: actor)
            try await alsoInTransaction?(connection, result)
            return result
        }
        if case .credited = result {
            metrics.credits.inc()
            logger.notice("credited_by_support", ["announcement_key": .string("credited_by_support:\(transactionID)"),
                                                  "apple_order_id": .string(appleOrderID), "transaction_id": .string(transactionID),
                                                  "user_id": .string(userID), "order_id": .string(orderID), "actor": .string(actor)])
        }
        return result
    }
}
