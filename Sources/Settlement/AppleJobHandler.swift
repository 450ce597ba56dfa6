import AppStore
import Foundation
import Observability
import Postgres
import Queue

/// What a verified job still needs from the database.
public enum SettlementWork: Sendable {
    /// Apple confirmed these transactions: match, credit, alert.
    case transactions(VerifiedReceipt)
    /// Apple says our configuration is wrong (21004): not the buyer's fault, a human must act.
    case configError(appleStatus: Int, detail: String)
}

/// The Apple verifier the queue runs: verifyReceipt outside any transaction, then
/// matching and crediting inside the completion transaction.
public struct AppleJobHandler: JobHandler {
    let receipts: AppleReceiptClient
    let maxAttempts: Int
    let settler: TransactionSettler
    let alerts: AlertRecorder
    let logger: Logger

    public init(receipts: AppleReceiptClient, maxAttempts: Int, alerts: AlertRecorder, metrics: SettlementMetrics, logger: Logger) {
        self.receipts = receipts
        self.maxAttempts = maxAttempts
        self.alerts = alerts
        self.logger = logger
        settler = TransactionSettler(alerts: alerts, metrics: metrics, logger: logger)
    }

    public func verify(_ job: ClaimedJob) async -> Verification<SettlementWork> {
        switch job.kind {
        case "receipt":
            switch await receipts.verify(receiptData: job.payload, attempt: job.attempts, maxAttempts: maxAttempts) {
            case .verified(let receipt):
                return .settle(.transactions(receipt))
            case .retry(let reason, let status, let retryAfter):
                return .decided(.retry(reason, notBefore: retryAfter, appleStatus: status))
            case .rejected(let outcome, let status, let detail):
                return .decided(.finish(.failed, outcome.rawValue, appleStatus: status, error: detail))
            case .configError(let status, let detail):
                return .settle(.configError(appleStatus: status, detail: detail))
            }
        default:
            // Kinds this build cannot verify wait (and are swept, then flagged stuck) rather than being lost.
            return .decided(.retry("kind_not_supported", error: "no verifier for kind \(job.kind) in this build"))
        }
    }

    public func settle(_ items: [SettlementItem<SettlementWork>], on connection: PostgresConnection) async throws -> [JobOutcome] {
        var outcomes: [JobOutcome] = []
        outcomes.reserveCapacity(items.count)
        for item in items {
            switch item.work {
            case .configError(let status, let detail):
                try await alerts.raise(NewAlert(kind: .configError, jobID: item.job.id, userID: item.job.userID,
                                                orderID: item.job.orderID, productID: item.job.productID,
                                                reason: "apple_status_\(status)", details: ["detail": detail]), on: connection)
                outcomes.append(.finish(.attention, "config_error", appleStatus: status, error: detail))
            case .transactions(let receipt):
                outcomes.append(try await settleTransactions(receipt, job: item.job, on: connection))
            }
        }
        return outcomes
    }

    private func settleTransactions(_ receipt: VerifiedReceipt, job: ClaimedJob, on connection: PostgresConnection) async throws -> JobOutcome {
        guard let userID = job.userID else {
            return .finish(.failed, "invalid_receipt", error: "job has no user")
        }
        let results = try await settler.settle(receipt.transactions,
                                               context: .init(jobID: job.id, userID: userID, orderID: job.orderID),
                                               on: connection)
        guard !results.isEmpty else { return .finish(.failed, "no_purchase", appleStatus: 0) }
        let (state, outcome) = TransactionResult.jobOutcome(results.map(\.result))
        let summary = results.map { "\($0.transactionID):\($0.result.rawValue)" }.joined(separator: ",")
        return .finish(state, outcome, appleStatus: 0, error: state == .done ? nil : summary,
                       transactionIDs: results.map(\.transactionID))
    }
}
