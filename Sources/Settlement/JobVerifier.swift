import AppStore
import Foundation
import Queue

/// Verifies one job of any kind with Apple (or locally, for signed data): the part of the handler
/// that runs outside any transaction and may wait seconds, apart from the settlement that runs
/// inside the completion transaction.
final class JobVerifier: Sendable {
    let receipts: AppleReceiptClient
    let signedData: StoreKitSignedDataVerifier
    /// App Store Server API (Get Transaction Info) for transaction_id jobs; nil without credentials.
    let serverAPI: AppStoreServerAPIClient?
    /// Answers `consumption` jobs; nil where none are expected (they then wait, flagged stuck).
    let consumption: ConsumptionResponder?
    let maxAttempts: Int

    init(receipts: AppleReceiptClient, signedData: StoreKitSignedDataVerifier, serverAPI: AppStoreServerAPIClient?,
         consumption: ConsumptionResponder?, maxAttempts: Int) {
        self.receipts = receipts
        self.signedData = signedData
        self.serverAPI = serverAPI
        self.consumption = consumption
        self.maxAttempts = maxAttempts
    }

    // Each kind is its own function, kept out of line: an async function's frame is allocated
    // for the whole task while it waits, and one that held every kind's locals would make each
    // in-flight job pay for all of them. This way a job pays only for its own kind's path.
    func verify(_ job: ClaimedJob) async -> Verification<SettlementWork> {
        switch JobKind(job.kind) {
        case .receipt: return await verifyReceipt(job)
        case .signedTransaction:
            await Task.yield() // signature checks: off the claiming task first (`JobHandler.verify`)
            return await verifySignedTransactionJob(job)
        case .transactionID: return await verifyTransactionID(job)
        case .notification:
            await Task.yield()
            return verifyNotification(job)
        case .consumption: return await answerConsumption(job)
        case nil: return Self.unsupported(job)
        }
    }

    /// The kinds this handler verifies, read once per job.
    private enum JobKind: String {
        case receipt, signedTransaction = "signed_transaction", transactionID = "transaction_id", notification, consumption

        init?(_ kind: String) { self.init(rawValue: kind) }
    }

    /// Kinds this build cannot verify wait (and are swept, then flagged stuck) rather than being lost.
    @inline(never)
    private static func unsupported(_ job: ClaimedJob) -> Verification<SettlementWork> {
        .decided(.retry("kind_not_supported", error: "no verifier for kind \(job.kind) in this build"))
    }

    @inline(never)
    private func verifyReceipt(_ job: ClaimedJob) async -> Verification<SettlementWork> {
        Self.verification(await receipts.verify(receiptData: job.payload, attempt: job.attempts, maxAttempts: maxAttempts))
    }

    @inline(never)
    private static func verification(_ verdict: ReceiptVerdict) -> Verification<SettlementWork> {
        switch verdict {
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
}
