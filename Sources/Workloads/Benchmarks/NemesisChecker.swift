import AppleSim
import Foundation
import Postgres

/// The exactly-once check after the queue drained: the ledger against what was paid, the
/// alerts against the receipts that could not be credited, every announcement (the workers'
/// log lines and the webhook calls) counted by its stable key against the database, and the
/// jobs' `finished_at` timeline against the faults.
struct NemesisChecker: Sendable {
    /// Jobs not yet in a final state: the run's drain waits for none, and its verdict demands none.
    static let unfinishedJobsSQL = "SELECT count(*) FROM iap.jobs WHERE state IN ('queued', 'running', 'retrying', 'timed_out')"

    let client: PostgresClient
    let feed: NemesisFeeder.Feed
    let simulator: AppleSimulator
    /// Every announcement the workers made (log lines and webhook calls).
    let announcements: [NemesisAnnouncement]
    let windows: NemesisTally.Windows
    /// Webhook calls that were not a JSON object.
    var malformedWebhookCalls = 0

    struct Verdict: Sendable {
        var creditedExactlyOnce = 0
        /// Paid with an order, yet not credited to it by a job that ended `credited`.
        var lost = 0
        var creditedTwice = 0
        /// Receipts fed once that more than one job settled, or whose job ended
        /// `already_credited`: only a settled job running again can get there.
        var settledJobsRanAgain = 0
        /// Refunds enqueued whose credit is not revoked.
        var refundsNotApplied = 0
        /// Refunds that reached the worker before their credit (kept, then applied by the leader).
        var refundsBeforeCredit = 0
        var unfinished = 0
        var alertsOwed = 0
        /// Receipts without an order lacking exactly one `paid_not_credited` alert (or whose job did not end in attention).
        var alertsMissing = 0
        var applePaidNotSettled = 0
        var longestNoFinish = 0.0
        var announcements: [NemesisAnnouncement.Stream: NemesisTally.Count] = [:]
        var malformedWebhookCalls = 0
        /// The key a test tampered with (nil: none).
        var tampered: String?
        /// What the announcements were counted with, so a test can count them again tampered.
        var tally = NemesisTally(expectation: NemesisExpectation(), windows: NemesisTally.Windows())
        var observed: [NemesisAnnouncement] = []

        /// The whole run's verdict: this check, every fault recovered from in time, every kind covered.
        var runPassed = false
        var coverage = NemesisCoverage(kinds: [], records: [], receiptsFed: 0)

        var announcementsPassed: Bool { announcements.values.allSatisfy(\.passed) && malformedWebhookCalls == 0 }
        var passed: Bool {
            lost == 0 && creditedTwice == 0 && settledJobsRanAgain == 0 && refundsNotApplied == 0 && unfinished == 0 && alertsMissing == 0
                && applePaidNotSettled == 0 && announcementsPassed
        }

        func total(_ field: KeyPath<NemesisTally.Count, Int>) -> Int { announcements.values.reduce(0) { $0 + $1[keyPath: field] } }

        /// The same verdict with the announcements counted again after `tampering`.
        func recounted(_ tampering: NemesisTally.Tampering) -> Verdict {
            var verdict = self
            (verdict.announcements, verdict.tampered) = tally.count(observed, tampering: tampering)
            return verdict
        }
    }

