import AppStore
import Foundation
import Observability
import Postgres
import Queue
import Synchronization

/// What a verified job still needs from the database.
public enum SettlementWork: Sendable {
    /// Apple confirmed these transactions: match, credit, alert.
    case transactions(VerifiedReceipt)
    /// Apple says our configuration is wrong (21004): not the buyer's fault, a human must act.
    case configError(appleStatus: Int, detail: String)
    /// A verified App Store Server Notification. Boxed (indirect), like the refund answer below:
    /// inline, the largest case would size every verification, and every async frame that holds one
    /// stays allocated while the job waits for Apple.
    indirect case notification(NotificationWork)
    /// A refund request answered (or not, and why), to record with the job.
    indirect case consumption(ConsumptionWork)
}

/// The Apple verifier the queue runs: verifyReceipt outside any transaction, then
/// matching and crediting inside the completion transaction.
public struct AppleJobHandler: JobHandler {
    /// What asks Apple (outside any transaction).
    let verifier: JobVerifier
    let settler: TransactionSettler
    let notifications: NotificationSettler
    let store = SettlementStore()
    let alerts: AlertRecorder
    let metrics: SettlementMetrics
    let logger: Logger
    /// Effects of settlements whose transaction has not committed yet, by job id.
    private let pending = PendingEffects()
    private let consumptionSettler: ConsumptionSettler

    public init(receipts: AppleReceiptClient, signedData: StoreKitSignedDataVerifier, serverAPI: AppStoreServerAPIClient? = nil,
                consumption: ConsumptionResponder? = nil, maxAttempts: Int, alerts: AlertRecorder, metrics: SettlementMetrics,
                logger: Logger) {
        verifier = JobVerifier(receipts: receipts, signedData: signedData, serverAPI: serverAPI, consumption: consumption,
                               maxAttempts: maxAttempts)
        consumptionSettler = ConsumptionSettler(alerts: alerts)
        self.alerts = alerts
        self.metrics = metrics
        self.logger = logger
        settler = TransactionSettler(alerts: alerts)
        notifications = NotificationSettler(transactions: settler, alerts: alerts)
    }

    /// Apple's answer for one job, outside any transaction (it may take seconds).
    public func verify(_ job: ClaimedJob) async -> Verification<SettlementWork> {
        await verifier.verify(job)
    }

    public func settle(_ items: [SettlementItem<SettlementWork>], on connection: PostgresConnection) async throws -> SettledBatch {
        // Two jobs carrying the same Apple transaction (a re-sent receipt) may be settled by
        // two completion transactions at once: the second waits for the first's transaction
        // lock until it has committed, then sees its ledger row.
        let transactionIDs = items.flatMap { item -> [String] in
            switch item.work {
            case .transactions(let receipt): return receipt.transactions.map(\.transactionID)
            case .notification(let work): return work.transaction.map { [$0.transactionID] } ?? []
            case .configError, .consumption: return []
            }
        }
        // The jobs' own orders, read and locked for the whole batch with the ledger rows.
        let orderIDs = items.compactMap { item -> String? in
            if case .transactions = item.work { return item.job.orderID }
            return nil
        }
        let read = try await store.readBatch(transactionIDs: transactionIDs, orderIDs: orderIDs, on: connection)
        var batch = SettlementBatch(ledger: read.ledger, orders: read.orders)
        var credited = 0
        var outcomes: [JobOutcome] = []
        outcomes.reserveCapacity(items.count)
        for item in items {
            var effects = SettlementEffects()
            switch item.work {
            case .configError(let status, let detail):
                let alert = NewAlert(kind: .configError, jobID: item.job.id, userID: item.job.userID, orderID: item.job.orderID,
                                     productID: item.job.productID, reason: "apple_status_\(status)", details: ["detail": detail])
                if let id = try await alerts.raise(alert, on: connection) { effects.alerts.append((alert, id)) }
                outcomes.append(.finish(.attention, "config_error", appleStatus: status, error: detail))
            case .transactions(let receipt):
                outcomes.append(try await settleTransactions(receipt, job: item.job, batch: &batch, effects: &effects, on: connection))
            case .notification(let work):
                try await batch.flush(store, on: connection) // a refund reads credits from the database
                outcomes.append(try await notifications.settle(work, job: item.job, batch: &batch, effects: &effects, on: connection))
            case .consumption(let work):
                outcomes.append(try await consumptionSettler.settle(work, job: item.job, effects: &effects, on: connection))
            }
            credited += effects.credits
            pending.store(effects, for: item.job.run)
        }
        // The credits and one NOTIFY go out with the jobs' completion and COMMIT.
        let writes = [store.creditStatement(batch.takeCredits()), credited > 0 ? store.notifyCreditsStatement(credited) : nil]
        return SettledBatch(outcomes: outcomes, writes: writes.compactMap { $0 })
    }

    public func didCommit(_ runs: [JobRun]) {
        for effects in pending.take(runs) {
            if effects.credits > 0 { metrics.credits.add(Double(effects.credits)) }
            for (alert, id) in effects.alerts { alerts.announce(alert, id: id, repeated: false) }
            for revoked in effects.revoked { revoked.announce(logger: logger, metrics: metrics) }
            for type in effects.notifications {
                metrics.notifications.labels(type).inc()
                if type == "CONSUMPTION_REQUEST" { logger.notice("consumption_request", [:]) }
            }
            for result in effects.consumptionResults { metrics.consumptionRequests.labels(result).inc() }
        }
    }

    public func didRollBack(_ runs: [JobRun]) {
        _ = pending.take(runs)
    }

    private func settleTransactions(_ receipt: VerifiedReceipt, job: ClaimedJob, batch: inout SettlementBatch,
                                    effects: inout SettlementEffects, on connection: PostgresConnection) async throws -> JobOutcome {
        guard let userID = job.userID else {
            return .finish(.failed, "invalid_receipt", error: "job has no user")
        }
        let results = try await settler.settle(receipt.transactions,
                                               context: .init(jobID: job.id, userID: userID, orderID: job.orderID),
                                               batch: &batch, effects: &effects, on: connection)
        guard !results.isEmpty else { return .finish(.failed, "no_purchase", appleStatus: 0) }
        let (state, outcome) = TransactionResult.jobOutcome(results.map(\.result))
        let summary = results.map { "\($0.transactionID):\($0.result.rawValue)" }.joined(separator: ",")
        return .finish(state, outcome, appleStatus: 0, error: state == .done ? nil : summary,
                       transactionIDs: results.map(\.transactionID))
    }
}

/// Settlement effects waiting for their transaction's outcome, by claim: two batches may
/// hold results of two claims of one job, and one's rollback must not drop the other's.
final class PendingEffects: Sendable {
    private let byRun = Mutex<[JobRun: SettlementEffects]>([:])

    func store(_ effects: SettlementEffects, for run: JobRun) {
        guard !effects.isEmpty else { return }
        byRun.withLock { $0[run] = effects }
    }

    func take(_ runs: [JobRun]) -> [SettlementEffects] {
        byRun.withLock { all in runs.compactMap { all.removeValue(forKey: $0) } }
    }
}
