import Foundation
import JSONWire
import Postgres

/// One row of a completion batch, ready for SQL.
struct CompletionRow: Sendable {
    let id: Int
    /// done | failed | attention | retrying | timed_out
    let state: String
    /// Set only for terminal states.
    let outcome: String?
    let delaySeconds: Double?
    let appleStatus: Int?
    let error: String?
    let transactionIDs: [String]
    /// Why a retry or time-out happened (logs and metrics, not a column).
    var retryReason: String? = nil
}

/// Every SQL statement of the queue, one typed method each (the driver boundary).
public struct QueueStore: Sendable {
    public let client: PostgresClient
    public init(client: PostgresClient) { self.client = client }

    /// The claim updates only the lean iap.job_queue (migration 0024) and reads the job's request
    /// (user, order, product, payload) from iap.job_requests by primary key in the same statement.
    /// The payload is left out for the ids in `$4`, whose payload the worker still has
    /// (`PayloadCache`: jobs it sent back for a retry).
    ///
    /// The picked ids reach the UPDATE as one array (`= ANY(ARRAY(…))`), so both tables are found
    /// by primary key whatever their size. Joined as a relation (`FROM picked JOIN …`), the planner
    /// prices a batch of 1,000 lookups above a sequential scan and hashes the whole of both tables
    /// for every claim, a cost that grows with the finished jobs kept. A job without its request
    /// row (hand-edited data: both are written in one transaction) is leased and not returned:
    /// the rescuer takes it back when the lease runs out, and stuck detection reports it once it
    /// is old.
    ///
    /// The claim takes its jobs out of the ready set (`iap.job_ready`, migration 0029), not
    /// out of a partial index of the table, and records one lease row (`iap.job_leases`: its
    /// ids and expiry, the rescuer's way in) whose id every returned row carries. A ready row
    /// whose job is no longer runnable (moved by hand) is deleted and its job left alone.
    /// The picked rows are deleted where they lie (`ctid`, fixed while the claim holds their
    /// lock), not looked up again by id: one index descent less per job.
    ///
    /// The requests are read as one range of the primary key when the claimed ids are dense (the
    /// jobs of a backlog were enqueued together, so a claim's ids are nearly consecutive): one
    /// descent of the index for the batch instead of one per job, about 0.7 µs of server CPU per
    /// job less (`docs/benchmarks.md`). Where the ids spread over more than four times their
    /// number (retries beside new jobs), the range could read far more rows than the claim's, so
    /// the requests are read by id as before; both branches are in the one plan, and the
    /// claim's own span picks one of them when it runs.
    ///
    /// A claim beside another reads its own half of the ready set (migration 0044): the jobs of
    /// even or of odd blocks of 1,024 ids, each half with its own index by (run_at, id). It takes
    /// the oldest of the half it starts in, then, if that half had fewer than `$1`, the oldest of
    /// the other. The worker's claims side by side start in different halves (`ClaimsInFlight`):
    /// read from the one index of the whole set, the second passed over and tried every row the
    /// first held locked, and the two updated the same pages of iap.job_queue at once
    /// (`docs/benchmarks.md`). A claim alone reads the whole set in order (`claimSQL`), so jobs
    /// are claimed oldest `run_at` first, then lowest id, whenever one claim would take them all.
    static let claimSQL = claimSQL(startingIn: nil)
    static let claimSQLByHalf = [claimSQL(startingIn: 0), claimSQL(startingIn: 1)]

    /// The claim of the whole ready set in order (nil), or of half `half` first (0: the even
    /// blocks of ids, 1: the odd ones) then the other.
    static func claimSQL(startingIn half: Int?) -> String {
        let picked = if let half {
            """
            SELECT ctid FROM (
                    SELECT ctid FROM (SELECT ctid FROM iap.job_ready WHERE run_at <= now() AND id / 1024 % 2 = \(half)
                                      ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) AS own_half
                    UNION ALL
                    SELECT ctid FROM (SELECT ctid FROM iap.job_ready WHERE run_at <= now() AND id / 1024 % 2 = \(1 - half)
                                      ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) AS other_half
                ) AS due LIMIT $1
            """
        } else {
            "SELECT ctid FROM iap.job_ready WHERE run_at <= now() ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED"
        }
        return """
        WITH picked AS (
            DELETE FROM iap.job_ready
            WHERE ctid = ANY(ARRAY(\(picked)))
            RETURNING id
        ), claimed AS (
            UPDATE iap.job_queue AS j
            SET state = 'running', attempts = j.attempts + 1, leased_by = $2,
                lease_expires_at = now() + make_interval(secs => $3)
            WHERE j.id = ANY(ARRAY(SELECT id FROM picked)) AND j.state IN ('queued', 'retrying')
            RETURNING j.id, j.kind, j.attempts, j.ctid
        ), leased AS (
            INSERT INTO iap.job_leases (leased_by, expires_at, job_ids)
            SELECT $2, now() + make_interval(secs => $3), array_agg(id) FROM claimed HAVING count(*) > 0
            RETURNING id
        ), span AS (
            SELECT min(id) AS low, max(id) AS high, max(id) - min(id) < 4 * count(*) AS dense FROM claimed
        ), requests AS (
            SELECT r.id, r.user_id, r.order_id, r.product_id, r.payload FROM iap.job_requests AS r
            WHERE (SELECT dense FROM span) AND r.id BETWEEN (SELECT low FROM span) AND (SELECT high FROM span)
            UNION ALL
            SELECT r.id, r.user_id, r.order_id, r.product_id, r.payload FROM iap.job_requests AS r
            WHERE NOT (SELECT dense FROM span) AND r.id = ANY(ARRAY(SELECT id FROM claimed))
        )
        SELECT c.id, c.kind, r.user_id, r.order_id, r.product_id,
               CASE WHEN c.id = ANY($4::bigint[]) THEN NULL ELSE r.payload END, c.attempts, (SELECT id FROM leased), c.ctid
        FROM claimed AS c JOIN requests AS r ON r.id = c.id
        -- receipt-worker: claim
        """
    }

