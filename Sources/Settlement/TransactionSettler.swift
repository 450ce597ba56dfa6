import AppStore
import Foundation
import Observability
import Postgres
import Queue

/// What happened to one Apple transaction of a job.
public enum TransactionResult: String, Sendable {
    case credited, alreadyCredited = "already_credited", replayed, refunded
    case paidNotCredited = "paid_not_credited"
}

/// Matching and crediting for the paid transactions of one verified job: match each to an order,
/// credit it exactly once, or raise the alert that says why it could not be. Runs inside
/// the completion transaction, after the job's lease was checked and locked.
struct TransactionSettler: Sendable {
    let store = SettlementStore()
    let alerts: AlertRecorder

    struct Context: Sendable {
        let jobID: Int
        let userID: String
        let orderID: String?
    }

    /// Settles `transactions` (all from one job) and returns a result per transaction id;
    /// what must be announced after commit is added to `effects`. Credits go into `batch`,
    /// written for the whole batch at once (`SettlementBatch.write`).
    func settle(_ transactions: [AppleTransaction], context: Context, batch: inout SettlementBatch,
                effects: inout SettlementEffects,
                on connection: PostgresConnection) async throws -> [(transactionID: String, result: TransactionResult)] {
        // The earliest purchase of the job order's product gets the job's order.
        let ordered = transactions.sorted { ($0.purchaseDate ?? .distantFuture, $0.transactionID) < ($1.purchaseDate ?? .distantFuture, $1.transactionID) }
        var jobOrderUsed = false
        var results: [(String, TransactionResult)] = []
        for transaction in ordered {
            if transaction.isRevoked {
                results.append((transaction.transactionID, .refunded))
                continue
            }
            if let entry = batch.ledger[transaction.transactionID] {
                results.append((transaction.transactionID, try await alreadyInLedger(entry, transaction, context, effects: &effects,
                                                                                       on: connection)))
                continue
            }
            let match = try await findOrder(for: transaction, context: context, jobOrderUsed: &jobOrderUsed, batch: &batch, on: connection)
            switch match {
            case .order(let order):
                batch.credit(CreditRequest(
                    transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID,
                    orderID: order.orderID, userID: order.userID, productID: transaction.productID, quantity: transaction.quantity,
                    environment: transaction.environment.rawValue, purchasedAt: transaction.purchaseDate, jobID: context.jobID,
                    creditedBy: "worker"))
                effects.credits += 1
                results.append((transaction.transactionID, .credited))
            case .none(let reason, let order):
                let alert = paidNotCredited(transaction, context: context, reason: reason, order: order)
                if let id = try await alerts.raise(alert, on: connection) { effects.alerts.append((alert, id)) }
                results.append((transaction.transactionID, .paidNotCredited))
            }
        }
        return results
    }

    private enum Match {
        case order(OrderRow)
        /// No order can take it: why, and the order that was considered, if any.
        case none(reason: String, order: String?)
    }

    private func findOrder(for transaction: AppleTransaction, context: Context, jobOrderUsed: inout Bool,
                           batch: inout SettlementBatch, on connection: PostgresConnection) async throws -> Match {
        // 1. The job's own order (locked with the batch's), for the transaction of that order's product.
        if !jobOrderUsed, let orderID = context.orderID, let order = batch.orders[orderID], order.productID == transaction.productID {
            jobOrderUsed = true
            if order.userID != context.userID { return .none(reason: "order_of_another_user", order: order.orderID) }
            if batch.isOpen(order) { return .order(order) }
        }
        // 2. The order that carries the transaction's appAccountToken.
        if let token = transaction.appAccountToken, let order = try await store.order(appAccountToken: token, on: connection) {
            if order.userID != context.userID { return .none(reason: "order_of_another_user", order: order.orderID) }
            if order.productID != transaction.productID { return .none(reason: "order_of_another_product", order: order.orderID) }
            if batch.isOpen(order) { return .order(order) }
        }
        // 3. The user's oldest open order for the product (the order id was lost on the device).
        if let order = try await store.oldestOpenOrder(userID: context.userID, productID: transaction.productID,
                                                       excluding: Array(batch.assigned), on: connection) {
            return .order(order)
        }
        return .none(reason: "no_open_order", order: context.orderID)
    }

