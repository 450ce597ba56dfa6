import Foundation
import Postgres
import Queue

/// The settle half of a `consumption` job: what was answered is written to
/// `iap.consumption_requests` with the job's outcome; an answer that could not be given in time
/// raises a `consumption_failed` alert.
struct ConsumptionSettler: Sendable {
    let alerts: AlertRecorder
    let store = ConsumptionStore()

    func settle(_ work: ConsumptionWork, job: ClaimedJob, effects: inout SettlementEffects,
                on connection: PostgresConnection) async throws -> JobOutcome {
        let ids = [work.transactionID]
        switch work.result {
        case .sent(let request):
            try await store.answered(work.requestID, state: "sent", sent: request, detail: nil, on: connection)
            effects.consumptionResults.append("sent")
            return .finish(.done, "consumption_sent", transactionIDs: ids)
        case .noConsent:
            try await store.answered(work.requestID, state: "no_consent", sent: nil, detail: "no consent: nothing sent", on: connection)
            effects.consumptionResults.append("no_consent")
            return .finish(.done, "acknowledged", error: "the buyer did not consent (iap.consumption_info): nothing sent to Apple",
                           transactionIDs: ids)
        case .failed(let reason, let detail):
            try await store.answered(work.requestID, state: "failed", sent: nil, detail: detail, on: connection)
            let alert = NewAlert(kind: .consumptionFailed, transactionID: work.transactionID, jobID: job.id, userID: work.userID,
                                 reason: reason, details: ["respond_by": ISO8601DateFormatter().string(from: work.respondBy), "detail": detail])
            if let id = try await alerts.raise(alert, on: connection) { effects.alerts.append((alert, id)) }
            effects.consumptionResults.append("failed")
            return .finish(.attention, "consumption_failed", error: detail, transactionIDs: ids)
        }
    }
}