    static let payloadsSQL = "SELECT id, payload FROM iap.job_requests WHERE id = ANY($1::bigint[])"

    /// Claims up to `limit` runnable jobs in one statement, oldest run_at first (`claimSQL`); with
    /// `startingIn`, the oldest of that half of the ready set first (`claimSQLByHalf`).
    public func claim(limit: Int, workerID: String, leaseSeconds: Double, startingIn half: Int? = nil) async throws -> [ClaimedJob] {
        try await claim(limit: limit, workerID: workerID, leaseSeconds: leaseSeconds, startingIn: half, cache: nil)
    }

    /// The claim runs in a transaction of reused plans, in one round trip (BEGIN, the settings,
    /// the claim, COMMIT): planned for each run, as the session's statements are, a small claim
    /// spent as long being planned as being run. Its one plan holds for any batch: the picked ids
    /// reach each table as an array, whose size the planner does not guess from the limit
    /// (`ClaimPlanTests`).
    ///
    /// Its COMMIT does not wait for the flush (`CommitDurability.unflushed`). A claim undone by a
    /// crash or a failover puts its jobs back in the queue, as a rescue would. The worker holding
    /// them either finds their leases gone when it writes their results (they are fenced, never
    /// settled or announced) and they are claimed again, or takes them again itself at the same
    /// attempt and does not start them twice (`HeldJobs.hold`). Whatever a completion writes is
    /// flushed with every claim before it, so no result can outlive the claim it was made under.
    /// The payloads `cache` holds are not sent again.
    func claim(limit: Int, workerID: String, leaseSeconds: Double, startingIn half: Int?, cache: PayloadCache?) async throws -> [ClaimedJob] {
        let epoch = client.sessionsOpened
        let rows = try await client.query(claimStatement(limit: limit, workerID: workerID, leaseSeconds: leaseSeconds, half: half, cache: cache,
                                                         epoch: epoch),
                                          planning: .reused, durability: .unflushed)
        return try await claimedJobs(rows, cache: cache, epoch: epoch)
    }

    /// A claim sent on a connection before the reply of the claim before it was decoded
    /// (`claim(on:…)`): how many jobs it asks for, and the pool's sessions when it was made.
    struct ClaimSentAhead: Sendable {
        let limit: Int
        let epoch: Int
    }

    /// What `claim(on:…)`'s `next` asks the claim sent ahead for: how many jobs, and the half of
    /// the ready set to start in (nil: the whole set in order).
    typealias NextClaim = (limit: Int, half: Int?)

    /// The claim of `claim(limit:…)` on `connection`. When `next` gives a claim once this claim's
    /// rows are in (it is told how many), that claim goes out at once on the same connection,
    /// before these rows are decoded (`PostgresConnection.transaction(…sendingNext:)`):
    /// `claimSentAhead` reads its reply. The connection serves nothing else until then.
    func claim(on connection: PostgresConnection, limit: Int, workerID: String, leaseSeconds: Double, startingIn half: Int?,
               cache: PayloadCache?, next: @escaping @Sendable (_ claimed: Int) -> NextClaim?) async throws
        -> (jobs: [ClaimedJob], ahead: ClaimSentAhead?) {
        let epoch = client.sessionsOpened
        let reply = try await connection.transaction(
            planning: .reused, durability: .unflushed,
            committing: claimStatement(limit: limit, workerID: workerID, leaseSeconds: leaseSeconds, half: half, cache: cache, epoch: epoch),
            sendingNext: aheadClaim(workerID: workerID, leaseSeconds: leaseSeconds, cache: cache, next: next))
        return (try await claimedJobs(reply.rows, cache: cache, epoch: epoch), reply.next)
    }

    /// The reply of a claim sent ahead (`claim(on:…)`), which may send the next in turn.
    func claimSentAhead(_ claim: ClaimSentAhead, on connection: PostgresConnection, workerID: String, leaseSeconds: Double,
                        cache: PayloadCache?, next: @escaping @Sendable (_ claimed: Int) -> NextClaim?) async throws
        -> (jobs: [ClaimedJob], ahead: ClaimSentAhead?) {
        let reply = try await connection.replyOfSent(sendingNext: aheadClaim(workerID: workerID, leaseSeconds: leaseSeconds,
                                                                             cache: cache, next: next))
        return (try await claimedJobs(reply.rows, cache: cache, epoch: claim.epoch), reply.next)
    }

    private func aheadClaim(workerID: String, leaseSeconds: Double, cache: PayloadCache?, next: @escaping @Sendable (Int) -> NextClaim?)
        -> @Sendable (Int) -> (statement: PostgresStatement, next: ClaimSentAhead)? {
        { [client] claimed in
            guard let (limit, half) = next(claimed) else { return nil }
            let epoch = client.sessionsOpened
            return (claimStatement(limit: limit, workerID: workerID, leaseSeconds: leaseSeconds, half: half, cache: cache, epoch: epoch),
                    ClaimSentAhead(limit: limit, epoch: epoch))
        }
    }

    private func claimStatement(limit: Int, workerID: String, leaseSeconds: Double, half: Int?, cache: PayloadCache?, epoch: Int) -> PostgresStatement {
        PostgresStatement(half.map { Self.claimSQLByHalf[$0 & 1] } ?? Self.claimSQL, [limit, workerID, leaseSeconds, cache?.ids(epoch: epoch) ?? []])
    }

