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
    /// A verified App Store Server Notification.
    case notification(NotificationWork)
    /// A refund request answered (or not, and why), to record with the job.
    case consumption(ConsumptionWork)
}

/// The Apple verifier the queue runs: verifyReceipt outside any transaction, then
/// matching and crediting inside the completion transaction.
public struct AppleJobHandler: JobHandler {
    let receipts: AppleReceiptClient
    let signedData: StoreKitSignedDataVerifier
    /// App Store Server API (Get Transaction Info) for transaction_id jobs; nil without credentials.
    let serverAPI: AppStoreServerAPIClient?
    /// Answers `consumption` jobs (SPEC 9.2); nil where none are expected (they then wait, flagged stuck).
    let consumption: ConsumptionResponder?
    let maxAttempts: Int
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
        self.receipts = receipts
        self.signedData = signedData
        self.serverAPI = serverAPI
        self.consumption = consumption
        consumptionSettler = ConsumptionSettler(alerts: alerts)
        self.maxAttempts = maxAttempts
        self.alerts = alerts
        self.metrics = metrics
        self.logger = logger
        settler = TransactionSettler(alerts: alerts)
        notifications = NotificationSettler(transactions: settler, alerts: alerts)
    }

    // Each kind is its own function, kept out of line: an async function's frame is allocated
    // for the whole task while it waits, and one that held every kind's locals cost ~10 KB per
    // in-flight job (100 MB at 10,000 in flight). Now a job pays only for its own kind's path.
    public func verify(_ job: ClaimedJob) async -> Verification<SettlementWork> {
        switch job.kind {
        case "receipt": return await verifyReceipt(job)
        case "signed_transaction": return await verifySignedTransactionJob(job)
        case "transaction_id": return await verifyTransactionID(job)
        case "notification": return verifyNotification(job)
        case "consumption": return await answerConsumption(job)
        default:
            // Kinds this build cannot verify wait (and are swept, then flagged stuck) rather than being lost.
            return .decided(.retry("kind_not_supported", error: "no verifier for kind \(job.kind) in this build"))
        }
    }

    @inline(never)
    private func verifyReceipt(_ job: ClaimedJob) async -> Verification<SettlementWork> {
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
    }

    @inline(never)
    private func verifySignedTransactionJob(_ job: ClaimedJob) async -> Verification<SettlementWork> {
        let local = verifySignedTransaction(job.payload)
        // With API credentials, Apple's own current copy of the transaction is the one settled
        // (it carries a refund the app's copy may not know about yet).
        guard let serverAPI, case .settle(.transactions(let receipt)) = local,
              let id = receipt.transactions.first?.transactionID else { return local }
        return await fetchTransaction(id, from: serverAPI)
    }

    @inline(never)
    private func verifyTransactionID(_ job: ClaimedJob) async -> Verification<SettlementWork> {
        guard let serverAPI else {
            return .settle(.configError(appleStatus: 0, detail: "transaction_id jobs need App Store Server API credentials "
                                        + "(APPSTORE_ISSUER_ID, APPSTORE_KEY_ID, APPSTORE_PRIVATE_KEY_FILE)"))
        }
        return await fetchTransaction(job.payload, from: serverAPI)
    }

    @inline(never)
    private func verifyNotification(_ job: ClaimedJob) -> Verification<SettlementWork> {
        do {
            let verified = try signedData.verifyNotification(job.payload)
            let payload = verified.payload
            return .settle(.notification(NotificationWork(
                uuid: payload.notificationUUID.flatMap(UUID.init(uuidString:)), type: payload.notificationType ?? "UNKNOWN",
                subtype: payload.subtype, transaction: verified.transaction?.transaction, signedDate: payload.signedDate,
                consumptionRequestReason: payload.data?.consumptionRequestReason)))
        } catch {
            if error.reason == .appIDMismatch && signedData.configuration.appAppleID == nil {
                // Not Apple's fault nor the buyer's: we cannot check production notifications without our app id.
                return .settle(.configError(appleStatus: 0, detail: "APPLE_APP_ID is not set: production notifications cannot be verified"))
            }
            return .decided(.finish(.failed, error.outcome, error: error.description))
        }
    }

    @inline(never)
    private func answerConsumption(_ job: ClaimedJob) async -> Verification<SettlementWork> {
        guard let consumption else {
            return .decided(.retry("kind_not_supported", error: "this worker has no consumption responder (database client) configured"))
        }
        return await consumption.answer(job)
    }

    /// Get Transaction Info, then the same local verification as a signed transaction.
    private func fetchTransaction(_ transactionID: String, from serverAPI: AppStoreServerAPIClient) async -> Verification<SettlementWork> {
        switch await serverAPI.getTransactionInfo(transactionID: transactionID) {
        case .found(let signedTransactionInfo, _):
            return verifySignedTransaction(signedTransactionInfo)
        case .notFound(let detail):
            return .decided(.finish(.failed, "no_purchase", error: detail))
        case .retry(let reason, let status, let retryAfter):
            return .decided(.retry(reason, notBefore: retryAfter, appleStatus: status))
        case .rejected(let reason, let status, let detail):
            return .decided(.finish(.failed, "invalid_receipt", appleStatus: status, error: "\(reason): \(detail)"))
        case .configError(let status, let detail):
            return .settle(.configError(appleStatus: status, detail: detail))
        }
    }

    /// A StoreKit 2 transaction JWS, verified locally, then settled like a receipt's transaction.
    private func verifySignedTransaction(_ jws: String) -> Verification<SettlementWork> {
        do {
            let verified = try signedData.verifyTransaction(jws)
            return .settle(.transactions(VerifiedReceipt(bundleID: signedData.configuration.bundleID,
                                                         environment: verified.transaction.environment,
                                                         transactions: [verified.transaction])))
        } catch {
            return .decided(.finish(.failed, error.outcome, error: error.description))
        }
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
            pending.store(effects, for: item.job.id)
        }
        // The credits and one NOTIFY go out with the jobs' completion and COMMIT.
        let writes = [store.creditStatement(batch.takeCredits()), credited > 0 ? store.notifyCreditsStatement(credited) : nil]
        return SettledBatch(outcomes: outcomes, writes: writes.compactMap { $0 })
    }

    public func didCommit(_ jobIDs: [Int]) {
        for effects in pending.take(jobIDs) {
            if effects.credits > 0 { metrics.credits.add(Double(effects.credits)) }
            for (alert, id) in effects.alerts { alerts.announce(alert, id: id, repeated: false) }
            for revoked in effects.revoked {
                metrics.creditsRevoked.inc()
                logger.notice("credit_revoked", ["transaction_id": .string(revoked.transactionID), "order_id": .string(revoked.orderID),
                                                 "user_id": .string(revoked.userID), "revocation_reason": .string(revoked.reason)])
            }
            for type in effects.notifications {
                metrics.notifications.labels(type).inc()
                if type == "CONSUMPTION_REQUEST" { logger.notice("consumption_request", [:]) }
            }
            for result in effects.consumptionResults { metrics.consumptionRequests.labels(result).inc() }
        }
    }

    public func didRollBack(_ jobIDs: [Int]) {
        _ = pending.take(jobIDs)
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

/// Settlement effects waiting for their transaction's outcome.
final class PendingEffects: Sendable {
    private let byJob = Mutex<[Int: SettlementEffects]>([:])

    func store(_ effects: SettlementEffects, for job: Int) {
        guard !effects.isEmpty else { return }
        byJob.withLock { $0[job] = effects }
    }

    func take(_ jobs: [Int]) -> [SettlementEffects] {
        byJob.withLock { all in jobs.compactMap { all.removeValue(forKey: $0) } }
    }
}
