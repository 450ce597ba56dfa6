import AppStore
import Foundation
import Observability
import Postgres
import Queue

/// A verified App Store Server Notification, reduced to what settlement needs.
public struct NotificationWork: Sendable {
    public let uuid: UUID?
    public let type: String
    public let subtype: String?
    public let transaction: AppleTransaction?
    /// When Apple sent it: a refund request's 12-hour window starts here.
    public var signedDate: Date? = nil
    public var consumptionRequestReason: String? = nil
}

/// Notification jobs: ONE_TIME_CHARGE credits (the server-side catch-up when
/// the app never uploaded), REFUND revokes, REFUND_REVERSED restores, anything else is
/// acknowledged; a notificationUUID already applied changes nothing.
struct NotificationSettler: Sendable {
    let store = SettlementStore()
    let transactions: TransactionSettler
    let alerts: AlertRecorder
    let consumption = ConsumptionStore()

    static let rememberSQL = """
        INSERT INTO iap.notifications (notification_uuid, notification_type, subtype, transaction_id, job_id)
        VALUES ($1, $2, $3, $4, $5) ON CONFLICT (notification_uuid) DO NOTHING RETURNING 1
        """
    static let revokeSQL = """
        UPDATE iap.credits SET revoked_at = coalesce($2, now()), revocation_reason = $3
        WHERE transaction_id = $1 AND revoked_at IS NULL RETURNING order_id, user_id
        """
    static let restoreSQL = """
        UPDATE iap.credits SET revoked_at = NULL, revocation_reason = NULL
        WHERE transaction_id = $1 AND revoked_at IS NOT NULL RETURNING order_id, user_id
        """
    /// A refund with no credit to revoke yet is kept for `RefundApplier` (migration 0034).
    static let keepRefundSQL = """
        INSERT INTO iap.refunds_before_credit (transaction_id, revoked_at, revocation_reason, job_id)
        VALUES ($1, $2, $3, $4) ON CONFLICT (transaction_id) DO NOTHING
        """
    /// A reversal of a refund still waiting for its credit: nothing will be revoked.
    static let dropKeptRefundSQL = "DELETE FROM iap.refunds_before_credit WHERE transaction_id = $1 AND applied_at IS NULL"

    func settle(_ work: NotificationWork, job: ClaimedJob, batch: inout SettlementBatch, effects: inout SettlementEffects,
                on connection: PostgresConnection) async throws -> JobOutcome {
        let transactionIDs = work.transaction.map { [$0.transactionID] } ?? []
        if let uuid = work.uuid {
            let fresh = try await connection.query(Self.rememberSQL, [uuid, work.type, work.subtype, work.transaction?.transactionID, job.id])
            guard !fresh.isEmpty else {
                return .finish(.done, "acknowledged", error: "notification \(uuid.uuidString.lowercased()) already applied",
                               transactionIDs: transactionIDs)
            }
        }
        effects.notifications.append(work.type)
        guard let transaction = work.transaction else { return .finish(.done, "acknowledged") }
        switch work.type {
        case "ONE_TIME_CHARGE":
            return try await charge(transaction, job: job, batch: &batch, effects: &effects, on: connection)
        case "REFUND":
            let reason = transaction.revocationReason ?? "0"
            let rows = try await connection.query(Self.revokeSQL, [transaction.transactionID, transaction.revocationDate, reason])
            guard let row = rows.first else {
                _ = try await connection.query(Self.keepRefundSQL, [transaction.transactionID, transaction.revocationDate, reason, job.id])
                return .finish(.done, "acknowledged", error: "refund of an uncredited transaction: kept, and applied when it is credited",
                               transactionIDs: transactionIDs)
            }
            effects.revoked.append(RevokedCredit(transactionID: transaction.transactionID, orderID: try row.decode(at: 0),
                                                 userID: try row.decode(at: 1), reason: reason))
            return .finish(.done, "revoked", transactionIDs: transactionIDs)
        case "CONSUMPTION_REQUEST":
            // Recorded, and answered by its own `consumption` job.
            if let uuid = work.uuid {
                _ = try await consumption.record(requestID: uuid, transaction: transaction, reason: work.consumptionRequestReason,
                                                 requestedAt: work.signedDate ?? Date(),
                                                 userID: batch.ledger[transaction.transactionID]?.userID, on: connection)
            }
            return .finish(.done, "acknowledged", transactionIDs: transactionIDs)
        case "REFUND_REVERSED":
            let rows = try await connection.query(Self.restoreSQL, [transaction.transactionID])
            if rows.isEmpty { _ = try await connection.query(Self.dropKeptRefundSQL, [transaction.transactionID]) }
            return .finish(.done, rows.isEmpty ? "acknowledged" : "restored", transactionIDs: transactionIDs)
        default:
            return .finish(.done, "acknowledged", transactionIDs: transactionIDs)
        }
    }

    /// The buyer is known only through the order that carries the transaction's appAccountToken.
    private func charge(_ transaction: AppleTransaction, job: ClaimedJob, batch: inout SettlementBatch,
                        effects: inout SettlementEffects, on connection: PostgresConnection) async throws -> JobOutcome {
        let ids = [transaction.transactionID]
        if batch.ledger[transaction.transactionID] != nil {
            return .finish(.done, "acknowledged", error: "already credited", transactionIDs: ids)
        }
        guard let token = transaction.appAccountToken, let order = try await store.order(appAccountToken: token, on: connection) else {
            let alert = NewAlert(kind: .paidNotCredited, transactionID: transaction.transactionID, jobID: job.id,
                                 productID: transaction.productID, reason: "buyer_unknown",
                                 details: ["quantity": String(transaction.quantity), "environment": transaction.environment.rawValue,
                                           "original_transaction_id": transaction.originalTransactionID])
            if let id = try await alerts.raise(alert, on: connection) { effects.alerts.append((alert, id)) }
            return .finish(.attention, "paid_not_credited", error: "no order carries this appAccountToken", transactionIDs: ids)
        }
        let results = try await transactions.settle([transaction], context: .init(jobID: job.id, userID: order.userID, orderID: order.orderID),
                                                    batch: &batch, effects: &effects, on: connection)
        let (state, outcome) = TransactionResult.jobOutcome(results.map(\.result))
        return .finish(state, outcome == "already_credited" ? "acknowledged" : outcome, transactionIDs: ids)
    }
}

struct RevokedCredit: Sendable {
    let transactionID: String
    let orderID: String
    let userID: String
    let reason: String

    /// The one `credit_revoked` line, whoever revoked it (a REFUND's job or `RefundApplier`).
    func announce(logger: Logger, metrics: SettlementMetrics) {
        metrics.creditsRevoked.inc()
        logger.notice("credit_revoked", ["announcement_key": .string("credit_revoked:\(transactionID)"),
                                         "transaction_id": .string(transactionID), "order_id": .string(orderID),
                                         "user_id": .string(userID), "revocation_reason": .string(reason)])
    }
}
