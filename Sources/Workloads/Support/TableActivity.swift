import Postgres

/// What one table's updates cost, between two readings: how many were HOT (no index entry
/// written, the new version on the same page) and the WAL the whole cluster wrote meanwhile.
struct TableActivity: Sendable {
    struct Reading: Sendable {
        let updates: Int
        let hotUpdates: Int
        let walBytes: Double
    }

    let client: PostgresClient
    /// Schema-qualified, e.g. `iap.job_queue`.
    let table: String

    static let readSQL = """
        SELECT coalesce(n_tup_upd, 0), coalesce(n_tup_hot_upd, 0), pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8
        FROM (SELECT 1) AS one LEFT JOIN pg_stat_user_tables s ON s.relid = to_regclass($1)
        """

    /// Counters are flushed by each backend at most once a second and when it ends: read after
    /// the measured sessions closed, or a second later.
    func read() async throws -> Reading {
        _ = try await client.query("SELECT pg_stat_clear_snapshot()")
        let row = try await client.query(Self.readSQL, [table])[0]
        return Reading(updates: try row.decode(Int.self, at: 0), hotUpdates: try row.decode(Int.self, at: 1),
                       walBytes: try row.decode(Double.self, at: 2))
    }

    /// Readings summed over measured phases: updates, HOT updates and WAL.
    struct Delta: Sendable {
        var updates = 0
        var hotUpdates = 0
        var walBytes = 0.0

        mutating func add(_ before: Reading, _ after: Reading) {
            updates += after.updates - before.updates
            hotUpdates += after.hotUpdates - before.hotUpdates
            walBytes += after.walBytes - before.walBytes
        }

        func fields(jobs: Int) -> [(String, String)] {
            [("job_queue_updates", "\(updates)"), ("hot_updates", "\(hotUpdates)"), ("wal_bytes_per_job", BenchReport.figure(walBytes / Double(jobs)))]
        }
    }
}
