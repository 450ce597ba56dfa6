import AppleSim
import Foundation
import Postgres

/// The exactly-once check after the queue drained: the ledger against what was paid, the
/// alerts against the receipts that could not be credited and against the workers' log lines,
/// and the jobs' `finished_at` timeline against the faults.
struct NemesisChecker: Sendable {
    let client: PostgresClient
    let feed: NemesisFeeder.Feed
    let simulator: AppleSimulator
    let fleet: NemesisFleet
    /// When workers were SIGKILLed, and how long before a kill a commit of theirs may have
    /// started (the call deadline): an alert committed by a worker killed before it could log
    /// is owed by the re-emitter (ALERT_REPEAT_SECONDS), not a lost line.
    let kills: [Date]
    let killWindow: Double

    struct Verdict: Sendable {
        var creditedExactlyOnce = 0
        /// Paid with an order, yet not credited to it by a job that ended done.
        var lost = 0
        var creditedTwice = 0
        var unfinished = 0
        var alertsOwed = 0
        /// Receipts without an order lacking exactly one `paid_not_credited` alert (or whose job did not end in attention).
        var alertsMissing = 0
        /// Alerts in the table that no worker logged, and logged alert ids the table does not have.
        var alertLinesMissing = 0
        var alertLinesPhantom = 0
        /// The jobs of alerts no worker logged (where to start reading the logs).
        var unloggedAlertJobs: [Int] = []
        /// Unlogged alerts committed around a worker's SIGKILL (not counted as missing).
        var alertLinesOwedByKilledWorkers = 0
        var applePaidNotSettled = 0
        var longestNoFinish = 0.0
        var passed: Bool {
            lost == 0 && creditedTwice == 0 && unfinished == 0 && alertsMissing == 0 && alertLinesMissing == 0
                && alertLinesPhantom == 0 && applePaidNotSettled == 0
        }
    }

    func check() async throws -> Verdict {
        var verdict = Verdict()
        verdict.lost = try await count("""
            SELECT count(*) FROM unnest($1::text[]) AS p(t)
            LEFT JOIN iap.credits c ON c.transaction_id = p.t AND c.order_id = 'nx-o' || substr(p.t, 5)
            WHERE c.transaction_id IS NULL OR NOT EXISTS (
                SELECT 1 FROM iap.jobs j WHERE j.order_id = c.order_id AND j.state = 'done' AND j.outcome IN ('credited', 'already_credited'))
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
        verdict.unfinished = try await count("SELECT count(*) FROM iap.jobs WHERE state IN ('queued', 'running', 'retrying', 'timed_out')")
        verdict.alertsOwed = feed.lostOrder.count
        verdict.alertsMissing = try await count("""
            SELECT count(*) FROM unnest($1::text[]) AS p(t)
            WHERE (SELECT count(*) FROM iap.alerts a WHERE a.kind = 'paid_not_credited' AND a.transaction_id = p.t) <> 1
               OR NOT EXISTS (SELECT 1 FROM iap.jobs j WHERE j.user_id = 'nx-l' || substr(p.t, 5)
                              AND j.state = 'attention' AND j.outcome = 'paid_not_credited')
            """, [feed.lostOrder])
        let alerts = try await client.query("""
            SELECT id, job_id, extract(epoch FROM first_seen_at)::float8 FROM iap.alerts WHERE kind = 'paid_not_credited' ORDER BY id
            """).map { (id: try $0.decode(Int.self, at: 0), job: try $0.decode(Int?.self, at: 1), seen: try $0.decode(Double.self, at: 2)) }
        let logged = Set(fleet.loggedAlertIDs())
        let unlogged = alerts.filter { !logged.contains($0.id) }
        let owed = unlogged.filter { alert in
            kills.contains { (-killWindow...1).contains(alert.seen - $0.timeIntervalSince1970) }
        }
        verdict.alertLinesOwedByKilledWorkers = owed.count
        verdict.alertLinesMissing = unlogged.count - owed.count
        verdict.unloggedAlertJobs = unlogged.compactMap(\.job)
        let alertIDs = Set(alerts.map(\.id))
        verdict.alertLinesPhantom = logged.subtracting(alertIDs).count
        let ledger = Set(try await client.query("SELECT transaction_id FROM iap.credits").map { try $0.decode(String.self, at: 0) })
        let owedAlerts = Set(feed.lostOrder)
        verdict.applePaidNotSettled = simulator.stats.paid.filter { !ledger.contains($0) && !owedAlerts.contains($0) }.count
        verdict.longestNoFinish = NemesisTimeline.longestGap(try await finishTimes(), from: feed.startedAt.timeIntervalSince1970)
        return verdict
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
