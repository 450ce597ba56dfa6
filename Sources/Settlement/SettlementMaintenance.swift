import Foundation
import Observability
import Postgres
import Queue
import Synchronization

/// Raises stuck_verification for jobs not finished long after they arrived.
public struct StuckDetector: MaintenanceTask {
    public let name = "stuck_detector"
    public let interval: Double
    let client: PostgresClient
    let stuckAfter: Double
    let alerts: AlertRecorder

    public init(client: PostgresClient, interval: Double, stuckAfter: Double, alerts: AlertRecorder) {
        self.client = client
        self.interval = interval
        self.stuckAfter = stuckAfter
        self.alerts = alerts
    }

    /// The queue's state and age (iap.job_queue), the request's buyer (iap.job_requests). One
    /// branch per side table of the unfinished states (migration 0029: the ready set, the
    /// claims' lease rows, the parked set), each checked against the job: reading the table by
    /// `state` would read all of it, finished jobs included.
    static let stuckJobsSQL = """
        SELECT q.id, r.user_id, r.order_id, r.product_id, q.state, q.attempts, q.sweeps
        FROM (SELECT id, state, attempts, sweeps, created_at FROM iap.job_queue
              WHERE id = ANY(ARRAY(SELECT id FROM iap.job_ready)) AND state IN ('queued', 'retrying')
              UNION ALL
              SELECT id, state, attempts, sweeps, created_at FROM iap.job_queue
              WHERE id = ANY(ARRAY(SELECT unnest(job_ids) FROM iap.job_leases)) AND state = 'running'
              UNION ALL
              SELECT id, state, attempts, sweeps, created_at FROM iap.job_queue
              WHERE id = ANY(ARRAY(SELECT id FROM iap.job_parked)) AND state = 'timed_out') AS q
        JOIN iap.job_requests r ON r.id = q.id
        WHERE q.created_at < now() - make_interval(secs => $1)
          AND NOT EXISTS (SELECT 1 FROM iap.alerts a
                          WHERE a.kind = 'stuck_verification' AND a.job_id = q.id AND a.state = 'open')
        ORDER BY q.created_at LIMIT 1000
        """

    /// Overlap-safe: two leaders raising the same alert meet on the open-alert unique index, and
    /// the second's insert does nothing (so it announces nothing). A lease that ends mid-way rolls
    /// the transaction back; the next leader raises the rest.
    public func run(term: LeaderTerm) async throws {
        let raised: [(NewAlert, Int)] = try await WitnessedTransaction(client: client).run { connection in
            try await term.check(on: connection)
            var raised: [(NewAlert, Int)] = []
            for row in try await connection.query(Self.stuckJobsSQL, [stuckAfter]) {
                try term.check()
                let state: String = try row.decode(at: 4)
                let alert = NewAlert(
                    kind: .stuckVerification, jobID: try row.decode(at: 0), userID: try row.decode(at: 1),
                    orderID: try row.decode(at: 2), productID: try row.decode(at: 3), reason: "unfinished_\(state)",
                    details: ["state": state, "attempts": String(try row.decode(Int.self, at: 5)),
                              "sweeps": String(try row.decode(Int.self, at: 6))])
                if let id = try await alerts.raise(alert, on: connection) { raised.append((alert, id)) }
            }
            return raised
        }
        for (alert, id) in raised { alerts.announce(alert, id: id, repeated: false) }
    }
}

/// Emits open alerts again every ALERT_REPEAT_SECONDS (log line and webhook), so an
/// unanswered paid-but-not-credited purchase keeps asking for a human.
public struct AlertReemitter: MaintenanceTask {
    public let name = "alert_reemitter"
    public let interval: Double
    let client: PostgresClient
    let repeatAfter: Double
    let alerts: AlertRecorder

    public init(client: PostgresClient, interval: Double, repeatAfter: Double, alerts: AlertRecorder) {
        self.client = client
        self.interval = interval
        self.repeatAfter = repeatAfter
        self.alerts = alerts
    }

    /// The condition is repeated outside the subquery on purpose: under READ COMMITTED an UPDATE
    /// that waited on a row another re-emitter (a second leader, briefly) just updated re-checks
    /// only its own WHERE against the new row, not the subquery's. Without it both would send
    /// the webhook; with it the second finds the alert already notified (or resolved) and skips it.
    static let dueSQL = """
        UPDATE iap.alerts SET last_notified_at = now(), notified_count = notified_count + 1
        WHERE id IN (SELECT id FROM iap.alerts
                     WHERE state = 'open' AND last_notified_at < now() - make_interval(secs => $1)
                     ORDER BY last_notified_at LIMIT 1000)
          AND state = 'open' AND last_notified_at < now() - make_interval(secs => $1)
        RETURNING id, kind, transaction_id, job_id, user_id, order_id, product_id, reason, details->>'day'
        """