    /// The claimed jobs, each with its payload: from the claim's row, else from `cache`, else
    /// (an entry evicted between the claim's id list and its reply, or a session opened since
    /// the list was made: the claim may have run on another server) read again.
    func claimedJobs(_ rows: PostgresRows, cache: PayloadCache?, epoch: Int) async throws -> [ClaimedJob] {
        let cached = client.sessionsOpened == epoch ? cache : nil
        var fields: [ClaimedJobs.Fields] = []
        fields.reserveCapacity(rows.count)
        var payloads: [String?] = []
        payloads.reserveCapacity(rows.count)
        var missing: [Int] = []
        let leaseID = try rows.first?.decode(Int?.self, at: 7) ?? nil // the claim's one lease row, on every row
        for row in rows {
            let id = try row.decode(Int.self, at: 0)
            let payload = try row.decode(String?.self, at: 5) ?? cached?.take(id, epoch: epoch)
            if payload == nil { missing.append(id) }
            payloads.append(payload)
            fields.append(ClaimedJobs.Fields(id: id, kind: try row.decode(at: 1), userID: try row.decode(at: 2), orderID: try row.decode(at: 3),
                                             productID: try row.decode(at: 4), attempts: try row.decode(at: 6), rowVersion: try row.decode(at: 8)))
        }
        if !missing.isEmpty {
            var reread: [Int: String] = [:]
            for row in try await client.query(Self.payloadsSQL, [missing]) { reread[try row.decode(Int.self, at: 0)] = try row.decode(String.self, at: 1) }
            for index in payloads.indices where payloads[index] == nil {
                guard let payload = reread[fields[index].id] else { throw QueueStoreError.missingRequest(jobID: fields[index].id) }
                payloads[index] = payload
            }
        }
        let claim = ClaimedJobs(jobs: fields, leaseID: leaseID, sessionEpoch: epoch)
        let jobs = payloads.indices.map { ClaimedJob(claim, $0, payload: payloads[$0] ?? "") }
        // Oldest first as picked (run_at, id); by id within what this claim returned.
        return orderedByID(jobs) { $0.id }
    }

    /// Of the jobs given (id and content as claimed), those whose id names a job with other content
    /// here: after a failover to a standby that lost the last commits, the id of a job claimed
    /// before may have been given to a new job, which this worker may even have claimed too. The
    /// lease check cannot tell the two apart (same id, same holder); the request can.
    static let namingOthersSQL = """
        SELECT w.id FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) AS w(id, kind, user_id, order_id, payload)
        WHERE NOT EXISTS (SELECT 1 FROM iap.job_requests AS r
                          WHERE r.id = w.id AND r.kind = w.kind AND r.user_id IS NOT DISTINCT FROM w.user_id
                            AND r.order_id IS NOT DISTINCT FROM w.order_id AND r.payload = w.payload)
        -- receipt-worker: identity check
        """

    /// Inside the completion transaction: which of `jobs` now name another job (`namingOthersSQL`).
    func namingOthers(_ jobs: [ClaimedJob], on connection: PostgresConnection) async throws -> Set<Int> {
        guard !jobs.isEmpty else { return [] }
        return Set(try await connection.query(Self.namingOthersSQL, [jobs.map(\.id), jobs.map(\.kind), jobs.map(\.userID), jobs.map(\.orderID),
                                                                      jobs.map(\.payload)]).map { try $0.decode(Int.self, at: 0) })
    }

    // The lease holder alone says a job is still this worker's (migration 0006 ties a lease to
    // state 'running'). Written without `state = 'running'` on purpose: with it, the planner may
    // read every running job through jobs_running_lease and hash-join them, a cost that grows
    // with the fleet's concurrency instead of the batch; without it, only the primary key fits.
    static let lockOwnedSQL = """
        SELECT id FROM iap.job_queue
        WHERE id = ANY($1::bigint[]) AND leased_by = $2 AND lease_expires_at > now()
        FOR UPDATE
        -- receipt-worker: lease check
        """

    /// Inside the completion transaction: which of `ids` this worker still holds (now locked).
    func lockOwned(_ ids: [Int], workerID: String, on connection: PostgresConnection) async throws -> Set<Int> {
        Set(try await connection.query(Self.lockOwnedSQL, [ids, workerID]).map { try $0.decode(Int.self, at: 0) })
    }

    /// A row's number into the value arrays; when the batch has one combination of values (a
    /// claim's worth of one outcome), 1 without a search.
    private static let rowCode = "(CASE WHEN cardinality($3::text[]) = 1 THEN 1 ELSE ($2::int[])[width_bucket(j.id, $1::bigint[])] END)"

    /// The side sets beside `iap.job_queue` that a statement moving jobs may write.
    enum SideSet: CaseIterable {
        case ready, parked, flagged
    }

    /// The side rows (migration 0038) of the jobs a statement moved, written by that statement:
    /// `source` names its moved rows, with the columns `id, state, run_at, finished_at, outcome,
    /// transaction_ids` as they are now, and `sets` the side sets its jobs can enter (a release
    /// only queues jobs). A job in a state with a side set gets its row there; the jobs these
    /// statements move come from `running` or from another set's row their statement took, so no
    /// other side row is theirs to delete (one left behind is skipped by its reader).
    /// The same rules as `iap.place_jobs`, which cannot serve here: a function called by the
    /// statement would read the jobs as they were before the statement changed them.
    static func sideRowsSQL(from source: String, into sets: [SideSet] = SideSet.allCases) -> String {
        sets.map { set in
            switch set {
            case .ready: """
                ready AS (
                    INSERT INTO iap.job_ready (id, state, run_at)
                    SELECT id, state, run_at FROM \(source) WHERE state IN ('queued', 'retrying')
                    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, run_at = EXCLUDED.run_at
                )
                """
            case .parked: """
                parked AS (
                    INSERT INTO iap.job_parked (id, run_at)
                    SELECT id, run_at FROM \(source) WHERE state = 'timed_out'
                    ON CONFLICT (id) DO UPDATE SET run_at = EXCLUDED.run_at
                )
                """
            case .flagged: """
                flagged AS (
                    INSERT INTO iap.job_flagged (id, state, finished_at, owed_transaction_ids)
                    SELECT id, state, coalesce(finished_at, now()), CASE WHEN outcome = 'paid_not_credited' THEN transaction_ids END
                    FROM \(source) WHERE state IN ('attention', 'failed')
                    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, finished_at = EXCLUDED.finished_at,
                                                   owed_transaction_ids = EXCLUDED.owed_transaction_ids
                )
                """
            }
        }.joined(separator: ", ")
    }

    /// What a statement that moves jobs returns for `sideRowsSQL`.
    static let movedColumns = "j.id, j.state, j.run_at, j.finished_at, j.outcome, j.transaction_ids"