    /// The ledger's checks and the announcement count.
    func check() async throws -> Verdict {
        var verdict = Verdict()
        let fed = feed.ordered + feed.lostOrder
        verdict.lost = try await count("""
            SELECT count(*) FROM unnest($1::text[]) AS p(t)
            LEFT JOIN iap.credits c ON c.transaction_id = p.t AND c.order_id = 'nx-o' || substr(p.t, 5)
            WHERE c.transaction_id IS NULL OR NOT EXISTS (
                SELECT 1 FROM iap.jobs j WHERE j.order_id = c.order_id AND j.state = 'done' AND j.outcome = 'credited')
            """, [feed.ordered])
        verdict.creditedExactlyOnce = try await count("""
            SELECT count(*) FROM iap.credits c JOIN iap.orders o USING (order_id)
            WHERE c.transaction_id = ANY($1) AND o.status = 'credited' AND o.transaction_id = c.transaction_id
            """, [feed.ordered])
        // The keys make a second ledger row impossible; count anyway, plus the evidence a double
        // credit would leave elsewhere: an order credited twice, two jobs each claiming one
        // transaction, a replay alert, a credit for a buyer who had no order.
        verdict.creditedTwice = try await count("""
            SELECT (SELECT count(*) FROM (SELECT order_id FROM iap.credits GROUP BY 1 HAVING count(*) > 1) x)
                 + (SELECT count(*) FROM (SELECT t FROM iap.jobs, unnest(transaction_ids) AS t
                                          WHERE outcome = 'credited' GROUP BY t HAVING count(*) > 1) x)
                 + (SELECT count(*) FROM iap.alerts WHERE kind = 'receipt_replay')
                 + (SELECT count(*) FROM iap.credits WHERE transaction_id = ANY($1))
            """, [feed.lostOrder])
        verdict.settledJobsRanAgain = try await count("""
            SELECT count(*) FROM (
                SELECT t FROM iap.jobs, unnest(transaction_ids) AS t
                WHERE t = ANY($1) AND kind = 'receipt' AND state IN ('done', 'failed', 'attention')
                GROUP BY t HAVING count(*) > 1 OR bool_or(outcome = 'already_credited')) x
            """, [fed])
        verdict.refundsNotApplied = try await count("""
            SELECT count(*) FROM unnest($1::text[]) AS p(t)
            WHERE NOT EXISTS (SELECT 1 FROM iap.credits c WHERE c.transaction_id = p.t AND c.revoked_at IS NOT NULL)
            """, [feed.refunded])
        verdict.refundsBeforeCredit = try await count("SELECT count(*) FROM iap.refunds_before_credit WHERE applied_at IS NOT NULL")
        verdict.unfinished = try await count(Self.unfinishedJobsSQL)
        verdict.alertsOwed = feed.lostOrder.count
        verdict.alertsMissing = try await count("""
            SELECT count(*) FROM unnest($1::text[]) AS p(t)
            WHERE (SELECT count(*) FROM iap.alerts a WHERE a.kind = 'paid_not_credited' AND a.transaction_id = p.t) <> 1
               OR NOT EXISTS (SELECT 1 FROM iap.jobs j WHERE j.user_id = 'nx-l' || substr(p.t, 5)
                              AND j.state = 'attention' AND j.outcome = 'paid_not_credited')
            """, [feed.lostOrder])
        let ledger = Set(try await client.query("SELECT transaction_id FROM iap.credits").map { try $0.decode(String.self, at: 0) })
        let owedAlerts = Set(feed.lostOrder)
        verdict.applePaidNotSettled = simulator.stats.paid.filter { !ledger.contains($0) && !owedAlerts.contains($0) }.count
        verdict.longestNoFinish = NemesisTimeline.longestGap(try await finishTimes(), from: feed.startedAt.timeIntervalSince1970)
        verdict.tally = NemesisTally(expectation: try await expectation(), windows: windows)
        verdict.observed = announcements
        verdict.announcements = verdict.tally.count(announcements).counts
        verdict.malformedWebhookCalls = malformedWebhookCalls
        return verdict
    }

