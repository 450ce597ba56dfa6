import Foundation
import Postgres

/// What a queue table that holds only the queue allows (issue 25): PGQueuer's shape, a primary
/// key and one partial index on the runnable rows, the same batched SKIP LOCKED claim and
/// completion as raw SQL on two connections, no Swift queue logic. `bench queue` prints its
/// drain as a fraction of this.
struct LeanQueueCeiling: Sendable {
    let client: PostgresClient
    let batch: Int
    let lanes = 2

    static let createSQL = """
        DROP SCHEMA IF EXISTS bench_lean CASCADE;
        CREATE SCHEMA bench_lean;
        CREATE TABLE bench_lean.queue (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            state text NOT NULL DEFAULT 'queued',
            run_at timestamptz NOT NULL DEFAULT now(),
            leased_by text NULL,
            payload text NOT NULL
        ) WITH (fillfactor = 70);
        CREATE INDEX queue_runnable ON bench_lean.queue (run_at, id) WHERE state = 'queued';
        """
    static let fillSQL = "INSERT INTO bench_lean.queue (payload) SELECT 'bm9vcA==' FROM generate_series(1, $1::int)"
    static let claimSQL = """
        WITH picked AS (
            SELECT id FROM bench_lean.queue WHERE state = 'queued' AND run_at <= now()
            ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED
        )
        UPDATE bench_lean.queue AS q SET state = 'running', leased_by = $2
        FROM picked WHERE q.id = picked.id
        RETURNING q.id, q.payload
        """
    static let completeSQL = "UPDATE bench_lean.queue SET state = 'done', leased_by = NULL WHERE id = ANY($1::bigint[]) AND leased_by = $2"

    /// Loads `jobs` rows, drains them, drops the table; returns jobs per second.
    func measure(jobs: Int) async throws -> Double {
        try await client.withConnection { try await $0.execute(script: Self.createSQL) }
        _ = try await client.query(Self.fillSQL, [jobs])
        _ = try await client.query("VACUUM ANALYZE bench_lean.queue")
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    let worker = "lean-\(lane)"
                    while true {
                        let ids = try await client.query(Self.claimSQL, [batch, worker]).map { try $0.decode(Int.self, at: 0) }
                        if ids.isEmpty { return }
                        _ = try await client.query(Self.completeSQL, [ids, worker])
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = (ContinuousClock.now - started).seconds
        _ = try await client.query("DROP SCHEMA bench_lean CASCADE")
        return Double(jobs) / seconds
    }
}