    /// The completion's UPDATE (its RETURNING list is `completionSQL`'s). One table, found by
    /// primary key: each row finds its position in the sorted `$1` by binary search
    /// (`width_bucket`), so no plan can go quadratic. A join with `unnest(…)` can, whenever
    /// statistics say no job is leased (after a bulk enqueue, or a quiet hour): a nested loop
    /// rescans the batch for every job leased to the worker, long enough to lose the leases.
    ///
    /// The values are dictionary-coded: `$2` gives each row the 1-based number of its values in
    /// `$3`…`$7`, which hold each distinct combination once (`$2` is empty when there is only
    /// one). Reaching element k of a text or jsonb array (or of any array with NULLs) walks the
    /// k elements before it, so one array per column indexed by position would cost every row a
    /// walk of half the batch; `$1` and `$2` are fixed-width without NULLs, reached directly, and
    /// a batch's distinct value combinations are few (results of one kind, mostly).
    /// Transaction ids are a row's own (each credit has its own), so they are not part of a
    /// combination: `$8` is one jsonb object from job id to its ids, found by binary search.
    /// As a coded column they would make every credited row a combination of its own and the
    /// batch quadratic again.
    /// `iap.complete_done_jobs` (migration 0042) holds a copy of this UPDATE for batches of `done`
    /// results, its rows found by row version: change both together.
    static let completeUpdateSQL = """
        UPDATE iap.job_queue AS j SET
            state = ($3::text[])[\(rowCode)],
            outcome = ($4::text[])[\(rowCode)],
            run_at = now() + make_interval(secs => coalesce(($5::float8[])[\(rowCode)], 0)),
            apple_status = coalesce(($6::int[])[\(rowCode)], j.apple_status),
            last_error = ($7::text[])[\(rowCode)],
            transaction_ids = CASE WHEN $8::jsonb -> j.id::text IS NULL THEN j.transaction_ids
                                   ELSE ARRAY(SELECT jsonb_array_elements_text($8::jsonb -> j.id::text)) END,
            finished_at = CASE WHEN ($3::text[])[\(rowCode)] IN ('done', 'failed', 'attention') THEN now() END,
            leased_by = NULL,
            lease_expires_at = NULL
        WHERE j.id = ANY($1::bigint[]) AND j.leased_by = $9 AND j.lease_expires_at > now()
        """

    /// The finished jobs written, counted per (state, outcome) into the log the console's
    /// throughput charts read (migration 0028): one row per outcome per completion.
    private static let finishesSQL = """
        finishes AS (
            INSERT INTO iap.job_finishes (state, outcome, jobs, retried)
            SELECT state, outcome, count(*), count(*) FILTER (WHERE attempts > 1) FROM written
            WHERE state IN ('done', 'failed', 'attention')
            GROUP BY state, outcome
        )
        """

    /// The completion's one row: how many of the batch it wrote and, only when that is not all
    /// of them (a lease lost), which it did not. Returning every id written would cost the server
    /// and the worker a row per job, sent, parsed and decoded on every completion.
    private static let writtenSQL = """
        SELECT count(*)::bigint, CASE WHEN count(*) = cardinality($1::bigint[]) THEN NULL
                                      ELSE ARRAY(SELECT unnest($1::bigint[]) EXCEPT SELECT id FROM written) END
        FROM written
        """

    /// Under the caller's token, the ids of the batch the completion did not write (migration
    /// 0027: usually none; the ids it wrote would be an 8 KB array per 1,000 jobs, compressed on
    /// every completion), so an ambiguous COMMIT can be resolved afterwards (migration 0016).
    private static let witnessSQL = """
        witness AS (
            INSERT INTO iap.commit_witness (token, lost_ids)
            SELECT $10::uuid, CASE WHEN count(*) = cardinality($1::bigint[]) THEN '{}'::bigint[]
                                   ELSE ARRAY(SELECT unnest($1::bigint[]) EXCEPT SELECT id FROM written) END
            FROM written
        )
        """

    /// The completion: the UPDATE, the witness when `witnessed`, the side rows when `placing`
    /// (a batch moving some job into a side set: a batch of `done` results leaves them out and
    /// does not pay for three empty INSERTs), the finish counts, and the one-row reply.
    private static func completionSQL(witnessed: Bool, placing: Bool) -> String {
        let returning = placing ? "\(movedColumns), j.attempts" : "j.id, j.state, j.outcome, j.attempts"
        var parts = ["WITH written AS (\n\(completeUpdateSQL)\nRETURNING \(returning)\n)"]
        if witnessed { parts.append(witnessSQL) }
        if placing { parts.append(sideRowsSQL(from: "written")) }
        parts.append(finishesSQL)
        return parts.joined(separator: ", ") + "\n" + writtenSQL + "\n-- receipt-worker: completion"
    }

    static let completeSQL = completionSQL(witnessed: false, placing: true)
    static let completeDoneSQL = completionSQL(witnessed: false, placing: false)
    static let completeWitnessedSQL = completionSQL(witnessed: true, placing: true)
    static let completeWitnessedDoneSQL = completionSQL(witnessed: true, placing: false)

    /// What one completed job writes besides its state change: rows with equal values share
    /// one entry of the statement's value arrays.
    private struct CompletionValues: Hashable {
        let state: String
        let outcome: String?
        let delaySeconds: Double?
        let appleStatus: Int?
        let error: String?
    }

    /// A batch of results as one statement (nil for none); only jobs whose lease this worker
    /// still holds are touched. Its row counts the jobs written (`written`). With `witness`,
    /// the statement also records them under that token (`resolveCommit`).
    func completionStatement(_ unsorted: [CompletionRow], workerID: String, witness: UUID? = nil) -> PostgresStatement? {
        guard !unsorted.isEmpty else { return nil }
        var binds = Self.updateBinds(unsorted, workerID: workerID)
        let placing = unsorted.contains { $0.state != "done" }
        guard let witness else { return PostgresStatement(placing ? Self.completeSQL : Self.completeDoneSQL, binds) }
        binds.append(witness)
        return PostgresStatement(placing ? Self.completeWitnessedSQL : Self.completeWitnessedDoneSQL, binds)
    }