    /// What must have been announced, by stream, with the time each row was written.
    func expectation() async throws -> NemesisExpectation {
        var expectation = NemesisExpectation()
        expectation.rows[.jobFinished] = try await client.query("""
            SELECT id, coalesce(outcome, state), transaction_ids, extract(epoch FROM finished_at)::float8
            FROM iap.jobs WHERE state IN ('done', 'failed', 'attention')
            """).map { row in
            NemesisExpectation.Row(key: NemesisExpectation.jobKey(outcome: try row.decode(String.self, at: 1),
                                                                  transactionIDs: try row.decode([String].self, at: 2),
                                                                  jobID: try row.decode(Int.self, at: 0)),
                                   at: try row.decode(Double?.self, at: 3) ?? 0)
        }
        let alerts = try await client.query("""
            SELECT kind, transaction_id, job_id, product_id, details->>'day', extract(epoch FROM first_seen_at)::float8 FROM iap.alerts
            """).map { row in
            NemesisExpectation.Row(key: NemesisExpectation.alertKey(kind: try row.decode(String.self, at: 0),
                                                                    transactionID: try row.decode(String?.self, at: 1),
                                                                    jobID: try row.decode(Int?.self, at: 2),
                                                                    productID: try row.decode(String?.self, at: 3),
                                                                    day: try row.decode(String?.self, at: 4)),
                                   at: try row.decode(Double.self, at: 5))
        }
        expectation.rows[.alertLine] = alerts
        expectation.rows[.webhook] = alerts
        // Written when the REFUND's job finished (`revoked_at` is Apple's revocation date), or,
        // for a REFUND that came before its credit, when the leader's `refund_applier` applied it.
        expectation.rows[.creditRevoked] = try await client.query("""
            SELECT t, extract(epoch FROM finished_at)::float8 FROM iap.jobs, unnest(transaction_ids) AS t
            WHERE kind = 'notification' AND outcome = 'revoked'
            UNION ALL
            SELECT transaction_id, extract(epoch FROM applied_at)::float8 FROM iap.refunds_before_credit WHERE applied_at IS NOT NULL
            """).map { NemesisExpectation.Row(key: "credit_revoked:\(try $0.decode(String.self, at: 0))", at: try $0.decode(Double.self, at: 1)) }
        expectation.rows[.creditedBySupport] = try await client.query("""
            SELECT transaction_id, extract(epoch FROM credited_at)::float8 FROM iap.credits WHERE credited_by <> 'worker'
            """).map { NemesisExpectation.Row(key: "credited_by_support:\(try $0.decode(String.self, at: 0))", at: try $0.decode(Double.self, at: 1)) }
        return expectation
    }

    /// Every job's `finished_at` (seconds since 1970, the server's clock on this machine), in order.
    func finishTimes() async throws -> [Double] {
        try await client.query("SELECT extract(epoch FROM finished_at)::float8 FROM iap.jobs WHERE finished_at IS NOT NULL ORDER BY 1")
            .map { try $0.decode(Double.self, at: 0) }
    }

    private func count(_ sql: String, _ binds: [any PostgresEncodable] = []) async throws -> Int {
        try await client.query(sql, binds)[0].decode(Int.self, at: 0)
    }
}

/// What the finish times say about a fault: how long until a job finished after it was healed,
/// and the longest stretch with no job finishing while it lasted.
enum NemesisTimeline {
    static func longestGap(_ times: [Double], from start: Double) -> Double {
        var previous = start
        var longest = 0.0
        for time in times where time >= start {
            longest = max(longest, time - previous)
            previous = time
        }
        return longest
    }

    /// Seconds from the heal to the first job finished after it (nil: none finished).
    static func recovery(_ times: [Double], healedAt: Date) -> Double? {
        let healed = healedAt.timeIntervalSince1970
        return firstIndex(after: healed, in: times).map { times[$0] - healed }
    }

    /// The longest stretch without a finish from the injection to the first finish after the heal.
    static func stall(_ times: [Double], injectedAt: Date, healedAt: Date) -> Double {
        let injected = injectedAt.timeIntervalSince1970
        let end = firstIndex(after: healedAt.timeIntervalSince1970, in: times).map { times[$0] } ?? healedAt.timeIntervalSince1970
        var previous = injected
        var longest = 0.0
        for time in times where time > injected && time <= end {
            longest = max(longest, time - previous)
            previous = time
        }
        return max(longest, end - previous)
    }

    private static func firstIndex(after instant: Double, in times: [Double]) -> Int? {
        var low = 0, high = times.count
        while low < high {
            let middle = (low + high) / 2
            if times[middle] <= instant { low = middle + 1 } else { high = middle }
        }
        return low < times.count ? low : nil
    }
}
