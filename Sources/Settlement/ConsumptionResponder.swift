import AppStore
import Foundation
import HTTP
import Postgres
import Queue

/// What answering one refund request came to; written to `iap.consumption_requests` (and an alert
/// when it failed) in the completion transaction.
public struct ConsumptionWork: Sendable {
    public enum Result: Sendable {
        case sent(ConsumptionRequest)
        /// The buyer did not consent: Apple refuses such a request, so nothing was sent.
        case noConsent
        /// The answer cannot be given in time (or Apple refused it): a human should know.
        case failed(reason: String, detail: String)
    }

    let requestID: String
    let transactionID: String
    let userID: String?
    let respondBy: Date
    let result: Result
}

/// The `consumption` job: Send Consumption Information (v2) for a CONSUMPTION_REQUEST.
/// `deliveryStatus` comes from our ledger (the one fact only we know for sure), consent and
/// consumption from `iap.consumption_info`, the refund preference from REFUND_PREFERENCE. Never sent
/// without consent; never sent after the 12-hour window; alerted when the window is about to close.
public struct ConsumptionResponder: Sendable {
    let client: PostgresClient
    let api: AppStoreServerAPIClient?
    let refundPreference: RefundPreference?
    /// How long before the window ends an unsent answer is given up and alerted.
    let closingMargin: TimeInterval
    let metrics: SettlementMetrics
    private let store = ConsumptionStore()

    /// - Parameter api: nil without App Store Server API credentials (a consented answer then raises config_error).
    public init(client: PostgresClient, api: AppStoreServerAPIClient?, refundPreference: RefundPreference?,
                metrics: SettlementMetrics, closingMargin: TimeInterval = 1800) {
        self.client = client
        self.api = api
        self.refundPreference = refundPreference
        self.metrics = metrics
        self.closingMargin = closingMargin
    }

    func answer(_ job: ClaimedJob, now: Date = Date()) async -> Verification<SettlementWork> {
        let request: ConsumptionRequestRow
        let info: ConsumptionInfo
        do {
            guard let found = try await store.request(job.payload, client: client) else {
                return .decided(.finish(.done, "acknowledged", error: "no refund request \(job.payload) was recorded"))
            }
            request = found
            if let closed = closing(request, job.payload, at: now) { return closed }
            info = try await store.info(userID: request.userID, transactionID: request.transactionID, client: client)
        } catch {
            return retry("database", detail: "reading the refund request or iap.consumption_info failed: \(error)")
        }
        func work(_ result: ConsumptionWork.Result) -> Verification<SettlementWork> {
            .settle(.consumption(ConsumptionWork(requestID: job.payload, transactionID: request.transactionID, userID: request.userID,
                                                 respondBy: request.respondBy, result: result)))
        }
        guard info.consented else { return work(.noConsent) }
        guard let api else {
            return .settle(.configError(appleStatus: 0, detail: "consumption jobs need App Store Server API credentials "
                                        + "(APPSTORE_ISSUER_ID, APPSTORE_KEY_ID, APPSTORE_PRIVATE_KEY_FILE)"))
        }
        let body = Self.body(request, info, refundPreference: refundPreference)
        switch await api.sendConsumptionInformation(transactionID: request.transactionID, body, environment: request.environment) {
        case .success:
            return work(.sent(body))
        case .failure(let error) where error.isRetryable:
            if let closed = closing(request, job.payload, at: Date().addingTimeInterval(error.retryAfter?.seconds ?? 0)) { return closed }
            return retry(error.reason, notBefore: error.retryAfter, status: error.status, detail: error.detail)
        case .failure(let error):
            return work(.failed(reason: error.reason, detail: error.detail))
        }
    }

    /// DELIVERED only for a transaction we credited and that was not refunded; otherwise an
    /// undelivered status and nothing consumed.
    static func body(_ request: ConsumptionRequestRow, _ info: ConsumptionInfo, refundPreference: RefundPreference?) -> ConsumptionRequest {
        let delivered = request.credited && !request.revoked
        return ConsumptionRequest(customerConsented: true, consumptionPercentage: delivered ? info.percentage : 0,
                                  deliveryStatus: delivered ? .delivered : .undeliveredOther, refundPreference: refundPreference,
                                  sampleContentProvided: info.sampleContentProvided)
    }

    /// An answer at `moment` would be too late (or too close to the end to count on): give up and alert.
    private func closing(_ request: ConsumptionRequestRow, _ requestID: String, at moment: Date) -> Verification<SettlementWork>? {
        guard moment >= request.respondBy.addingTimeInterval(-closingMargin) else { return nil }
        let detail = "the 12-hour window to answer Apple's refund request ends at \(request.respondBy) and no answer was sent"
        return .settle(.consumption(ConsumptionWork(requestID: requestID, transactionID: request.transactionID, userID: request.userID,
                                                    respondBy: request.respondBy, result: .failed(reason: "window_closing", detail: detail))))
    }

    private func retry(_ reason: String, notBefore: Duration? = nil, status: Int? = nil, detail: String) -> Verification<SettlementWork> {
        metrics.consumptionRequests.labels("retry").inc()
        return .decided(.retry(reason, notBefore: notBefore, appleStatus: status, error: detail))
    }
}