    /// `completeUpdateSQL`'s values for a batch: its ids sorted, their codes, the distinct values.
    private static func updateBinds(_ unsorted: [CompletionRow], workerID: String) -> [any PostgresEncodable] {
        let rows = orderedByID(unsorted) { $0.id } // the statement finds each row's position by binary search
        var numbers: [CompletionValues: Int] = [:]
        var distinct: [CompletionValues] = []
        var codes: [Int] = []
        codes.reserveCapacity(rows.count)
        var previous: (values: CompletionValues, number: Int)?
        for row in rows {
            let values = CompletionValues(state: row.state, outcome: row.outcome, delaySeconds: row.delaySeconds,
                                          appleStatus: row.appleStatus, error: row.error)
            // Neighbours mostly share their values: compared before anything is hashed.
            if let previous, previous.values == values {
                codes.append(previous.number)
                continue
            }
            defer { previous = (values, codes[codes.count - 1]) }
            if let number = numbers[values] {
                codes.append(number)
            } else {
                distinct.append(values)
                numbers[values] = distinct.count
                codes.append(distinct.count)
            }
        }
        // One combination (a claim's worth of one kind of result, the usual batch): every row's
        // number is 1, which the statement and `iap.complete_done_jobs` take without reading $2.
        return [
            PostgresBigintArray(rows.map { $0.id }), distinct.count == 1 ? [] : codes,
            distinct.map { $0.state }, distinct.map { $0.outcome }, distinct.map { $0.delaySeconds },
            distinct.map { $0.appleStatus.map(Int64.init) }, distinct.map { $0.error }, Self.transactionIDsByJob(rows), workerID,
        ]
    }

    /// A batch whose results all finish `done` (most batches) as one call of
    /// `iap.complete_done_jobs` (migrations 0041 and 0042): the UPDATE alone, its rows found by
    /// the row versions the claim returned (`rowVersions`, one per row, in any order) instead of
    /// by key, its row count checked against the batch; then the finish counts (the caller's, from
    /// `attempts`, each row's attempt) and the commit witness. Returning the rows into a CTE for
    /// those readers, as `completionStatement` does, cost 1.2–1.6 µs more server CPU per job, and
    /// finding them by key 1.2 µs more, measured side by side (`docs/benchmarks.md`). The call
    /// answers as the completion statement does; if a row was not found under its lease it writes
    /// nothing and fails with `leaseLostState`, and the batch is written with
    /// `completionStatement`. Nil for any other batch, or when a row's version is not known.
    func doneCompletionStatement(_ rows: [CompletionRow], attempts: [Int], rowVersions: [PostgresTID?], workerID: String,
                                 witness: UUID) -> PostgresStatement? {
        let versions = rowVersions.compactMap { $0 }
        guard !rows.isEmpty, rows.count == attempts.count, rows.count == versions.count, rowVersions.count == versions.count,
              rows.allSatisfy({ $0.state == "done" }) else { return nil }
        var outcomes: [String?] = [], jobs: [Int] = [], retried: [Int] = []
        for (row, attempt) in zip(rows, attempts) {
            let index = outcomes.firstIndex(of: row.outcome) ?? {
                outcomes.append(row.outcome)
                jobs.append(0)
                retried.append(0)
                return outcomes.count - 1
            }()
            jobs[index] += 1
            if attempt > 1 { retried[index] += 1 }
        }
        var binds = Self.updateBinds(rows, workerID: workerID)
        binds.insert(versions, at: 1)
        return PostgresStatement(Self.completeDoneJobsSQL, binds + [witness, outcomes, jobs, retried])
    }

    static let completeDoneJobsSQL = """
        SELECT written, lost FROM iap.complete_done_jobs($1::bigint[], $2::tid[], $3::int[], $4::text[], $5::text[], $6::float8[],
                                                         $7::int[], $8::text[], $9::jsonb, $10, $11::uuid, $12::text[], $13::int[], $14::int[])
        -- receipt-worker: completion
        """

    /// What `iap.complete_done_jobs` fails with when a lease of its batch was lost.
    static let leaseLostState = "RWL01"

    /// The function is not there with this signature: the database has not been migrated to 0042
    /// yet (new workers rolled out before `migrate`).
    static func isDoneFunctionMissing(_ error: PostgresError) -> Bool {
        error.sqlState == "42883" && error.message.contains("complete_done_jobs")
    }

    static let leaveWitnessSQL = "INSERT INTO iap.commit_witness (token, lost_ids) VALUES ($1::uuid, '{}')"

    /// The witness of a transaction that wrote everything it meant to (`WitnessedTransaction`).
    func leaveWitnessStatement(_ token: UUID) -> PostgresStatement { PostgresStatement(Self.leaveWitnessSQL, [token]) }

    static let fenceWitnessSQL = """
        INSERT INTO iap.commit_witness (token, job_ids, lost_ids) VALUES ($1::uuid, NULL, NULL) ON CONFLICT (token) DO NOTHING
        """

    static let readWitnessSQL = """
        SELECT w.lost_ids IS NULL, u.id FROM iap.commit_witness w LEFT JOIN LATERAL unnest(w.lost_ids) AS u(id) ON true
        WHERE w.token = $1::uuid
        """

    /// What became of a completion transaction whose COMMIT reply was lost, asked on a fresh
    /// session (after a failover, of the new primary). Final either way: a transaction found
    /// not committed is fenced off by a tombstone and can never commit later.
    public func resolveCommit(witness: UUID) async throws -> CommitResolution {
        if try await client.query(Self.fenceWitnessSQL, [witness]).affectedRows == 1 { return .rolledBack }
        let rows = try await client.query(Self.readWitnessSQL, [witness])
        // No row at all cannot follow a conflict unless the cleaner removed it (hours later).
        guard let first = rows.first else { return .rolledBack }
        // A tombstone: an earlier try of ours fenced it (its reply was lost too). Our own tokens
        // are never in the pre-0027 form (job_ids without lost_ids).
        if try first.decode(Bool.self, at: 0) { return .rolledBack }
        return .committed(lostIDs: Set(try rows.compactMap { try $0.decode(Int?.self, at: 1) }))
    }