    public func run(term: LeaderTerm) async throws {
        try term.check()
        for row in try await term.query(client, Self.dueSQL, [repeatAfter]) {
            guard let kind = AlertKind(rawValue: try row.decode(at: 1)) else { continue }
            let alert = NewAlert(kind: kind, transactionID: try row.decode(at: 2), jobID: try row.decode(at: 3),
                                 userID: try row.decode(at: 4), orderID: try row.decode(at: 5), productID: try row.decode(at: 6),
                                 reason: try row.decode(at: 7), details: (try row.decode(String?.self, at: 8)).map { ["day": $0] } ?? [:])
            alerts.announce(alert, id: try row.decode(at: 0), repeated: true)
        }
    }
}

/// Deletes finished jobs past retention, in bounded batches; never `attention` jobs and
/// never jobs with an open alert (support still needs them). The ledger keeps job ids.
public struct JobRetention: MaintenanceTask {
    public let name = "job_retention"
    public let interval: Double
    let client: PostgresClient
    let retentionDays: Double
    let logger: Logger

    public init(client: PostgresClient, interval: Double, retentionDays: Double, logger: Logger) {
        self.client = client
        self.interval = interval
        self.retentionDays = retentionDays
        self.logger = logger
    }

    /// Failed jobs through the flagged set by finish time (migration 0029); done jobs, which have
    /// no side table, from the oldest id up (ids follow creation, and a job finishes after it is
    /// created): the walk stops at the first 10,000 ids and starts there again next time, so old
    /// jobs kept on purpose (open alerts) are passed over, never piled up in front of it. A job
    /// is both its queue row and its request (migration 0024), deleted together; the statement's
    /// row count is the requests deleted, one per job.
    static let deleteSQL = """
        WITH gone AS (
            DELETE FROM iap.job_queue WHERE id IN (
                (SELECT j.id FROM iap.job_queue j
                 WHERE j.id > $2 AND j.id <= $2 + 10000 AND j.state = 'done' AND j.finished_at < now() - make_interval(secs => $1)
                   AND NOT EXISTS (SELECT 1 FROM iap.alerts a WHERE a.job_id = j.id AND a.state = 'open'))
                UNION ALL
                (SELECT j.id FROM iap.job_queue j
                 WHERE j.id = ANY(ARRAY(SELECT id FROM iap.job_flagged WHERE state = 'failed'
                                                  AND finished_at < now() - make_interval(secs => $1) ORDER BY finished_at LIMIT 10000))
                   AND j.state = 'failed'
                   AND NOT EXISTS (SELECT 1 FROM iap.alerts a WHERE a.job_id = j.id AND a.state = 'open')))
            RETURNING id
        )
        DELETE FROM iap.job_requests r USING gone WHERE r.id = gone.id
        """

    static let oldestIDSQL = "SELECT coalesce(min(id), 0) - 1 FROM iap.job_queue"
    /// Whether the walk may move past its window: nothing in it is young, and jobs lie beyond it.
    static let windowSpentSQL = """
        SELECT NOT EXISTS (SELECT 1 FROM iap.job_queue WHERE id > $1 AND id <= $1 + 10000
                                                         AND created_at >= now() - make_interval(secs => $2))
               AND EXISTS (SELECT 1 FROM iap.job_queue WHERE id > $1 + 10000)
        """
    private final class Walk: Sendable { let after = Mutex<Int?>(nil) }
    private let walk = Walk()

    /// The log of finished jobs (migration 0028) is read for the last day only: two are kept,
    /// whatever the jobs' retention.
    static let deleteFinishesSQL = "DELETE FROM iap.job_finishes WHERE finished_at < now() - interval '2 days'"

    /// Overlap-safe: a row deleted by the other leader is skipped after its lock is released.
    public func run(term: LeaderTerm) async throws {
        try term.check()
        let seconds = retentionDays * 86_400
        var start = walk.after.withLock { $0 } ?? -1
        if start < 0 { start = try await client.query(Self.oldestIDSQL)[0].decode(Int.self, at: 0) }
        let deleted = try await term.query(client, Self.deleteSQL, [seconds, start]).affectedRows
        let spent = try await client.query(Self.windowSpentSQL, [start, seconds])[0].decode(Bool.self, at: 0)
        walk.after.withLock { $0 = spent ? start + 10_000 : nil }
        if deleted > 0 { logger.info("jobs_deleted", ["jobs": .int(deleted), "retention_days": .double(retentionDays)]) }
        _ = try await term.query(client, Self.deleteFinishesSQL)
    }
}