    private func alreadyInLedger(_ entry: LedgerEntry, _ transaction: AppleTransaction, _ context: Context,
                                 effects: inout SettlementEffects, on connection: PostgresConnection) async throws -> TransactionResult {
        if entry.userID == context.userID { return .alreadyCredited }
        // 刷单: one valid receipt re-sent by another account.
        let alert = NewAlert(
            kind: .receiptReplay, transactionID: transaction.transactionID, jobID: context.jobID, userID: context.userID,
            orderID: context.orderID, productID: transaction.productID, reason: "credited_to_another_user",
            details: ["credited_user_id": entry.userID, "credited_order_id": entry.orderID])
        if let id = try await alerts.raise(alert, on: connection) { effects.alerts.append((alert, id)) }
        return .replayed
    }

    private func paidNotCredited(_ transaction: AppleTransaction, context: Context, reason: String, order: String?) -> NewAlert {
        var details = [
            "original_transaction_id": transaction.originalTransactionID,
            "quantity": String(transaction.quantity),
            "environment": transaction.environment.rawValue,
        ]
        if let date = transaction.purchaseDate { details["purchased_at_ms"] = String(Int64(date.timeIntervalSince1970 * 1000)) }
        if let token = transaction.appAccountToken { details["app_account_token"] = token.uuidString.lowercased() }
        if let order { details["considered_order_id"] = order }
        return NewAlert(kind: .paidNotCredited, transactionID: transaction.transactionID, jobID: context.jobID,
                        userID: context.userID, orderID: context.orderID, productID: transaction.productID,
                        reason: reason, details: details)
    }
}

extension TransactionResult {
    /// A job whose transactions end differently takes the first of
    /// paid_not_credited, config_error, credited, replayed, already_credited, then the rest.
    static let jobPriority: [TransactionResult] = [.paidNotCredited, .credited, .replayed, .alreadyCredited, .refunded]

    static func jobOutcome(_ results: [TransactionResult]) -> (TerminalState, String) {
        let chosen = jobPriority.first { results.contains($0) } ?? .refunded
        switch chosen {
        case .paidNotCredited: return (.attention, chosen.rawValue)
        case .credited, .alreadyCredited: return (.done, chosen.rawValue)
        case .replayed, .refunded: return (.failed, chosen.rawValue)
        }
    }
}

/// What a settlement did that must be announced once (and only if) it commits.
struct SettlementEffects: Sendable {
    var credits = 0
    var alerts: [(NewAlert, Int)] = []
    var revoked: [RevokedCredit] = []
    /// Notification types applied (counted; CONSUMPTION_REQUEST is logged).
    var notifications: [String] = []
    /// Refund requests answered: sent, no_consent, failed.
    var consumptionResults: [String] = []

    var isEmpty: Bool { credits == 0 && alerts.isEmpty && revoked.isEmpty && notifications.isEmpty && consumptionResults.isEmpty }
}

/// What one settlement transaction has read and decided so far: the ledger rows and job
/// orders read once for the whole batch (under the transaction locks and row locks), the
/// orders assigned in this batch, and the credits to write, in one statement at the end.
struct SettlementBatch: Sendable {
    var ledger: [String: LedgerEntry]
    var orders: [String: OrderRow]
    private(set) var assigned: Set<String> = []
    private(set) var credits: [CreditRequest] = []

    init(ledger: [String: LedgerEntry], orders: [String: OrderRow]) {
        self.ledger = ledger
        self.orders = orders
    }

    /// Open in the database and not yet given a payment by this batch.
    func isOpen(_ order: OrderRow) -> Bool { order.status == "open" && !assigned.contains(order.orderID) }

    /// Writes the credits decided so far now: before anything that reads the ledger from the
    /// database, such as a refund in the same batch.
    mutating func flush(_ store: SettlementStore, on connection: PostgresConnection) async throws {
        try await store.credit(batch: takeCredits(), on: connection)
    }

    /// The credits decided and not yet written, for the caller to write.
    mutating func takeCredits() -> [CreditRequest] {
        defer { credits.removeAll() }
        return credits
    }

    mutating func credit(_ request: CreditRequest) {
        credits.append(request)
        assigned.insert(request.orderID)
        ledger[request.transactionID] = LedgerEntry(transactionID: request.transactionID, userID: request.userID, orderID: request.orderID)
    }
}
