import Foundation
import Postgres

/// What a queue table that holds only the queue allows: PGQueuer's shape, a primary
/// key and one partial index on the runnable rows, the same batched SKIP LOCKED claim and
/// completion as raw SQL on two connections, no Swift queue logic. `bench queue` prints its
/// drain as a fraction of this.
///
/// Two shapes: `bare` marks a row running and then done and nothing else; `sameWork` does on
/// that table what our queue must do for every job (a lease with an expiry that a rescuer can
/// act on, the attempt counted, the completion refused once the lease is gone, the outcome and
/// the finish time written), so the gap between the two is the price of those duties and the
/// gap between `sameWork` and our raw SQL is the price of our table (its indexes, the request
/// read by the claim).
///
/// A third shape, `stateBeside`, is the yardstick for our own design in plain SQL: the queue's
/// state beside the table (a jobs table with only its primary key, at fillfactor 50, and a ready
/// set of ids), claimed by deleting from the ready set and marking the jobs running in one
/// statement, completed by one UPDATE. Nothing else: no lease rows, no witness, no NOTIFY.
///
/// The claims pass the picked ids to the UPDATE as one array, as ours does (`QueueStore.claimSQL`):
/// joined as a relation (`FROM picked WHERE q.id = picked.id`) the planner hashes the whole
/// table for every claim, and the ceiling would understate what the table allows; PGQueuer's
/// own `= ANY(SELECT id FROM picked)` also plans worse than the array.
struct LeanQueueCeiling: Sendable {
    enum Shape: Sendable { case bare, sameWork, stateBeside }

    let client: PostgresClient
    let batch: Int
    var shape: Shape = .bare
    /// The database server, when it runs on this machine: its CPU per job is measured too.
    var server: DatabaseServerCPU? = nil
    let lanes = 2

    static let createSQL = """
        DROP SCHEMA IF EXISTS bench_lean CASCADE;
        CREATE SCHEMA bench_lean;
        CREATE TABLE bench_lean.queue (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            state text NOT NULL DEFAULT 'queued',
            attempts int NOT NULL DEFAULT 0,
            run_at timestamptz NOT NULL DEFAULT now(),
            leased_by text NULL,
            lease_expires_at timestamptz NULL,
            outcome text NULL,
            finished_at timestamptz NULL,
            payload text NOT NULL
        ) WITH (fillfactor = 70);
        CREATE INDEX queue_runnable ON bench_lean.queue (run_at, id) WHERE state = 'queued';
        """
    static let fillSQL = "INSERT INTO bench_lean.queue (payload) SELECT 'bm9vcA==' FROM generate_series(1, $1::int)"

    static let besideCreateSQL = """
        DROP SCHEMA IF EXISTS bench_lean CASCADE;
        CREATE SCHEMA bench_lean;
        CREATE TABLE bench_lean.jobs (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            state text NOT NULL DEFAULT 'queued',
            attempts int NOT NULL DEFAULT 0,
            leased_by text NULL,
            lease_expires_at timestamptz NULL,
            outcome text NULL,
            payload text NOT NULL
        ) WITH (fillfactor = 50);
        CREATE TABLE bench_lean.ready (id bigint PRIMARY KEY);
        """
    static let besideFillSQL = """
        WITH made AS (INSERT INTO bench_lean.jobs (payload) SELECT 'bm9vcA==' FROM generate_series(1, $1::int) RETURNING id)
        INSERT INTO bench_lean.ready (id) SELECT id FROM made
        """
    static let besideClaimSQL = """
        WITH c AS (DELETE FROM bench_lean.ready WHERE id = ANY(ARRAY(SELECT id FROM bench_lean.ready ORDER BY id
                     LIMIT $1 FOR UPDATE SKIP LOCKED)) RETURNING id),
        u AS (UPDATE bench_lean.jobs j SET state = 'running', attempts = attempts + 1, leased_by = $2,
                     lease_expires_at = now() + interval '60 s'
              WHERE j.id = ANY(ARRAY(SELECT id FROM c)) RETURNING j.id)
        SELECT id FROM u
        -- receipt-worker: plain-claim
        """
    static let besideCompleteSQL = """
        UPDATE bench_lean.jobs SET state = 'done', outcome = 'credited', leased_by = NULL, lease_expires_at = NULL
        WHERE id = ANY($1::bigint[])
        -- receipt-worker: plain-completion
        """

