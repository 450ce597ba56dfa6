import Postgres

/// Buffers the server's checkpoints wrote, read before and after a measured run: more than none
/// means the run overlapped a checkpoint's writes, during which a commit's WAL flush can wait
/// behind them (`bench ingest --wrk`'s p99 is then as much the disk's figure as the product's).
struct CheckpointWrites: Sendable {
    let client: PostgresClient

    /// PostgreSQL 17 moved the counter from `pg_stat_bgwriter` to `pg_stat_checkpointer`.
    static let versionSQL = "SELECT current_setting('server_version_num')::int"
    static let before17SQL = "SELECT buffers_checkpoint FROM pg_stat_bgwriter"
    static let since17SQL = "SELECT buffers_written FROM pg_stat_checkpointer"

    /// The counter now (nil when the server does not say).
    func read() async -> Int? {
        do {
            let version = try await client.query(Self.versionSQL)[0].decode(Int.self, at: 0)
            _ = try await client.query("SELECT pg_stat_clear_snapshot()")
            return try await client.query(version >= 170_000 ? Self.since17SQL : Self.before17SQL)[0].decode(Int.self, at: 0)
        } catch {
            return nil
        }
    }

    /// Buffers written by checkpoints while `body` ran (nil when unknown), and its result.
    func during<T: Sendable>(_ body: () async throws -> T) async rethrows -> (result: T, buffers: Int?) {
        let before = await read()
        let result = try await body()
        let after = await read()
        return (result, before.flatMap { start in after.map { $0 - start } })
    }
}