    /// Sessions of other roles show neither state nor start time here: a tombstone is then kept
    /// while any of them exists, which errs on the safe side.
    /// A lost COMMIT reply past the witness's retention: each job of the batch counts as written
    /// when it holds exactly what the completion wrote at the attempt this worker ran (no other
    /// worker can reach that attempt without claiming it again).
    static let writtenByStateSQL = """
        SELECT c.id FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[]) AS c(id, attempts, state, outcome)
        JOIN iap.job_queue q ON q.id = c.id
        WHERE q.attempts = c.attempts AND q.state = c.state AND q.outcome IS NOT DISTINCT FROM c.outcome
        """

    /// What became of a completion whose witness may be gone: judged from the jobs themselves,
    /// never by a tombstone. Nothing of the batch written reads as rolled back.
    func resolveCommitByJobState(_ rows: [CompletionRow], attempts: [Int]) async throws -> CommitResolution {
        let written = Set(try await client.query(Self.writtenByStateSQL, [
            rows.map(\.id), attempts, rows.map(\.state), rows.map(\.outcome),
        ]).map { try $0.decode(Int.self, at: 0) })
        guard !written.isEmpty else { return .rolledBack }
        return .committed(lostIDs: Set(rows.map(\.id)).subtracting(written))
    }

    static let deleteOldWitnessesSQL = """
        DELETE FROM iap.commit_witness
        WHERE created_at < now() - make_interval(secs => $1)
          AND (lost_ids IS NOT NULL OR job_ids IS NOT NULL
               OR NOT EXISTS (SELECT 1 FROM pg_stat_activity
                              WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
                                AND (state IS NULL OR xact_start <= created_at)))
        """

    /// Witnesses are needed only until their transaction's fate is known.
    public func deleteWitnesses(olderThan seconds: Double, under term: LeaderTerm? = nil) async throws -> Int {
        try await run(Self.deleteOldWitnessesSQL, [seconds], under: term).affectedRows
    }

    /// A maintenance statement: under a term, it changes nothing once the term has ended.
    private func run(_ sql: String, _ binds: [any PostgresEncodable], under term: LeaderTerm?) async throws -> PostgresRows {
        guard let term else { return try await client.query(sql, binds) }
        return try await term.query(client, sql, binds)
    }

    /// A completion's row (`writtenSQL`): the jobs written, and those of the batch not written.
    static func written(_ rows: PostgresRows) throws -> (count: Int, lost: [Int]) {
        guard let row = rows.first else { throw PostgresError(kind: .client, message: "the completion returned no row") }
        return (try row.decode(Int.self, at: 0), try row.decode([Int]?.self, at: 1) ?? [])
    }

    /// `{"17":["t1","t2"],…}`: the jsonb text of the rows' transaction ids by job id; rows
    /// without any are left out (their column keeps its value).
    static func transactionIDsByJob(_ rows: [CompletionRow]) -> String {
        var writer = JSONWriter(reservingCapacity: 2 + rows.count * 40)
        writer.beginObject()
        for row in rows where !row.transactionIDs.isEmpty {
            writer.key(String(row.id))
            writer.beginArray()
            for id in row.transactionIDs { writer.string(id) }
            writer.endArray()
        }
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Marks claimed jobs finished with one outcome through the batch-completion statement
    /// (no settlement): the raw-SQL ceiling of `bench queue`.
    public func completeDone(_ ids: [Int], outcome: String, workerID: String) async throws -> Int {
        let rows = ids.map { CompletionRow(id: $0, state: "done", outcome: outcome, delaySeconds: nil, appleStatus: nil,
                                           error: nil, transactionIDs: []) }
        guard let statement = completionStatement(rows, workerID: workerID) else { return 0 }
        return try await client.withConnection { try Self.written(try await $0.pipeline([statement])[0]) }.count
    }

    static let releaseSQL = """
        WITH released AS (
            UPDATE iap.job_queue AS j SET state = 'queued', attempts = greatest(j.attempts - 1, 0), run_at = now(),
                leased_by = NULL, lease_expires_at = NULL
            WHERE j.id = ANY($1::bigint[]) AND j.leased_by = $2
            RETURNING \(movedColumns)
        ), \(sideRowsSQL(from: "released", into: [.ready]))
        SELECT id FROM released
        """

    /// Graceful shutdown: hands unfinished jobs back without burning the attempt.
    public func release(_ ids: [Int], workerID: String) async throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try await client.query(Self.releaseSQL, [ids, workerID]).count
    }

    /// The worker's jobs are found through its lease rows (migration 0029), one per claim it has
    /// not let go of entirely; a claim whose reply was lost committed its row too.
    static let handBackSQL = """
        WITH handed AS (
            UPDATE iap.job_queue AS j SET state = 'queued', attempts = greatest(j.attempts - 1, 0), run_at = now(),
                leased_by = NULL, lease_expires_at = NULL
            WHERE j.id = ANY(ARRAY(SELECT unnest(job_ids) FROM iap.job_leases WHERE leased_by = $1))
              AND j.state = 'running' AND j.leased_by = $1 AND NOT (j.id = ANY($2::bigint[]))
            RETURNING \(movedColumns)
        ), \(sideRowsSQL(from: "handed", into: [.ready]))
        SELECT id FROM handed
        """

    /// Claims like `claim`, after handing back in the same round trip (one implicit
    /// transaction) every job leased to `workerID` that is not in `holding`: jobs whose claim
    /// reply was lost, which would otherwise wait out their lease. No attempt is spent on them.
    public func claim(limit: Int, workerID: String, leaseSeconds: Double, handingBackAllBut holding: [Int],
                      startingIn half: Int? = nil) async throws -> (claimed: [ClaimedJob], handedBack: Int) {
        try await claim(limit: limit, workerID: workerID, leaseSeconds: leaseSeconds, handingBackAllBut: holding, startingIn: half, cache: nil)
    }

