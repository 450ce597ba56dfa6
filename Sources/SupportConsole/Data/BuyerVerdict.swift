import Foundation

/// One line support can paste into a reply: where this buyer's money stands, most urgent first
/// (an unpaid payment, another open alert, a payment still being verified, the latest credit or
/// refund, Apple's refusal, or nothing from Apple at all).
enum BuyerVerdict {
    static func of(_ activity: UserActivity) -> String {
        let open = activity.alerts.filter { $0.state == "open" }
        if let unpaid = open.first(where: { $0.kind == "paid_not_credited" }) {
            let transaction = unpaid.transactionID.map { "transaction \($0)" } ?? "no transaction recorded"
            return "Paid (\(transaction)\(unpaid.productID.map { ", \($0)" } ?? "")) but not credited: open alert #\(unpaid.id) "
                + "— credit it to an open order."
        }
        if let alert = open.first {
            return "Open alert #\(alert.id) (\(alert.kind): \(alert.reason)) needs a person; see what to do beside it below."
        }
        let unsettled = ["queued", "running", "retrying", "timed_out"]
        if let pending = activity.jobs.first(where: { unsettled.contains($0.state) }) {
            return "Payment not settled yet: job #\(pending.id) is \(pending.state) (asked Apple \(pending.attempts) time(s)); "
                + "it is credited by itself once Apple answers."
        }
        if let latest = activity.ledger.max(by: { $0.creditedAt < $1.creditedAt }) {
            let credited = "\(BuyerStory.product(latest.productID, latest.quantity)) to \(latest.orderID) at \(minute(latest.creditedAt)) "
                + "by \(BuyerStory.who(latest.creditedBy, job: latest.jobID))"
            let others = activity.ledger.count > 1 ? " (\(activity.ledger.count) credits in all)" : ""
            if let revoked = latest.revokedAt {
                return "Refunded: \(credited) was taken back by Apple at \(minute(revoked)) (transaction \(latest.transactionID))\(others)."
            }
            return "Credited \(credited)\(others)."
        }
        if let refused = activity.jobs.first(where: { $0.state == "failed" }), let outcome = refused.outcome {
            return "No payment credited: Apple's answer to job #\(refused.id) was \(outcome)"
                + "\(refused.finishedAt.map { " at \(minute($0))" } ?? "") — \(Explanations.word(outcome) ?? "see the job")"
        }
        return "No payment from Apple seen for this user."
    }

    /// "2026-11-25 12:43 UTC": minutes are what a reply to a buyer needs.
    static func minute(_ date: Date) -> String {
        String(DisplayFormat.time(date).prefix(16)) + " UTC"
    }
}
