import Foundation

/// A buyer's story in time order: each order, each upload and Apple's answer
/// to it, each credit and refund, each alert raised and resolved, each Apple order id lookup.
/// Built from what the user page already loaded; no query of its own.
struct BuyerStory {
    struct Event {
        let at: Date
        /// A word the page colours and explains (a state, outcome or alert kind), if any.
        let word: String?
        /// History, not trouble now (a paid_not_credited job credited since, an alert resolved since): no colour.
        var quiet = false
        var text: String
        /// A job the event is about, linked from the timeline.
        var jobID: Int? = nil
    }

    let events: [Event]

    init(_ activity: UserActivity) {
        var events: [Event] = []
        for order in activity.orders {
            events.append(Event(at: order.createdAt, word: nil, text: "Order \(order.orderID) created for \(Self.product(order.productID, order.quantity))."))
        }
        for job in activity.jobs {
            let order = job.orderID.map { " for order \($0)" } ?? ""
            events.append(Event(at: job.createdAt, word: nil, text: "Job #\(job.id) received (\(job.kind)\(order)).", jobID: job.id))
            events.append(Self.answer(job))
        }
        for row in activity.ledger {
            events.append(Event(at: row.creditedAt, word: "credited", text: "Credited \(Self.product(row.productID, row.quantity)) to order "
                                + "\(row.orderID) (Apple transaction \(row.transactionID)) by \(Self.who(row.creditedBy, job: row.jobID, lookups: activity.lookups, transaction: row.transactionID)).", jobID: row.jobID))
            if let revoked = row.revokedAt {
                events.append(Event(at: revoked, word: "revoked", text: "Refunded by Apple: transaction \(row.transactionID) taken back "
                                    + "(Apple reason \(row.revocationReason ?? "not given"))."))
            }
        }
        for alert in activity.alerts {
            let transaction = alert.transactionID.map { ", Apple transaction \($0)" } ?? ""
            events.append(Event(at: alert.firstSeenAt, word: alert.kind, quiet: alert.state != "open",
                                text: "Alert #\(alert.id) raised: \(alert.kind) (\(alert.reason)\(transaction)).", jobID: alert.jobID))
            if let resolved = alert.resolvedAt {
                events.append(Event(at: resolved, word: "resolved", text: "Alert #\(alert.id) resolved: \(alert.resolution ?? "no note")."))
            }
        }
        for lookup in activity.lookups {
            let what = lookup.found ? "Apple returned \(lookup.transactionIDs.joined(separator: ", "))"
                                    : "failed: \(lookup.reason ?? "no reason recorded")"
            events.append(Event(at: lookup.at, word: nil, text: "Apple order \(lookup.appleOrderID) looked up by \(lookup.actor): \(what)."))
        }
        // Oldest first; at the same instant the input order (order, job, answer, credit) holds.
        self.events = events.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    }

    /// Apple's answer to a job, or where the job stands while it has none.
    private static func answer(_ job: JobSummary) -> Event {
        let status = job.appleStatus.map { ", Apple status \($0)" } ?? ""
        guard let finished = job.finishedAt, let outcome = job.outcome else {
            return Event(at: job.createdAt, word: job.state, text: "Job #\(job.id) is \(job.state) (\(job.attempts) attempt(s)\(status)).", jobID: job.id)
        }
        let since = job.creditedSince ? "; every transaction of it is in the ledger now"
            : job.closedUnpaid ? "; support closed it as owed nothing since" : ""
        return Event(at: finished, word: outcome, quiet: job.settledSince, text: "Job #\(job.id) finished: \(job.state) / \(outcome)\(status)\(since).", jobID: job.id)
    }

    static func product(_ productID: String, _ quantity: Int) -> String {
        quantity == 1 ? productID : "\(productID) ×\(quantity)"
    }

    /// `credited_by` is `worker` for the queue's own credits, else the person (or `support` on old
    /// rows); a person's credit of a transaction an Apple order lookup returned names that order id.
    static func who(_ creditedBy: String, job: Int?, lookups: [OrderLookupRow] = [], transaction: String? = nil) -> String {
        guard creditedBy != "worker" else { return "the worker" + (job.map { " (job #\($0))" } ?? "") }
        guard let transaction, let lookup = lookups.first(where: { $0.found && $0.transactionIDs.contains(transaction) }) else { return creditedBy }
        return "\(creditedBy) through Apple order lookup \(lookup.appleOrderID)"
    }
}