    func claim(limit: Int, workerID: String, leaseSeconds: Double, handingBackAllBut holding: [Int], startingIn half: Int?,
               cache: PayloadCache?) async throws -> (claimed: [ClaimedJob], handedBack: Int) {
        let epoch = client.sessionsOpened
        let results = try await client.withConnection { connection in
            try await connection.pipeline([PostgresStatement(Self.handBackSQL, [workerID, holding]),
                                           claimStatement(limit: limit, workerID: workerID, leaseSeconds: leaseSeconds, half: half, cache: cache,
                                                          epoch: epoch)])
        }
        return (try await claimedJobs(results[1], cache: cache, epoch: epoch), results[0].count)
    }

    /// What a rescue does to a job whose worker stopped answering: back to the queue, or to
    /// timed_out after a full round of attempts ($1).
    private static let rescueSetSQL = """
        SET state = CASE WHEN j.attempts >= $1 THEN 'timed_out' ELSE 'queued' END,
            run_at = now(), leased_by = NULL, lease_expires_at = NULL,
            last_error = 'lease expired (worker ' || coalesce(j.leased_by, '?') || ' stopped answering)'
        """

    // Maintenance updates take their picked ids as one array, like the claim (see `claimSQL`).
    /// Expired lease rows (migration 0029) are taken, with the jobs of theirs still running on
    /// that lease: a job claimed again since holds a newer lease and a newer row.
    static let rescueSQL = """
        WITH expired AS (
            DELETE FROM iap.job_leases
            WHERE id = ANY(ARRAY(SELECT id FROM iap.job_leases WHERE expires_at < now()
                                 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))
            RETURNING job_ids
        ), rescued AS (
            UPDATE iap.job_queue AS j
            \(rescueSetSQL)
            WHERE j.id = ANY(ARRAY(SELECT unnest(job_ids) FROM expired)) AND j.state = 'running' AND j.lease_expires_at < now()
            RETURNING \(movedColumns)
        ), \(sideRowsSQL(from: "rescued", into: [.ready, .parked]))
        SELECT id, state FROM rescued
        """

    /// Jobs of crashed workers go back to the queue (or to timed_out after a full round):
    /// `limit` lease rows (claims) at a time.
    public func rescueExpiredLeases(maxAttempts: Int, limit: Int = 20, under term: LeaderTerm? = nil) async throws -> [(id: Int, state: String)] {
        try await rescued(Self.rescueSQL, [maxAttempts, limit], under: term)
    }

    /// Running jobs whose lease ran out a minute ago and that no lease row names: claimed by a
    /// worker built before migration 0029, or leased by hand; among the jobs of ids $2 to $3
    /// (the leader walks the table a slice at a time, `JobTableWalk`).
    static let rescueOrphansSQL = """
        WITH rescued AS (
            UPDATE iap.job_queue AS j
            \(rescueSetSQL)
            WHERE j.id BETWEEN $2 AND $3 AND j.state = 'running' AND j.lease_expires_at < now() - interval '1 minute'
            RETURNING \(movedColumns)
        ), \(sideRowsSQL(from: "rescued", into: [.ready, .parked]))
        SELECT id, state FROM rescued
        """

    public func rescueOrphanedLeases(maxAttempts: Int, ids: ClosedRange<Int> = everyJobID,
                                     under term: LeaderTerm? = nil) async throws -> [(id: Int, state: String)] {
        try await rescued(Self.rescueOrphansSQL, [maxAttempts, ids.lowerBound, ids.upperBound], under: term)
    }

    private func rescued(_ sql: String, _ binds: [any PostgresEncodable], under term: LeaderTerm?) async throws -> [(id: Int, state: String)] {
        try await run(sql, binds, under: term).map { (try $0.decode(Int.self, at: 0), try $0.decode(String.self, at: 1)) }
    }

    /// Lease rows of claims whose jobs this worker has all let go (written, released, fenced).
    /// An `unsure` one (a session was opened since its claim) is deleted only if none of its jobs
    /// still runs on it: after a failover to a standby that lost the last commits, a completion the
    /// worker saw commit may be gone, and its jobs must stay findable by the rescuer. A `settled`
    /// one is deleted as it is: its jobs were all written on sessions to the server it lives on.
    static let dropLeasesSQL = """
        DELETE FROM iap.job_leases AS l
        WHERE l.id = ANY($1::bigint[])
           OR (l.id = ANY($2::bigint[]) AND NOT EXISTS (
               SELECT 1 FROM iap.job_queue AS j
               WHERE j.id = ANY(l.job_ids) AND j.state = 'running' AND j.leased_by = l.leased_by AND j.lease_expires_at = l.expires_at))
        """

    func dropLeasesStatement(_ leases: DroppableLeases) -> PostgresStatement? {
        leases.settled.isEmpty && leases.unsure.isEmpty ? nil : PostgresStatement(Self.dropLeasesSQL, [leases.settled, leases.unsure])
    }

    /// Outside a completion (at shutdown): each row re-read, as the session may be new.
    func dropLeases(_ leases: DroppableLeases) async throws {
        let all = leases.settled + leases.unsure
        guard !all.isEmpty else { return }
        _ = try await client.query(Self.dropLeasesSQL, [[Int](), all])
    }

    /// From the parked set (migration 0029); the job's own state is checked, as the claim does.
    static let sweepSQL = """
        WITH due AS (
            DELETE FROM iap.job_parked
            WHERE id = ANY(ARRAY(SELECT id FROM iap.job_parked ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED))
            RETURNING id
        ), swept AS (
            UPDATE iap.job_queue AS j SET state = 'queued', attempts = 0, sweeps = j.sweeps + 1, run_at = now()
            WHERE j.id = ANY(ARRAY(SELECT id FROM due)) AND j.state = 'timed_out'
            RETURNING \(movedColumns)
        ), \(sideRowsSQL(from: "swept", into: [.ready]))
        SELECT id FROM swept
        """

