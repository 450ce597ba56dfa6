import Foundation

/// Where a buyer's money stands, from the whole story, most urgent first: a payment still owed,
/// another open alert, a payment still being verified, then the latest settled payment (credited,
/// refunded, or closed by support as owed nothing), a replayed receipt, Apple's refusal, or
/// nothing from Apple at all. `line` is for the buyer (pasted into a reply: no internal ids beyond
/// Apple's transaction and our order); `detail` is for support, beside it.
struct BuyerVerdict: Equatable {
    let line: String
    let detail: String

    static func of(_ activity: UserActivity) -> BuyerVerdict {
        let open = activity.alerts.filter { $0.state == "open" }
        if let unpaid = open.first(where: { $0.kind == "paid_not_credited" }) {
            return BuyerVerdict(line: "Your payment (\(payment(unpaid.transactionID, unpaid.productID))) reached us from Apple "
                                + "but is not credited yet.",
                                detail: "Open alert #\(unpaid.id)\(unpaid.jobID.map { " (job #\($0))" } ?? ""): credit it to an open order.")
        }
        if let owed = activity.jobs.first(where: { $0.state == "attention" && $0.outcome == "paid_not_credited" && !$0.settledSince }) {
            return BuyerVerdict(line: "Your payment\(owed.productID.map { " for \($0)" } ?? "") reached us from Apple but is not credited yet.",
                                detail: "Job #\(owed.id) ended paid_not_credited and nothing settled it since; its alert is not open: look at the job.")
        }
        if let alert = open.first {
            return BuyerVerdict(line: alert.kind == "receipt_replay"
                                    ? "This receipt was already used by another account; nothing was credited to yours from it."
                                    : "Your purchase is being looked into; nothing about it is settled yet.",
                                detail: "Open alert #\(alert.id) (\(alert.kind): \(alert.reason)) needs a person; see what to do beside it below.")
        }
        let unsettled = ["queued", "running", "retrying", "timed_out"]
        if let pending = activity.jobs.first(where: { unsettled.contains($0.state) }) {
            return BuyerVerdict(line: "Your payment is still being confirmed with Apple; it is credited by itself once Apple answers.",
                                detail: "Job #\(pending.id) is \(pending.state) (asked Apple \(pending.attempts) time(s)).")
        }
        if let settled = latestSettled(activity) { return settled }
        if let refused = activity.jobs.first(where: { $0.state == "failed" }), let outcome = refused.outcome {
            let at = refused.finishedAt.map { " at \(minute($0))" } ?? ""
            if outcome == "replayed" {
                return BuyerVerdict(line: "The receipt sent\(at) was already credited to another account; nothing was credited to yours from it.",
                                    detail: "Job #\(refused.id) ended replayed: see its receipt_replay alert.")
            }
            return BuyerVerdict(line: "No payment credited: Apple's answer\(at) was \(outcome).",
                                detail: "Job #\(refused.id): \(Explanations.word(outcome) ?? "see the job").")
        }
        return BuyerVerdict(line: "No payment from Apple seen for this user.", detail: "No order, job, ledger row, alert or lookup names this user id.")
    }

    /// The newest of the settled payments: a credit (perhaps refunded since) or an alert support
    /// closed without crediting. The whole story counts, not only the ledger.
    private static func latestSettled(_ activity: UserActivity) -> BuyerVerdict? {
        let ledgered = Set(activity.ledger.map(\.transactionID))
        let closed = activity.alerts.filter { alert in
            alert.kind == "paid_not_credited" && alert.state == "resolved" && alert.transactionID.map(ledgered.contains) != true
        }
        let others = activity.ledger.count > 1 ? " (\(activity.ledger.count) credits in all)" : ""
        let credit = activity.ledger.max { ($0.revokedAt ?? $0.creditedAt) < ($1.revokedAt ?? $1.creditedAt) }
        let unpaid = closed.max { ($0.resolvedAt ?? $0.firstSeenAt) < ($1.resolvedAt ?? $1.firstSeenAt) }
        if let unpaid, credit.map({ ($0.revokedAt ?? $0.creditedAt) <= (unpaid.resolvedAt ?? unpaid.firstSeenAt) }) ?? true {
            let at = (unpaid.resolvedAt ?? unpaid.firstSeenAt)
            return BuyerVerdict(line: "Your payment (\(payment(unpaid.transactionID, unpaid.productID))) reached us from Apple and was not "
                                + "credited: our support team closed it at \(minute(at)) as owed nothing.",
                                detail: "Alert #\(unpaid.id) closed without credit: “\(unpaid.resolution ?? "no note")”\(others).")
        }
        guard let latest = credit else { return nil }
        let credited = "\(BuyerStory.product(latest.productID, latest.quantity)) to order \(latest.orderID) at \(minute(latest.creditedAt)) "
            + "(Apple transaction \(latest.transactionID))"
        let by = "Credited by \(BuyerStory.who(latest.creditedBy, job: latest.jobID, lookups: activity.lookups, transaction: latest.transactionID))"
        if let revoked = latest.revokedAt {
            return BuyerVerdict(line: "Refunded: \(credited) was taken back by Apple at \(minute(revoked)).",
                                detail: "\(by); refund reason \(latest.revocationReason ?? "not given")\(others).")
        }
        return BuyerVerdict(line: "Credited \(credited).", detail: "\(by)\(others).")
    }

    private static func payment(_ transactionID: String?, _ productID: String?) -> String {
        (transactionID.map { "Apple transaction \($0)" } ?? "no Apple transaction recorded") + (productID.map { ", \($0)" } ?? "")
    }

    /// "2026-11-25 12:43 UTC": minutes are what a reply to a buyer needs.
    static func minute(_ date: Date) -> String {
        String(DisplayFormat.time(date).prefix(16)) + " UTC"
    }
}