    static let bareClaimSQL = """
        WITH picked AS (
            SELECT id FROM bench_lean.queue WHERE state = 'queued' AND run_at <= now()
            ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED
        )
        UPDATE bench_lean.queue AS q SET state = 'running', leased_by = $2
        WHERE q.id = ANY(ARRAY(SELECT id FROM picked))
        RETURNING q.id, q.payload
        -- receipt-worker: lean-claim
        """
    static let bareCompleteSQL = """
        UPDATE bench_lean.queue SET state = 'done', leased_by = NULL WHERE id = ANY($1::bigint[]) AND leased_by = $2
        -- receipt-worker: lean-completion
        """

    static let sameWorkClaimSQL = """
        WITH picked AS (
            SELECT id FROM bench_lean.queue WHERE state = 'queued' AND run_at <= now()
            ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED
        )
        UPDATE bench_lean.queue AS q SET state = 'running', attempts = q.attempts + 1, leased_by = $2,
            lease_expires_at = now() + interval '60 seconds'
        WHERE q.id = ANY(ARRAY(SELECT id FROM picked))
        RETURNING q.id, q.payload, q.attempts
        -- receipt-worker: lean-claim
        """
    static let sameWorkCompleteSQL = """
        UPDATE bench_lean.queue SET state = 'done', outcome = 'acknowledged', finished_at = now(),
            leased_by = NULL, lease_expires_at = NULL
        WHERE id = ANY($1::bigint[]) AND leased_by = $2 AND lease_expires_at > now()
        -- receipt-worker: lean-completion
        """

    /// Loads `jobs` rows, drains them, drops the table; returns jobs per second.
    func measure(jobs: Int) async throws -> Double { try await measureWithCPU(jobs: jobs).jobsPerSecond }

    /// The same, with the drain's CPU per job (this process, the client; and the server).
    func measureWithCPU(jobs: Int) async throws -> (jobsPerSecond: Double, cpu: CPUPerJob) {
        let (claimSQL, completeSQL) = switch shape {
        case .bare: (Self.bareClaimSQL, Self.bareCompleteSQL)
        case .sameWork: (Self.sameWorkClaimSQL, Self.sameWorkCompleteSQL)
        case .stateBeside: (Self.besideClaimSQL, Self.besideCompleteSQL)
        }
        let beside = shape == .stateBeside
        try await client.withConnection { try await $0.execute(script: beside ? Self.besideCreateSQL : Self.createSQL) }
        _ = try await client.query(beside ? Self.besideFillSQL : Self.fillSQL, [jobs])
        _ = try await client.query(beside ? "VACUUM ANALYZE bench_lean.jobs, bench_lean.ready" : "VACUUM ANALYZE bench_lean.queue")
        // The clock runs inside the CPU counters: reading /proc takes milliseconds.
        let (seconds, cpu) = try await CPUPerJob.measure(jobs: jobs, server: server) {
            let started = ContinuousClock.now
            try await drain(claimSQL, completeSQL)
            return (ContinuousClock.now - started).seconds
        }
        _ = try await client.query("DROP SCHEMA bench_lean CASCADE")
        return (Double(jobs) / seconds, cpu)
    }

    private func drain(_ claimSQL: String, _ completeSQL: String) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    let worker = "lean-\(lane)"
                    while true {
                        let ids = try await client.query(claimSQL, [batch, worker]).map { try $0.decode(Int.self, at: 0) }
                        if ids.isEmpty { return }
                        _ = try await client.query(completeSQL, shape == .stateBeside ? [ids] : [ids, worker])
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