    /// Re-queues timed_out jobs, each with a fresh round of attempts.
    public func sweepTimedOut(limit: Int = 10_000, under term: LeaderTerm? = nil) async throws -> [Int] {
        try await run(Self.sweepSQL, [limit], under: term).map { try $0.decode(Int.self, at: 0) }
    }

    /// Jobs whose state names a side set that does not hold them as they are (moved straight in
    /// iap.job_queue rather than through iap.jobs, or by a worker built before migration 0038),
    /// placed by `iap.place_jobs`: among the jobs of ids $1 to $2 (the leader walks the table a
    /// slice at a time, `JobTableWalk`). The slice's unfinished jobs are read first, on their own:
    /// the planner charges the side-set checks for every row they might run for, and over all of
    /// a slice's rows that estimate passed `jit_above_cost`.
    static let placeStraysSQL = """
        WITH unfinished AS MATERIALIZED (
            SELECT q.id, q.state, q.run_at, q.outcome, q.transaction_ids FROM iap.job_queue AS q
            WHERE q.id BETWEEN $1 AND $2 AND q.state <> 'done'
        ), strays AS MATERIALIZED (
            SELECT q.id FROM unfinished AS q
            WHERE CASE
                WHEN q.state IN ('queued', 'retrying') THEN NOT EXISTS (
                    SELECT 1 FROM iap.job_ready AS r WHERE r.id = q.id AND r.state = q.state AND r.run_at = q.run_at)
                WHEN q.state = 'timed_out' THEN NOT EXISTS (
                    SELECT 1 FROM iap.job_parked AS p WHERE p.id = q.id AND p.run_at = q.run_at)
                WHEN q.state IN ('attention', 'failed') THEN NOT EXISTS (
                    SELECT 1 FROM iap.job_flagged AS f WHERE f.id = q.id AND f.state = q.state
                      AND f.owed_transaction_ids IS NOT DISTINCT FROM (CASE WHEN q.outcome = 'paid_not_credited' THEN q.transaction_ids END))
                ELSE false END
        ), placed AS MATERIALIZED (
            SELECT iap.place_jobs(ARRAY(SELECT id FROM strays))
        )
        SELECT (SELECT count(*) FROM strays)::bigint, (SELECT count(*) FROM placed)::bigint
        -- receipt-worker: stray search
        """

    /// Every job id: a search given it reads the whole table.
    public static let everyJobID = 0...Int.max

    /// Places the jobs among `ids` that no side set holds as they are; returns how many there were.
    public func placeStrayJobs(ids: ClosedRange<Int> = everyJobID, under term: LeaderTerm? = nil) async throws -> Int {
        try await run(Self.placeStraysSQL, [ids.lowerBound, ids.upperBound], under: term)[0].decode(Int.self, at: 0)
    }

    static let jobIDBoundsSQL = "SELECT min(id), max(id) FROM iap.job_queue"

    /// The lowest and highest job id (two ends of the primary key); nil for an empty table.
    public func jobIDBounds(under term: LeaderTerm? = nil) async throws -> (first: Int, last: Int)? {
        let row = try await run(Self.jobIDBoundsSQL, [], under: term)[0]
        guard let first = try row.decode(Int?.self, at: 0), let last = try row.decode(Int?.self, at: 1) else { return nil }
        return (first, last)
    }

    /// The ready set's dead and live rows as the server's statistics count them (each server
    /// process reports its own at the end of its transactions, at most once a second).
    static let readySetRowsSQL = """
        SELECT coalesce(sum(n_dead_tup), 0)::bigint, coalesce(sum(n_live_tup), 0)::bigint
        FROM pg_stat_user_tables WHERE relid = 'iap.job_ready'::regclass
        """

    public func readySetRows() async throws -> (dead: Int, live: Int) {
        let row = try await client.query(Self.readySetRowsSQL)[0]
        return (try row.decode(Int.self, at: 0), try row.decode(Int.self, at: 1))
    }

    /// Whether this session's role may vacuum the ready set: PostgreSQL lets the table's owner, the
    /// database's owner and superusers do it (by privileges held, as `pg_has_role`'s USAGE tells).
    static let mayVacuumReadySetSQL = """
        SELECT pg_has_role(c.relowner, 'USAGE') OR pg_has_role(d.datdba, 'USAGE')
        FROM pg_class AS c, pg_database AS d
        WHERE c.oid = 'iap.job_ready'::regclass AND d.datname = current_database()
        """

    public func mayVacuumReadySet() async throws -> Bool {
        try await client.query(Self.mayVacuumReadySetSQL)[0].decode(Bool.self, at: 0)
    }

    /// `ReadySetVacuum`. SKIP_LOCKED: a vacuum already running (autovacuum's) is enough.
    public func vacuumReadySet() async throws {
        try await client.withConnection { try await $0.execute(script: "VACUUM (SKIP_LOCKED) iap.job_ready") }
    }

    /// NOTIFY so idle workers claim at once (after a sweep or a rescue).
    public func notifyWorkers() async throws {
        _ = try await client.query("SELECT pg_notify('iap_jobs', '')")
    }
}

/// `items` by id. A claim's rows and a batch of its results are mostly in order already (a
/// claim's jobs, finished in turn): checked by index, without copying an element, and sorted
/// only when one is out of place.
private func orderedByID<Item>(_ items: [Item], _ id: (Item) -> Int) -> [Item] {
    guard items.indices.dropFirst().contains(where: { id(items[$0 - 1]) > id(items[$0]) }) else { return items }
    return items.sorted { id($0) < id($1) }
}

/// A claimed job without its request row: the two tables of a job are written in one
/// transaction and deleted in one statement, so this means hand-edited data.
public enum QueueStoreError: Error, CustomStringConvertible {
    case missingRequest(jobID: Int)

    public var description: String {
        switch self {
        case .missingRequest(let id): "job \(id) has no row in iap.job_requests"
        }
    }
}

/// The fate of a completion transaction whose COMMIT reply was lost.
public enum CommitResolution: Sendable, Equatable {
    /// Committed: every job of the batch was written except `lostIDs` (their lease had passed on).
    case committed(lostIDs: Set<Int>)
    case rolledBack
}
